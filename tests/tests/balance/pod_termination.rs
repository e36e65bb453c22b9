//! Kubernetes pod termination (`Fault::pod_termination`): the endpoint
//! removed after a lag, SIGTERM after the preStop hook, SIGKILL at the
//! grace period; what a balanced channel's callers see when SIGTERM comes
//! before the endpoint is gone, and when a preStop covers the lag.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::Call;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

/// When store-1's pod is deleted, and the endpoint lag the tests use.
const DELETE: Duration = Duration::from_millis(1000);
const LAG: Duration = Duration::from_millis(1000);

/// Three store replicas (20 ms per Save) and a player that starts a Save
/// every 10 ms for 3 s, each with a 500 ms deadline, through one balanced
/// channel; `termination` is store-1's pod deletion.
fn deploy(termination: Fault) -> grpc_chaos::Result<Trace> {
    deploy_for(termination, Duration::ZERO)
}

/// [`deploy`], with the player waiting `linger` after its last call.
fn deploy_for(termination: Fault, linger: Duration) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(3)
        .duration(Duration::from_secs(40))
        .build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(20)).into_server())
    });
    sim.fault(termination);
    sim.client("player", move |player| async move {
        let store = StoreClient::new(player.balanced_channel("store"));
        let mut saves = tokio::task::JoinSet::new();
        for n in 0..300 {
            let mut store = store.clone();
            saves.spawn(async move {
                let mut req = tonic::Request::new(SaveRequest {
                    match_id: format!("m{n}"),
                    points: 1,
                });
                req.set_timeout(ms(500));
                let _ = store.save(req).await;
            });
            tokio::time::sleep(ms(10)).await;
        }
        while saves.join_next().await.is_some() {}
        tokio::time::sleep(linger).await;
        Ok(())
    });
    sim.run()
}

fn failed(trace: &Trace) -> Vec<&Call> {
    trace
        .calls_from("player")
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect()
}

/// Each of store-1's termination events, with its time.
fn timeline(trace: &Trace) -> Vec<(Duration, &'static str)> {
    trace
        .events()
        .iter()
        .filter(|e| e.host.as_str() == "store-1")
        .filter_map(|e| {
            let what = match &e.kind {
                EventKind::PodTerminationStarted { .. } => "pod termination started",
                EventKind::ReplicaLeft { .. } => "left its set",
                EventKind::ShutdownStarted { .. } => "SIGTERM",
                EventKind::ServeReturned { .. } => "serve returned",
                EventKind::ShutdownGraceOver { .. } => "SIGKILL",
                _ => return None,
            };
            Some((e.at(), what))
        })
        .collect()
}

#[test]
fn sigterm_before_the_endpoint_is_gone_fails_calls() -> grpc_chaos::Result {
    let trace = deploy(Fault::pod_termination("store-1", LAG).at(DELETE))?;
    let timeline = timeline(&trace);
    for step in [
        (DELETE, "pod termination started"),
        (DELETE, "SIGTERM"),
        (DELETE + LAG, "left its set"),
    ] {
        assert!(timeline.contains(&step), "{step:?} not in {timeline:?}");
    }
    // Between SIGTERM and the endpoint's removal the balancer still picks
    // store-1, whose server no longer takes calls.
    let failed = failed(&trace);
    assert!(!failed.is_empty(), "no call failed");
    assert!(
        failed
            .iter()
            .all(|c| c.started >= DELETE && c.started <= DELETE + LAG),
        "a call failed outside SIGTERM..endpoint removal: {:?}",
        failed.iter().map(|c| c.started).collect::<Vec<_>>()
    );
    Ok(())
}

#[test]
fn a_pre_stop_that_covers_the_lag_fails_none() -> grpc_chaos::Result {
    let pre_stop = LAG + ms(500);
    let trace = deploy(
        Fault::pod_termination("store-1", LAG)
            .pre_stop(pre_stop)
            .at(DELETE),
    )?;
    let timeline = timeline(&trace);
    assert_eq!(
        timeline[..3],
        [
            (DELETE, "pod termination started"),
            (DELETE + LAG, "left its set"),
            (DELETE + pre_stop, "SIGTERM"),
        ]
    );
    // Nothing is left on store-1 by SIGTERM: the drain ends at once, and
    // no SIGKILL comes.
    assert_eq!(timeline.get(3).map(|t| t.1), Some("serve returned"));
    assert!(!timeline.iter().any(|t| t.1 == "SIGKILL"));
    assert_eq!(failed(&trace).len(), 0);
    let row = trace.render();
    assert!(
        row.contains(
            "store-1              pod termination started: endpoint removed in 1000ms, \
             SIGTERM in 1500ms, SIGKILL in 30000ms (if still draining)"
        ),
        "{row}"
    );
    Ok(())
}

#[test]
fn a_pre_stop_past_the_grace_period_gets_two_seconds() -> grpc_chaos::Result {
    let trace = deploy_for(
        Fault::pod_termination("store-1", LAG)
            .pre_stop(Duration::from_secs(12))
            .termination_grace_period(Duration::from_secs(10))
            .at(DELETE),
        Duration::from_secs(10),
    )?;
    let sigterm = timeline(&trace).into_iter().find(|t| t.1 == "SIGTERM");
    assert_eq!(sigterm, Some((DELETE + Duration::from_secs(10), "SIGTERM")));
    let grace = trace.events().iter().find_map(|e| match &e.kind {
        EventKind::ShutdownStarted { grace } if e.host.as_str() == "store-1" => *grace,
        _ => None,
    });
    assert_eq!(grace, Some(Duration::from_secs(2)));
    Ok(())
}

#[test]
fn a_host_that_is_not_a_replica_is_refused() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::pod_termination("store", LAG).at(DELETE));
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().unwrap_err().to_string();
    assert!(
        err.contains("Fault::pod_termination(\"store\"): `store` is not a replica of a set"),
        "{err}"
    );
    assert!(err.contains("replica sets: (none)"), "{err}");
}

#[test]
fn a_sigkill_after_the_run_is_refused() {
    let mut sim = Sim::builder().duration(Duration::from_secs(20)).build();
    sim.servers("store", 2, |s| {
        s.add_service(Store::default().into_server())
    });
    // SIGKILL at 1 s + 30 s, after the 20 s run.
    sim.fault(Fault::pod_termination("store-1", LAG).at(DELETE));
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().unwrap_err().to_string();
    assert!(
        err.contains("graceful shutdown of store-1 at 1000ms with grace 30000ms"),
        "{err}"
    );
    assert!(err.contains("after the end of the run"), "{err}");
}

#[test]
fn the_sigterm_first_story_fails_calls_until_the_removal() {
    let (trace, report) = grpc_chaos_tests::story("pod-termination-sigterm-first");
    let failed = failed(&trace);
    assert_eq!(failed.len(), 22, "{}", report.happened);
    for c in &failed {
        let o = c.outcome().expect("ended");
        assert_eq!(
            (o.code, o.message.as_str()),
            ("UNAVAILABLE", "connect to store-1: connection refused")
        );
    }
    insta::assert_snapshot!(grpc_chaos_tests::replica_story_rows(&trace, "store-1"));
}

#[test]
fn the_pre_stop_story_fails_none() {
    let (trace, report) = grpc_chaos_tests::story("pod-termination-prestop");
    assert!(failed(&trace).is_empty(), "{}", report.happened);
    insta::assert_snapshot!(grpc_chaos_tests::replica_story_rows(&trace, "store-1"));
}
