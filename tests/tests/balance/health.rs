//! Health: `Sim::health` (tonic-health on a server host), `Fault::health`
//! (a status flipped during the run) and client-side health checking in
//! the balanced channel (gRFC A17, `Host::balanced_channel_health`).

use std::time::Duration;

use grpc_chaos::recorder::event::HealthStatus;
use grpc_chaos::recorder::event::{BalancerChange, EventKind};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

const STORE: &str = "tt.v1.Store";

/// Three store replicas serving health, and a player that makes `calls`
/// Saves one after another, 20 ms apart, through one balanced channel, health-checked for
/// `tt.v1.Store` when `checked`.
fn world(seed: u64, calls: u32, checked: bool, faults: Vec<Fault>) -> Sim {
    let mut sim = Sim::builder().seed(seed).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(5)).into_server())
    });
    sim.health("store");
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", move |player| async move {
        let channel = if checked {
            player.balanced_channel_health("store", STORE, |e| e)
        } else {
            player.balanced_channel("store")
        };
        let store = StoreClient::new(channel);
        for n in 0..calls {
            let req = SaveRequest {
                match_id: format!("m{n}"),
                points: 1,
            };
            // Each call's outcome is in the trace; the tests check them.
            let _ = store.clone().save(req).await;
            tokio::time::sleep(ms(20)).await;
        }
        Ok(())
    });
    sim
}

fn flip(at: u64, back: u64) -> Vec<Fault> {
    vec![
        Fault::health("store-1", STORE, HealthStatus::NotServing).at(ms(at)),
        Fault::health("store-1", STORE, HealthStatus::Serving).at(ms(back)),
    ]
}

/// The health changes the player's balancer recorded for `replica`, with
/// their times.
fn seen(trace: &Trace, replica: &str) -> Vec<(Duration, BalancerChange)> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Balancer(b)
                if b.replica == replica
                    && matches!(
                        b.change,
                        BalancerChange::Health { .. }
                            | BalancerChange::HealthUnimplemented
                            | BalancerChange::HealthWatchFailed { .. }
                    ) =>
            {
                Some((e.at(), b.change.clone()))
            }
            _ => None,
        })
        .collect()
}

fn status(s: HealthStatus) -> BalancerChange {
    BalancerChange::Health { status: s }
}

/// The times of the player's calls routed to `replica`.
fn picks(trace: &Trace, replica: &str) -> Vec<Duration> {
    trace
        .calls_from("player")
        .filter(|c| c.replica.as_deref() == Some(replica))
        .map(|c| c.started)
        .collect()
}

fn run_err(sim: Sim) -> grpc_chaos::Error {
    match sim.run() {
        Ok(trace) => panic!("the run should have failed; trace:\n{}", trace.render()),
        Err(e) => e,
    }
}

