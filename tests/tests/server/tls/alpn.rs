//! ALPN: a server that selects no `h2`, and one with ALPN off.

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

/// One call from `player` to a `store` whose TLS selects from `alpn`.
fn call(alpn: &'static [&'static str]) -> Trace {
    let mut sim = Sim::builder().seed(31).build();
    let ca = Ca::new(sim.seed());
    let server =
        ServerTls::new(ca.leaf("store").identity().expect("a host name")).alpn_protocols(alpn);
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |c| async move {
        let req = SaveRequest {
            match_id: "m1".into(),
            points: 1,
        };
        let _ = StoreClient::new(c.channel_tls("store", trust))
            .save(req)
            .await;
        Ok(())
    });
    sim.run().expect("the run itself succeeds")
}

fn outcome(trace: &Trace, side: TlsSide) -> Option<TlsOutcome> {
    trace.events().iter().find_map(|e| match &e.kind {
        EventKind::TlsHandshake(h) if h.side == side => Some(h.outcome.clone()),
        _ => None,
    })
}

fn said(trace: &Trace) -> Vec<String> {
    trace
        .calls_from("player")
        .map(|c| {
            c.outcome()
                .map_or("open".to_owned(), |o| format!("{} {:?}", o.code, o.message))
        })
        .collect()
}

#[test]
fn a_server_that_selects_no_h2_fails_the_handshake() {
    let trace = call(&["http/1.1"]);
    // RFC 7301 §3.2: the server answers no_application_protocol (after
    // its ServerHello: rustls checks ALPN as it writes its
    // EncryptedExtensions, so the alert is encrypted), the client reads
    // it, and tonic reports UNAVAILABLE with rustls's words (measured).
    // Before `tls/writev.rs` the alert was lost on turmoil's TCP and the
    // client read the end of the stream ("tls handshake eof").
    assert_eq!(
        said(&trace),
        [r#"UNAVAILABLE "received fatal alert: NoApplicationProtocol""#]
    );
    assert!(matches!(
        outcome(&trace, TlsSide::Server),
        Some(TlsOutcome::Failed {
            failure: TlsFailure::NoApplicationProtocol,
            alert_sent: Some(120),
            ..
        })
    ));
    assert!(matches!(
        outcome(&trace, TlsSide::Client),
        Some(TlsOutcome::Failed {
            failure: TlsFailure::AlertReceived,
            alert_received: Some(120),
            ..
        })
    ));
}

#[test]
fn a_server_with_alpn_off_is_still_spoken_http2_to_by_tonic() {
    let trace = call(&[]);
    // No protocol agreed, and tonic's client speaks HTTP/2 anyway: the
    // call succeeds (measured). grpc-go 1.67 and later refuse such a
    // connection (grpc-go #7535); RFC 9113 §3.2 asks for "h2".
    assert_eq!(said(&trace), [r#"OK """#]);
    for side in [TlsSide::Client, TlsSide::Server] {
        assert!(
            matches!(
                outcome(&trace, side),
                Some(TlsOutcome::Done { h2: false, .. })
            ),
            "{side:?}"
        );
    }
}
