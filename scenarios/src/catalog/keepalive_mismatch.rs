//! Seed 000 §6: the client pings every 30 s (kube-apiserver's etcd client
//! settings: 30 s interval, 10 s timeout) while holding a long, silent call;
//! the server enforces grpc-go's default keepalive policy (MinTime 5 min, no
//! PINGs without calls, 2 strikes). The first PING never counts; the 2nd,
//! 3rd and 4th are strikes; after the 4th the server sends
//! GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings") and closes the connection.
//! tonic redials with the same interval (gRFC A8 and grpc-go would double
//! it), so every connection is cut the same way for ten minutes.

use std::time::Duration;

use grpc_chaos::policy::{KeepalivePolicy, TOO_MANY_PINGS};
use grpc_chaos::recorder::event::FrameDetail;
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::Trace;

use super::keepalive_world::{self, cuts, ping_verdicts, STRIKE_OUT};
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "keepalive-mismatch",
    source: "gRFC A8; grpc-go keepalive.EnforcementPolicy (MinTime 5 min)",
    story: "A client that PINGs every 30 s against a server that allows one every 5 minutes is cut with GOAWAY too_many_pings.",
    checks: "30s PINGs vs grpc-go MinTime 5min: strikes at PINGs 2-4, GOAWAY ENHANCE_YOUR_CALM too_many_pings after the 4th (~120s), calls UNAVAILABLE, cut again after every redial",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = keepalive_world::sim(seed, KeepalivePolicy::grpc_go());
    sim.fault(keepalive_world::silent_saves());
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel_with("store", keepalive_world::apiserver));
        let start = tokio::time::Instant::now();
        while start.elapsed() < keepalive_world::STORY {
            let save = SaveRequest {
                match_id: "final".into(),
                points: 1,
            };
            if store.save(save).await.is_ok() {
                break;
            }
        }
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let cuts = cuts(trace);
    let calls: Vec<_> = trace.calls_from("player").collect();
    let unavailable = calls
        .iter()
        .filter(|c| c.outcome().is_some_and(|o| o.spec_code == "UNAVAILABLE"))
        .count();
    let first = cuts.first();
    let said = calls
        .first()
        .and_then(|c| c.outcome())
        .map_or("nothing".to_owned(), |o| {
            format!("{} (tonic: {} {:?})", o.spec_code, o.code, o.message)
        });
    let happened = match first {
        Some(cut) => format!(
            "GOAWAY {} after {}, at PING #{}; the call ended {said}; {} connections cut in {}",
            cut.detail,
            secs(cut.at),
            cut.pings,
            cuts.len(),
            secs(trace.ended_at())
        ),
        None => "no GOAWAY".to_owned(),
    };
    let every_cut_at_the_4th = cuts
        .iter()
        .all(|c| ping_verdicts(trace, c.conn) == STRIKE_OUT);
    let mut report = Report::from_checks(
        happened,
        &[
            (first.is_some(), "the server never sent GOAWAY".into()),
            (
                first.is_some_and(|c| {
                    matches!(&c.detail, FrameDetail::GoAway(g)
                        if g.code == ErrorCode::EnhanceYourCalm && *g.debug == *TOO_MANY_PINGS)
                }),
                format!(
                    "GOAWAY was {:?}, not ENHANCE_YOUR_CALM too_many_pings",
                    first.map(|c| c.detail.to_string())
                ),
            ),
            (
                every_cut_at_the_4th,
                "a connection was not cut at its 4th PING after strikes at the 2nd, 3rd, 4th"
                    .into(),
            ),
            (
                cuts.len() >= 2,
                format!(
                    "cut {} time(s); the redialled connection must be cut too",
                    cuts.len()
                ),
            ),
            (
                unavailable == calls.len(),
                format!("{unavailable} of {} calls ended UNAVAILABLE", calls.len()),
            ),
        ],
    )
    .with_findings(trace);
    if cuts.len() >= 2 {
        report.findings.push(format!(
            "tonic does not back off after GOAWAY too_many_pings (gRFC A8 doubles the PING interval): cut {} times",
            cuts.len()
        ));
    }
    report
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_millis() as f64 / 1000.0)
}
