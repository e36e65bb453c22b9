//! A failing test leaves its trace on disk and names its seed: after a
//! failed trace assertion, a failed run, and a panic while holding a trace.

use std::path::Path;

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

#[test]
fn panic_while_holding_a_trace_writes_it() {
    let probe = std::thread::Builder::new()
        .name("artifact_panic_probe".into())
        .spawn(|| {
            let story = catalog::find("deadline-chain").expect("story");
            let trace = (story.simulate)(13).expect("run");
            assert!(
                trace.render().contains("no such line"),
                "deliberate failure"
            );
        })
        .expect("thread");
    assert!(probe.join().is_err(), "the probe panicked");
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target");
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(target, Into::into);
    assert_written(&target.join("grpc-chaos/artifact_panic_probe/13"), 13);
}
