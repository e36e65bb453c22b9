//! A replica that is up but not serving: store-1 of three sets its
//! `grpc.health.v1` status for `tt.v1.Store` to NOT_SERVING for a second
//! (a dependency of its own is down, it is warming a cache, it was told to
//! drain) and keeps its connections and its port. Readiness is not a
//! connection event: a channel that does not check health keeps sending
//! it calls on the connection it has (kubernetes #114250: a pod that
//! turns unready is not cut off from existing gRPC connections); a channel
//! with client-side health checking (gRFC A17) watches each replica and
//! takes store-1 out of rotation until it serves again (what grpc-rust
//! #2182 asks tonic's `balance_list` for).

use std::time::Duration;

use grpc_chaos::balance::BalanceConfig;
use grpc_chaos::recorder::event::HealthStatus;
use grpc_chaos::recorder::event::{BalancerChange, EventKind};
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::Call;
use grpc_chaos::{Fault, Sim, Trace};

use super::replica_world::{self, fmt_counts, per_replica, EVERY, REPLICAS, WORK};
use super::world::ms;
use super::{Report, Scenario};
use crate::services::{Store, SAVE};

/// The story without health checking: the bug.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "replica-not-serving",
    source: "grpc doc/health-checking.md; kubernetes #114250",
    story: "A replica turns NOT_SERVING but stays up: a channel without health checking keeps sending it calls.",
    checks: "store-1 of 3 NOT_SERVING from 1s to 2s under a call every 10ms, channel without health checking: store-1 keeps getting its share of calls in the window (its handlers run them)",
    simulate: simulate_unchecked,
    judge: judge_unchecked,
};

/// The story with client-side health checking: the fix.
pub(super) const CHECKED: Scenario = Scenario {
    name: "replica-not-serving-checked",
    source: "gRFC A17 (client-side health checking); grpc-rust #2182",
    story: "A replica turns NOT_SERVING but stays up: a health-checking channel takes it out of rotation until it serves again.",
    checks: "store-1 of 3 NOT_SERVING from 1s to 2s under a call every 10ms, channel Watching tt.v1.Store health: the change is seen 1 link latency later, no call reaches store-1 until SERVING is seen, then it gets calls again; every call succeeds",
    simulate: simulate_checked,
    judge: judge_checked,
};

/// The health service the channel watches.
const SERVICE: &str = "tt.v1.Store";
const OUT: Duration = ms(1000);
const BACK: Duration = ms(2000);
const CALLS: u32 = 300;

fn simulate_unchecked(seed: u64) -> grpc_chaos::Result<Trace> {
    sim(seed, false).run()
}

fn simulate_checked(seed: u64) -> grpc_chaos::Result<Trace> {
    sim(seed, true).run()
}

/// Three store replicas serving tonic-health, store-1 NOT_SERVING from
/// [`OUT`] to [`BACK`], and a player that starts [`CALLS`] Saves, one every
/// [`EVERY`], through one balanced channel (health-checked when
/// `checked`).
fn sim(seed: u64, checked: bool) -> Sim {
    let mut sim = Sim::builder().seed(seed).duration(ms(10_000)).build();
    sim.servers("store", REPLICAS, |s| {
        s.add_service(Store::with_work(WORK).into_server())
    });
    sim.health("store");
    sim.fault(Fault::health("store-1", SERVICE, HealthStatus::NotServing).at(OUT));
    sim.fault(Fault::health("store-1", SERVICE, HealthStatus::Serving).at(BACK));
    let config = BalanceConfig::new();
    let config = if checked {
        config.health_check(SERVICE)
    } else {
        config
    };
    replica_world::add_player(&mut sim, CALLS, EVERY, config);
    sim
}

/// The player's Saves (not the channel's own health Watch streams).
fn saves(trace: &Trace) -> Vec<&Call> {
    trace
        .calls_from("player")
        .filter(|c| c.path == SAVE)
        .collect()
}

fn within(calls: &[&Call], from: Duration, until: Duration) -> Vec<Call> {
    calls
        .iter()
        .filter(|c| c.started >= from && c.started < until)
        .map(|c| (*c).clone())
        .collect()
}

fn judge_unchecked(trace: &Trace) -> Report {
    let saves = saves(trace);
    let window = within(&saves, OUT, BACK);
    let counts = per_replica(window.iter());
    let on_one = counts.get("store-1").copied().unwrap_or(0);
    let happened = format!(
        "while store-1 was NOT_SERVING ({} to {}): {}; {} of {} calls failed",
        fmt_duration(OUT),
        fmt_duration(BACK),
        fmt_counts(&counts),
        saves.iter().filter(|c| !ok(c)).count(),
        saves.len(),
    );
    Report::from_checks(
        happened,
        &[(
            on_one * REPLICAS >= window.len() / 2,
            "store-1 got much less than its share of the window's calls without health checking"
                .into(),
        )],
    )
    .with_findings(trace)
}

/// When the player's channel saw store-1 answer `status` on its Watch.
fn seen(trace: &Trace, status: HealthStatus) -> Vec<Duration> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Balancer(b)
                if b.replica == "store-1" && b.change == BalancerChange::Health { status } =>
            {
                Some(e.at())
            }
            _ => None,
        })
        .collect()
}

fn ok(c: &Call) -> bool {
    c.outcome().is_some_and(|o| o.is_ok())
}

fn judge_checked(trace: &Trace) -> Report {
    let saves = saves(trace);
    let out = seen(trace, HealthStatus::NotServing).first().copied();
    let back = seen(trace, HealthStatus::Serving)
        .into_iter()
        .find(|t| out.is_some_and(|o| *t > o));
    let (Some(out), Some(back)) = (out, back) else {
        return Report::failed("the channel never saw store-1 go NOT_SERVING and back");
    };
    let window = within(&saves, out, back);
    let counts = per_replica(window.iter());
    let on_one = |c: &Call| c.replica.as_deref() == Some("store-1");
    let count = |from, until| {
        within(&saves, from, until)
            .iter()
            .filter(|c| on_one(c))
            .count()
    };
    let before = count(Duration::ZERO, OUT);
    let after = count(back, Duration::MAX);
    // A17's race: calls sent between the flip and the channel seeing it.
    let race = count(OUT, out);
    let failed = saves.iter().filter(|c| !ok(c)).count();
    let happened = format!(
        "the channel saw NOT_SERVING {} after the flip and SERVING {} after the flip back; \
         in between: {}; sent to store-1 before the channel saw the flip: {race}; \
         store-1 got {before} calls before and {after} after; {failed} of {} calls failed",
        fmt_duration(out - OUT),
        fmt_duration(back - BACK),
        fmt_counts(&counts),
        saves.len(),
    );
    Report::from_checks(
        happened,
        &[
            (
                counts.get("store-1").copied().unwrap_or(0) == 0,
                "a call reached store-1 while the channel knew it was NOT_SERVING".into(),
            ),
            (
                before > 0 && after > 0,
                "store-1 got no call before the flip, or none after it served again".into(),
            ),
            (
                out - OUT < ms(50) && back - BACK < ms(50),
                "the channel took 50ms or more to see a status change".into(),
            ),
            (failed == 0, "a call failed".into()),
        ],
    )
    .with_findings(trace)
}
