//! A failing test leaves its trace on disk and names its seed: after a
//! failed trace assertion, a failed run, a panic while holding a trace,
//! and a panic after the trace was dropped; one write per failure, with
//! what failed in `error.txt`.

use std::path::{Path, PathBuf};

use grpc_chaos::Sim;
use grpc_chaos_scenarios::catalog;

fn assert_written(dir: &Path, seed: u64) {
    assert!(dir.ends_with(seed.to_string()), "{}", dir.display());
    for file in ["trace.txt", "trace.json", "trace.html"] {
        let text =
            std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(
            text.contains("/tt.v1.Store/Save") || text.contains("player"),
            "{file}: {text}"
        );
    }
}

#[test]
fn failed_assertion_writes_the_trace() {
    let story = catalog::find("fresh-request").expect("story");
    let trace = (story.simulate)(11).expect("run");
    let violation = trace
        .assert_no_orphan_work()
        .expect_err("the trap leaves orphan work");
    let dir = violation.artifact().expect("written");
    assert!(
        dir.to_string_lossy()
            .contains("failed_assertion_writes_the_trace"),
        "named after the test: {}",
        dir.display()
    );
    assert_written(dir, 11);
    let why = std::fs::read_to_string(dir.join("error.txt")).expect("error.txt");
    assert!(why.starts_with("orphan work: "), "{why}");
    // The summary at the top of the text and the page says what failed.
    let txt = std::fs::read_to_string(dir.join("trace.txt")).expect("trace.txt");
    let verdict = txt.lines().nth(1).unwrap_or_default();
    assert_eq!(
        verdict,
        format!("  verdict           FAIL: {}", why.trim_end())
    );
    let html = std::fs::read_to_string(dir.join("trace.html")).expect("trace.html");
    assert!(
        html.contains("<p class=\"verdict fail\">FAIL: orphan work: "),
        "{html}"
    );
    assert!(violation.to_string().contains("trace in"), "{violation}");
}

#[test]
fn failed_run_writes_the_trace_and_names_the_seed() {
    let mut sim = Sim::builder().seed(12).build();
    sim.client("player", |_| async { Err("the body gave up".into()) });
    let err = sim.run().expect_err("the client failed");
    assert!(err.to_string().contains("CHAOS_SEED=12"), "{err}");
    let dir = err.artifact().expect("written");
    assert!(dir.join("trace.json").is_file(), "{}", dir.display());
    let why = std::fs::read_to_string(dir.join("error.txt")).expect("error.txt");
    assert!(why.contains("the body gave up"), "{why}");
}

/// Runs `body` on a thread named `name` (libtest names test threads after
/// the test; artifacts are filed under that name), expects it to panic, and
/// returns the artifact folder for `seed`.
fn panicking_probe(name: &str, seed: u64, body: impl FnOnce() + Send + 'static) -> PathBuf {
    let dir = artifact_dir(name, seed);
    // What an earlier run of this test left must not pass for this run's.
    let _ = std::fs::remove_dir_all(&dir);
    let probe = std::thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .expect("thread");
    assert!(probe.join().is_err(), "the probe panicked");
    dir
}

/// Where the artifacts of test `name` for `seed` go.
fn artifact_dir(name: &str, seed: u64) -> PathBuf {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(target, Into::into);
    target.join(format!("grpc-chaos/{name}/{seed}"))
}

/// The artifact folder of test `name` of this file: its libtest name,
/// `::` as `__`.
fn folder(name: &str) -> String {
    grpc_chaos_tests::test_name(module_path!(), name).replace("::", "__")
}

fn error_txt(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("error.txt")).expect("error.txt")
}

#[test]
fn panic_while_holding_a_trace_writes_it() {
    let dir = panicking_probe("artifact_panic_probe", 13, || {
        let story = catalog::find("deadline-chain").expect("story");
        let trace = (story.simulate)(13).expect("run");
        assert!(
            trace.render().contains("no such line"),
            "deliberate failure"
        );
    });
    assert_written(&dir, 13);
    let why = error_txt(&dir);
    assert!(why.starts_with("panicked at "), "{why}");
    assert!(why.contains("deliberate failure"), "{why}");
}

