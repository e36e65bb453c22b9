//! Seed 000 §4.2: a backend restarts under traffic. The player calls every
//! 100 ms; the store is down from 1 s to 3 s. The trace shows the codes seen
//! during the outage, the time to recover, and a call that waits past its
//! own deadline because tonic's timeout does not run while the channel
//! reconnects (FACTS.md).

use std::collections::BTreeMap;
use std::time::Duration;

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::Call;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{self, ms, rally, with_timeout, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::LoadRequest;
use crate::services::{DeadlineMode, LOAD};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "store-restart",
    source: "grpc doc/connection-backoff.md; doc/statuscodes.md (UNAVAILABLE)",
    story: "While a backend restarts its callers see UNAVAILABLE, and a call can wait past its deadline while the channel reconnects.",
    checks: "store down 1s–3s under 100ms traffic: codes during the outage, time to recover, a call stuck past its deadline while reconnecting",
    simulate,
    judge,
};

const CRASH: Duration = ms(1000);
const RESTART: Duration = ms(3000);
/// The direct call made during the outage, and its deadline.
const PROBE_AT: Duration = ms(1500);
const PROBE_DEADLINE: Duration = ms(300);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let setup = Setup {
        mode: DeadlineMode::Propagate,
        think: ms(5),
        work: ms(5),
    };
    let mut sim = world::sim(Sim::builder().seed(seed).duration(ms(10_000)), setup);
    sim.fault(Fault::crash("store").at(CRASH));
    sim.fault(Fault::restart("store").at(RESTART));
    sim.client("player", |player| async move {
        let scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let store = StoreClient::new(
            player.channel_with("store", |e| e.connect_timeout(Duration::from_secs(1))),
        );
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..50u32 {
            let mut scoreboard = scoreboard.clone();
            calls.spawn(async move {
                let _ = scoreboard.hit(with_timeout(rally(n), ms(500))).await;
            });
            if ms(100) * n == PROBE_AT {
                let mut store = store.clone();
                calls.spawn(async move {
                    let req = LoadRequest {
                        match_id: "final".into(),
                    };
                    let _ = store.load(with_timeout(req, PROBE_DEADLINE)).await;
                });
            }
            tokio::time::sleep(ms(100)).await;
        }
        while calls.join_next().await.is_some() {}
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let hits: Vec<&Call> = trace
        .calls_from("player")
        .filter(|c| c.target == "gateway")
        .collect();
    // Calls that ended while the store was down (calls started late in the
    // outage may still succeed after the restart).
    let during: Vec<&Call> = hits
        .iter()
        .copied()
        .filter(|c| c.ended_at.is_some_and(|t| (CRASH..RESTART).contains(&t)))
        .collect();
    let codes = code_counts(&during);
    let recovered = hits
        .iter()
        .filter(|c| c.started >= RESTART && c.outcome().is_some_and(|o| o.is_ok()))
        .filter_map(|c| c.ended_at)
        .min()
        .map(|t| t.saturating_sub(RESTART));
    let probe = trace
        .calls_from("player")
        .find(|c| c.path == LOAD && c.started >= PROBE_AT);
    let probe_waited = probe.and_then(Call::latency);
    let happened = format!(
        "during the outage: {}; recovered {} after the restart; a {} Load issued at {} waited {}",
        fmt_codes(&codes),
        recovered.map_or("never".to_owned(), fmt_duration),
        fmt_duration(PROBE_DEADLINE),
        fmt_duration(PROBE_AT),
        probe_waited.map_or("forever".to_owned(), fmt_duration),
    );
    Report::from_checks(
        happened,
        &[
            (
                !during.is_empty() && codes.keys().all(|c| c != "OK"),
                "a call ended OK while the store was down".into(),
            ),
            (
                recovered.is_some(),
                "no call succeeded after the restart".into(),
            ),
            (
                probe_waited.is_some_and(|w| w > PROBE_DEADLINE),
                "the probe call did not outlive its deadline".into(),
            ),
        ],
    )
    .with_findings(trace)
}

/// Spec code → count, for the calls given.
fn code_counts(calls: &[&Call]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for c in calls {
        let code = c.outcome().map_or("(no status)", |o| o.spec_code);
        *counts.entry(code.to_owned()).or_default() += 1;
    }
    counts
}

fn fmt_codes(counts: &BTreeMap<String, usize>) -> String {
    counts
        .iter()
        .map(|(c, n)| format!("{n}× {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}
