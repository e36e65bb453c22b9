//! Exploration as a user writes it: a fault space, the scenario, the
//! user's own invariant. The explorer finds the handler that is not
//! cancel-safe (the bug zoo's `cancel-unsafe-reserve`) without being told
//! the instant, hands back a schedule to paste as a regression test, and
//! passes the fixed service; misconfigurations are typed errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use grpc_chaos::explore::{Explorer, Placed, Space, Target, RUN_FAILED};
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::inventory_client::InventoryClient;
use grpc_chaos_scenarios::services::pb::ReserveRequest;
use grpc_chaos_scenarios::zoo::cancel_unsafe::{self, stock_accounting, STOCK_ACCOUNTING};
use grpc_chaos_tests::ms;

/// What a user declares: any `orders` → `inventory` call may be
/// cancelled, the inventory may crash, the link may partition, the
/// handlers may slow down, while the five reservations run. Nothing says
/// where the bug is.
fn space() -> Space {
    Space::new()
        .cancel("orders", "inventory")
        .crash("inventory")
        .partition("orders", "inventory")
        .handler_delay("inventory", ms(400))
        .window(Duration::ZERO, ms(300))
}

fn explorer(fixed: bool) -> Explorer<impl Fn(u64) -> Sim> {
    Explorer::new(move |seed| cancel_unsafe::scenario(seed, fixed))
        .space(space())
        .invariant(STOCK_ACCOUNTING, stock_accounting)
        .invariant("no orphan work", |t: &Trace| t.assert_no_orphan_work())
}

/// The schedule the instant sweep hands back, pasted as the report
/// printed it.
fn pasted_regression(fixed: bool) -> Sim {
    let mut sim = cancel_unsafe::scenario(0, fixed);
    // grpc-chaos explore: seed 0, schedule 7
    sim.fault(
        Fault::inject("orders", "inventory")
            .rst_stream(1, ErrorCode::Cancel)
            .at(Duration::from_millis(2)),
    );
    sim
}

#[test]
fn the_instant_sweep_finds_the_reservation_a_cancel_leaks() -> grpc_chaos::Result {
    let report = explorer(false).sweep_instants()?;
    let (instants, placements) = report.instants.expect("an instant sweep");
    assert_eq!(report.runs, placements, "all fit the default budget");
    assert!(instants > 10, "{}", report.summary());
    let found = report
        .broken(STOCK_ACCOUNTING)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(report.failures.len(), 1, "{}", report.summary());
    let first = &found.first;
    assert!(
        first
            .message
            .starts_with("2 units leaked: reserved 10, committed 8"),
        "{}",
        first.message
    );
    // A cancel of the first call between its reservation (2 ms) and its
    // reply (52 ms).
    let [Placed {
        target: Target::Cancel { .. },
        at,
        stream: 1,
        ..
    }] = first.schedule.faults.as_slice()
    else {
        panic!("not one cancel of stream 1: {:?}", first.schedule);
    };
    assert!((ms(2)..ms(52)).contains(at), "{at:?}");
    assert_eq!(
        first.schedule.rust(),
        "// grpc-chaos explore: seed 0, schedule 7\n\
         sim.fault(Fault::inject(\"orders\", \"inventory\").rst_stream(1, ErrorCode::Cancel).at(Duration::from_millis(2)));\n"
    );
    let left = first
        .left_baseline
        .as_ref()
        .expect("the run left the baseline");
    assert!(
        left.run.contains("RST_STREAM CANCEL [injected]"),
        "{left:?}"
    );
    // The sweep's schedule is minimal already; its run's trace is written
    // under a folder of its own (the path is the machine's).
    let shrunk = found.shrunk.as_ref().expect("shrinking is on");
    assert_eq!((shrunk.schedule.faults.len(), shrunk.runs), (1, 0));
    assert_eq!(found.rust(), first.schedule.rust());
    let dir = found.artifacts.as_ref().expect("artifacts written");
    assert!(
        dir.ends_with("explore-0/sweep-7-stock-accounting"),
        "{dir:?}"
    );
    let summary = report
        .summary()
        .replace(&dir.display().to_string(), "<artifacts>");
    insta::assert_snapshot!(summary);

    // The report's schedule replays the failure, and so do its lines pasted.
    let replayed = explorer(false).run(&first.schedule)?;
    assert!(stock_accounting(&replayed).is_err());
    let pasted = pasted_regression(false).run()?;
    assert_eq!(pasted.render(), replayed.render());
    Ok(())
}

