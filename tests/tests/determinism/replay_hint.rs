//! A failed run's "reproduce with" hint carries everything the run took
//! from the environment: with `CHAOS_JITTER_US` set, the seed alone would
//! replay a different run; and a variable that is not a number is a
//! misconfiguration. (The test binary runs itself again with the
//! environment set, so no test changes its own process's environment and
//! tests running at once in this binary cannot race on it.)

use grpc_chaos::Sim;

/// Run by the next test with `CHAOS_SEED` and `CHAOS_JITTER_US` set: a
/// run whose client fails, seed and jitter from the environment.
#[test]
#[ignore = "run by a_failed_run_names_the_jitter_it_took_from_the_environment"]
fn failing_probe() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Err("on purpose".into()) });
    let err = sim.run().expect_err("the client fails");
    println!("error: {err}");
    let trace = err.trace().expect("a run's error keeps its trace");
    println!("replay: {}", trace.replay_env());
    println!(
        "page has it: {}",
        trace.render_html().contains(&trace.replay_env())
    );
}

/// Runs the ignored test `name` of this binary again, with `env` set and
/// every variable the probes read otherwise removed; its output.
fn rerun(name: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = grpc_chaos_tests::rerun(module_path!(), name);
    cmd.arg("--nocapture").env("GRPC_CHAOS_ARTIFACTS", "0");
    for var in [
        "CHAOS_SEED",
        "CHAOS_JITTER_US",
        "PROBE_BUILDER_JITTER",
        "PROBE_BUILDER_SEED",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the test binary runs again");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn probe(env: &[(&str, &str)]) -> String {
    rerun("failing_probe", env)
}

#[test]
fn a_failed_run_names_the_jitter_it_took_from_the_environment() {
    let out = probe(&[("CHAOS_SEED", "5"), ("CHAOS_JITTER_US", "700")]);
    assert!(
        out.contains("(reproduce with CHAOS_JITTER_US=700 CHAOS_SEED=5)"),
        "{out}"
    );
    assert!(
        out.contains("replay: CHAOS_JITTER_US=700 CHAOS_SEED=5"),
        "{out}"
    );
    assert!(out.contains("page has it: true"), "{out}");
    // Without jitter from the environment, the seed is the whole story.
    let out = probe(&[("CHAOS_SEED", "5")]);
    assert!(out.contains("(reproduce with CHAOS_SEED=5)"), "{out}");
    // Set to nothing, as CI templates do, is unset: the default seed 0.
    let out = probe(&[("CHAOS_SEED", ""), ("CHAOS_JITTER_US", " ")]);
    assert!(out.contains("(reproduce with CHAOS_SEED=0)"), "{out}");
}

/// Run by the next test with `CHAOS_JITTER_US` (and maybe `CHAOS_SEED`)
/// set: a run that succeeds, its jitter set by the builder when
/// `PROBE_BUILDER_JITTER` is set, its seed (9) when `PROBE_BUILDER_SEED` is.
#[test]
#[ignore = "run by a_malformed_seed_or_jitter_variable_is_misconfigured_whatever_the_builder_says"]
fn jitter_probe() {
    let mut builder = Sim::builder();
    if std::env::var_os("PROBE_BUILDER_JITTER").is_some() {
        builder = builder.latency_jitter(std::time::Duration::from_millis(2));
    }
    if std::env::var_os("PROBE_BUILDER_SEED").is_some() {
        builder = builder.seed(9);
    }
    let mut sim = builder.build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    match sim.run() {
        Ok(trace) => println!("ran: {}", trace.replay_env()),
        Err(e) => println!("misconfigured={}: {}", e.is_misconfigured(), e.message()),
    }
}

fn jitter_probe_with(env: &[(&str, &str)]) -> String {
    rerun("jitter_probe", env)
}

#[test]
fn a_malformed_seed_or_jitter_variable_is_misconfigured_whatever_the_builder_says() {
    let bad = r#"misconfigured=true: CHAOS_JITTER_US="2ms" is not an unsigned 64-bit integer (invalid digit found in string); unset it or give a number"#;
    // The builder sets the jitter: the variable's typo is reported anyway.
    let out = jitter_probe_with(&[("CHAOS_JITTER_US", "2ms"), ("PROBE_BUILDER_JITTER", "1")]);
    assert!(out.contains(bad), "{out}");
    // Without the builder's jitter, as before.
    let out = jitter_probe_with(&[("CHAOS_JITTER_US", "2ms")]);
    assert!(out.contains(bad), "{out}");
    // The same words as a malformed CHAOS_SEED.
    let out = jitter_probe_with(&[("CHAOS_SEED", "x5")]);
    assert!(
        out.contains(r#"misconfigured=true: CHAOS_SEED="x5" is not an unsigned 64-bit integer (invalid digit found in string); unset it or give a number"#),
        "{out}"
    );
    // The builder sets the seed: a malformed CHAOS_SEED is reported too,
    // and a number loses to the builder's seed.
    let out = jitter_probe_with(&[("CHAOS_SEED", "x5"), ("PROBE_BUILDER_SEED", "1")]);
    assert!(
        out.contains(r#"misconfigured=true: CHAOS_SEED="x5" is not"#),
        "{out}"
    );
    let out = jitter_probe_with(&[("CHAOS_SEED", "5"), ("PROBE_BUILDER_SEED", "1")]);
    assert!(out.contains("ran: CHAOS_SEED=9\n"), "{out}");
    // A number is ignored when the builder sets the jitter: the run does
    // not take it, so its replay hint does not name it.
    let out = jitter_probe_with(&[("CHAOS_JITTER_US", "700"), ("PROBE_BUILDER_JITTER", "1")]);
    assert!(out.contains("ran: CHAOS_SEED=0\n"), "{out}");
    let out = jitter_probe_with(&[("CHAOS_JITTER_US", "700")]);
    assert!(
        out.contains("ran: CHAOS_JITTER_US=700 CHAOS_SEED=0\n"),
        "{out}"
    );
}
