//! `check::check_determinism` catches a scenario whose runs differ, also
//! when only one of them fails, and passes a deterministic failure through
//! as the run's own error.

use std::sync::atomic::{AtomicU64, Ordering};

use grpc_chaos::check::check_determinism;
use grpc_chaos::Sim;

/// A sim whose player logs `runs` (one more each time it is built) or,
/// with `fail_first`, fails on the first build only.
fn sim(runs: &'static AtomicU64, log_it: bool, fail_first: bool) -> Sim {
    let n = runs.fetch_add(1, Ordering::Relaxed);
    let mut sim = Sim::builder().seed(4).build();
    sim.server("store", |s| s);
    sim.client("player", move |_| async move {
        if log_it {
            tracing::info!(n, "built");
        }
        if fail_first && n == 0 {
            return Err("only the first run fails".into());
        }
        Ok(())
    });
    sim
}

#[test]
fn a_trace_that_differs_between_runs_is_caught_at_its_line() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let err = check_determinism(|| sim(&RUNS, true, false)).expect_err("the log differs");
    assert!(err.is_nondeterministic(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("differ at line"), "{msg}");
    assert!(
        msg.contains("built n=0") && msg.contains("built n=1"),
        "{msg}"
    );
}

#[test]
fn a_run_that_fails_only_once_is_caught() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let err = check_determinism(|| sim(&RUNS, false, true)).expect_err("only one run fails");
    assert!(err.is_nondeterministic(), "{err}");
    // The failing run ended at once; the other settled first.
    assert!(err.to_string().contains("\"ended_us\""), "{err}");
}

#[test]
fn runs_that_fail_with_different_errors_are_caught() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let build = || {
        let n = RUNS.fetch_add(1, Ordering::Relaxed);
        let mut sim = Sim::builder().seed(4).build();
        sim.client("player", move |_| async move {
            Err(format!("failure number {n}").into())
        });
        sim
    };
    let err = check_determinism(build).expect_err("the errors differ");
    assert!(err.is_nondeterministic(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("differ in how they ended"), "{msg}");
    assert!(
        msg.contains("failure number 0") && msg.contains("failure number 1"),
        "{msg}"
    );
}

#[test]
fn a_deterministic_failure_is_the_run_error_with_its_trace() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let build = || {
        let mut sim = sim(&RUNS, false, false);
        sim.client("critic", |_| async { Err("always fails".into()) });
        sim
    };
    let err = check_determinism(build).expect_err("the critic fails");
    assert!(!err.is_nondeterministic(), "{err}");
    assert!(err.to_string().contains("always fails"), "{err}");
    assert!(err.trace().is_some(), "the failing run's trace is kept");
}

/// A client body that panics fails both runs the same way: the error does
/// not quote tokio's task id, which grows from one run to the next.
#[test]
fn a_panicking_client_is_a_deterministic_failure() {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let build = || {
        let mut sim = sim(&RUNS, false, false);
        sim.client("critic", |_| async { panic!("deliberate") });
        sim
    };
    let err = check_determinism(build).expect_err("the critic panics");
    assert!(!err.is_nondeterministic(), "{err}");
    assert!(err.is_client_failure(), "{err}");
}