#[test]
fn random_schedules_find_it_too_and_cover_the_space() -> grpc_chaos::Result {
    let report = explorer(false).seed(3).budget(30).explore()?;
    assert_eq!(report.runs, 30);
    let found = report
        .broken(STOCK_ACCOUNTING)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    // Each failing schedule replays its failure.
    let replayed = explorer(false).run(&found.first.schedule)?;
    assert_eq!(
        stock_accounting(&replayed).unwrap_err(),
        found.first.message
    );
    for c in &report.coverage {
        assert!(
            c.schedules > 0,
            "{} never tried: {}",
            c.target.on(),
            report.summary()
        );
    }
    Ok(())
}

#[test]
fn the_fixed_service_passes_the_same_exploration() -> grpc_chaos::Result {
    let swept = explorer(true).sweep_instants()?;
    swept.assert_passed();
    explorer(true).seed(3).budget(30).explore()?.assert_passed();
    // The pasted regression test holds for the fixed service: the
    // cancelled reservation is released.
    let trace = pasted_regression(true).run()?;
    stock_accounting(&trace).map_err(|e| panic!("{e}"))
}

#[test]
fn a_seed_and_schedule_number_give_the_same_schedule_and_trace() -> grpc_chaos::Result {
    let a = explorer(false).seed(9).schedule(17)?;
    let b = explorer(false).seed(9).schedule(17)?;
    assert_eq!(a, b);
    assert_ne!(a, explorer(false).seed(9).schedule(18)?);
    let (x, y) = (explorer(false).run(&a)?, explorer(false).run(&a)?);
    assert_eq!(x.render(), y.render());
    assert_eq!(x.to_json(), y.to_json());
    Ok(())
}

#[test]
fn a_panicking_invariant_is_that_invariants_failure() -> grpc_chaos::Result {
    let report = explorer(true)
        .invariant("picky", |t: &Trace| -> Result<(), String> {
            assert!(!t.render().contains("[injected]"), "saw an injected frame");
            Ok(())
        })
        .budget(40)
        .sweep_instants()?;
    let picky = report
        .broken("picky")
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert_eq!(picky.first.message, "panicked: saw an injected frame");
    assert!(report.broken(STOCK_ACCOUNTING).is_none());
    assert!(report.broken(RUN_FAILED).is_none());
    Ok(())
}

fn refused(e: &grpc_chaos::Error, says: &str) {
    assert!(e.to_string().contains(says), "{e}");
}

#[test]
fn bad_input_is_a_typed_error_that_says_what_to_change() {
    let e = explorer(false).space(Space::new()).explore().unwrap_err();
    assert!(e.is_misconfigured());
    refused(
        &e,
        "the fault space is empty: add what may break with Space::crash",
    );

    let e = explorer(false).budget(0).explore().unwrap_err();
    refused(&e, "Explorer::budget(0) runs nothing");

    let e = explorer(false)
        .space(Space::new().crash("inventroy"))
        .sweep_instants()
        .unwrap_err();
    assert!(e.is_unknown_host());
    refused(
        &e,
        "unknown host `inventroy` in Space::crash; known hosts: inventory, orders",
    );

    let e = explorer(false)
        .space(Space::new().crash("orders"))
        .explore()
        .unwrap_err();
    refused(&e, "Space::crash: `orders` is a client host");

    let e = explorer(false)
        .space(space().window(ms(10), ms(5_000)))
        .explore()
        .unwrap_err();
    refused(&e, "Space::window ends at 5000ms, after the run's end at 3000ms: shorten the window or lengthen the run");

    let e = explorer(false)
        .space(Space::new().cancel("inventory", "inventory"))
        .explore()
        .unwrap_err();
    refused(&e, "the baseline has no call from inventory to inventory");

    let e = explorer(false)
        .invariant("never", |_: &Trace| Err("no"))
        .explore()
        .unwrap_err();
    refused(
        &e,
        "the baseline (the scenario without faults) already breaks invariant `never`: no",
    );
}

