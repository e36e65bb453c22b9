//! Seed 000 §4 / seed 003: the store is slow (2 s), the player's budget is
//! 500 ms. The player must get DEADLINE_EXCEEDED (by the spec) and the
//! cancellation must reach the store's handler: no orphan work.

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{self, ms, rally, with_timeout, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::{DeadlineMode, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "slow-dependency",
    source: "grpc.io Deadlines guide; PROTOCOL-HTTP2.md (RST_STREAM CANCEL)",
    story: "A slow store behind a gateway: the player's deadline fires and the cancellation must reach the last hop.",
    checks: "store delayed 2s, player deadline 500ms: DEADLINE_EXCEEDED at the player, store handler cancelled",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let setup = Setup {
        mode: DeadlineMode::Propagate,
        think: ms(120),
        work: ms(10),
    };
    let mut sim = world::sim(Sim::builder().seed(seed), setup);
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(2000)));
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let status = scoreboard
            .hit(with_timeout(rally(1), ms(500)))
            .await
            .expect_err("the store is slower than the budget");
        tracing::info!(code = ?status.code(), "player gave up");
        // Stay a moment: the run's end must not be mistaken for the
        // cancellation reaching the store.
        tokio::time::sleep(ms(100)).await;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let player = trace.calls_from("player").next();
    let spec = player
        .and_then(|c| c.outcome())
        .map_or("none", |o| o.spec_code);
    let store = trace.runs_on("store").find(|r| r.path == SAVE);
    let dropped = store.filter(|r| r.end == RunEnd::Dropped);
    let happened = format!(
        "player ended {spec}; store handler {}",
        match dropped {
            Some(r) => format!(
                "dropped after {}",
                fmt_duration(r.ended_at.unwrap_or_default() - r.started)
            ),
            None => "not dropped".to_owned(),
        }
    );
    let orphans = trace.assert_no_orphan_work();
    Report::from_checks(
        happened,
        &[
            (
                spec == "DEADLINE_EXCEEDED",
                format!("player ended {spec}, not DEADLINE_EXCEEDED"),
            ),
            (
                dropped.is_some(),
                "the cancellation did not reach the store handler".into(),
            ),
            (
                orphans.is_ok(),
                orphans.err().map(|e| e.to_string()).unwrap_or_default(),
            ),
        ],
    )
    .with_findings(trace)
}
