//! Shrinking as a user meets it: random schedules of up to five faults on
//! the bug zoo's `cancel-unsafe-reserve` find the leak with faults that
//! have nothing to do with it; the report shrinks the first to the one
//! cancel that leaks, prints it as lines that replay the same failure, and
//! writes that run's trace, summary first.

use std::time::Duration;

use grpc_chaos::explore::{Explorer, Space, Target};
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::zoo::cancel_unsafe::{self, stock_accounting, STOCK_ACCOUNTING};
use grpc_chaos_tests::ms;

/// The zoo's generic space, up to five faults a schedule.
fn explorer() -> Explorer<impl Fn(u64) -> Sim> {
    let bug = cancel_unsafe::BUG;
    Explorer::new(|seed| cancel_unsafe::scenario(seed, false))
        .space((bug.space)().max_faults(5))
        .invariant(STOCK_ACCOUNTING, stock_accounting)
        .seed(1)
        .budget(3)
}

/// The minimal schedule, pasted as the report printed it.
fn pasted_regression() -> Sim {
    let mut sim = cancel_unsafe::scenario(1, false);
    // grpc-chaos explore: seed 1, schedule 2, shrunk from 5 faults to 1 fault in 7 runs
    sim.fault(
        Fault::inject("orders", "inventory")
            .rst_stream(1, ErrorCode::Cancel)
            .at(Duration::from_millis(2)),
    );
    sim
}

#[test]
fn five_random_faults_shrink_to_the_one_cancel_that_leaks() -> grpc_chaos::Result {
    let report = explorer().explore()?;
    let found = report
        .broken(STOCK_ACCOUNTING)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(found.first.schedule.number, 2, "{}", report.summary());
    assert_eq!(found.first.schedule.faults.len(), 5, "{}", report.summary());
    let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("not one fault: {}", report.summary());
    };
    assert!(matches!(fault.target, Target::Cancel { .. }), "{fault:?}");
    // The bar: a 5-fault failure to its 1-fault core in 50 runs
    // or fewer; the default shrink budget is 100.
    assert!(shrunk.runs <= 50 && !shrunk.exhausted, "{}", shrunk.runs);
    assert_eq!((shrunk.from, shrunk.runs), (5, 7));
    assert_eq!(
        shrunk.message,
        "2 units leaked: reserved 10, committed 8, released 0"
    );
    assert_eq!(
        found.rust(),
        "// grpc-chaos explore: seed 1, schedule 2, shrunk from 5 faults to 1 fault in 7 runs\n\
         sim.fault(Fault::inject(\"orders\", \"inventory\").rst_stream(1, ErrorCode::Cancel).at(Duration::from_millis(2)));\n"
    );
    // The schedule as found stays in the report, and both replay.
    let original = explorer().run(&found.first.schedule)?;
    assert_eq!(
        stock_accounting(&original),
        Err(found.first.message.clone())
    );
    let replayed = explorer().run(&shrunk.schedule)?;
    assert_eq!(stock_accounting(&replayed), Err(shrunk.message.clone()));
    // The pasted lines replay the same run.
    let pasted = pasted_regression().run()?;
    assert_eq!(pasted.render(), replayed.render());

    // The minimal run's trace, summary first, in a folder of its own.
    let dir = found.artifacts.as_ref().expect("artifacts written");
    assert!(
        dir.ends_with("explore-1/random-2-stock-accounting"),
        "{dir:?}"
    );
    let text = std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt");
    assert!(text.starts_with("summary (seed 1"), "{text}");
    assert!(text.contains(&pasted.render()), "the minimal run's trace");
    assert!(
        text.contains("FAIL: invariant `stock accounting` broken: 2 units leaked"),
        "{text}"
    );
    let error = std::fs::read_to_string(dir.join("error.txt")).expect("error.txt");
    assert!(
        error.starts_with("invariant `stock accounting` broken: 2 units leaked"),
        "{error}"
    );
    assert!(error.contains(&found.rust()), "{error}");
    let summary = report.summary();
    assert!(
        summary.contains(
            "    as found (5 faults):\n      // grpc-chaos explore: seed 1, schedule 2\n"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("    shrunk to 1 fault in 7 runs, breaking it still: 2 units leaked"),
        "{summary}"
    );

    // Deterministic: the same exploration shrinks the same way.
    let again = explorer().explore()?;
    let again = again
        .broken(STOCK_ACCOUNTING)
        .and_then(|g| g.shrunk.clone());
    assert_eq!(again.map(|s| s.schedule), Some(shrunk.schedule.clone()));
    Ok(())
}