#[test]
fn a_baseline_that_is_not_deterministic_is_refused_with_its_first_differing_line() {
    static BUILDS: AtomicU64 = AtomicU64::new(0);
    let e = Explorer::new(|seed| {
        // Each build waits longer than the last: the scenario depends on
        // something outside its seed.
        let wait = ms(1 + BUILDS.fetch_add(1, Ordering::Relaxed));
        let mut sim = cancel_unsafe::scenario(seed, true);
        sim.client("clock", move |c| async move {
            tokio::time::sleep(wait).await;
            let mut inventory = InventoryClient::new(c.channel("inventory"));
            let _ = inventory.reserve(ReserveRequest::default()).await;
            Ok(())
        });
        sim
    })
    .space(space())
    .explore()
    .unwrap_err();
    assert!(e.is_nondeterministic(), "{e}");
    refused(&e, "two runs with the same seed differ");
    refused(&e, "baseline:");
    refused(&e, "its repeat:");
}

#[test]
fn every_kind_of_fault_places_and_runs_and_the_fixed_service_passes_them_all() -> grpc_chaos::Result
{
    let all = space()
        .handler_fail("inventory", tonic::Code::Unavailable)
        .handler_hang("inventory")
        .max_faults(3);
    let report = explorer(true).space(all).budget(60).explore()?;
    report.assert_passed();
    for c in &report.coverage {
        assert!(c.schedules > 0, "{}", report.summary());
    }
    Ok(())
}

#[test]
fn a_run_that_fails_by_itself_is_reported_and_its_trace_still_judged() -> grpc_chaos::Result {
    // A second caller that gives up on the first failed reservation: a
    // fault that fails its call fails the run.
    let strict = |seed| {
        let mut sim = cancel_unsafe::scenario(seed, false);
        sim.client("audit", |c| async move {
            let mut inventory = InventoryClient::new(c.channel("inventory"));
            inventory.reserve(ReserveRequest::default()).await?;
            Ok(())
        });
        sim
    };
    let report = Explorer::new(strict)
        .space(Space::new().handler_fail("inventory", tonic::Code::Unavailable))
        .invariant(STOCK_ACCOUNTING, stock_accounting)
        .budget(20)
        .sweep_instants()?;
    let failed = report
        .broken(RUN_FAILED)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    assert!(
        failed.first.message.contains("client `audit` failed"),
        "{}",
        failed.first.message
    );
    // Failing handlers reserve nothing: the stock still adds up.
    assert!(
        report.broken(STOCK_ACCOUNTING).is_none(),
        "{}",
        report.summary()
    );
    assert!(failed.first.left_baseline.is_some());
    Ok(())
}

/// "Sometimes" assertions: states the schedules should reach at least
/// once. They fail no run; the report counts the schedules that met each
/// and names those none met.
#[test]
fn sometimes_assertions_count_what_the_schedules_reached() -> grpc_chaos::Result {
    let dropped = |t: &Trace| {
        t.runs_on("inventory")
            .any(|r| r.end == grpc_chaos::trace::RunEnd::Dropped)
    };
    let report = explorer(true)
        .sometimes("a reservation cancelled mid-work", dropped)
        .sometimes("inventory answers twice at once", |_| false)
        .sometimes("a panicking check", |_| panic!("not met"))
        .budget(20)
        .explore()?;
    report.assert_passed();
    let counts: Vec<(&str, usize)> = report
        .sometimes
        .iter()
        .map(|(n, c)| (n.as_str(), *c))
        .collect();
    assert_eq!(counts.len(), 3);
    assert!(counts[0].1 > 0 && counts[0].1 <= 20, "{counts:?}");
    assert_eq!(
        report.never_reached(),
        ["inventory answers twice at once", "a panicking check"]
    );
    let summary = report.summary();
    assert!(
        summary.contains("\n    inventory answers twice at once: 0 (never reached)"),
        "{summary}"
    );
    Ok(())
}
