//! What the CLI prints: every replay hint is the whole environment, a
//! failure is said once, and `--out`'s help states its rule.

use std::process::Command;

/// Runs the CLI as a user with the binary on PATH does (no `CARGO` in its
/// environment; `cargo test` sets it for this process).
fn cli(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_grpc-chaos"))
        .args(args)
        .env_remove("CHAOS_SEED")
        .env_remove("CHAOS_JITTER_US")
        .env_remove("CARGO")
        .envs(env.iter().copied())
        .output()
        .expect("the CLI starts");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// 100 s of jitter per message (*simulated*) is longer than the story's
/// 10 s duration: every seed fails, refused as misconfigured.
const HUGE_JITTER_US: &str = "100000000";

#[test]
fn each_failing_seed_of_a_sweep_replays_with_its_seed_and_jitter() {
    let out = cli(
        &[
            "sweep",
            "store-restart",
            "--seeds",
            "0..1",
            "--jitter-ms",
            "100000",
        ],
        &[],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("store-restart: 1 seed, 0 passed, 1 failed"),
        "{out}"
    );
    assert!(lines[1].starts_with("  seed 0: "), "{out}");
    assert_eq!(
        lines[2],
        format!("    replay: CHAOS_JITTER_US={HUGE_JITTER_US} CHAOS_SEED=0 grpc-chaos run store-restart"),
        "{out}"
    );
    assert_eq!(
        out.matches("CHAOS_SEED=").count(),
        1,
        "one hint per seed: {out}"
    );
}

#[test]
fn a_run_that_fails_says_why_once() {
    let dir = std::env::temp_dir().join(format!("grpc-chaos-cli-{}", std::process::id()));
    let out = cli(
        &["run", "store-restart", "--out", &dir.to_string_lossy()],
        &[("CHAOS_JITTER_US", HUGE_JITTER_US)],
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Jitter longer than the run: refused before it runs, said once.
    assert!(
        out.contains("FAIL    run failed: link latency 1ms plus latency_jitter"),
        "{out}"
    );
    assert_eq!(out.matches("no message would arrive").count(), 1, "{out}");
    assert_eq!(out.matches("CHAOS_SEED=").count(), 1, "{out}");
    assert!(
        out.ends_with(&format!(
            "(seed 0; reproduce with CHAOS_JITTER_US={HUGE_JITTER_US} CHAOS_SEED=0 grpc-chaos run store-restart)\n"
        )),
        "{out}"
    );
}

#[test]
fn from_a_clone_the_replay_is_a_cargo_command() {
    // What `cargo run --bin grpc-chaos -- …` starts: Cargo sets `CARGO`.
    let out = cli(
        &[
            "sweep",
            "store-restart",
            "--seeds",
            "0..1",
            "--jitter-ms",
            "100000",
        ],
        &[("CARGO", "cargo")],
    );
    // This test's binary is a debug build: no `--release` in the command.
    assert!(
        out.contains(&format!(
            "    replay: CHAOS_JITTER_US={HUGE_JITTER_US} CHAOS_SEED=0 cargo run --bin grpc-chaos -- run store-restart\n"
        )),
        "{out}"
    );
}

#[test]
fn a_passing_run_replays_what_it_ran() {
    let dir = std::env::temp_dir().join(format!("grpc-chaos-cli-pass-{}", std::process::id()));
    let out = cli(
        &[
            "run",
            "deadline-chain",
            "--seed",
            "3",
            "--out",
            &dir.to_string_lossy(),
        ],
        &[],
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.ends_with("1 passed, 0 failed (seed 3; reproduce with CHAOS_SEED=3 grpc-chaos run deadline-chain)\n"),
        "{out}"
    );
}

#[test]
fn the_help_of_out_states_the_rule_not_one_folder() {
    let help = cli(
        &["run", "--help"],
        &[("CARGO_TARGET_DIR", "/somewhere/else")],
    );
    assert!(
        help.contains("$CARGO_TARGET_DIR/grpc-chaos/catalog when CARGO_TARGET_DIR is set"),
        "{help}"
    );
    assert!(!help.contains("[default: target"), "{help}");
    assert!(!help.contains("/somewhere/else"), "{help}");
}

#[test]
fn a_sweep_range_may_include_its_last_seed() {
    let out = cli(
        &[
            "sweep",
            "deadline-chain",
            "--seeds",
            "4..=4",
            "--jitter-ms",
            "0",
        ],
        &[],
    );
    assert!(
        out.starts_with("deadline-chain: 1 seed, 1 passed, 0 failed"),
        "{out}"
    );
}

/// The `.txt` a story writes starts with the summary, its verdict the
/// story's, then the default render (DATA folded, connection noise hidden);
/// the JSON keeps every frame; the page says the verdict first.
#[test]
fn the_written_text_starts_with_the_summary_and_the_json_keeps_every_frame() {
    let dir = std::env::temp_dir().join(format!("grpc-chaos-cli-txt-{}", std::process::id()));
    let out = cli(
        &[
            "run",
            "receiver-decides-speed",
            "--out",
            &dir.to_string_lossy(),
        ],
        &[],
    );
    assert!(out.contains("receiver-decides-speed   PASS"), "{out}");
    let read = |ext: &str| {
        std::fs::read_to_string(dir.join(format!("receiver-decides-speed.{ext}")))
            .unwrap_or_else(|e| panic!("{ext}: {e}"))
    };
    let (txt, json, html) = (read("txt"), read("json"), read("html"));
    let _ = std::fs::remove_dir_all(&dir);
    let lines: Vec<&str> = txt.lines().collect();
    assert!(lines[0].starts_with("summary (seed 0, "), "{txt}");
    assert!(
        lines[1].starts_with("  verdict           PASS: gateway→player c1 s1 stalled"),
        "{txt}"
    );
    assert!(
        txt.contains(
            "  stalls                80.000                       gateway→player c1 s1 stalled"
        ),
        "{txt}"
    );
    let (_, render) = txt
        .split_once("\n\n")
        .expect("a blank line after the summary");
    assert!(render.starts_with("     t(ms)  where"), "{render}");
    assert!(render.contains(" DATA ×"), "DATA runs folded: {render}");
    assert!(!render.contains("SETTINGS"), "noise hidden: {render}");
    assert!(json.contains("\"SETTINGS\""), "the JSON has every frame");
    assert!(json.matches("\"DATA\"").count() > render.matches(" DATA ").count());
    let verdict = html
        .find("<p class=\"verdict pass\">PASS: ")
        .expect("the verdict");
    assert!(
        verdict
            < html
                .find("<section id=\"waterfall\">")
                .expect("a waterfall")
    );
}
