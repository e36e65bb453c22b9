//! Seed 003 #1 / seed 002: a worker pool is exhausted. The store runs at
//! most 2 saves at once (100 ms each); 20 players call at the same instant.
//! Handler start is late and latency climbs in waves: p50 and p99 show it.

use std::time::Duration;

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{self, ms, rally, with_timeout, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::{DeadlineMode, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "queueing",
    source: "tonic Server::concurrency_limit_per_connection; Google SRE book ch. 22",
    story: "A worker pool too small for the load shows up as late handler starts and tail latency, not as errors.",
    checks: "store limited to 2 concurrent saves, 20 concurrent calls: late handler start, p50/p99 latency",
    simulate,
    judge,
};

const CALLS: u32 = 20;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let setup = Setup {
        mode: DeadlineMode::Propagate,
        think: ms(0),
        work: ms(100),
    };
    let mut sim = world::sim(Sim::builder().seed(seed), setup);
    sim.fault(Fault::handler("store").method(SAVE).concurrency_limit(2));
    sim.client("player", |player| async move {
        let scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..CALLS {
            let mut scoreboard = scoreboard.clone();
            calls.spawn(async move {
                scoreboard
                    .hit(with_timeout(rally(n), ms(5000)))
                    .await
                    .map(drop)
            });
        }
        while let Some(done) = calls.join_next().await {
            done??;
        }
        Ok(())
    });
    sim.run()
}

/// The q-quantile (nearest rank) of sorted `xs`.
fn quantile(xs: &[Duration], q: f64) -> Duration {
    let rank = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len().max(1));
    xs.get(rank - 1).copied().unwrap_or_default()
}

fn judge(trace: &Trace) -> Report {
    let mut latencies: Vec<Duration> = trace
        .calls_from("player")
        .filter(|c| c.outcome().is_some_and(|o| o.is_ok()))
        .filter_map(|c| c.latency())
        .collect();
    latencies.sort();
    let max_queued = trace
        .runs_on("store")
        .filter_map(|r| r.dequeued.map(|d| d - r.started))
        .max()
        .unwrap_or_default();
    let (p50, p99) = (quantile(&latencies, 0.5), quantile(&latencies, 0.99));
    let fastest = latencies.first().copied().unwrap_or_default();
    let happened = format!(
        "{} of {CALLS} calls OK; p50 {} p99 {}; the last save waited {} for a worker",
        latencies.len(),
        fmt_duration(p50),
        fmt_duration(p99),
        fmt_duration(max_queued)
    );
    Report::from_checks(
        happened,
        &[
            (
                latencies.len() == CALLS as usize,
                "not every call succeeded".into(),
            ),
            (
                max_queued >= ms(800),
                "saves did not queue behind the 2 workers".into(),
            ),
            // 20 calls through 2 workers: the last wave waits for 9 others.
            (
                p99 >= fastest * 5,
                "latency did not climb with the queue".into(),
            ),
        ],
    )
    .with_findings(trace)
}
