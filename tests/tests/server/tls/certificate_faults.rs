//! Certificate faults on simulated time and what tonic reports for each:
//! a certificate that expires at t, a server certificate for another
//! name, an unknown CA, a client without a certificate under mTLS, and a
//! plaintext channel to a TLS server.

use std::time::Duration;

use grpc_chaos::recorder::event::{
    EventKind, TlsFailure, TlsHandshake, TlsMessageKind, TlsOutcome, TlsSide,
};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::secs;

const SEED: u64 = 11;

fn save() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 1,
    }
}

/// `store` serves `server` TLS (plaintext when `None`); `player` calls it
/// once at each of `at` (simulated time), each call on a new channel
/// (a new connection) made with `client` (plaintext when `None`).
fn run(server: Option<ServerTls>, client: Option<ClientTls>, at: &[Duration]) -> Trace {
    let mut sim = Sim::builder().seed(SEED).build();
    sim.server("store", move |s| {
        let s = match &server {
            Some(tls) => s.tls(tls.clone()),
            None => s,
        };
        s.add_service(Store::default().into_server())
    });
    let at = at.to_vec();
    sim.client("player", move |c| async move {
        let start = tokio::time::Instant::now();
        for t in at {
            tokio::time::sleep_until(start + t).await;
            let channel = match &client {
                Some(tls) => c.channel_tls("store", tls.clone()),
                None => c.channel("store"),
            };
            let _ = StoreClient::new(channel).save(save()).await;
        }
        Ok(())
    });
    sim.run().expect("the run itself succeeds")
}

/// Each call's `CODE "message"`, as tonic gave it to the caller.
fn outcomes(trace: &Trace) -> Vec<String> {
    trace
        .calls_from("player")
        .map(|c| {
            c.outcome()
                .map_or("open".to_owned(), |o| format!("{} {:?}", o.code, o.message))
        })
        .collect()
}

fn handshakes(trace: &Trace) -> Vec<&TlsHandshake> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) => Some(&**h),
            _ => None,
        })
        .collect()
}

fn failures(trace: &Trace, side: TlsSide) -> Vec<TlsFailure> {
    handshakes(trace)
        .into_iter()
        .filter(|h| h.side == side)
        .filter_map(|h| match h.outcome {
            TlsOutcome::Failed { failure, .. } => Some(failure),
            TlsOutcome::Done { .. } => None,
        })
        .collect()
}

fn trusting(ca: &Ca) -> ClientTls {
    ClientTls::new().ca_certificate(ca.certificate())
}

fn identity(ca: &Ca, name: &str) -> grpc_chaos::tls::Identity {
    ca.leaf(name).identity().expect("a host name")
}

/// The alerts one side's failed handshakes sent and received.
fn alerts(trace: &Trace, side: TlsSide) -> Vec<(Option<u8>, Option<u8>)> {
    handshakes(trace)
        .into_iter()
        .filter(|h| h.side == side)
        .filter_map(|h| match h.outcome {
            TlsOutcome::Failed {
                alert_sent,
                alert_received,
                ..
            } => Some((alert_sent, alert_received)),
            TlsOutcome::Done { .. } => None,
        })
        .collect()
}

/// RFC 8446 §6 alert codes.
const CERTIFICATE_EXPIRED: u8 = 45;
const BAD_CERTIFICATE: u8 = 42;
const UNKNOWN_CA: u8 = 48;
const CERTIFICATE_REQUIRED: u8 = 116;
const DECODE_ERROR: u8 = 50;

#[test]
fn a_certificate_that_expires_at_t_fails_the_connections_made_after_t() {
    let ca = Ca::new(SEED);
    // Rejected from simulated t = 2 s on: notAfter is 1 s after the epoch.
    let expiring = ca.leaf("store").expires_at(secs(2)).identity().unwrap();
    let trace = run(
        Some(ServerTls::new(expiring)),
        Some(trusting(&ca)),
        &[secs(1), secs(3)],
    );
    // Before t the handshake passes; after it the client refuses the
    // certificate, checked against the simulated clock (epoch + 3.003 s),
    // and tonic reports the connector's error as UNAVAILABLE with
    // rustls's words (measured).
    assert_eq!(
        outcomes(&trace),
        [
            r#"OK """#.to_owned(),
            "UNAVAILABLE \"invalid peer certificate: certificate expired: verification time \
             1767225603 (UNIX), but certificate is not valid after 1767225601 (2 seconds ago)\""
                .to_owned()
        ]
    );
    assert_eq!(
        failures(&trace, TlsSide::Client),
        [TlsFailure::CertificateExpired]
    );
    assert_eq!(
        alerts(&trace, TlsSide::Client),
        [(Some(CERTIFICATE_EXPIRED), None)]
    );
    assert_eq!(
        failures(&trace, TlsSide::Server),
        [TlsFailure::AlertReceived]
    );
    assert_eq!(
        alerts(&trace, TlsSide::Server),
        [(None, Some(CERTIFICATE_EXPIRED))]
    );
    // JSON names the alert as the text does.
    let json: serde_json::Value = serde_json::from_str(&trace.to_json()).expect("JSON");
    let failed: Vec<&serde_json::Value> = json["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event"] == "tls_handshake" && e["outcome"]["outcome"] == "failed")
        .collect();
    assert_eq!(failed.len(), 2, "{json}");
    assert_eq!(failed[0]["outcome"]["alert_sent"], "certificate_expired");
    assert_eq!(failed[0]["outcome"]["failure"], "certificate_expired");
    assert_eq!(
        failed[1]["outcome"]["alert_received"],
        "certificate_expired"
    );
    insta::assert_snapshot!(trace.render());
}

