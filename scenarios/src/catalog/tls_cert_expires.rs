//! A server certificate expires while its connections are up. The
//! gateway serves TLS with a certificate rejected from simulated t = 3 s
//! on (notAfter t = 2 s); the player opens a Watch at t = 0 (a score a
//! second, five of them: the stream lives across the expiry), makes a
//! Hit on the Watch's channel at 4 s (the same connection), and a Hit on
//! a new channel (a new connection, so a new handshake) at 1 s and at 4 s.
//!
//! What is read: TLS authenticates a peer once, at the handshake (RFC
//! 8446 §4.4), so a connection made before the expiry lives on; a client
//! that gets a certificate past its notAfter (RFC 5280 §4.1.2.5) aborts
//! the handshake with `certificate_expired` (RFC 8446 §6.2); a transport
//! failure is UNAVAILABLE (gRPC doc/statuscodes.md). grpc-go #2167: new
//! credentials take a new handshake. The issue that asked for the story
//! names grpc-rust #1897, #1945 and #2445 and grpc-go #4163 as users
//! asking for deterministic TLS failure tests (read there, not here).
//! What is measured (tonic 0.14.9, rustls 0.23): the Watch and the Hit
//! on the old connection end OK; the new connection after the expiry
//! fails UNAVAILABLE "invalid peer certificate: certificate expired: …",
//! the client sends `certificate_expired`, the server receives it; the
//! server's `certificate sent` row shows the notAfter the client refused.

use std::time::Duration;

use grpc_chaos::recorder::event::{EventKind, TlsMessageKind, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::{Sim, Trace};

use super::world::{ms, rally};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::pb::WatchRequest;
use crate::services::{DeadlineMode, Gateway, Store, HIT, WATCH};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "tls-cert-expires",
    source: "RFC 8446 §4.4, §6.2 (certificate_expired); RFC 5280 §4.1.2.5; grpc doc/statuscodes.md (UNAVAILABLE); grpc-go #2167; named by the issue: grpc-rust #1897, #1945, #2445, grpc-go #4163",
    story: "A server certificate expires mid-stream: the connections made before live on, new connections fail their handshake.",
    checks: "gateway certificate rejected from 3s: the Watch opened at 0 ends OK after it, a Hit on its connection at 4s is OK; a new connection at 1s is OK, at 4s UNAVAILABLE 'invalid peer certificate: certificate expired', certificate_expired sent by the client and received by the server",
    simulate,
    judge,
};

/// The instant from which the gateway's certificate is rejected.
const EXPIRY: Duration = ms(3000);
/// When the new connections are made: before and after the expiry.
const BEFORE: Duration = ms(1000);
const AFTER: Duration = ms(4000);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).duration(ms(10_000)).build();
    let ca = Ca::new(sim.seed());
    // An ASCII host name: rcgen refuses only names it cannot hold.
    let identity = ca
        .leaf("gateway")
        .expires_at(EXPIRY)
        .identity()
        .expect("an ASCII host name");
    let tls = ServerTls::new(identity);
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", move |s| {
        let gateway = Gateway::new(s.channel("store"), DeadlineMode::Propagate, Duration::ZERO);
        s.tls(tls.clone())
            .add_service(gateway.with_watch_interval(ms(1000)).into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |player| async move {
        let mut live = ScoreboardClient::new(player.channel_tls("gateway", trust.clone()));
        let request = WatchRequest {
            match_id: "final".into(),
            count: 5,
            padding: 0,
        };
        let mut scores = live.watch(request).await?.into_inner();
        let watch = tokio::spawn(async move { while let Ok(Some(_)) = scores.message().await {} });
        tokio::time::sleep(BEFORE).await;
        let fresh = || ScoreboardClient::new(player.channel_tls("gateway", trust.clone()));
        let _ = fresh().hit(rally(1)).await;
        tokio::time::sleep(AFTER - BEFORE).await;
        let _ = live.hit(rally(2)).await;
        let _ = fresh().hit(rally(3)).await;
        let _ = watch.await;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let watch = trace.calls_from("player").find(|c| c.path == WATCH);
    let watch_ok = watch.is_some_and(|c| {
        c.outcome().is_some_and(|o| o.is_ok()) && c.ended_at.is_some_and(|t| t > EXPIRY)
    });
    let hits: Vec<_> = trace
        .calls_from("player")
        .filter(|c| c.path == HIT)
        .collect();
    let code = |i: usize| {
        hits.get(i)
            .and_then(|c| c.outcome())
            .map_or("none", |o| o.code)
    };
    let refused = hits
        .get(2)
        .and_then(|c| c.outcome())
        .map(|o| o.message.clone());
    let expired = |side| failed_with_expired(trace, side);
    let happened = format!(
        "the Watch opened before the expiry ended {}; after it, a Hit on its connection {} and on a new one {} ({}); a new one before it {}",
        watch.and_then(|c| c.outcome()).map_or("never", |o| o.code),
        code(1),
        code(2),
        refused.as_deref().unwrap_or("no message"),
        code(0),
    );
    Report::from_checks(
        happened,
        &[
            (watch_ok, "the Watch did not live on past the expiry".into()),
            (code(0) == "OK", "the new connection before the expiry failed".into()),
            (code(1) == "OK", "the old connection failed after the expiry".into()),
            (
                code(2) == "UNAVAILABLE"
                    && refused.is_some_and(|m| {
                        m.starts_with("invalid peer certificate: certificate expired")
                    }),
                "the new connection after the expiry did not fail UNAVAILABLE on the expired certificate".into(),
            ),
            (expired(TlsSide::Client), "the client sent no certificate_expired".into()),
            (expired(TlsSide::Server), "the server received no certificate_expired".into()),
            (
                not_after_sent(trace) == Some(EXPIRY.as_secs() as i64 - 1),
                "the server's certificate sent does not show notAfter one second before the expiry".into(),
            ),
        ],
    )
    .with_findings(trace)
}

/// Whether a handshake on `side` failed with alert 45 (certificate_expired)
/// sent (the client) or received (the server).
fn failed_with_expired(trace: &Trace, side: TlsSide) -> bool {
    const CERTIFICATE_EXPIRED: u8 = 45;
    trace.events().iter().any(|e| match &e.kind {
        EventKind::TlsHandshake(h) if h.side == side => match h.outcome {
            TlsOutcome::Failed {
                alert_sent,
                alert_received,
                ..
            } => {
                let alert = if side == TlsSide::Client {
                    alert_sent
                } else {
                    alert_received
                };
                alert == Some(CERTIFICATE_EXPIRED)
            }
            TlsOutcome::Done { .. } => false,
        },
        _ => false,
    })
}

/// The notAfter of the last certificate the gateway sent, in simulated
/// seconds.
fn not_after_sent(trace: &Trace) -> Option<i64> {
    trace.events().iter().rev().find_map(|e| match &e.kind {
        EventKind::TlsMessage(m) => match &m.message {
            TlsMessageKind::CertificateSent(c) => Some(c.not_after_s),
            _ => None,
        },
        _ => None,
    })
}
