//! A seed sweep split into ranges, one test per range, so that CI workers
//! can share it: `cargo nextest run --partition count:K/N -p
//! grpc-chaos-tests --test determinism sweeps::` runs every N-th test of
//! this file (nextest counts after the filter; see the guide's determinism
//! page, harness/src/guide/determinism.md). Plain `cargo test` runs all of
//! them.
//!
//! A failing seed is printed with `reproduce with CHAOS_SEED=<n>`:
//! `CHAOS_SEED=<n> cargo test -p grpc-chaos-tests --test determinism
//! sweeps::` runs that seed in the range that holds it and nothing in the
//! others.
//!
//! The story is cheap on purpose: a player saves three times, concurrently,
//! through a link whose latency jitters by up to 3 ms (*simulated*) per
//! message, so each seed is a different interleaving.

use std::collections::BTreeSet;
use std::ops::Range;
use std::time::Duration;

use grpc_chaos::check::sweep;
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};

/// Runs the story for every seed in `seeds`; fails with the seeds to replay
/// (`CHAOS_SEED=<n>`) when one breaks, or when the jitter did not make the
/// seeds differ (checked only when the whole range ran, not in a replay).
fn sweep_range(seeds: Range<u64>) {
    let mut timelines = BTreeSet::new();
    let report = sweep(seeds.clone(), |seed| {
        let mut sim = Sim::builder()
            .seed(seed)
            .latency_jitter(Duration::from_millis(3))
            .build();
        sim.server("store", |s| {
            s.add_service(Store::with_work(Duration::from_millis(2)).into_server())
        });
        sim.client("player", |c| async move {
            let store = StoreClient::new(c.channel("store"));
            let save = |points| {
                let mut store = store.clone();
                async move {
                    let req = SaveRequest {
                        match_id: "m1".into(),
                        points,
                    };
                    store.save(req).await.map(|r| r.into_inner().total)
                }
            };
            let (a, b, c) = tokio::join!(save(1), save(2), save(4));
            // Whatever the order, the last save to land sees all 7 points.
            let totals = [a?, b?, c?];
            if totals.iter().max() != Some(&7) {
                return Err(format!("totals {totals:?}: a save was lost").into());
            }
            Ok(())
        });
        let trace = sim.run()?;
        assert_eq!(trace.attempts("store", SAVE), 3, "{}", trace.render());
        timelines.insert(trace.render());
        Ok(())
    });
    report.assert_passed();
    if report.replay.is_some() {
        return;
    }
    assert_eq!(report.runs, seeds.clone().count());
    assert!(
        timelines.len() > 1,
        "seeds {seeds:?} all gave the same trace: the jitter does not reach the run"
    );
}

#[test]
fn seeds_000_to_025() {
    sweep_range(0..25);
}

#[test]
fn seeds_025_to_050() {
    sweep_range(25..50);
}

#[test]
fn seeds_050_to_075() {
    sweep_range(50..75);
}

#[test]
fn seeds_075_to_100() {
    sweep_range(75..100);
}