#[test]
fn panic_after_the_trace_was_dropped_still_writes_it() {
    // As `insta::assert_snapshot!(sim.run()?.render())` does: the trace is
    // gone by the time the test panics.
    let dir = panicking_probe("artifact_dropped_probe", 14, || {
        let story = catalog::find("deadline-chain").expect("story");
        let rendered = (story.simulate)(14).expect("run").render();
        assert!(rendered.contains("no such line"), "snapshot differs");
    });
    assert_written(&dir, 14);
    assert!(
        error_txt(&dir).contains("snapshot differs"),
        "{}",
        error_txt(&dir)
    );
}

#[test]
fn a_failed_sweep_leaves_the_failing_seeds_trace_not_the_last_seeds() {
    // Seed 21 panics; seeds 22 and 23 pass; then `assert_passed` panics
    // with the sweep's summary while seed 23's trace is the last one run.
    let name = "artifact_sweep_probe";
    let last = artifact_dir(name, 23);
    let _ = std::fs::remove_dir_all(&last);
    let failing = panicking_probe(name, 21, || {
        grpc_chaos::check::sweep(20..24, |seed| {
            let story = catalog::find("deadline-chain").expect("story");
            let rendered = (story.simulate)(seed)?.render();
            assert!(
                seed != 21 || rendered.contains("no such line"),
                "seed 21 is bad"
            );
            Ok(())
        })
        .assert_passed();
    });
    assert_written(&failing, 21);
    assert!(
        error_txt(&failing).contains("seed 21 is bad"),
        "{}",
        error_txt(&failing)
    );
    assert!(
        !last.exists(),
        "the sweep's own panic wrote the last seed's passing trace: {}",
        last.display()
    );
}

#[test]
fn expect_on_a_failed_run_keeps_the_runs_error() {
    let dir = panicking_probe("artifact_expect_probe", 15, || {
        let mut sim = Sim::builder().seed(15).build();
        sim.client("player", |_| async { Err("the body gave up".into()) });
        sim.run().expect("run");
    });
    // The panic of `expect` does not write the trace again over the run's
    // own artifact (which says what failed).
    let why = error_txt(&dir);
    assert!(why.contains("the body gave up"), "{why}");
    assert!(!why.starts_with("panicked"), "{why}");
}

#[test]
fn an_unwrapped_violation_says_how_to_reproduce() {
    let story = catalog::find("fresh-request").expect("story");
    let trace = (story.simulate)(16).expect("run");
    let violation = trace.assert_no_orphan_work().expect_err("orphan work");
    // `.unwrap()` prints Debug.
    let debug = format!("{violation:?}");
    assert!(debug.starts_with("orphan work: "), "{debug}");
    assert!(debug.contains("trace in "), "{debug}");
    assert!(debug.ends_with("(reproduce with CHAOS_SEED=16)"), "{debug}");
    let dir = panicking_probe("artifact_unwrap_probe", 16, move || {
        trace.assert_no_orphan_work().unwrap();
    });
    assert!(
        error_txt(&dir).starts_with("orphan work: "),
        "{}",
        error_txt(&dir)
    );
}

/// Run by the next test, with `CARGO_TARGET_DIR` set to a temp dir: a run
/// of seed 21 that fails when `PROBE_RUNS` says `fail`, passes when it
/// says `pass`, one run per word, in order (`fail pass`: both, in this
/// process).
#[test]
#[ignore = "run by a_passing_run_removes_an_earlier_processs_failure_of_its_seed"]
fn stale_probe() {
    let runs = std::env::var("PROBE_RUNS").unwrap_or_default();
    for run in runs.split_whitespace() {
        let fail = run == "fail";
        let mut sim = Sim::builder().seed(21).build();
        sim.client("player", move |_| async move {
            match fail {
                true => Err("on purpose".into()),
                false => Ok(()),
            }
        });
        assert_eq!(sim.run().is_err(), fail, "{run}");
    }
}

