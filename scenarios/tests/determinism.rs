//! Same seed, same bytes, in separate processes: the CLI runs the whole
//! catalog and the zoo's hunts twice and every written trace (text, JSON
//! and HTML) must match.

use std::path::Path;
use std::process::Command;

fn run_catalog(out: &Path, seed: &str) {
    let status = Command::new(env!("CARGO_BIN_EXE_grpc-chaos"))
        .args(["run", "--all", "--seed", seed, "--out"])
        .arg(out)
        .env_remove("CHAOS_SEED")
        .status()
        .expect("the CLI starts");
    assert!(status.success(), "catalog failed with seed {seed}");
}

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .expect("trace dir")
        .map(|e| {
            let path = e.expect("entry").path();
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("readable"))
        })
        .collect();
    all.sort();
    all
}

#[test]
fn two_processes_write_identical_traces() {
    let base = std::env::temp_dir().join(format!("grpc-chaos-determinism-{}", std::process::id()));
    let (a, b) = (base.join("a"), base.join("b"));
    run_catalog(&a, "3");
    run_catalog(&b, "3");
    let (fa, fb) = (files(&a), files(&b));
    // `run --all` writes each story's trace, then each zoo bug's minimal run.
    let traced =
        grpc_chaos_scenarios::catalog::all().len() + grpc_chaos_scenarios::zoo::all().len();
    assert_eq!(
        fa.len(),
        traced * 3,
        "every story and zoo bug × (txt + json + html)"
    );
    for ((name_a, bytes_a), (name_b, bytes_b)) in fa.iter().zip(&fb) {
        assert_eq!(name_a, name_b);
        assert!(bytes_a == bytes_b, "{name_a} differs between processes");
    }
    let _ = std::fs::remove_dir_all(&base);
}
