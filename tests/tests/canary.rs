//! The determinism canary (`GRPC_CHAOS_CANARY=1`): every run a test makes
//! is compared with the same test's run in a child process. Each test here
//! turns it on for its own runs; the child is this binary, running that
//! one test.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use grpc_chaos::check::CANARY_ENV;
use grpc_chaos::Sim;

fn canary_on() {
    // Every test of this binary sets the same value: no test here runs
    // without the canary, so setting it from several threads is harmless.
    std::env::set_var(CANARY_ENV, "1");
}

/// A sim whose player logs `what` at 10 ms.
fn logging(what: String) -> Sim {
    let mut sim = Sim::builder().seed(11).build();
    sim.server("store", |s| s);
    sim.client("player", move |_| async move {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        tracing::info!(what, "checked");
        Ok(())
    });
    sim
}

#[test]
fn a_value_that_differs_between_processes_is_caught_at_its_instant() {
    canary_on();
    let pid = std::process::id();
    let err = logging(format!("pid {pid}"))
        .run()
        .expect_err("the child logs its own pid");
    assert!(err.is_nondeterministic(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("at 10.000 ms"), "{msg}");
    let line = |side: &str| {
        msg.lines()
            .find(|l| l.trim_start().starts_with(side))
            .unwrap_or_else(|| panic!("no line for {side}: {msg}"))
            .to_owned()
    };
    assert!(
        line("this process:").contains(&format!("pid {pid}")),
        "{msg}"
    );
    let child = line("the canary's child process:");
    assert!(
        child.contains("what=\"pid ") && !child.contains(&format!("pid {pid}\"")),
        "{msg}"
    );
    // The failure keeps its trace, as every failed run does.
    assert!(err.trace().is_some());
}

#[test]
fn state_outside_the_closures_sees_one_run() {
    // A second run in this process would have counted twice.
    canary_on();
    let hits = Arc::new(AtomicU32::new(0));
    let mut sim = Sim::builder().seed(12).build();
    sim.server("store", |s| s);
    let counted = hits.clone();
    sim.client("player", move |_| async move {
        counted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    });
    let trace = sim.run().expect("deterministic, and the child agrees");
    assert_eq!(hits.load(Ordering::Relaxed), 1);
    assert_eq!(trace.seed(), 12);
    assert_checked();
}

/// A run on this thread now is compared: the canary is on for this test
/// (a pass above was a check, not a canary that did nothing).
fn assert_checked() {
    let pid = std::process::id();
    let err = logging(format!("pid {pid}")).run().expect_err("compared");
    assert!(err.is_nondeterministic(), "{err}");
}

#[test]
fn a_run_that_ends_differently_keeps_its_own_error() {
    canary_on();
    let pid = std::process::id();
    let mut sim = Sim::builder().seed(13).build();
    sim.server("store", |s| s);
    // A client's error is not in the trace: only the endings differ.
    sim.client("player", move |_| async move {
        Err(format!("pid {pid}").into())
    });
    let err = sim.run().expect_err("fails, differently in the child");
    assert!(err.is_nondeterministic(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("differ in how they ended"), "{msg}");
    assert!(
        msg.contains(&format!(
            "the run itself failed: client `player` failed: pid {pid}"
        )),
        "{msg}"
    );
}

#[test]
fn a_thread_of_the_test_in_the_child_writes_nothing_down() {
    canary_on();
    // Run 1 of the test's thread; then a thread of its own makes a run
    // that differs between processes. In the child, that thread must not
    // write over the test's run 1.
    logging("same".into()).run().expect("run 1 agrees");
    let pid = std::process::id();
    std::thread::Builder::new()
        .name("a_helper_of_this_test".into())
        .spawn(move || logging(format!("pid {pid}")).run())
        .expect("thread")
        .join()
        .expect("no panic")
        .expect("not compared");
    logging("same again".into()).run().expect("run 2 agrees");
}

#[test]
fn every_run_of_a_test_is_compared_with_the_same_run_of_the_child() {
    canary_on();
    // Runs 1 and 2 agree with the child's; run 3 does not.
    logging("same".into()).run().expect("run 1 agrees");
    logging("same again".into()).run().expect("run 2 agrees");
    let pid = std::process::id();
    let err = logging(format!("pid {pid}"))
        .run()
        .expect_err("run 3 differs");
    assert!(err.is_nondeterministic(), "{err}");
}

#[test]
fn a_run_off_the_test_thread_is_not_checked() {
    canary_on();
    let pid = std::process::id();
    // A thread the test spawns has no test to run again.
    std::thread::spawn(move || logging(format!("pid {pid}")).run())
        .join()
        .expect("no panic")
        .expect("not compared");
    assert_checked();
}

#[test]
fn a_thread_named_like_no_test_is_not_checked() {
    canary_on();
    let pid = std::process::id();
    // A name of the test's own choosing: the child finds no such test.
    std::thread::Builder::new()
        .name("a_probe_of_this_test".into())
        .spawn(move || logging(format!("pid {pid}")).run())
        .expect("thread")
        .join()
        .expect("no panic")
        .expect("not compared");
    assert_checked();
}
