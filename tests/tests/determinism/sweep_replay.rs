//! A seed sweep whose body panics for one seed: the other seeds still run,
//! and the hint the summary prints replays exactly that seed (the test
//! binary runs itself again with that environment).

use std::time::Duration;

use grpc_chaos::check::{sweep, SweepReport};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

/// One save through a jittered link for each seed of 0..6; the check
/// after the run panics for seed 3.
fn sweep_with_a_bad_seed() -> SweepReport {
    sweep(0..6, |seed| {
        let mut sim = Sim::builder()
            .seed(seed)
            .latency_jitter(Duration::from_millis(3))
            .build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client("player", |c| async move {
            StoreClient::new(c.channel("store"))
                .save(SaveRequest::default())
                .await?;
            Ok(())
        });
        let trace = sim.run()?;
        assert!(seed != 3, "seed 3 is bad; ended at {:?}", trace.ended_at());
        Ok(())
    })
}

#[test]
fn a_panic_fails_its_seed_and_the_sweep_goes_on() {
    if std::env::var_os("CHAOS_SEED").is_some() {
        return; // a replay of some seed; `replay_probe` covers that
    }
    let report = sweep_with_a_bad_seed();
    assert_eq!(report.runs, 6, "{}", report.summary());
    let failed: Vec<u64> = report.failures.iter().map(|(s, _)| *s).collect();
    assert_eq!(failed, [3], "{}", report.summary());
    let summary = report.summary();
    assert!(
        summary.contains("seed 3: panicked: seed 3 is bad")
            // With CHAOS_JITTER_US set in the developer's shell, the hint
            // carries it too.
            && summary.ends_with(&format!("(reproduce with {})", report.replay_env(3)))
            && report.replay_env(3).ends_with("CHAOS_SEED=3"),
        "{summary}"
    );
}

/// Run by the next test with the hint's environment set.
#[test]
#[ignore = "run by the_printed_hint_replays_only_that_seed"]
fn replay_probe() {
    let report = sweep_with_a_bad_seed();
    println!("runs={} failures={:?}", report.runs, report.failures);
    println!("{}", report.summary());
}

#[test]
fn the_printed_hint_replays_only_that_seed() {
    let replay = |seed: &str| {
        let out = grpc_chaos_tests::rerun(module_path!(), "replay_probe")
            .arg("--nocapture")
            .env("CHAOS_SEED", seed)
            .env("GRPC_CHAOS_ARTIFACTS", "0")
            .output()
            .expect("the test binary runs again");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let inside = replay("3");
    assert!(
        inside.contains("runs=1 failures=[(3, \"panicked: seed 3 is bad"),
        "{inside}"
    );
    assert!(
        inside.contains("CHAOS_SEED=3: replayed seed 3 only of 0..6, failed"),
        "{inside}"
    );
    let outside = replay("30");
    assert!(outside.contains("runs=0 failures=[]"), "{outside}");
    assert!(
        outside.contains("CHAOS_SEED=30 is outside 0..6: no seed of this sweep ran"),
        "{outside}"
    );
}
