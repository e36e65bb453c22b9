//! Replica sets (`Sim::servers`) and balanced channels: which replica each
//! call reaches, for a seed; what the balancer does when a replica crashes,
//! leaves or joins; and the bad input around them.

use std::time::Duration;

use grpc_chaos::policy::KeepalivePolicy;
use grpc_chaos::recorder::event::{BalancerChange, EventKind};
use grpc_chaos::trace::Call;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{Rally, SaveRequest};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use grpc_chaos_tests::ms;

fn save(n: u32) -> SaveRequest {
    SaveRequest {
        match_id: format!("m{n}"),
        points: 1,
    }
}

/// Three store replicas (5 ms per Save) and a player that makes `calls`
/// Saves, one after another, 20 ms apart, through one balanced channel
/// (with `connect_timeout` when given).
fn steady(seed: u64, calls: u32, connect_timeout: Option<Duration>, faults: Vec<Fault>) -> Sim {
    let mut sim = Sim::builder().seed(seed).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(5)).into_server())
    });
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", move |player| async move {
        let channel = match connect_timeout {
            Some(t) => player.balanced_channel_with("store", move |e| e.connect_timeout(t)),
            None => player.balanced_channel("store"),
        };
        let store = StoreClient::new(channel);
        for n in 0..calls {
            let _ = store.clone().save(save(n)).await;
            tokio::time::sleep(ms(20)).await;
        }
        Ok(())
    });
    sim
}

/// The replica each of the player's calls reached, in call order.
fn replicas(trace: &Trace) -> Vec<String> {
    trace
        .calls_from("player")
        .map(|c| c.replica.clone().unwrap_or_else(|| "-".into()))
        .collect()
}

fn routed_to<'a>(trace: &'a Trace, replica: &'a str) -> impl Iterator<Item = &'a Call> + 'a {
    trace
        .calls_from("player")
        .filter(move |c| c.replica.as_deref() == Some(replica))
}

/// When the player's balancer recorded `change` for `replica`.
fn balancer_at(trace: &Trace, replica: &str, change: &BalancerChange) -> Vec<Duration> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Balancer(b) if b.replica == replica && b.change == *change => Some(e.at()),
            _ => None,
        })
        .collect()
}

fn run_err(sim: Sim) -> grpc_chaos::Error {
    match sim.run() {
        Ok(trace) => panic!("the run should have failed; trace:\n{}", trace.render()),
        Err(e) => e,
    }
}

#[test]
fn the_same_seed_sends_each_call_to_the_same_replica_in_every_run() {
    let a = steady(5, 30, None, vec![]).run().expect("run");
    let b = steady(5, 30, None, vec![]).run().expect("run");
    assert_eq!(replicas(&a), replicas(&b));
    assert_eq!(a.render(), b.render());
    assert_eq!(a.to_json(), b.to_json());
    // Each call is recorded against the set, and names the replica it got.
    for call in a.calls_from("player") {
        assert_eq!(call.target, "store");
        let replica = call.replica.as_deref().expect("routed");
        let run = a
            .handler_runs()
            .iter()
            .find(|r| r.call == Some(call.id))
            .expect("reached a handler");
        assert_eq!(run.host, replica, "{} ran where it was routed", call.id);
    }
    // The picks come from the seed: over a few seeds they differ.
    let others: Vec<Vec<String>> = (6..9)
        .map(|seed| replicas(&steady(seed, 30, None, vec![]).run().expect("run")))
        .collect();
    assert!(others.iter().any(|o| *o != replicas(&a)), "{others:?}");
}

#[test]
fn every_replica_is_dialled_on_the_first_call_and_gets_calls() {
    let trace = steady(0, 30, None, vec![]).run().expect("run");
    for i in 0..3 {
        let replica = format!("store-{i}");
        assert_eq!(
            balancer_at(&trace, &replica, &BalancerChange::Connecting),
            [ms(0)],
            "{replica}: one connection, made when the first call came"
        );
        let n = routed_to(&trace, &replica).count();
        assert!(n >= 5, "{replica} got {n} of 30 calls");
    }
    assert!(trace
        .calls_from("player")
        .all(|c| c.outcome().is_some_and(|o| o.is_ok())));
}

