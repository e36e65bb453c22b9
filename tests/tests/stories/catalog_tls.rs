//! The catalog's TLS stories: a server certificate that expires while its
//! connections are up, and an mTLS client-CA rotation that locks out one
//! client. Each pinned with its numbers and a snapshot of its trace.

use grpc_chaos::recorder::event::{EventKind, TlsMessageKind, TlsOutcome, TlsSide};
use grpc_chaos::Trace;
use grpc_chaos_scenarios::services::{HIT, WATCH};
use grpc_chaos_tests::{ms, story, SEED};

fn client_handshakes(trace: &Trace) -> Vec<(std::time::Duration, bool)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Client => {
                Some((e.at(), matches!(h.outcome, TlsOutcome::Done { .. })))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn tls_cert_expires_keeps_the_old_connection_and_fails_the_new_one() {
    let (trace, report) = story("tls-cert-expires");
    let watch = trace
        .calls_from("player")
        .find(|c| c.path == WATCH)
        .expect("the Watch");
    assert!(watch.outcome().is_some_and(|o| o.is_ok()));
    assert!(watch.ended_at.is_some_and(|t| t > ms(3000)), "{watch:?}");
    let hits: Vec<_> = trace
        .calls_from("player")
        .filter(|c| c.path == HIT)
        .map(|c| (c.started, c.outcome().map(|o| o.code)))
        .collect();
    let codes: Vec<_> = hits.iter().map(|(_, code)| *code).collect();
    assert_eq!(codes, [Some("OK"), Some("OK"), Some("UNAVAILABLE")]);
    // The player sleeps from the Watch's first answer: a few ms late.
    let started: Vec<_> = hits.iter().map(|(t, _)| *t).collect();
    assert!((ms(1000)..ms(1100)).contains(&started[0]), "{started:?}");
    assert!(started[1..]
        .iter()
        .all(|t| (ms(4000)..ms(4100)).contains(t)));
    // Three connections, three handshakes: the Watch's at 0, the new
    // ones at 1 s (done) and at 4 s (refused); the Hit at 4 s on the
    // Watch's connection needs none.
    let shakes = client_handshakes(&trace);
    assert_eq!(shakes.len(), 3, "{shakes:?}");
    assert_eq!(
        shakes.iter().map(|(_, ok)| *ok).collect::<Vec<_>>(),
        [true, true, false]
    );
    assert!(shakes[2].0 >= ms(4000));
    // UNAVAILABLE is the spec's code for it too: no finding.
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn mtls_rotation_lockout_refuses_the_client_left_on_the_old_ca() {
    let (trace, report) = story("mtls-rotation-lockout");
    let player: Vec<_> = trace
        .calls_from("player")
        .map(|c| (c.started, c.outcome().map(|o| (o.code, o.spec_code))))
        .collect();
    assert_eq!(player.len(), 11, "{player:?}");
    let refused: Vec<_> = player
        .iter()
        .filter(|(_, o)| *o != Some(("OK", "OK")))
        .collect();
    assert_eq!(
        refused,
        [&(ms(3000), Some(("UNKNOWN", "UNAVAILABLE")))],
        "{player:?}"
    );
    let scorer: Vec<_> = trace
        .calls_from("scorer")
        .map(|c| c.outcome().map(|o| o.code))
        .collect();
    assert_eq!(scorer, [Some("OK")]);
    // Every client-side handshake is done, player's second one too,
    // though the store refuses it: TLS 1.3 ends the client's handshake
    // before the server has judged its certificate.
    let shakes = client_handshakes(&trace);
    assert_eq!(shakes.iter().filter(|(_, ok)| *ok).count(), 3, "{shakes:?}");
    // What each client sent, the store asking each time (mTLS): player
    // its old-CA certificate twice (the old connection and the refused
    // one), scorer its new-CA one. The seed's CA is the old one.
    let sent = |host: &str| -> Vec<String> {
        trace
            .events_on(host)
            .filter_map(|e| match &e.kind {
                EventKind::TlsMessage(m) => match &m.message {
                    TlsMessageKind::CertificateSent(c) => Some(c.issuer.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    };
    let (old_ca, new_ca) = (
        format!("CN=grpc-chaos test CA {SEED}"),
        format!("CN=grpc-chaos test CA {}", SEED + 1),
    );
    assert_eq!(sent("player"), [old_ca.clone(), old_ca]);
    assert_eq!(sent("scorer"), [new_ca]);
    assert_eq!(
        report.findings.len(),
        1,
        "UNKNOWN where the spec requires UNAVAILABLE: {:?}",
        report.findings
    );
    insta::assert_snapshot!(trace.render());
}
