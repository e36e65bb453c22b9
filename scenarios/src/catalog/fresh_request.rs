//! Seed 000 §4 / seed 003 #3: the gateway calls the store from a spawned
//! task with a fresh request (no deadline) — the `context.Background()`
//! trap. The player gives up at 500 ms; the store keeps working: orphan work.

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Sim, Trace};

use super::world::{self, ms, rally, with_timeout, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::{DeadlineMode, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "fresh-request",
    source: "grpc.io Deadlines guide (deadline propagation)",
    story: "A handler that calls downstream with a fresh request instead of its caller's deadline leaves work running after the caller gave up.",
    checks: "a downstream call without the caller's deadline keeps the store working after the player gave up",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let setup = Setup {
        mode: DeadlineMode::Fresh,
        think: ms(120),
        work: ms(2000),
    };
    let mut sim = world::sim(Sim::builder().seed(seed), setup);
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let _ = scoreboard.hit(with_timeout(rally(1), ms(500))).await;
        // Stay around so the orphaned save can finish inside the run.
        tokio::time::sleep(ms(3000)).await;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let orphan = trace
        .orphans()
        .into_iter()
        .find(|o| o.run.host == "store" && o.run.path == SAVE);
    let no_deadline = trace
        .runs_on("store")
        .any(|r| r.path == SAVE && r.timeout.is_none());
    let happened = match &orphan {
        Some(o) => format!(
            "store kept working {} after the player gave up at {}",
            fmt_duration(o.ran_on),
            fmt_duration(o.abandoned_at)
        ),
        None => "no orphan work found".to_owned(),
    };
    Report::from_checks(
        happened,
        &[
            (no_deadline, "the store call carried a deadline".into()),
            (orphan.is_some(), "the store did not keep working".into()),
        ],
    )
    .with_findings(trace)
}