#[test]
fn shrinking_off_reports_the_schedule_as_found() -> grpc_chaos::Result {
    let report = explorer().shrink(false).explore()?;
    let found = report.broken(STOCK_ACCOUNTING).expect("found");
    assert!(found.shrunk.is_none());
    assert_eq!(found.rust(), found.first.schedule.rust());
    let dir = found.artifacts.as_ref().expect("the failure's own trace");
    let text = std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt");
    let original = explorer().run(&found.first.schedule)?;
    assert!(text.contains(&original.render()));
    assert!(!report.summary().contains("shrunk"), "{}", report.summary());
    Ok(())
}

#[test]
fn the_shrink_budget_bounds_it_and_what_it_keeps_still_fails() -> grpc_chaos::Result {
    let report = explorer().shrink_budget(2).explore()?;
    let found = report.broken(STOCK_ACCOUNTING).expect("found");
    let shrunk = found.shrunk.as_ref().expect("shrunk");
    assert_eq!(shrunk.runs, 2);
    assert!(shrunk.exhausted);
    assert!(shrunk.schedule.faults.len() < 5, "{:?}", shrunk.schedule);
    let replayed = explorer().run(&shrunk.schedule)?;
    assert_eq!(stock_accounting(&replayed), Err(shrunk.message.clone()));
    assert!(
        report
            .summary()
            .contains("in 2 runs (the shrink budget: maybe not minimal)"),
        "{}",
        report.summary()
    );
    Ok(())
}

#[test]
fn a_swept_crash_keeps_its_instant_and_shrinks_its_outage() -> grpc_chaos::Result {
    // A crash between a reservation and its reply leaks however short it
    // is: the sweep's 200 ms outage shrinks to 1 ms, at the same instant.
    let report = explorer()
        .space(
            Space::new()
                .crash("inventory")
                .window(Duration::ZERO, ms(300)),
        )
        .budget(100)
        .sweep_instants()?;
    let found = report
        .broken(STOCK_ACCOUNTING)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    let [swept] = found.first.schedule.faults.as_slice() else {
        panic!("{}", report.summary());
    };
    let shrunk = found.shrunk.as_ref().expect("shrunk");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("{}", report.summary());
    };
    assert_eq!(swept.until, Some(swept.at + ms(200)));
    assert_eq!((fault.at, fault.until), (swept.at, Some(swept.at + ms(1))));
    // Bisecting 1..=200 ms: 8 runs.
    assert_eq!(shrunk.runs, 8, "{}", report.summary());
    let replayed = explorer().run(&shrunk.schedule)?;
    assert_eq!(stock_accounting(&replayed), Err(shrunk.message.clone()));
    Ok(())
}

#[test]
fn a_scenario_that_takes_a_count_shrinks_to_fewer_calls_and_says_how_many() -> grpc_chaos::Result {
    let explorer = Explorer::with_calls(5, |seed, calls| {
        cancel_unsafe::scenario_with_calls(seed, false, calls)
    })
    .space((cancel_unsafe::BUG.space)().max_faults(5))
    .invariant(STOCK_ACCOUNTING, stock_accounting)
    .seed(1)
    .budget(3);
    let report = explorer.explore()?;
    let found = report
        .broken(STOCK_ACCOUNTING)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(
        found.first.schedule.calls, None,
        "found with the scenario's own 5"
    );
    let shrunk = found.shrunk.as_ref().expect("shrinking is on");
    // The leak is the first reservation's: one call and its cancel.
    assert_eq!(shrunk.schedule.calls, Some(1), "{}", report.summary());
    assert_eq!(shrunk.calls_from, Some(5));
    assert_eq!(shrunk.schedule.faults.len(), 1, "{}", report.summary());
    let rust = found.rust();
    assert!(
        rust.contains("shrunk from 5 faults to 1 fault and from 5 calls to 1 in ")
            && rust.contains(
                "// build the scenario with 1 call (the `calls` of Explorer::with_calls)"
            ),
        "{rust}"
    );
    assert!(
        report
            .summary()
            .contains("shrunk to 1 fault and 1 call of 5 in "),
        "{}",
        report.summary()
    );
    // Replayed, the minimal schedule makes one call, and leaks.
    let trace = explorer.run(&shrunk.schedule)?;
    assert_eq!(trace.calls_from("orders").count(), 1);
    assert!(stock_accounting(&trace).is_err());
    // Without the count, the same exploration keeps all five calls.
    let plain = self::explorer().explore()?;
    let kept = plain
        .broken(STOCK_ACCOUNTING)
        .and_then(|g| g.shrunk.as_ref());
    assert_eq!(kept.map(|s| s.schedule.calls), Some(None));
    Ok(())
}
