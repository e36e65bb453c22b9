//! The bug zoo's `stale-release`: an inventory that runs each reservation
//! in a task of its own. The default exploration of a generic space (the
//! link cut for up to a second, the inventory crashed or slowed; never
//! the instant) finds a reservation committed after its caller gave up,
//! shrinks it to one partition that holds the first request back, and the
//! fixed inventory (the reservation in the handler, given back when it is
//! dropped) passes the same exploration.

use std::time::Duration;

use grpc_chaos::explore::Target;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::zoo::stale_release::{self, no_stale_commit, BUG, NO_STALE_COMMIT};

/// The minimal schedule, pasted as `grpc-chaos explore stale-release`
/// prints it.
fn pasted_regression(fixed: bool) -> Sim {
    let mut sim = stale_release::scenario(0, fixed);
    // grpc-chaos explore: seed 0, schedule 75, shrunk from 1 fault to 1 fault in 16 runs
    sim.fault(Fault::partition("orders", "inventory").at(Duration::from_millis(1)));
    sim.fault(Fault::repair("orders", "inventory").at(Duration::from_millis(252)));
    sim
}

#[test]
fn the_default_exploration_finds_the_commit_after_the_caller_gave_up() -> grpc_chaos::Result {
    let report = BUG.explorer(false).explore()?;
    let found = report
        .broken(NO_STALE_COMMIT)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(report.failures.len(), 1, "{}", report.summary());
    let first = &found.first;
    assert_eq!(first.schedule.number, 75, "{}", report.summary());
    assert_eq!(
        first.message,
        "1 committed after the caller gave up: order-2 93ms after its call ended"
    );
    let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("not one fault: {}", report.summary());
    };
    assert!(
        matches!(fault.target, Target::Partition { .. }),
        "{fault:?}"
    );
    assert_eq!((shrunk.runs, shrunk.exhausted), (16, false));
    assert_eq!(
        found.rust(),
        "// grpc-chaos explore: seed 0, schedule 75, shrunk from 1 fault to 1 fault in 16 runs\n\
         sim.fault(Fault::partition(\"orders\", \"inventory\").at(Duration::from_millis(1)));\n\
         sim.fault(Fault::repair(\"orders\", \"inventory\").at(Duration::from_millis(252)));\n"
    );
    // The pasted lines replay the minimal run: the request held back to
    // 252 ms, its handler dropped by the cancel at 302 ms, the spawned
    // reservation committing at 303 ms.
    let replayed = BUG.explorer(false).run(&shrunk.schedule)?;
    let pasted = pasted_regression(false).run()?;
    assert_eq!(pasted.render(), replayed.render());
    assert_eq!(no_stale_commit(&pasted), Err(shrunk.message.clone()));
    assert_eq!(
        shrunk.message,
        "1 committed after the caller gave up: order-0 2ms after its call ended"
    );
    Ok(())
}

#[test]
fn the_fixed_inventory_passes_the_same_exploration() -> grpc_chaos::Result {
    BUG.explorer(true).explore()?.assert_passed();
    // The regression test holds: the dropped handler gives the stock back.
    let trace = pasted_regression(true).run()?;
    assert_eq!(no_stale_commit(&trace), Ok(()));
    assert!(
        trace.render().contains("released item=order-0 units=2"),
        "{}",
        trace.render()
    );
    Ok(())
}