#[test]
fn a_not_serving_replica_gets_no_call_until_it_serves_again() -> grpc_chaos::Result {
    let trace = world(7, 40, true, flip(300, 600)).run()?;
    let store1 = seen(&trace, "store-1");
    let changes: Vec<&BalancerChange> = store1.iter().map(|(_, c)| c).collect();
    assert_eq!(
        changes,
        [
            &status(HealthStatus::Serving),
            &status(HealthStatus::NotServing),
            &status(HealthStatus::Serving)
        ],
        "{}",
        trace.render()
    );
    let (out, back) = (store1[1].0, store1[2].0);
    // The Watch carries the change one link latency (1 ms) later.
    assert!(out > ms(300) && out <= ms(302), "seen at {out:?}");
    assert!(back > ms(600) && back <= ms(602), "seen at {back:?}");
    let to_one = picks(&trace, "store-1");
    assert!(
        to_one.iter().all(|t| *t < out || *t >= back),
        "a call reached store-1 while it was NOT_SERVING: {to_one:?}"
    );
    assert!(
        to_one.iter().any(|t| *t < out),
        "store-1 got no call before"
    );
    assert!(
        to_one.iter().any(|t| *t >= back),
        "store-1 got no call after"
    );
    // The others took the window's calls, and every call succeeded.
    let in_window = trace
        .calls_from("player")
        .filter(|c| c.started >= out && c.started < back && c.replica.is_some())
        .count();
    assert!(in_window >= 5, "{in_window} calls in the window");
    assert!(trace
        .calls_from("player")
        .filter(|c| c.path == "/tt.v1.Store/Save")
        .all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    // Typed in the JSON export too.
    let json: serde_json::Value = serde_json::from_str(&trace.to_json()).expect("json");
    let events = json["events"].as_array().expect("events");
    let health = |status: &str| {
        events.iter().any(|e| {
            e["event"] == "balancer"
                && e["change"]["state"] == "health"
                && e["change"]["status"] == status
        })
    };
    assert!(health("NOT_SERVING") && health("SERVING"));
    assert!(events
        .iter()
        .any(|e| e["event"] == "health_set" && e["status"] == "NOT_SERVING"));
    Ok(())
}

#[test]
fn without_health_checking_calls_still_land_on_the_not_serving_replica() -> grpc_chaos::Result {
    // kubernetes #114250: a backend that reports itself not ready keeps
    // getting calls on the connections clients already have.
    let trace = world(7, 30, false, flip(100, 300)).run()?;
    assert!(
        seen(&trace, "store-1").is_empty(),
        "no Watch without health checking"
    );
    let in_window: Vec<Duration> = picks(&trace, "store-1")
        .into_iter()
        .filter(|t| *t >= ms(100) && *t < ms(300))
        .collect();
    assert!(!in_window.is_empty(), "{}", trace.render());
    let rendered = trace.render();
    assert!(rendered.contains("store-1              health: \"tt.v1.Store\" set to NOT_SERVING"));
    Ok(())
}

#[test]
fn a_replica_without_a_health_service_answers_unimplemented_and_counts_healthy(
) -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(3).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(5)).into_server())
    });
    // store-1 serves no health service.
    sim.health("store-0").health("store-2");
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.balanced_channel_health("store", STORE, |e| e));
        for n in 0..20 {
            let req = SaveRequest {
                match_id: format!("m{n}"),
                points: 1,
            };
            store.clone().save(req).await?;
        }
        Ok(())
    });
    let trace = sim.run()?;
    let store1 = seen(&trace, "store-1");
    assert_eq!(store1.len(), 1, "{store1:?}");
    assert_eq!(store1[0].1, BalancerChange::HealthUnimplemented);
    assert!(
        !picks(&trace, "store-1").is_empty(),
        "store-1 counts healthy"
    );
    assert!(trace.render().contains(
        "balancer: store-1 answered the health Watch UNIMPLEMENTED: health checking off for it, \
         counted healthy (gRFC A17)"
    ));
    Ok(())
}