#[test]
fn a_crashed_replica_gets_no_call_after_the_balancer_notices() {
    let crash = ms(200);
    let trace = steady(0, 30, None, vec![Fault::crash("store-1").at(crash)])
        .run()
        .expect("run");
    let noticed = balancer_at(&trace, "store-1", &BalancerChange::Closed);
    let [noticed] = noticed[..] else {
        panic!("noticed once: {noticed:?}\n{}", trace.render());
    };
    assert!(noticed >= crash && noticed < crash + ms(100), "{noticed:?}");
    // Redialled and never connected: the crashed host does not answer.
    assert_eq!(
        balancer_at(&trace, "store-1", &BalancerChange::Connecting),
        [ms(0), noticed]
    );
    assert!(balancer_at(&trace, "store-1", &BalancerChange::Ready).len() == 1);
    assert!(routed_to(&trace, "store-1").all(|c| c.started < crash));
    assert!(
        routed_to(&trace, "store-1").count() > 0,
        "it had calls before"
    );
    // No call was in flight at the crash, and none fails after it: the
    // pick that found the closed connection went to another replica.
    assert!(trace
        .calls_from("player")
        .all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    let after = trace.calls_from("player").filter(|c| c.started > crash);
    assert!(after.count() >= 20);
}

#[test]
fn a_failed_redial_fails_the_next_call_sent_there_unavailable() {
    let trace = steady(
        0,
        30,
        Some(ms(100)),
        vec![Fault::crash("store-1").at(ms(200))],
    )
    .run()
    .expect("run");
    let failures: Vec<&Call> = trace
        .calls_from("player")
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect();
    assert!(!failures.is_empty(), "{}", trace.render());
    for c in &failures {
        assert_eq!(c.replica.as_deref(), Some("store-1"), "{}", c.id);
        let o = c.outcome().expect("ended");
        // tonic's balancer: a connect error is a ConnectError → UNAVAILABLE.
        assert_eq!((o.code, o.spec_code), ("UNAVAILABLE", "UNAVAILABLE"));
        assert_eq!(o.message, "connect to store-1 timed out after 100ms");
    }
    let failed_connects = trace
        .events_on("player")
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Balancer(b) if matches!(b.change, BalancerChange::ConnectFailed { .. })
            )
        })
        .count();
    assert!(
        failures.len() <= failed_connects,
        "one failed call per failed connect at most"
    );
}

#[test]
fn a_replica_that_joins_starts_getting_calls_once_connected() {
    let join = ms(300);
    let trace = steady(
        0,
        30,
        None,
        vec![
            Fault::leave("store-2").at(ms(0)),
            Fault::join("store-2").at(join),
        ],
    )
    .run()
    .expect("run");
    assert!(routed_to(&trace, "store-2").all(|c| c.started >= join));
    assert!(
        routed_to(&trace, "store-2").count() >= 3,
        "{}",
        trace.render()
    );
    let added = balancer_at(&trace, "store-2", &BalancerChange::Added);
    assert_eq!(added.len(), 1);
    assert!(added[0] >= join && added[0] < join + ms(40), "{added:?}");
    assert!(trace
        .render()
        .contains("store-2              joined replica set store"));
}

#[test]
fn a_replica_that_leaves_finishes_the_calls_it_has() {
    // Every Save on store-1 takes 100 ms more; store-1 leaves while one runs.
    let mut sim = Sim::builder().seed(0).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::default().into_server())
    });
    sim.fault(Fault::handler("store-1").method(SAVE).delay(ms(100)));
    sim.fault(Fault::leave("store-1").at(ms(50)));
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.balanced_channel("store"));
        let mut saves = tokio::task::JoinSet::new();
        for n in 0..20 {
            let mut store = store.clone();
            saves.spawn(async move { store.save(save(n)).await.map(drop) });
            tokio::time::sleep(ms(10)).await;
        }
        while let Some(done) = saves.join_next().await {
            done??;
        }
        Ok(())
    });
    let trace = sim.run().expect("every call succeeds");
    let on_one: Vec<&Call> = routed_to(&trace, "store-1").collect();
    assert!(!on_one.is_empty());
    assert!(on_one.iter().all(|c| c.started <= ms(50)));
    assert!(on_one
        .iter()
        .any(|c| c.ended_at.is_some_and(|t| t > ms(100))));
    assert!(trace
        .render()
        .contains("balancer: store-1 removed (it left store)"));
}