/// Runs [`stale_probe`] with `runs`, its artifacts under `target`.
fn stale_probe_with(target: &Path, runs: &str, artifacts_off: bool) {
    let mut cmd = grpc_chaos_tests::rerun(module_path!(), "stale_probe");
    cmd.env("CARGO_TARGET_DIR", target)
        .env("PROBE_RUNS", runs)
        .env_remove("CHAOS_SEED")
        .env_remove("CHAOS_JITTER_US")
        .env_remove("GRPC_CHAOS_ARTIFACTS");
    if artifacts_off {
        cmd.env("GRPC_CHAOS_ARTIFACTS", "0");
    }
    let out = cmd.output().expect("the test binary runs again");
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn a_passing_run_removes_an_earlier_processs_failure_of_its_seed() {
    let target = std::env::temp_dir().join(format!("grpc-chaos-stale-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&target);
    let test = target.join("grpc-chaos").join(folder("stale_probe"));
    let dir = test.join("21");
    // A failure leaves its files; the next process's pass removes them,
    // and the folders they leave empty.
    stale_probe_with(&target, "fail", false);
    assert!(dir.join("error.txt").is_file(), "{}", dir.display());
    stale_probe_with(&target, "pass", false);
    assert!(!test.exists(), "{}", test.display());
    assert!(
        target.join("grpc-chaos").is_dir(),
        "nothing above is touched"
    );
    // A file the harness did not write stays, and keeps its folder.
    stale_probe_with(&target, "fail", false);
    std::fs::write(dir.join("notes.md"), "mine").expect("a user's file");
    stale_probe_with(&target, "pass", false);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("the folder stays")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, ["notes.md"]);
    std::fs::remove_file(dir.join("notes.md")).expect("cleanup");
    // A failure of this very process stays: the test saw it.
    stale_probe_with(&target, "fail pass", false);
    assert!(dir.join("trace.json").is_file());
    // Turned off, nothing is removed either.
    stale_probe_with(&target, "pass", true);
    assert!(dir.join("trace.json").is_file());
    let _ = std::fs::remove_dir_all(&target);
}

/// Run by the next test, with `CARGO_TARGET_DIR` set to a temp dir: a test
/// that fails as `PROBE_FAILS` says: `run` (a failed run, unwrapped),
/// `unshown` (a failed run whose error the test never shows),
/// `assertion` (a failed trace assertion, unwrapped), `panic` (a panic
/// after a run that passed).
#[test]
#[ignore = "run by a_failure_names_its_trace_once"]
fn once_probe() {
    let how = std::env::var("PROBE_FAILS").unwrap_or_default();
    match how.as_str() {
        "run" => {
            let mut sim = Sim::builder().seed(31).build();
            sim.client("player", |_| async { Err("on purpose".into()) });
            sim.run().unwrap();
        }
        "unshown" => {
            // The run's error is never displayed: the assertion's panic
            // carries no path.
            let mut sim = Sim::builder().seed(31).build();
            sim.client("player", |_| async { Err("on purpose".into()) });
            let e = sim.run().unwrap_err();
            assert!(e.is_timeout(), "a client failure, not a timeout");
        }
        "assertion" => {
            let story = catalog::find("fresh-request").expect("story");
            let trace = (story.simulate)(31).expect("run");
            trace.assert_no_orphan_work().unwrap();
        }
        _ => {
            let mut sim = Sim::builder().seed(31).build();
            sim.client("player", |_| async { Ok(()) });
            let rendered = sim.run().expect("run").render();
            assert!(rendered.contains("no such line"), "on purpose");
        }
    }
}

/// Whichever way a test fails, the folder its trace was written to is
/// printed once (the failure's own message, or the harness's line on
/// stderr for a panic that carries none), with the seed to reproduce it.
#[test]
fn a_failure_names_its_trace_once() {
    let target = std::env::temp_dir().join(format!("grpc-chaos-once-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&target);
    for how in ["run", "unshown", "assertion", "panic"] {
        let out = grpc_chaos_tests::rerun(module_path!(), "once_probe")
            .arg("--nocapture")
            .env("CARGO_TARGET_DIR", &target)
            .env("PROBE_FAILS", how)
            .env_remove("CHAOS_SEED")
            .env_remove("CHAOS_JITTER_US")
            .env_remove("GRPC_CHAOS_ARTIFACTS")
            .output()
            .expect("the test binary runs again");
        assert!(!out.status.success(), "{how}: the probe fails");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = target
            .join("grpc-chaos")
            .join(folder("once_probe"))
            .join("31");
        assert!(dir.join("error.txt").is_file(), "{how}: {text}");
        let dir = dir.display().to_string();
        assert_eq!(text.matches(&dir).count(), 1, "{how}: {text}");
        assert_eq!(text.matches("CHAOS_SEED=31").count(), 1, "{how}: {text}");
    }
    let _ = std::fs::remove_dir_all(&target);
}
