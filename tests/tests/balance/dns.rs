//! DNS name resolution for balanced channels (`balance::Dns`): answers on
//! a refresh timer, a cache that keeps a drained replica, an outage that
//! keeps the last answer, the picks naming their answer; and a channel
//! with health checking and outlier detection together
//! (`BalanceConfig`).

use std::time::Duration;

use grpc_chaos::balance::{BalanceConfig, Dns, OutlierDetection};
use grpc_chaos::recorder::event::{BalancerChange, EventKind, HealthStatus, ResolutionOutcome};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::{ms, secs};

/// Three store replicas and a player that makes `calls` Saves one after
/// another, 100 ms apart, each with a 500 ms deadline, through one
/// balanced channel built from `config`.
fn world(config: BalanceConfig, calls: u32, faults: Vec<Fault>) -> Sim {
    let mut sim = Sim::builder().seed(1).duration(secs(60)).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(5)).into_server())
    });
    sim.health("store");
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", move |player| {
        let config = config.clone();
        async move {
            let store = StoreClient::new(player.balanced_channel_config("store", config));
            for n in 0..calls {
                let mut req = tonic::Request::new(SaveRequest {
                    match_id: format!("m{n}"),
                    points: 1,
                });
                req.set_timeout(ms(500));
                // Each call's outcome is in the trace; the tests check them.
                let _ = store.clone().save(req).await;
                tokio::time::sleep(ms(100)).await;
            }
            Ok(())
        }
    });
    sim
}

/// The player's resolutions, with their times.
fn resolutions(trace: &Trace) -> Vec<(Duration, ResolutionOutcome)> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Resolution(r) => Some((e.at(), r.outcome.clone())),
            _ => None,
        })
        .collect()
}

/// Each pick: its time, the replica and the answer it came from.
fn picks(trace: &Trace) -> Vec<(Duration, String, Option<u32>)> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::CallRouted {
                replica, answer, ..
            } => Some((e.at(), replica.to_string(), *answer)),
            _ => None,
        })
        .collect()
}

fn answer_of(outcome: &ResolutionOutcome) -> Option<(u32, usize)> {
    match outcome {
        ResolutionOutcome::Answered {
            answer, addresses, ..
        } => Some((*answer, addresses.len())),
        _ => None,
    }
}

#[test]
fn a_scale_out_during_a_dns_outage_is_seen_at_the_first_answer_after_it() -> grpc_chaos::Result {
    // store-2 starts outside the set and joins at 5 s, while the DNS
    // fails from 4 s to 20 s; the channel resolves every 5 s.
    let faults = vec![
        Fault::leave("store-2").at(Duration::ZERO),
        Fault::dns_outage("store").at(secs(4)),
        Fault::join("store-2").at(secs(5)),
        Fault::dns_restore("store").at(secs(20)),
    ];
    let dns = Dns::new().refresh(secs(5));
    let trace = world(BalanceConfig::new().dns(dns), 300, faults).run()?;
    let seen = resolutions(&trace);
    let failed_at: Vec<Duration> = seen
        .iter()
        .filter(|(_, o)| matches!(o, ResolutionOutcome::Failed { kept: Some(1), .. }))
        .map(|(at, _)| *at)
        .collect();
    assert_eq!(failed_at, [secs(5), secs(10), secs(15)], "{seen:?}");
    let answers: Vec<(Duration, (u32, usize))> = seen
        .iter()
        .filter_map(|(at, o)| Some((*at, answer_of(o)?)))
        .collect();
    assert_eq!(
        answers,
        [(Duration::ZERO, (1, 2)), (secs(20), (2, 3))],
        "{seen:?}"
    );
    // No pick of store-2 before answer 2; every pick names its answer.
    let picks = picks(&trace);
    let first = picks
        .iter()
        .find(|(_, r, _)| r == "store-2")
        .expect("store-2 picked");
    assert!(first.0 >= secs(20), "store-2 picked at {:?}", first.0);
    assert!(picks
        .iter()
        .all(|(at, _, a)| *a == Some(if *at < secs(20) { 1 } else { 2 })));
    let text = trace.render();
    assert!(
        text.contains(
            "player→store         dns: resolving store failed (no answer); keeping answer 1; again in 5000ms"
        ),
        "{text}"
    );
    assert!(text.contains("store                DNS outage: resolutions of store get no answer"));
    assert!(
        text.contains("r1 balanced to store-0 (dns answer 1)")
            || text.contains("r1 balanced to store-1 (dns answer 1)")
    );
    Ok(())
}