#[test]
fn a_service_holding_a_balanced_channel_calls_every_replica() {
    let mut sim = Sim::builder().seed(0).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::default().into_server())
    });
    sim.server("gateway", |s| {
        let store = s.balanced_channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, ms(0)).into_server())
    });
    sim.client("player", |player| async move {
        let scoreboard = ScoreboardClient::new(player.channel("gateway"));
        for n in 0..12 {
            let rally = Rally {
                match_id: "final".into(),
                player: format!("p{n}"),
                shots: 1,
            };
            scoreboard.clone().hit(rally).await?;
        }
        Ok(())
    });
    let trace = sim.run().expect("run");
    for i in 0..3 {
        let replica = format!("store-{i}");
        assert!(trace.runs_on(&replica).count() > 0, "{replica}");
    }
    // A balanced channel has no single tonic channel underneath.
    let mut sim = Sim::builder().build();
    sim.servers("store", 1, |s| s);
    sim.client("player", |player| async move {
        assert!(player.balanced_channel("store").into_inner().is_err());
        assert!(player.channel("store-0").into_inner().is_ok());
        Ok(())
    });
    sim.run().expect("run");
}

#[test]
fn a_replica_count_of_zero_is_misconfigured() {
    let mut sim = Sim::builder().build();
    sim.servers("store", 0, |s| s);
    sim.client("player", |_| async { Ok(()) });
    let err = run_err(sim);
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("Sim::servers(\"store\", 0, ..): a replica set needs at least 1 replica"),
        "{err}"
    );
}

/// Adds something that names a host to a sim.
type AddTo = Box<dyn Fn(&mut Sim)>;

#[test]
fn a_fault_or_policy_naming_the_set_lists_its_replicas() {
    let expected = "`store` in ";
    let replicas = "is a replica set (Sim::servers), not one host; name one replica: store-0, store-1, store-2";
    let cases: Vec<(&str, AddTo)> = vec![
        (
            "fault crash of store",
            Box::new(|sim: &mut Sim| {
                sim.fault(Fault::crash("store").at(ms(5)));
            }),
        ),
        (
            "a handler fault",
            Box::new(|sim: &mut Sim| {
                sim.fault(Fault::handler("store").hang());
            }),
        ),
        (
            "a frame fault",
            Box::new(|sim: &mut Sim| {
                sim.fault(Fault::frames().from("store").drop());
            }),
        ),
        (
            "fault partition between player and store",
            Box::new(|sim: &mut Sim| {
                sim.fault(Fault::partition("player", "store").at(ms(5)));
            }),
        ),
        (
            "a keepalive policy",
            Box::new(|sim: &mut Sim| {
                sim.keepalive_policy("store", KeepalivePolicy::grpc_go());
            }),
        ),
    ];
    for (context, add) in cases {
        let mut sim = Sim::builder().build();
        sim.servers("store", 3, |s| s);
        sim.client("player", |_| async { Ok(()) });
        add(&mut sim);
        let err = run_err(sim);
        assert!(err.is_unknown_host(), "{err}");
        let msg = err.to_string();
        assert!(
            msg.contains(&format!("{expected}{context} {replicas}")),
            "{msg}"
        );
    }
}

