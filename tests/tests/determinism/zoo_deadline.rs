//! The bug zoo's `deadline-lost-on-retry`: a gateway that propagates its
//! caller's deadline on the first attempt and retries UNAVAILABLE once
//! with a fresh request. The default exploration of a generic space (the
//! store failing, slowed, crashed, its link cut; never the instant) finds
//! the retried call without a deadline, shrinks a crash to a 3 ms store
//! failure, and the fixed gateway (the deadline on every attempt) passes
//! the same exploration.

use std::time::Duration;

use grpc_chaos::explore::Target;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::zoo::deadline_retry::{
    self, deadline_propagated, BUG, DEADLINE_PROPAGATED,
};
use tonic::Code;

/// The minimal schedule, pasted as `grpc-chaos explore
/// deadline-lost-on-retry` prints it.
fn pasted_regression(fixed: bool) -> Sim {
    let mut sim = deadline_retry::scenario(0, fixed);
    // grpc-chaos explore: seed 0, schedule 0, shrunk from 1 fault to 1 fault in 21 runs
    sim.fault(
        Fault::handler("store")
            .during(Duration::from_millis(116), Duration::from_millis(119))
            .abort(Code::Unavailable, "explored"),
    );
    sim
}

#[test]
fn the_default_exploration_finds_the_retry_that_lost_the_deadline() -> grpc_chaos::Result {
    // Without faults the retry path is never taken: the deadline holds.
    let baseline = deadline_retry::scenario(0, false).run()?;
    assert_eq!(deadline_propagated(&baseline), Ok(()));

    let report = BUG.explorer(false).explore()?;
    let found = report
        .broken(DEADLINE_PROPAGATED)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(report.failures.len(), 1, "{}", report.summary());
    assert_eq!((found.runs, found.first.schedule.number), (17, 0));
    assert!(
        matches!(found.first.schedule.faults[0].target, Target::Crash { .. }),
        "{}",
        report.summary()
    );
    let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("not one fault: {}", report.summary());
    };
    assert!(
        matches!(fault.target, Target::HandlerFail { .. }),
        "{fault:?}"
    );
    assert_eq!((shrunk.runs, shrunk.exhausted), (21, false));
    assert_eq!(
        shrunk.message,
        "deadline propagation: hop gateway→store: h5 /tt.v1.Store/Save: call r5 carried no grpc-timeout; the caller had 478ms left"
    );
    assert_eq!(
        found.rust(),
        "// grpc-chaos explore: seed 0, schedule 0, shrunk from 1 fault to 1 fault in 21 runs\n\
         sim.fault(Fault::handler(\"store\").during(Duration::from_millis(116), Duration::from_millis(119)).abort(Code::Unavailable, \"explored\"));\n"
    );
    let replayed = BUG.explorer(false).run(&shrunk.schedule)?;
    let pasted = pasted_regression(false).run()?;
    assert_eq!(pasted.render(), replayed.render());
    assert_eq!(deadline_propagated(&pasted), Err(shrunk.message.clone()));
    Ok(())
}

#[test]
fn the_fixed_gateway_passes_the_same_exploration() -> grpc_chaos::Result {
    BUG.explorer(true).explore()?.assert_passed();
    // The regression test holds: the retry carries what was left.
    let trace = pasted_regression(true).run()?;
    assert_eq!(deadline_propagated(&trace), Ok(()));
    let retried = trace
        .calls_from("gateway")
        .nth(2)
        .expect("the second order's retry at the store");
    assert!(
        retried
            .timeout
            .is_some_and(|t| t < Duration::from_millis(500)),
        "{retried:?}"
    );
    Ok(())
}