#[test]
fn a_join_behind_a_cache_shows_as_missing_from_the_answer() -> grpc_chaos::Result {
    let faults = vec![
        Fault::leave("store-2").at(Duration::ZERO),
        Fault::join("store-2").at(secs(3)),
    ];
    let dns = Dns::new().refresh(secs(5)).ttl(secs(12));
    let trace = world(BalanceConfig::new().dns(dns), 200, faults).run()?;
    let text = trace.render();
    assert!(
        text.contains(
            "dns: store answer 1 (made 5000ms ago): store-0, store-1; store-2 joined, not in the answer yet"
        ),
        "{text}"
    );
    // The cache made at 0 s expires at 12 s: the resolution at 15 s lists store-2.
    let answers: Vec<_> = resolutions(&trace)
        .iter()
        .filter_map(|(at, o)| Some((*at, answer_of(o)?)))
        .collect();
    assert_eq!(answers.last(), Some(&(secs(15), (2, 3))), "{answers:?}");
    Ok(())
}

#[test]
fn an_outage_before_the_first_answer_makes_calls_wait() -> grpc_chaos::Result {
    let faults = vec![
        Fault::dns_outage("store").at(Duration::ZERO),
        Fault::dns_restore("store").at(secs(2)),
    ];
    let dns = Dns::new().refresh(secs(1));
    let trace = world(BalanceConfig::new().dns(dns), 30, faults).run()?;
    let text = trace.render();
    assert!(
        text.contains(
            "dns: resolving store failed (no answer); no answer yet: calls wait; again in 1000ms"
        ),
        "{text}"
    );
    // The first Save waits in the channel's buffer for an address: tonic
    // sends its deadline as grpc-timeout and does not enforce it in the
    // client (no Endpoint::timeout here), so the call goes out with the
    // first answer at 2 s and the server gives it its whole 500 ms.
    let first = trace.calls_from("player").next().expect("a call");
    assert!(first.outcome().is_some_and(|o| o.is_ok()), "{text}");
    assert!(first.ended_at.is_some_and(|at| at > secs(2)), "{text}");
    assert!(
        text.contains("r1 call /tt.v1.Store/Save still open at its deadline"),
        "{text}"
    );
    let answered = resolutions(&trace)
        .iter()
        .find_map(|(at, o)| answer_of(o).map(|_| *at));
    assert_eq!(answered, Some(secs(2)));
    Ok(())
}

#[test]
fn the_json_names_the_answers_and_the_picks_answer() -> grpc_chaos::Result {
    let dns = Dns::new().refresh(secs(5)).ttl(secs(30));
    let trace = world(BalanceConfig::new().dns(dns), 3, vec![]).run()?;
    let json: serde_json::Value = serde_json::from_str(&trace.to_json()).expect("JSON");
    let events = json["events"].as_array().expect("events");
    let first = events
        .iter()
        .find(|e| e["event"] == "resolution")
        .expect("a resolution");
    assert_eq!(first["set"], "store");
    assert_eq!(first["outcome"], "answered");
    assert_eq!(first["answer"], 1);
    assert_eq!(
        first["addresses"],
        serde_json::json!(["store-0", "store-1", "store-2"])
    );
    assert_eq!(first["age_us"], 0);
    assert_eq!(first["stale"], serde_json::json!([]));
    let routed: Vec<_> = events
        .iter()
        .filter(|e| e["event"] == "call_routed")
        .collect();
    assert_eq!(routed.len(), 3);
    assert!(routed.iter().all(|e| e["answer"] == 1), "{routed:?}");
    Ok(())
}