#[test]
fn a_plain_channel_to_the_set_says_to_use_the_balanced_one() {
    let mut sim = Sim::builder().build();
    sim.servers("store", 3, |s| s);
    sim.client("player", |player| async move {
        let err = StoreClient::new(player.channel("store"))
            .save(save(0))
            .await
            .expect_err("no host `store`");
        assert_eq!(err.code(), tonic::Code::Unavailable);
        Ok(())
    });
    let err = run_err(sim);
    assert!(err.is_unknown_host(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(
            "channel() on host `player`: `store` is a replica set (store-0, store-1, store-2), \
             and a plain channel connects to one host; use balanced_channel(\"store\")"
        ),
        "{msg}"
    );
}

#[test]
fn a_balanced_channel_to_a_host_or_a_typo_says_what_exists() {
    for (target, want, misconfigured) in [
        (
            "gateway",
            "balanced_channel(\"gateway\") on host `player`: `gateway` is one host, not a replica set; \
             use channel(\"gateway\") for it, or Sim::servers to make it a set; replica sets: store",
            true,
        ),
        (
            "stor",
            "unknown replica set `stor` in balanced_channel(\"stor\") on host `player`; \
             replica sets (Sim::servers): store",
            false,
        ),
    ] {
        let mut sim = Sim::builder().build();
        sim.servers("store", 2, |s| s);
        sim.server("gateway", |s| s);
        sim.client("player", move |player| async move {
            let err = StoreClient::new(player.balanced_channel(target))
                .save(save(0))
                .await
                .expect_err("nothing to balance over");
            assert_eq!(err.code(), tonic::Code::Unavailable);
            Ok(())
        });
        let err = run_err(sim);
        assert_eq!(err.is_misconfigured(), misconfigured, "{err}");
        assert_eq!(err.is_unknown_host(), !misconfigured, "{err}");
        assert!(err.to_string().contains(want), "{err}");
    }
}

#[test]
fn leave_and_join_must_change_a_replica_sets_membership() {
    let cases = [
        (
            vec![Fault::leave("gateway").at(ms(5))],
            "Fault::leave(\"gateway\"): `gateway` is not a replica of a set (Sim::servers); \
             leave and join change a replica set's membership; replica sets: store",
        ),
        (
            vec![Fault::join("store-1").at(ms(5))],
            "join of store-1 at 5ms changes nothing: it is a member of its set then",
        ),
        (
            vec![
                Fault::leave("store-1").at(ms(5)),
                Fault::leave("store-1").at(ms(9)),
            ],
            "leave of store-1 at 9ms changes nothing: it has left its set by then",
        ),
        (
            vec![Fault::leave("store").at(ms(5))],
            "`store` in fault leave of store is a replica set",
        ),
    ];
    for (faults, want) in cases {
        let mut sim = Sim::builder().build();
        sim.servers("store", 2, |s| s);
        sim.server("gateway", |s| s);
        sim.client("player", |_| async { Ok(()) });
        for f in faults {
            sim.fault(f);
        }
        let err = run_err(sim);
        assert!(err.to_string().contains(want), "{err}");
    }
}

#[test]
fn a_set_name_taken_by_a_host_or_a_replica_name_taken_twice_is_refused() {
    let mut sim = Sim::builder().build();
    sim.servers("store", 2, |s| s);
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    let err = run_err(sim);
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string().contains(
            "`store` names a replica set (Sim::servers) and a host; give each its own name"
        ),
        "{err}"
    );
    let mut sim = Sim::builder().build();
    sim.servers("store", 2, |s| s);
    sim.server("store-1", |s| s);
    sim.client("player", |_| async { Ok(()) });
    let err = run_err(sim);
    assert!(
        err.to_string()
            .contains("host `store-1` is registered twice"),
        "{err}"
    );
}

#[test]
fn a_call_waiting_for_a_ready_replica_has_no_deadline_running() {
    // Every replica is down when the call comes: it waits in the balancer,
    // where tonic's timeout (inside each replica connection) does not run,
    // until the failed connects make the replicas "ready" with their error.
    let mut sim = Sim::builder().seed(0).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::default().into_server())
    });
    for i in 0..3 {
        sim.fault(Fault::crash(format!("store-{i}")).at(ms(0)));
    }
    sim.client("player", |player| async move {
        let channel = player.balanced_channel_with("store", |e| e.connect_timeout(ms(1000)));
        let mut req = tonic::Request::new(save(0));
        req.set_timeout(ms(300));
        let err = StoreClient::new(channel)
            .save(req)
            .await
            .expect_err("all down");
        assert_eq!(err.code(), tonic::Code::Unavailable);
        Ok(())
    });
    let trace = sim.run().expect("run");
    let call = &trace.calls()[0];
    assert_eq!(call.timeout, Some(ms(300)));
    assert_eq!(
        call.latency(),
        Some(ms(1000)),
        "the connect timeout, not the deadline"
    );
    assert_eq!(call.overran_deadline(), Some(ms(700)));
}

