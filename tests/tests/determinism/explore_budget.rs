//! The budgets of an exploration: a wall-time budget decides how many
//! schedules run, never what they are, and says so in the report; with a
//! run budget too, whichever ends first. Nothing here times anything: a
//! zero budget has run out before the first schedule, an hour has not
//! after a handful.

use std::time::Duration;

use grpc_chaos::explore::{Ended, Explorer, Report, Space};
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

#[test]
fn three_partitions_merged_make_the_whole_runs_report() -> grpc_chaos::Result {
    let sweep = |e: Explorer<_>| {
        e.budget(24)
            .sometimes("a cancel", |t| t.render().contains("RST_STREAM"))
    };
    let whole = sweep(explorer().space(cancel_unsafe::space().max_faults(3))).explore()?;
    assert!(
        !whole.passed(),
        "the planted leak is found: {}",
        whole.summary()
    );
    let parts: Vec<Report> = (0..3)
        .map(|i| {
            let part = sweep(explorer().space(cancel_unsafe::space().max_faults(3)))
                .partition(i, 3)
                .explore()?;
            assert_eq!(part.partition, Some((i, 3)));
            // Each worker writes its report; the merging job reads them.
            Report::from_json(&part.to_json())
        })
        .collect::<grpc_chaos::Result<_>>()?;
    assert_eq!(parts.iter().map(|p| p.runs).collect::<Vec<_>>(), [8, 8, 8]);
    let merged = Report::merge(parts.clone())?;
    assert_eq!(
        merged,
        whole,
        "{}\n---\n{}",
        merged.summary(),
        whole.summary()
    );
    assert_eq!(merged.summary(), whole.summary());
    // Not every part, or a part twice, is refused.
    let e = Report::merge(parts[..2].to_vec()).unwrap_err();
    assert!(e.to_string().contains("partitions 2/3 are missing"), "{e}");
    let e = Report::merge([parts[0].clone(), parts[0].clone(), parts[1].clone()]).unwrap_err();
    assert!(
        e.to_string().contains("partition 0/3 is given twice"),
        "{e}"
    );
    let e = Report::merge([whole]).unwrap_err();
    assert!(e.to_string().contains("a report of a whole run"), "{e}");
    let e = explorer().partition(3, 3).explore().unwrap_err();
    assert!(
        e.to_string()
            .contains("Explorer::partition(3, 3) runs nothing"),
        "{e}"
    );
    Ok(())
}

#[test]
fn a_swept_partition_runs_its_share_of_the_placements() -> grpc_chaos::Result {
    let whole = explorer().budget(20).sweep_instants()?;
    assert!(
        !whole.passed(),
        "the sweep finds the leak: {}",
        whole.summary()
    );
    let parts = (0..2)
        .map(|i| explorer().budget(20).partition(i, 2).sweep_instants())
        .collect::<grpc_chaos::Result<Vec<_>>>()?;
    let merged = Report::merge(parts)?;
    assert_eq!(
        merged,
        whole,
        "{}\n---\n{}",
        merged.summary(),
        whole.summary()
    );
    Ok(())
}
