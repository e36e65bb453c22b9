//! The bounded invariants (`assert_recovers_within`,
//! `assert_amplification_within`): a store that comes back and one cut off
//! for good; a retry storm across three layers and its fix.

use std::time::Duration;

use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::{ms, story};

/// A store, `faults`, and a player that makes a Save every 100 ms for 4 s,
/// each given up after 300 ms (a `tokio::time::timeout`: a channel
/// redialling a black-holed store would hold the call past an
/// `Endpoint::timeout`).
fn calls_through(faults: Vec<Fault>) -> Trace {
    let mut sim = Sim::builder()
        .seed(2)
        .duration(Duration::from_secs(20))
        .build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(5)).into_server())
    });
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.channel("store"));
        for _ in 0..40 {
            // Each outcome is in the trace; the invariants judge them.
            let mut store = store.clone();
            let _ = tokio::time::timeout(ms(300), store.save(SaveRequest::default())).await;
            tokio::time::sleep(ms(100)).await;
        }
        Ok(())
    });
    sim.run().expect("run")
}

#[test]
fn a_store_that_comes_back_recovers_and_one_cut_off_for_good_does_not() {
    let bounce = vec![
        Fault::crash("store").at(ms(1_000)),
        Fault::restart("store").at(ms(2_000)),
    ];
    let trace = calls_through(bounce);
    let failed = trace
        .calls()
        .iter()
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .count();
    assert!(failed > 0, "the crash failed calls");
    trace
        .assert_recovers_within(ms(500))
        .expect("back within 500 ms");
    // A black hole never repaired: the last fault is the black hole, and
    // the calls after it time out.
    let trace = calls_through(vec![Fault::black_hole("player", "store").at(ms(1_000))]);
    let v = trace
        .assert_recovers_within(ms(500))
        .expect_err("never recovers");
    assert_eq!(v.rule(), "recovery");
    let detail = v.detail();
    assert!(detail.contains("from player started at 1"), "{detail}");
    assert!(
        detail
            .contains("after the last fault (on player at 1000ms), and was dropped by its caller"),
        "{detail}"
    );
}

#[test]
fn recovery_with_no_call_after_the_bound_cannot_be_judged() {
    let trace = calls_through(vec![
        Fault::crash("store").at(ms(3_900)),
        Fault::restart("store").at(ms(4_000)),
    ]);
    let v = trace
        .assert_recovers_within(ms(2_000))
        .expect_err("no call after 6 s");
    assert!(
        v.detail().starts_with(
            "no call started after 6000ms (2000ms after the last fault, on store at 4000ms)"
        ),
        "{v}"
    );
    // And a run with no fault has nothing to recover from.
    calls_through(vec![])
        .assert_recovers_within(Duration::ZERO)
        .expect("no fault");
}

#[test]
fn a_retry_storm_multiplies_past_the_bound_and_its_fix_stays_in_it() {
    // Three layers, each retrying 3 times into a store that fails
    // everything: 3 × 3 × 3 = 27 store runs per player call, plus the
    // layers' own.
    let (trace, _) = story("retry-storm");
    let amplification = trace.amplification();
    let worst = amplification.iter().map(|(_, n)| *n).max().expect("calls");
    let v = trace.assert_amplification_within(10).expect_err("a storm");
    assert_eq!(v.rule(), "amplification");
    assert!(
        v.detail().contains(&format!("caused {worst} handler runs")),
        "{v}"
    );
    assert!(worst > 27, "{amplification:?}");
    let (fixed, _) = story("retry-storm-fix");
    let most = fixed
        .amplification()
        .iter()
        .map(|(_, n)| *n)
        .max()
        .expect("calls");
    assert!(most < 10, "{:?}", fixed.amplification());
    fixed
        .assert_amplification_within(10)
        .expect("retries at one layer");
}