#[test]
fn a_connection_made_before_expiry_lives_on_after_it() {
    let ca = Ca::new(SEED);
    let expiring = ServerTls::new(ca.leaf("store").expires_at(secs(2)).identity().unwrap());
    let mut sim = Sim::builder().seed(SEED).build();
    sim.server("store", move |s| {
        s.tls(expiring.clone())
            .add_service(Store::default().into_server())
    });
    let trust = trusting(&ca);
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.channel_tls("store", trust));
        store.save(save()).await?;
        tokio::time::sleep(secs(5)).await;
        // Past the certificate's notAfter: TLS checked it once, at the
        // handshake (RFC 8446 has no re-check of a live connection).
        store.save(save()).await?;
        Ok(())
    });
    let trace = sim.run().expect("both calls succeed");
    assert_eq!(grpc_chaos_tests::codes(&trace), ["OK", "OK"]);
    assert_eq!(handshakes(&trace).len(), 2);
}

#[test]
fn a_server_certificate_for_another_name_is_refused_by_the_client() {
    let ca = Ca::new(SEED);
    let trace = run(
        Some(ServerTls::new(identity(&ca, "gateway"))),
        Some(trusting(&ca)),
        &[secs(1)],
    );
    assert_eq!(
        outcomes(&trace),
        [
            r#"UNAVAILABLE "invalid peer certificate: certificate not valid for name \"store\"; certificate is only valid for DnsName(\"gateway\")""#
        ]
    );
    assert_eq!(failures(&trace, TlsSide::Client), [TlsFailure::WrongName]);
    assert_eq!(
        alerts(&trace, TlsSide::Server),
        [(None, Some(BAD_CERTIFICATE))]
    );
}

