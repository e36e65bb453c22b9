//! The bug zoo's `retry-two-hops`: the shop and the gateway each retry
//! UNAVAILABLE 3 times. The default exploration of a generic space (the
//! store failing, slowed, crashed, its link cut; never the instant) finds
//! an order that costs the store more than 3 Saves, shrinks it to one
//! short store failure, and the fixed gateway (pushback -1 on its
//! exhausted retries, gRFC A6) passes the same exploration.

use std::time::Duration;

use grpc_chaos::explore::Target;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::zoo::retry_two_hops::{
    self, attempts_per_order, saves_per_order, ATTEMPTS_PER_ORDER, BUG,
};
use tonic::Code;

/// The minimal schedule, pasted as `grpc-chaos explore retry-two-hops`
/// prints it.
fn pasted_regression(fixed: bool) -> Sim {
    let mut sim = retry_two_hops::scenario(0, fixed);
    // grpc-chaos explore: seed 0, schedule 8, shrunk from 1 fault to 1 fault in 15 runs
    sim.fault(
        Fault::handler("store")
            .during(Duration::from_millis(0), Duration::from_millis(45))
            .abort(Code::Unavailable, "explored"),
    );
    sim
}

#[test]
fn without_faults_each_order_costs_the_store_one_save() -> grpc_chaos::Result {
    let trace = retry_two_hops::scenario(0, false).run()?;
    assert_eq!(saves_per_order(&trace), [1, 1, 1, 1, 1]);
    Ok(())
}

#[test]
fn the_default_exploration_finds_the_multiplied_retry_and_shrinks_it() -> grpc_chaos::Result {
    let report = BUG.explorer(false).explore()?;
    assert_eq!(report.runs, 100, "the default budget");
    let found = report
        .broken(ATTEMPTS_PER_ORDER)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(report.failures.len(), 1, "{}", report.summary());
    assert_eq!(found.first.schedule.number, 8, "{}", report.summary());
    let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("not one fault: {}", report.summary());
    };
    assert!(
        matches!(fault.target, Target::HandlerFail { .. }),
        "{fault:?}"
    );
    assert_eq!((shrunk.runs, shrunk.exhausted), (15, false));
    assert_eq!(
        shrunk.message,
        "order 1 cost the store 4 Saves, more than one layer's 3 attempts"
    );
    assert_eq!(
        found.rust(),
        "// grpc-chaos explore: seed 0, schedule 8, shrunk from 1 fault to 1 fault in 15 runs\n\
         sim.fault(Fault::handler(\"store\").during(Duration::from_millis(0), Duration::from_millis(45)).abort(Code::Unavailable, \"explored\"));\n"
    );
    // The pasted lines replay the minimal run.
    let replayed = BUG.explorer(false).run(&shrunk.schedule)?;
    let pasted = pasted_regression(false).run()?;
    assert_eq!(pasted.render(), replayed.render());
    assert_eq!(saves_per_order(&pasted), [4, 1, 1, 1, 1]);
    assert_eq!(attempts_per_order(&pasted), Err(shrunk.message.clone()));
    // The trace's own amplification bound agrees: the first order made 2
    // gateway runs and 4 store runs, more than one layer's 1 + 3.
    assert!(pasted.assert_amplification_within(4).is_err());
    Ok(())
}

#[test]
fn the_fixed_gateway_passes_the_same_exploration_by_pushback() -> grpc_chaos::Result {
    BUG.explorer(true).explore()?.assert_passed();
    // The regression test holds for the fixed gateway: its exhausted
    // retries come back with pushback -1 and the shop stops there.
    let trace = pasted_regression(true).run()?;
    assert_eq!(saves_per_order(&trace), [3, 1, 1, 1, 1]);
    if let Err(v) = trace.assert_amplification_within(4) {
        panic!("{v}");
    }
    let first = &trace.retried_calls()[0];
    assert_eq!(first.host, "shop");
    let stop = first
        .attempts
        .last()
        .and_then(|a| a.decision.as_ref())
        .and_then(|d| d.stop);
    assert_eq!(stop, Some("pushback_stop"), "{first:?}");
    Ok(())
}
