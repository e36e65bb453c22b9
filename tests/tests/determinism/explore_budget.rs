//! The budgets of an exploration: a wall-time budget decides how many
//! schedules run, never what they are, and says so in the report; with a
//! run budget too, whichever ends first. Nothing here times anything: a
//! zero budget has run out before the first schedule, an hour has not
//! after a handful.

use std::time::Duration;

use grpc_chaos::explore::{Ended, Explorer, Space};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::zoo::cancel_unsafe::{self, stock_accounting, STOCK_ACCOUNTING};

const HOUR: Duration = Duration::from_secs(3600);

fn explorer() -> Explorer<impl Fn(u64) -> Sim> {
    Explorer::new(|seed| cancel_unsafe::scenario(seed, false))
        .space(cancel_unsafe::space())
        .invariant(STOCK_ACCOUNTING, stock_accounting)
        .seed(3)
}

#[test]
fn a_zero_wall_time_budget_runs_the_baseline_and_no_schedule() -> grpc_chaos::Result {
    let report = explorer().budget_time(Duration::ZERO).explore()?;
    assert_eq!(report.runs, 0);
    assert_eq!(report.ended, Ended::WallTime(Duration::ZERO));
    assert!(report.passed());
    assert!(report.coverage.iter().all(|c| c.schedules == 0));
    assert!(
        report.summary().starts_with(
            "explored random schedules, seed 3: 0 runs (the wall-time budget of 0ms ran out), \
             no invariant broken"
        ),
        "{}",
        report.summary()
    );
    let swept = explorer().budget_time(Duration::ZERO).sweep_instants()?;
    assert_eq!(swept.runs, 0);
    let (_, placements) = swept
        .instants
        .expect("the sweep still counts its placements");
    assert!(placements > 0);
    // The baseline's checks still run: a bad space is refused as ever.
    let e = explorer()
        .space(Space::new())
        .budget_time(Duration::ZERO)
        .explore()
        .unwrap_err();
    assert!(e.is_misconfigured(), "{e}");
    Ok(())
}

#[test]
fn with_both_budgets_the_runs_end_it_first_and_the_schedules_are_the_same() -> grpc_chaos::Result {
    let timed = explorer()
        .budget(12)
        .budget_time(HOUR)
        .shrink(false)
        .explore()?;
    let plain = explorer().budget(12).shrink(false).explore()?;
    assert_eq!((timed.runs, timed.ended), (12, Ended::AllRuns));
    assert_eq!(timed.coverage, plain.coverage);
    let firsts = |r: &grpc_chaos::explore::Report| -> Vec<_> {
        r.failures
            .iter()
            .map(|g| (g.invariant.clone(), g.runs, g.first.schedule.clone()))
            .collect()
    };
    assert_eq!(firsts(&timed), firsts(&plain));
    assert!(
        !timed.summary().contains("wall-time"),
        "{}",
        timed.summary()
    );
    // The sweep under both: the same placements, run in a spread order.
    let swept = explorer()
        .budget(10)
        .budget_time(HOUR)
        .shrink(false)
        .sweep_instants()?;
    let all = explorer().budget(10).shrink(false).sweep_instants()?;
    assert_eq!((swept.runs, swept.ended), (10, Ended::AllRuns));
    assert_eq!(swept.coverage, all.coverage);
    Ok(())
}
