//! The bug zoo as the CLI hunts it (`grpc-chaos explore NAME`, and each
//! bug's line in `run --all`): every bug is found by the default
//! exploration from its generic space, shrunk, its minimal run replayed
//! for the trace, and the fixed service passes the same exploration.

use grpc_chaos_scenarios::zoo;

#[test]
fn every_bug_of_the_zoo_is_found_shrunk_and_its_fix_passes() -> grpc_chaos::Result {
    for bug in zoo::all() {
        let hunt = bug.hunt(0)?;
        let found = hunt
            .found()
            .unwrap_or_else(|| panic!("{} not found:\n{}", bug.name, hunt.buggy.summary()));
        assert_eq!(hunt.buggy.runs, 100, "the default budget");
        let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
        assert!(!shrunk.exhausted, "{}: {}", bug.name, hunt.buggy.summary());
        hunt.fixed.assert_passed();
        assert!(hunt.passed(), "{}", hunt.line());
        // The minimal run replayed still breaks the bug's invariant.
        let trace = hunt.minimal.as_ref().expect("the minimal run's trace");
        let (_, check) = bug.invariant;
        assert_eq!(check(trace), Err(shrunk.message.clone()), "{}", bug.name);
        assert!(hunt.line().starts_with(&format!(
            "found, shrunk to {} fault",
            shrunk.schedule.faults.len()
        )));
    }
    Ok(())
}

#[test]
fn the_cancel_unsafe_reservation_reads_as_the_cli_prints_it() -> grpc_chaos::Result {
    let bug = zoo::find("cancel-unsafe-reserve").expect("in the zoo");
    let hunt = bug.hunt(0)?;
    assert_eq!(
        hunt.line(),
        "found, shrunk to 1 fault in 3 runs; the fixed service passes 100 runs"
    );
    assert_eq!(
        hunt.verdict().as_deref(),
        Some("invariant `stock accounting` broken: 2 units leaked: reserved 10, committed 8, released 0")
    );
    // Same seed, same hunt: the CLI's output is the same bytes.
    let again = bug.hunt(0)?;
    assert_eq!(again.buggy.summary(), hunt.buggy.summary());
    assert_eq!(again.fixed.summary(), hunt.fixed.summary());
    assert!(zoo::find("no-such-bug").is_none());
    Ok(())
}
