//! Seed 000 §4: a 500 ms budget shrinks hop by hop. The gateway spends
//! 120 ms, so the store must see at most 380 ms.

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Sim, Trace};

use super::world::{self, ms, rally, with_timeout, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::{DeadlineMode, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "deadline-chain",
    source: "grpc.io Deadlines guide; PROTOCOL-HTTP2.md (grpc-timeout)",
    story: "A gateway that passes on what is left of its caller's deadline keeps the whole chain inside one budget.",
    checks: "each hop's grpc-timeout is the caller's remaining budget (500ms → ≤380ms)",
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
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        scoreboard.hit(with_timeout(rally(1), ms(500))).await?;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let store_budget = trace
        .runs_on("store")
        .find(|r| r.path == SAVE)
        .and_then(|r| r.timeout);
    let happened = match store_budget {
        Some(t) => format!(
            "store saw grpc-timeout={} after the gateway spent 120ms",
            fmt_duration(t)
        ),
        None => "store saw no grpc-timeout".to_owned(),
    };
    let propagated = trace.assert_deadline_propagated(["player", "gateway", "store"]);
    Report::from_checks(
        happened,
        &[
            (
                store_budget.is_some_and(|t| t <= ms(380)),
                "store budget above 380ms".into(),
            ),
            (
                propagated.is_ok(),
                propagated.err().map(|e| e.to_string()).unwrap_or_default(),
            ),
        ],
    )
    .with_findings(trace)
}
