//! Kubernetes rolling deploys (`Fault::pod_termination`): store-1's pod is
//! deleted under steady calls through tonic's balancer. Kubernetes sends
//! SIGTERM after the pod's preStop hook while the endpoint removal is
//! still on its way to the clients (here 1 s). Without a preStop the
//! server stops taking calls while the balancer still picks it, and those
//! calls fail; a preStop `sleep` longer than the lag (the practice
//! KEP-3960's native `sleep` action was added for) fails none.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim, Trace};

use super::replica_world::{self, failed, fmt_codes, fmt_counts, per_replica};
use super::world::ms;
use super::{Report, Scenario};

const SOURCE: &str = "Kubernetes pod-lifecycle.md (Termination of Pods); KEP-3960 (preStop sleep)";

/// The catalog entry without a preStop hook.
pub(super) const SIGTERM_FIRST: Scenario = Scenario {
    name: "pod-termination-sigterm-first",
    source: SOURCE,
    story: "A pod deleted without a preStop hook gets SIGTERM while clients still route to it: its calls fail until the endpoint removal arrives.",
    checks: "store-1's pod deleted at 1s, endpoint removal reaching the player 1s later, no preStop, under a call every 10ms: calls fail, all between SIGTERM and the removal",
    simulate: sigterm_first,
    judge: judge_sigterm_first,
};

/// The catalog entry with a preStop hook longer than the endpoint lag.
pub(super) const PRE_STOP: Scenario = Scenario {
    name: "pod-termination-prestop",
    source: SOURCE,
    story: "The same deletion with a 1.5s preStop sleep: the endpoint is gone before SIGTERM, and no call fails.",
    checks: "store-1's pod deleted at 1s, endpoint removal 1s later, preStop 1.5s: no call fails; store-1 gets no call after its removal; its drain ends without SIGKILL",
    simulate: pre_stop,
    judge: judge_pre_stop,
};

const DELETE: Duration = ms(1000);
const ENDPOINT_LAG: Duration = ms(1000);
const PRE_STOP_SLEEP: Duration = ms(1500);
const CALLS: u32 = 300;

fn run(termination: Fault, seed: u64) -> grpc_chaos::Result<Trace> {
    // Long enough for the default 30 s grace period's SIGKILL.
    let builder = Sim::builder().seed(seed).duration(ms(40_000));
    let mut sim = replica_world::sim(builder, CALLS);
    sim.fault(termination);
    sim.run()
}

fn sigterm_first(seed: u64) -> grpc_chaos::Result<Trace> {
    run(
        Fault::pod_termination("store-1", ENDPOINT_LAG).at(DELETE),
        seed,
    )
}

fn pre_stop(seed: u64) -> grpc_chaos::Result<Trace> {
    let termination = Fault::pod_termination("store-1", ENDPOINT_LAG).pre_stop(PRE_STOP_SLEEP);
    run(termination.at(DELETE), seed)
}

/// Calls the balancer sent each replica after the endpoint removal.
fn after_removal(trace: &Trace) -> String {
    let removed = DELETE + ENDPOINT_LAG;
    fmt_counts(&per_replica(
        trace.calls_from("player").filter(|c| c.started > removed),
    ))
}

fn judge_sigterm_first(trace: &Trace) -> Report {
    let failed = failed(trace);
    let window = DELETE..=DELETE + ENDPOINT_LAG;
    let outside = failed
        .iter()
        .filter(|c| !window.contains(&c.started))
        .count();
    let checks = [
        (!failed.is_empty(), "no call failed".to_owned()),
        (
            outside == 0,
            format!("{outside} failed calls started outside SIGTERM..removal"),
        ),
    ];
    let happened = format!(
        "SIGTERM at {}, endpoint removed at {}: {} of {} calls failed ({}), all started in \
         between; after the removal: {}",
        fmt_duration(DELETE),
        fmt_duration(DELETE + ENDPOINT_LAG),
        failed.len(),
        trace.calls_from("player").count(),
        fmt_codes(&failed),
        after_removal(trace)
    );
    Report::from_checks(happened, &checks).with_findings(trace)
}

fn judge_pre_stop(trace: &Trace) -> Report {
    let failed = failed(trace);
    let removed = DELETE + ENDPOINT_LAG;
    let late = trace
        .calls_from("player")
        .filter(|c| c.started > removed && c.replica.as_deref() == Some("store-1"))
        .count();
    let killed = trace
        .events_on("store-1")
        .any(|e| matches!(e.kind, EventKind::ShutdownGraceOver { .. }));
    let checks = [
        (
            failed.is_empty(),
            format!("{} calls failed ({})", failed.len(), fmt_codes(&failed)),
        ),
        (
            late == 0,
            format!("store-1 got {late} calls after its endpoint was removed"),
        ),
        (!killed, "store-1 was still draining at SIGKILL".to_owned()),
    ];
    let happened = format!(
        "endpoint removed at {}, SIGTERM at {}: {} of {} calls failed; after the removal: {}",
        fmt_duration(removed),
        fmt_duration(DELETE + PRE_STOP_SLEEP),
        failed.len(),
        trace.calls_from("player").count(),
        after_removal(trace)
    );
    Report::from_checks(happened, &checks).with_findings(trace)
}
