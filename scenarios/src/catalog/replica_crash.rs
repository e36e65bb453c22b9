//! Seed 002 (one backend of several fails): one of three store replicas
//! crashes under steady calls through tonic's balancer. The trace shows
//! the calls in flight on that replica failing, how soon the balancer
//! stops picking it, and what a `connect_timeout` costs afterwards: each
//! failed redial leaves the replica "ready" with the error, so one more
//! call is sent there and fails UNAVAILABLE.

use std::time::Duration;

use grpc_chaos::recorder::event::{BalancerChange, EventKind};
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim, Trace};

use super::replica_world::{self, failed, fmt_codes, fmt_counts, per_replica};
use super::world::ms;
use super::{Report, Scenario};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "replica-crash",
    source: "grpc doc/load-balancing.md",
    story: "One of three replicas crashes under load: only its calls in flight fail while the balancer moves on.",
    checks: "store-1 of 3 crashes at 1s under a call every 10ms: only its calls in flight fail, the balancer stops picking it at its next pick, each failed 1s redial costs one more call (UNAVAILABLE)",
    simulate,
    judge,
};

const CRASH: Duration = ms(1000);
const CALLS: u32 = 300;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = replica_world::sim(Sim::builder().seed(seed).duration(ms(10_000)), CALLS);
    sim.fault(Fault::crash("store-1").at(CRASH));
    sim.run()
}

/// When the player's balancer noticed that its connection to `replica`
/// was gone.
fn noticed(trace: &Trace, replica: &str) -> Option<Duration> {
    trace.events_on("player").find_map(|e| match &e.kind {
        EventKind::Balancer(b) if b.change == BalancerChange::Closed && b.replica == replica => {
            Some(e.at())
        }
        _ => None,
    })
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    let failed = failed(trace);
    let on_one = |c: &&grpc_chaos::trace::Call| c.replica.as_deref() == Some("store-1");
    let noticed = noticed(trace, "store-1");
    // Cut by the crash: sent to store-1 before the balancer noticed.
    let cut: Vec<_> = failed
        .iter()
        .copied()
        .filter(|c| noticed.is_none_or(|t| c.started < t))
        .collect();
    // Sent to store-1 after it noticed: only on a failed redial.
    let redial: Vec<_> = calls
        .iter()
        .copied()
        .filter(on_one)
        .filter(|c| noticed.is_some_and(|t| c.started >= t))
        .collect();
    let redial_failed = redial
        .iter()
        .filter(|c| c.outcome().is_some_and(|o| o.code == "UNAVAILABLE"))
        .count();
    let before = per_replica(calls.iter().copied().filter(|c| c.started < CRASH));
    let after = per_replica(calls.iter().copied().filter(|c| c.started >= CRASH));
    let happened = format!(
        "before the crash: {}; cut by the crash on store-1: {} ({}); the balancer noticed {} after the crash; \
         after it: {}; sent to store-1 on a failed redial: {}, all failed UNAVAILABLE; {} of {} calls failed",
        fmt_counts(&before),
        cut.len(),
        fmt_codes(&cut),
        noticed.map_or("never".to_owned(), |t| fmt_duration(t - CRASH)),
        fmt_counts(&after),
        redial.len(),
        failed.len(),
        calls.len(),
    );
    Report::from_checks(
        happened,
        &[
            (
                before.values().all(|n| *n > 0),
                "a replica got no call before the crash".into(),
            ),
            (
                failed.iter().all(on_one),
                "a call failed on a replica that did not crash".into(),
            ),
            (
                noticed.is_some_and(|t| t - CRASH < ms(500)),
                "the balancer did not notice store-1's closed connection within 500ms".into(),
            ),
            (
                !redial.is_empty() && redial_failed == redial.len(),
                "no call went to store-1 on a failed redial, or one did not fail UNAVAILABLE"
                    .into(),
            ),
        ],
    )
    .with_findings(trace)
}