#[test]
fn a_domain_name_the_certificate_holds_is_accepted() {
    let ca = Ca::new(SEED);
    let trace = run(
        Some(ServerTls::new(identity(&ca, "store.prod"))),
        Some(trusting(&ca).domain_name("store.prod")),
        &[secs(1)],
    );
    assert_eq!(outcomes(&trace), [r#"OK """#]);
}

#[test]
fn a_server_signed_by_an_unknown_ca_is_refused_by_the_client() {
    let ca = Ca::new(SEED);
    let trace = run(
        Some(ServerTls::new(identity(&ca, "store"))),
        Some(trusting(&Ca::new(SEED + 1))),
        &[secs(1)],
    );
    assert_eq!(
        outcomes(&trace),
        [r#"UNAVAILABLE "invalid peer certificate: UnknownIssuer""#]
    );
    assert_eq!(failures(&trace, TlsSide::Client), [TlsFailure::UnknownCa]);
    assert_eq!(alerts(&trace, TlsSide::Client), [(Some(UNKNOWN_CA), None)]);
}

#[test]
fn mtls_admits_a_client_with_a_certificate_of_its_ca() {
    let ca = Ca::new(SEED);
    let server = ServerTls::new(identity(&ca, "store")).client_ca_root(ca.certificate());
    let client = trusting(&ca).identity(identity(&ca, "player"));
    let trace = run(Some(server), Some(client), &[secs(1)]);
    assert_eq!(outcomes(&trace), [r#"OK """#]);
    let server_saw = handshakes(&trace)
        .into_iter()
        .find(|h| h.side == TlsSide::Server)
        .map(|h| h.outcome.clone());
    assert!(
        matches!(
            server_saw,
            Some(TlsOutcome::Done {
                client_certificate: true,
                ..
            })
        ),
        "{server_saw:?}"
    );
}

#[test]
fn mtls_without_a_client_certificate_fails_the_call_after_the_clients_handshake() {
    let ca = Ca::new(SEED);
    let server = ServerTls::new(identity(&ca, "store")).client_ca_root(ca.certificate());
    let trace = run(Some(server), Some(trusting(&ca)), &[secs(1)]);
    // TLS 1.3: the client's handshake ends before the server reads its
    // (empty) Certificate (RFC 8446 §2, the client's Finished comes
    // last), so the client sends its request, and then reads the
    // server's certificate_required alert where it expected HTTP/2:
    // tonic says UNKNOWN "transport error", where the spec wants
    // UNAVAILABLE (measured).
    assert_eq!(outcomes(&trace), [r#"UNKNOWN "transport error""#]);
    assert!(failures(&trace, TlsSide::Client).is_empty());
    assert_eq!(
        failures(&trace, TlsSide::Server),
        [TlsFailure::NoClientCertificate]
    );
    assert_eq!(
        alerts(&trace, TlsSide::Server),
        [(Some(CERTIFICATE_REQUIRED), None)]
    );
    insta::assert_snapshot!(trace.render());
}

#[test]
fn a_plaintext_channel_to_a_tls_server_fails_with_a_recorded_protocol_error() {
    let ca = Ca::new(SEED);
    let trace = run(
        Some(ServerTls::new(identity(&ca, "store"))),
        None,
        &[secs(1)],
    );
    // The server reads the HTTP/2 preface as a TLS record and answers
    // decode_error; the client's h2 reads that alert record as a frame
    // header, answers GOAWAY(FRAME_SIZE_ERROR) and fails the call
    // INTERNAL (measured).
    assert_eq!(
        outcomes(&trace),
        [r#"INTERNAL "h2 protocol error: http2 error""#]
    );
    assert_eq!(failures(&trace, TlsSide::Server), [TlsFailure::NotTls]);
    assert_eq!(
        alerts(&trace, TlsSide::Server),
        [(Some(DECODE_ERROR), None)]
    );
    insta::assert_snapshot!(trace.render());
}

#[test]
fn a_tls_channel_to_a_plaintext_server_fails_with_a_recorded_protocol_error() {
    let ca = Ca::new(SEED);
    let trace = run(None, Some(trusting(&ca)), &[secs(1)]);
    // The server's tap reads the ClientHello where the preface belongs;
    // its h2 answers with HTTP/2, which rustls reads as no TLS record
    // (measured).
    assert_eq!(
        outcomes(&trace),
        [r#"UNAVAILABLE "received corrupt message of type InvalidContentType""#]
    );
    assert_eq!(failures(&trace, TlsSide::Client), [TlsFailure::NotTls]);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn a_redial_after_expiry_resumes_the_session_and_checks_no_certificate() {
    let ca = Ca::new(SEED);
    let expiring = ServerTls::new(ca.leaf("store").expires_at(secs(2)).identity().unwrap());
    let mut sim = Sim::builder().seed(SEED).build();
    sim.server("store", move |s| {
        // The connection is recycled at 1.5 s (gRFC A9), so the second
        // call redials on the same channel after the expiry.
        s.configure(|b| b.max_connection_age(Duration::from_millis(1_500)))
            .tls(expiring.clone())
            .add_service(Store::default().into_server())
    });
    let trust = trusting(&ca);
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.channel_tls("store", trust));
        store.save(save()).await?;
        tokio::time::sleep(secs(3)).await;
        store.save(save()).await?;
        Ok(())
    });
    let trace = sim.run().expect("both calls succeed");
    // The redial resumes the channel's TLS session (RFC 8446 §2.2,
    // rustls's client session cache): the server sends no certificate,
    // so none is checked, and the call succeeds past the expiry
    // (measured). A new channel (a new process) fails, as above.
    assert_eq!(grpc_chaos_tests::codes(&trace), ["OK", "OK"]);
    let resumed: Vec<bool> = handshakes(&trace)
        .into_iter()
        .filter(|h| h.side == TlsSide::Client)
        .map(|h| matches!(h.outcome, TlsOutcome::Done { resumed: true, .. }))
        .collect();
    assert_eq!(resumed, [false, true], "{}", trace.render());
    // The hellos say so on the wire: the redial's ClientHello offers the
    // session (pre_shared_key), its ServerHello takes it, and the server
    // sends, and the client receives, a certificate only the first time.
    let kinds = messages(&trace);
    let offered: Vec<bool> = kinds
        .iter()
        .filter_map(|m| match m {
            TlsMessageKind::ClientHello(h) => Some(h.resumption_offered),
            _ => None,
        })
        .collect();
    assert_eq!(offered, [false, true], "{}", trace.render());
    let resumes: Vec<bool> = kinds
        .iter()
        .filter_map(|m| match m {
            TlsMessageKind::ServerHello(h) => Some(h.resumes),
            _ => None,
        })
        .collect();
    assert_eq!(resumes, [false, true], "{}", trace.render());
    let sent = |m: &&&TlsMessageKind| matches!(m, TlsMessageKind::CertificateSent(_));
    let received = |m: &&&TlsMessageKind| matches!(m, TlsMessageKind::CertificateReceived(_));
    assert_eq!(kinds.iter().filter(sent).count(), 1, "{}", trace.render());
    assert_eq!(
        kinds.iter().filter(received).count(),
        1,
        "{}",
        trace.render()
    );
}

fn messages(trace: &Trace) -> Vec<&TlsMessageKind> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsMessage(m) => Some(&m.message),
            _ => None,
        })
        .collect()
}