#[test]
fn a_channel_without_dns_names_no_answer() -> grpc_chaos::Result {
    let trace = world(BalanceConfig::new(), 3, vec![]).run()?;
    assert!(picks(&trace).iter().all(|(_, _, a)| a.is_none()));
    assert!(resolutions(&trace).is_empty());
    assert!(!trace.to_json().contains("\"answer\""));
    Ok(())
}

#[test]
fn dns_faults_and_timers_that_cannot_work_are_refused() {
    let refused = |faults: Vec<Fault>, config: BalanceConfig| {
        world(config, 1, faults)
            .run()
            .expect_err("refused")
            .to_string()
    };
    let err = refused(
        vec![Fault::dns_outage("stor").at(secs(1))],
        BalanceConfig::new(),
    );
    assert!(
        err.contains("DNS outage of stor: `stor` is not a replica set"),
        "{err}"
    );
    assert!(err.contains("replica sets: store"), "{err}");
    let twice = vec![
        Fault::dns_outage("store").at(secs(1)),
        Fault::dns_outage("store").at(secs(2)),
    ];
    let err = refused(twice, BalanceConfig::new());
    assert!(
        err.contains("DNS outage of store at 2000ms: one is already on then"),
        "{err}"
    );
    let err = refused(
        vec![Fault::dns_restore("store").at(secs(1))],
        BalanceConfig::new(),
    );
    assert!(
        err.contains("DNS restore of store at 1000ms: no DNS outage of store is on then"),
        "{err}"
    );
    let zero = BalanceConfig::new().dns(Dns::new().refresh(Duration::ZERO));
    let err = refused(vec![], zero);
    assert!(err.contains("Dns: refresh is zero"), "{err}");
}

#[test]
fn health_checking_and_outlier_detection_work_on_one_channel() -> grpc_chaos::Result {
    let faults = vec![
        Fault::health("store-1", "tt.v1.Store", HealthStatus::NotServing).at(secs(1)),
        Fault::health("store-1", "tt.v1.Store", HealthStatus::Serving).at(secs(3)),
    ];
    let od = OutlierDetection::default().interval(secs(1));
    let config = BalanceConfig::new()
        .health_check("tt.v1.Store")
        .outlier_detection(od);
    let trace = world(config, 50, faults).run()?;
    // Health takes store-1 out from 1 s to 3 s ...
    let during = picks(&trace)
        .into_iter()
        .filter(|(at, r, _)| r == "store-1" && *at > secs(1) + ms(10) && *at < secs(3))
        .count();
    assert_eq!(during, 0, "store-1 picked while NOT_SERVING");
    let health: Vec<_> = trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Balancer(b) if matches!(b.change, BalancerChange::Health { .. }) => {
                Some(b.replica.to_string())
            }
            _ => None,
        })
        .collect();
    assert!(
        health.iter().filter(|r| *r == "store-1").count() >= 3,
        "{health:?}"
    );
    // ... and the outlier detector ran its sweeps on the same channel
    // (no ejection: every call succeeded), its task alive to the end.
    let saves: Vec<_> = trace
        .calls_from("player")
        .filter(|c| c.path.ends_with("/Save"))
        .collect();
    assert_eq!(saves.len(), 50);
    assert!(saves.iter().all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    Ok(())
}

#[test]
fn catalog_dns_stale_answer_fails_calls_until_the_cache_expires() {
    let (trace, report) = grpc_chaos_tests::story("dns-stale-answer");
    assert!(
        report
            .happened
            .contains("39 of 350 calls failed (39× UNAVAILABLE)"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(grpc_chaos_tests::replica_story_rows(&trace, "store-2"));
}

#[test]
fn catalog_dns_fresh_answer_fails_none() {
    let (trace, report) = grpc_chaos_tests::story("dns-fresh-answer");
    assert!(
        report.happened.contains("0 of 350 calls failed"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(grpc_chaos_tests::replica_story_rows(&trace, "store-2"));
}
