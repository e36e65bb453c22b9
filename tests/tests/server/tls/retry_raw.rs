//! TLS under a retry channel (`Host::retry_channel_tls`) and on a raw
//! connection (`Host::raw_connect_tls`): every attempt's redial runs its
//! own handshake; a raw peer's HTTP/2 inside TLS is still decoded.

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::{encode, frame::PREFACE};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RETRY_UNAVAILABLE: &str = r#"{"methodConfig": [{
    "name": [{"service": "tt.v1.Store"}],
    "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                    "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[test]
fn each_retry_of_a_refused_certificate_runs_its_own_handshake() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(31).build();
    let ca = Ca::new(sim.seed());
    // Expired from the start: every handshake is refused by the client.
    let leaf = ca.leaf("store").expires_at(Duration::ZERO);
    let server = ServerTls::new(leaf.identity().expect("a host name"));
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |c| async move {
        let channel = c
            .retry_channel_tls("store", trust, RETRY_UNAVAILABLE)
            .expect("a valid A6 config");
        let request = SaveRequest {
            match_id: "m1".into(),
            points: 1,
        };
        let err = StoreClient::new(channel).save(request).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unavailable);
        assert!(
            err.message()
                .starts_with("invalid peer certificate: certificate expired"),
            "{err:?}"
        );
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(
        grpc_chaos_tests::codes(&trace),
        ["UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"],
        "{}",
        trace.render()
    );
    let refused: Vec<_> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Client => Some(&h.outcome),
            _ => None,
        })
        .collect();
    assert_eq!(refused.len(), 3, "one handshake an attempt: {refused:?}");
    assert!(refused.iter().all(|o| matches!(
        o,
        TlsOutcome::Failed {
            failure: TlsFailure::CertificateExpired,
            ..
        }
    )));
    Ok(())
}

#[test]
fn a_raw_peers_frames_inside_tls_are_decoded() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(32).build();
    let ca = Ca::new(sim.seed());
    let server = ServerTls::new(ca.leaf("store").identity().expect("a host name"));
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("mallory", move |host| async move {
        let mut conn = host.raw_connect_tls("store", trust).await?;
        conn.write_all(PREFACE).await?;
        conn.write_all(&encode::settings(&[])).await?;
        conn.write_all(&encode::ping(false, *b"mallory!")).await?;
        let mut buf = [0u8; 256];
        let _ = conn.read(&mut buf).await?;
        Ok(())
    });
    let render = sim.run()?.render_with(&RenderOptions::everything());
    assert!(
        render.contains("c1 TLS handshake done (client)"),
        "{render}"
    );
    assert!(
        render.contains("mallory→store        c1 s0 PING 6d616c6c6f727921"),
        "{render}"
    );
    Ok(())
}

#[test]
fn a_raw_tls_connect_with_a_bad_name_is_invalid_input() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(33).build();
    let ca = Ca::new(sim.seed());
    let server = ServerTls::new(ca.leaf("store").identity().expect("a host name"));
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let bad = ClientTls::new()
        .ca_certificate(ca.certificate())
        .domain_name("not a name");
    sim.client("mallory", move |host| async move {
        let err = host.raw_connect_tls("store", bad).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("is not a server name"), "{err}");
        Ok(())
    });
    sim.run()?;
    Ok(())
}