#[test]
fn a_watch_that_fails_is_retried_with_connection_backoff() -> grpc_chaos::Result {
    // tonic-health fails a Watch for a service it does not know with
    // NOT_FOUND (A17 expects a SERVICE_UNKNOWN answer): each replica is out
    // of rotation and its Watch retried after 1 s, then 1.6 s ± 20 %.
    let mut sim = Sim::builder().seed(5).build();
    sim.servers("store", 2, |s| {
        s.add_service(Store::with_work(ms(5)).into_server())
    });
    sim.health("store");
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.balanced_channel_health("store", "tt.v1.Nope", |e| e));
        let req = SaveRequest {
            match_id: "m".into(),
            points: 1,
        };
        // No replica is ever in rotation: the call waits, as tower's
        // balancer makes it, until the client gives up on it.
        let waited = tokio::time::timeout(ms(3000), store.clone().save(req)).await;
        assert!(waited.is_err(), "the call should still be waiting");
        Ok(())
    });
    let trace = sim.run()?;
    for replica in ["store-0", "store-1"] {
        let fails: Vec<(Duration, Duration)> = seen(&trace, replica)
            .into_iter()
            .map(|(at, c)| match c {
                BalancerChange::HealthWatchFailed { error, retry_in } => {
                    assert!(error.starts_with("NOT_FOUND"), "{error}");
                    (at, retry_in)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert!(fails.len() >= 2, "{fails:?}");
        assert_eq!(fails[0].1, ms(1000));
        let second = fails[1].1;
        assert!(second >= ms(1280) && second <= ms(1920), "{second:?}");
        // The next Watch starts when the wait is over.
        assert!(fails[1].0 >= fails[0].0 + fails[0].1);
    }
    assert!(picks(&trace, "store-0").is_empty() && picks(&trace, "store-1").is_empty());
    Ok(())
}

#[test]
fn the_same_seed_gives_the_same_health_trace() -> grpc_chaos::Result {
    let a = world(11, 15, true, flip(80, 200)).run()?.render();
    let b = world(11, 15, true, flip(80, 200)).run()?.render();
    assert_eq!(a, b);
    Ok(())
}

#[test]
fn a_health_fault_on_a_host_without_the_health_service_says_what_to_add() {
    let mut sim = Sim::builder().build();
    sim.servers("store", 3, |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.fault(Fault::health("store-1", STORE, HealthStatus::NotServing).at(ms(10)));
    let e = run_err(sim);
    assert!(e.is_misconfigured(), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("`store-1` serves no grpc.health.v1.Health service")
            && text.contains(
                "add sim.health(\"store-1\") (or sim.health(\"store\") for its whole replica set)"
            ),
        "{text}"
    );
}

#[test]
fn sim_health_on_a_name_that_serves_nothing_is_refused() {
    for (name, says) in [
        ("nobody", "no server host or replica set is named `nobody`"),
        ("player", "`player` is a client host"),
    ] {
        let mut sim = Sim::builder().build();
        sim.server("store", |s| s);
        sim.client("player", |_| async { Ok(()) });
        sim.health(name);
        let e = run_err(sim);
        assert!(e.is_misconfigured() && e.to_string().contains(says), "{e}");
    }
}

#[test]
fn service_unknown_is_not_a_status_a_fault_can_set() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.health("store");
    sim.client("player", |_| async { Ok(()) });
    sim.fault(Fault::health("store", STORE, HealthStatus::ServiceUnknown).at(ms(10)));
    let e = run_err(sim);
    assert!(
        e.is_misconfigured()
            && e.to_string()
                .contains("set NOT_SERVING, SERVING or UNKNOWN"),
        "{e}"
    );
}

/// The rows of the rpc-only render that tell the story: the header, every
/// health and balancer row, every call that did not end OK, and every row
/// at a time in one of `windows` (`[from, until]`, *simulated*).
fn story_rows(trace: &Trace, windows: &[(Duration, Duration)]) -> String {
    let render = trace.render_with(&grpc_chaos::trace::RenderOptions::rpc_only());
    let mut lines = render.lines();
    let mut out = format!("{}\n", lines.next().unwrap_or_default());
    for line in lines {
        let at = line
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<f64>().ok())
            .map_or(Duration::ZERO, |t| Duration::from_secs_f64(t / 1000.0));
        let story = line.contains("balancer: ")
            || line.contains("health: ")
            || (line.contains(" ended ") && !line.ends_with(" ended OK"));
        if story
            || windows
                .iter()
                .any(|(from, until)| (*from..=*until).contains(&at))
        {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn catalog_replica_not_serving_keeps_getting_calls_without_health_checking() {
    let (trace, report) = grpc_chaos_tests::story("replica-not-serving");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let window: Vec<Duration> = picks(&trace, "store-1")
        .into_iter()
        .filter(|t| *t >= ms(1000) && *t < ms(2000))
        .collect();
    assert!(window.len() >= 25, "{}", window.len());
    // Its handlers ran them: the replica is up.
    assert!(trace.runs_on("store-1").count() >= 60);
    insta::assert_snapshot!(story_rows(
        &trace,
        &[(ms(995), ms(1030)), (ms(1500), ms(1530))]
    ));
}

#[test]
fn catalog_replica_not_serving_checked_takes_it_out_of_rotation() {
    let (trace, report) = grpc_chaos_tests::story("replica-not-serving-checked");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let store1 = seen(&trace, "store-1");
    assert_eq!(
        store1.iter().map(|(at, _)| *at).collect::<Vec<_>>(),
        [ms(3), ms(1001), ms(2001)],
        "{store1:?}"
    );
    let to_one = picks(&trace, "store-1");
    assert!(!to_one.iter().any(|t| *t >= ms(1001) && *t < ms(2001)));
    // The A17 race: a call sent in the tick of the flip, before the
    // channel could see it, still reaches store-1 (and succeeds: the
    // replica is up).
    assert_eq!(
        to_one
            .iter()
            .filter(|t| **t >= ms(1000) && **t < ms(1001))
            .count(),
        1
    );
    insta::assert_snapshot!(story_rows(
        &trace,
        &[(ms(995), ms(1030)), (ms(1995), ms(2030))]
    ));
}

#[test]
fn a_restart_serves_again_and_a_crashed_host_has_no_status_to_set() -> grpc_chaos::Result {
    // A restarted process starts with every service SERVING: the channel
    // redials store-1, Watches again and puts it back in rotation. A
    // health fault while the host is down has no server to act on. (The
    // redial that meets the restart's tick is refused, and, as in tonic's
    // lazy reconnect, the next call sent there fails with it: health
    // checking acts on live connections only.)
    let faults = vec![
        Fault::health("store-1", STORE, HealthStatus::NotServing).at(ms(100)),
        Fault::crash("store-1").at(ms(200)),
        Fault::health("store-1", STORE, HealthStatus::Serving).at(ms(250)),
        Fault::restart("store-1").at(ms(300)),
    ];
    let trace = world(7, 40, true, faults).run()?;
    let rendered = trace.render();
    assert!(
        rendered.contains(
            "fault never fired: health of \"tt.v1.Store\" on store-1 set to SERVING at 250ms: \
             the host runs no server then (not started yet, or crashed)"
        ),
        "{rendered}"
    );
    let changes: Vec<BalancerChange> = seen(&trace, "store-1")
        .into_iter()
        .map(|(_, c)| c)
        .collect();
    assert_eq!(
        changes.first().cloned(),
        Some(status(HealthStatus::Serving))
    );
    assert_eq!(
        changes.get(1).cloned(),
        Some(status(HealthStatus::NotServing))
    );
    assert_eq!(
        changes.last().cloned(),
        Some(status(HealthStatus::Serving)),
        "{rendered}"
    );
    assert!(
        picks(&trace, "store-1").iter().any(|t| *t > ms(300)),
        "back in rotation"
    );
    Ok(())
}

#[test]
fn a_goaway_cancels_the_watch_so_a_draining_server_can_finish() -> grpc_chaos::Result {
    // A17: the client cancels the Watch when the backend sends a GOAWAY.
    // Without that, the never-ending Watch would hold store-1's draining
    // connection open until the grace crashed it (hyper's graceful
    // shutdown waits for every stream).
    let faults = vec![Fault::shutdown("store-1").grace(ms(2000)).at(ms(100))];
    let trace = world(7, 40, true, faults).run()?;
    let cancelled: Vec<Duration> = seen_all(&trace, "store-1")
        .into_iter()
        .filter(|(_, c)| *c == BalancerChange::HealthWatchCancelled)
        .map(|(at, _)| at)
        .collect();
    assert_eq!(cancelled, [ms(101)], "one link latency after the GOAWAY");
    let rendered = trace.render();
    assert!(
        rendered
            .contains("serve returned: every connection closed, 2ms after the shutdown started"),
        "{rendered}"
    );
    assert!(!rendered.contains("shutdown grace of"), "{rendered}");
    Ok(())
}

/// Every balancer change the player recorded for `replica`, with times.
fn seen_all(trace: &Trace, replica: &str) -> Vec<(Duration, BalancerChange)> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Balancer(b) if b.replica == replica => Some((e.at(), b.change.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn sim_health_on_a_host_with_its_own_health_service_is_refused() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| {
        let (_reporter, own) = tonic_health::server::health_reporter();
        s.add_service(own)
    });
    sim.health("store");
    sim.client("player", |_| async { Ok(()) });
    let e = run_err(sim);
    assert!(
        e.is_misconfigured()
            && e.to_string().contains(
                "`store` already adds a grpc.health.v1.Health service of its own; drop Sim::health"
            ),
        "{e}"
    );
}
