//! Field practice: a rolling deploy of three store replicas under steady
//! calls. Each replica in turn leaves the set (a service-discovery
//! update), is restarted once its calls have drained, and joins again;
//! the next one goes once the first is back. The trace shows the calls
//! moving off each replica and back, and counts failed calls (none, when
//! every replica drains first).
//!
//! There is no graceful-shutdown fault yet, so the drain is told with
//! discovery (`Fault::leave`), and the restart is turmoil's bounce
//! (`Fault::restart`: a crash and a start at one instant), which is safe
//! here only because no call is left on the replica when it comes.

use std::time::Duration;

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim, Trace};

use super::replica_world::{self, failed, fmt_codes, fmt_counts, per_replica, REPLICAS};
use super::world::ms;
use super::{Report, Scenario};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "rolling-restart",
    source: "grpc doc/load-balancing.md; Kubernetes rolling update",
    story: "Replicas leave, restart and rejoin in turn: calls move off each one and back without failing.",
    checks: "store-0, -1, -2 in turn leave the set, restart 300ms later and rejoin 300ms after that, under a call every 10ms: calls move off each replica and back; failed calls counted",
    simulate,
    judge,
};

/// When the first replica leaves; the next leaves this much later.
const FIRST: Duration = ms(500);
const STEP: Duration = ms(1200);
/// From leaving to the restart (the drain), and from the restart to joining.
const DRAIN: Duration = ms(300);
const BOOT: Duration = ms(300);
const CALLS: u32 = 420;

/// When replica `i` leaves.
fn leaves(i: usize) -> Duration {
    FIRST + STEP * i as u32
}

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = replica_world::sim(Sim::builder().seed(seed).duration(ms(10_000)), CALLS);
    for i in 0..REPLICAS {
        let replica = format!("store-{i}");
        sim.fault(Fault::leave(&replica).at(leaves(i)));
        sim.fault(Fault::restart(&replica).at(leaves(i) + DRAIN));
        sim.fault(Fault::join(&replica).at(leaves(i) + DRAIN + BOOT));
    }
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    let failed = failed(trace);
    let mut phases = Vec::new();
    let mut checks = Vec::new();
    for i in 0..REPLICAS {
        let replica = format!("store-{i}");
        let (left, joined) = (leaves(i), leaves(i) + DRAIN + BOOT);
        // While it is out: a call started one tick after the leave is
        // routed by a balancer that has seen it.
        let out = per_replica(
            calls
                .iter()
                .copied()
                .filter(|c| c.started > left && c.started < joined),
        );
        let back = per_replica(
            calls
                .iter()
                .copied()
                .filter(|c| c.started >= joined && c.started < joined + ms(500)),
        );
        phases.push(format!(
            "{replica} out: {}; back: {}",
            fmt_counts(&out),
            fmt_counts(&back)
        ));
        checks.push((
            out[&replica] == 0,
            format!("{replica} got calls while out of the set"),
        ));
        checks.push((
            back[&replica] > 0,
            format!("{replica} got no call in the 500ms after it joined"),
        ));
    }
    checks.push((
        failed.is_empty(),
        format!("{} calls failed ({})", failed.len(), fmt_codes(&failed)),
    ));
    let happened = format!(
        "{}; {} of {} calls failed ({}); the deploy took {}",
        phases.join("; "),
        failed.len(),
        calls.len(),
        fmt_codes(&failed),
        fmt_duration(leaves(REPLICAS - 1) + DRAIN + BOOT - FIRST),
    );
    Report::from_checks(happened, &checks).with_findings(trace)
}
