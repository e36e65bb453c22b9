//! The bug zoo's `shutdown-drops-in-flight`: a ledger whose serve fn
//! shuts tonic down gracefully, but whose Save handlers take the same
//! signal as their cue to give up. The default exploration of a generic
//! space (the ledger shut down or slowed, its link cut; never the instant)
//! finds a Save the draining server failed, shrinks it to the earliest
//! shutdown that still does, and the fixed ledger (the signal for the
//! server alone) passes the same exploration: every Save it took answers
//! OK, then serve returns.

use std::time::Duration;

use grpc_chaos::explore::Target;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::zoo::shutdown_drop::{self, drained, BUG, DRAINED};

/// The minimal schedule, pasted as `grpc-chaos explore
/// shutdown-drops-in-flight` prints it.
fn pasted_regression(fixed: bool) -> Sim {
    let mut sim = shutdown_drop::scenario(0, fixed);
    // grpc-chaos explore: seed 0, schedule 3, shrunk from 1 fault to 1 fault in 9 runs
    sim.fault(Fault::shutdown("ledger").at(Duration::from_millis(307)));
    sim
}

#[test]
fn the_default_exploration_finds_the_shutdown_that_fails_calls_it_took() -> grpc_chaos::Result {
    // Without faults nothing shuts down: every Save answers.
    let baseline = shutdown_drop::scenario(0, false).run()?;
    assert_eq!(drained(&baseline), Ok(()));

    let report = BUG.explorer(false).explore()?;
    let found = report
        .broken(DRAINED)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(report.failures.len(), 1, "{}", report.summary());
    assert_eq!((found.runs, found.first.schedule.number), (30, 3));
    assert_eq!(
        found.first.message,
        "h4 /tt.v1.Store/Save was in flight when the graceful shutdown started at 371ms: it \
         answered CANCELLED \"shutting down\" at 371ms"
    );
    let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("not one fault: {}", report.summary());
    };
    assert!(matches!(fault.target, Target::Shutdown { .. }), "{fault:?}");
    assert_eq!(fault.until, None, "a shutdown lasts to the end");
    assert_eq!((shrunk.runs, shrunk.exhausted), (9, false));
    assert_eq!(
        shrunk.message,
        "h4 /tt.v1.Store/Save was accepted after the graceful shutdown started at 307ms: it \
         answered CANCELLED \"shutting down\" at 308ms"
    );
    assert_eq!(
        found.rust(),
        "// grpc-chaos explore: seed 0, schedule 3, shrunk from 1 fault to 1 fault in 9 runs\n\
         sim.fault(Fault::shutdown(\"ledger\").at(Duration::from_millis(307)));\n"
    );
    let replayed = BUG.explorer(false).run(&shrunk.schedule)?;
    let pasted = pasted_regression(false).run()?;
    assert_eq!(pasted.render(), replayed.render());
    assert_eq!(drained(&pasted), Err(shrunk.message.clone()));
    let coverage = report.summary();
    assert!(coverage.contains("shutdown ledger: 33"), "{coverage}");
    Ok(())
}

#[test]
fn the_draining_ledger_passes_the_same_exploration() -> grpc_chaos::Result {
    BUG.explorer(true).explore()?.assert_passed();
    // The regression test holds: the Save the ledger took while draining
    // answers OK, and serve returns after it.
    let trace = pasted_regression(true).run()?;
    assert_eq!(drained(&trace), Ok(()));
    let h4 = trace.runs_on("ledger").nth(3).expect("the fourth Save");
    assert!(
        matches!(h4.end, RunEnd::Finished { code: "OK", .. }),
        "{h4:?}"
    );
    let returned = trace
        .events_on("ledger")
        .find(|e| matches!(e.kind, EventKind::ServeReturned { .. }))
        .expect("serve returned once drained");
    assert!(
        h4.ended_at.is_some_and(|t| t <= returned.at()),
        "{h4:?} {returned:?}"
    );
    Ok(())
}
