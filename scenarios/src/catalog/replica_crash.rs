//! Seed 002 (one backend of several fails): one of three store replicas
//! crashes under steady calls through tonic's balancer. The trace shows
//! the calls in flight on that replica failing, how soon the balancer
//! stops picking it, and what a `connect_timeout` costs afterwards: each
//! failed redial leaves the replica "ready" with the error, so one more
//! call is sent there and fails UNAVAILABLE.

use std::time::Duration;

use grpc_chaos::{fmt_duration, BalancerChange, EventKind, Fault, Sim, Trace};

use super::replica_world::{self, failed, fmt_codes, fmt_counts, per_replica};
use super::world::ms;
use super::{Report, Scenario};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "replica-crash",
    source: "seed 002",
    checks: "store-1 of 3 crashes at 1s under a call every 10ms: its calls in flight fail, the balancer stops picking it, each 1s connect timeout costs one more failed call",
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
        EventKind::Balancer {
            replica: r,
            change: BalancerChange::Closed,
            ..
        } if r == replica => Some(e.at),
        _ => None,
    })
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    let failed = failed(trace);
    let in_flight: Vec<_> = failed
        .iter()
        .copied()
        .filter(|c| c.started < CRASH)
        .collect();
    let noticed = noticed(trace, "store-1");
    let after = per_replica(calls.iter().copied().filter(|c| c.started >= CRASH));
    let before = per_replica(calls.iter().copied().filter(|c| c.started < CRASH));
    let late_failures: Vec<_> = failed
        .iter()
        .copied()
        .filter(|c| c.started >= CRASH)
        .collect();
    let happened = format!(
        "before the crash: {}; {} in flight on store-1 failed ({}); the balancer noticed {} after the crash; \
         after it: {} ({} failed: {})",
        fmt_counts(&before),
        in_flight.len(),
        fmt_codes(&in_flight),
        noticed.map_or("never".to_owned(), |t| fmt_duration(t - CRASH)),
        fmt_counts(&after),
        late_failures.len(),
        fmt_codes(&late_failures),
    );
    let others_only = late_failures
        .iter()
        .all(|c| c.replica.as_deref() == Some("store-1"));
    Report::from_checks(
        happened,
        &[
            (
                before.values().all(|n| *n > 0),
                "a replica got no call before the crash".into(),
            ),
            (
                !in_flight.is_empty()
                    && in_flight.iter().all(|c| c.replica.as_deref() == Some("store-1")),
                "the failed calls in flight at the crash were not all store-1's".into(),
            ),
            (
                noticed.is_some_and(|t| t - CRASH < ms(100)),
                "the balancer did not notice store-1's closed connection within 100ms".into(),
            ),
            (
                others_only && !late_failures.is_empty(),
                "calls after the crash failed elsewhere than on store-1's failed redials, or none did".into(),
            ),
            (
                after["store-1"] == late_failures.len(),
                "a call after the crash reached store-1 and did not fail".into(),
            ),
        ],
    )
    .with_findings(trace)
}