#[test]
fn restarting_replicas_without_leaving_first_fails_the_calls_in_flight() {
    // The rolling-restart story's schedule without the drain: each replica
    // restarts while the balancer still sends it calls.
    let mut sim = Sim::builder().seed(0).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(20)).into_server())
    });
    for (i, at) in [500, 1100, 1700].into_iter().enumerate() {
        sim.fault(Fault::restart(format!("store-{i}")).at(ms(at)));
    }
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.balanced_channel("store"));
        let mut saves = tokio::task::JoinSet::new();
        for n in 0..200 {
            let mut store = store.clone();
            saves.spawn(async move {
                let _ = store.save(save(n)).await;
            });
            tokio::time::sleep(ms(10)).await;
        }
        while saves.join_next().await.is_some() {}
        Ok(())
    });
    let trace = sim.run().expect("run");
    let failed: Vec<&Call> = trace
        .calls_from("player")
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect();
    assert!(!failed.is_empty(), "{}", trace.render());
    for c in &failed {
        let at = c.ended_at.expect("ended");
        let replica = c.replica.as_deref().expect("routed");
        let restart = [ms(500), ms(1100), ms(1700)]
            .into_iter()
            .position(|t| t == at)
            .map(|i| format!("store-{i}"));
        assert_eq!(
            restart.as_deref(),
            Some(replica),
            "{} ended at {at:?}",
            c.id
        );
        assert_eq!(c.outcome().map(|o| o.code), Some("UNKNOWN"), "{}", c.id);
    }
    // The restarted replicas come back: the balancer redials each at its
    // next pick, and the host is up again by then.
    for i in 0..3 {
        let replica = format!("store-{i}");
        let connected = balancer_at(&trace, &replica, &BalancerChange::Ready);
        assert_eq!(connected.len(), 2, "{replica}: {connected:?}");
    }
}

#[test]
fn a_crashed_replica_is_picked_again_after_its_restart() {
    // The redial to the crashed host waits (no connect timeout); when the
    // host restarts, turmoil refuses that pending dial (seen), so the
    // replica counts as ready with the error: one call sent there fails,
    // the next redial connects, and calls reach it again.
    let trace = steady(
        0,
        40,
        None,
        vec![
            Fault::crash("store-1").at(ms(200)),
            Fault::restart("store-1").at(ms(300)),
        ],
    )
    .run()
    .expect("run");
    let failed: Vec<&Call> = trace
        .calls_from("player")
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect();
    let [failed] = failed[..] else {
        panic!("one failed call: {failed:?}");
    };
    assert_eq!(failed.replica.as_deref(), Some("store-1"));
    assert!(failed.started > ms(300));
    let o = failed.outcome().expect("ended");
    assert_eq!(
        (o.code, o.message.as_str()),
        ("UNAVAILABLE", "connect to store-1: connection refused")
    );
    let ready = balancer_at(&trace, "store-1", &BalancerChange::Ready);
    assert_eq!(ready.len(), 2, "{ready:?}");
    assert!(routed_to(&trace, "store-1")
        .any(|c| c.started > ready[1] && c.outcome().is_some_and(|o| o.is_ok())));
}

/// Replicas that recycle their connections (`max_connection_age`) under
/// concurrent calls: a call routed to a replica whose connection is going
/// away (after its GOAWAY, before hyper drops the socket) is redialled by
/// the replica channel's own reconnect, as in tonic's balancer; no call
/// fails with the harness's words. What still fails is tonic's own:
/// hyper refusing a call on the connection that received the GOAWAY.
#[test]
fn recycled_replica_connections_redial_as_tonic_does() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(4).build();
    sim.servers("store", 2, |s| {
        s.configure(|b| b.max_connection_age(ms(205)))
            .add_service(Store::with_work(ms(30)).into_server())
    });
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.balanced_channel("store"));
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..50 {
            let mut store = store.clone();
            calls.spawn_local(async move {
                let _ = store.save(save(n)).await;
            });
            tokio::time::sleep(ms(10)).await;
        }
        while calls.join_next().await.is_some() {}
        Ok(())
    });
    let trace = sim.run()?;
    let failed: Vec<String> = trace
        .calls_from("player")
        .filter_map(|c| c.outcome().filter(|o| !o.is_ok()))
        .map(|o| format!("{} {}", o.code, o.message))
        .collect();
    assert!(
        failed
            .iter()
            .all(|f| f == "CANCELLED operation was canceled"),
        "{failed:?}\n{}",
        trace.render()
    );
    // The redial is in the trace: a second connect attempt on a replica.
    assert!(
        trace
            .events_on("player")
            .any(|e| matches!(e.kind, EventKind::ConnectStarted { attempt: 2.., .. })),
        "{}",
        trace.render_with(&grpc_chaos::trace::RenderOptions::everything())
    );
    Ok(())
}
