//! A misconfigured or misbehaving scenario gives a typed error that says what
//! to change; the harness never panics or hangs on it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::store_server::StoreServer;
use grpc_chaos_scenarios::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::ms;
use tonic::{Code, Request, Response, Status};

fn save() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 3,
    }
}

/// A sim with a `store` server and a `player` client that saves once.
fn store_and_player(seed: u64) -> Sim {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store")).save(save()).await?;
        Ok(())
    });
    sim
}

/// Runs `sim`, which must fail, and returns the error.
fn run_err(sim: Sim) -> grpc_chaos::Error {
    match sim.run() {
        Ok(trace) => panic!("the run should have failed; trace:\n{}", trace.render()),
        Err(e) => e,
    }
}

#[test]
fn unknown_host_in_channel_fails_the_run_listing_known_hosts() {
    let mut sim = Sim::builder().seed(11).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |c| async move {
        // `?` turns the failed call into a client failure too: the typo must
        // still be what the run reports.
        StoreClient::new(c.channel("stroe")).save(save()).await?;
        Ok(())
    });
    let err = run_err(sim);
    assert!(err.is_unknown_host(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("unknown host `stroe`"), "{msg}");
    assert!(msg.contains("channel() on host `player`"), "{msg}");
    assert!(msg.contains("known hosts: store"), "{msg}");
    assert!(msg.contains("CHAOS_SEED=11"), "{msg}");
    assert_eq!(err.seed(), Some(11));
    let trace = err.trace().expect("a run error keeps its trace");
    let call = &trace.calls()[0];
    assert_eq!(call.target, "stroe");
    assert_eq!(
        call.outcome().map(|o| o.code),
        Some("UNAVAILABLE"),
        "calls through a channel to an unknown host fail UNAVAILABLE"
    );
}

#[test]
fn unknown_host_in_a_fault_fails_before_running() {
    for fault in [
        Fault::crash("stroe").at(ms(10)),
        Fault::partition("player", "stroe").at(ms(10)),
        Fault::handler("stroe").hang(),
    ] {
        let ran = Arc::new(AtomicBool::new(false));
        let mut sim = Sim::builder().seed(1).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        let flag = ran.clone();
        sim.client("player", move |_| async move {
            flag.store(true, Ordering::SeqCst);
            Ok(())
        });
        sim.fault(fault);
        let err = run_err(sim);
        assert!(err.is_unknown_host(), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("unknown host `stroe`"), "{msg}");
        assert!(msg.contains("known hosts: player, store"), "{msg}");
        assert!(!ran.load(Ordering::SeqCst), "no host may run: {msg}");
        assert!(err.trace().is_none(), "nothing ran, so no trace");
    }
}

#[test]
fn duplicate_host_name_is_misconfigured() {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s);
    sim.client("store", |_| async { Ok(()) });
    let err = run_err(sim);
    assert!(err.is_misconfigured(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`store` is registered twice"), "{msg}");
    assert!(msg.contains("its own name"), "says what to change: {msg}");
}

#[test]
fn malformed_method_paths_are_misconfigured() {
    for path in [
        "tt.v1.Store/Save",
        "/tt.v1.Store",
        "/tt.v1.Store/",
        "/a/b/c",
    ] {
        let mut sim = store_and_player(1);
        sim.fault(Fault::handler("store").method(path).hang());
        let err = run_err(sim);
        assert!(err.is_misconfigured(), "{path}: {err}");
        let msg = err.to_string();
        assert!(msg.contains(&format!("`{path}`")), "{msg}");
        assert!(msg.contains("/package.Service/Method"), "{msg}");
        assert!(err.trace().is_none(), "checked before running: {msg}");
    }
}

#[test]
fn fault_for_a_service_the_host_does_not_serve_names_what_it_serves() {
    // The client makes no call: the check must not depend on traffic.
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |_| async { Ok(()) });
    sim.fault(Fault::handler("store").method("/tt.v1.Nope/Save").hang());
    let err = run_err(sim);
    assert!(err.is_misconfigured(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`/tt.v1.Nope/Save`"), "{msg}");
    assert!(msg.contains("it serves: tt.v1.Store"), "{msg}");
}

#[test]
fn host_fault_after_the_end_names_the_time_and_the_duration() {
    let mut sim = Sim::builder().seed(1).duration(ms(1000)).build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.fault(Fault::crash("store").at(ms(2500)));
    let err = run_err(sim);
    assert!(err.is_misconfigured(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("2500ms"), "{msg}");
    assert!(msg.contains("(1000ms)"), "{msg}");
    assert!(
        msg.contains("SimBuilder::duration"),
        "says what to change: {msg}"
    );
}

#[test]
fn handler_fault_window_after_the_end_is_misconfigured() {
    let mut sim = Sim::builder().seed(1).duration(ms(1000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |_| async { Ok(()) });
    sim.fault(Fault::handler("store").during(ms(2000), ms(3000)).hang());
    let err = run_err(sim);
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.to_string().contains("2000ms"), "{err}");
}

#[test]
fn empty_window_and_zero_concurrency_are_misconfigured() {
    for fault in [
        Fault::handler("store").during(ms(200), ms(100)).hang(),
        Fault::handler("store").concurrency_limit(0),
    ] {
        let mut sim = store_and_player(1);
        sim.fault(fault);
        let err = run_err(sim);
        assert!(err.is_misconfigured(), "{err}");
    }
}

#[test]
fn crashing_or_restarting_a_client_host_is_misconfigured() {
    for fault in [
        Fault::crash("player").at(ms(10)),
        Fault::restart("player").at(ms(10)),
    ] {
        let mut sim = store_and_player(1);
        sim.fault(fault);
        let err = run_err(sim);
        assert!(err.is_misconfigured(), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("`player` is a client host"), "{msg}");
        assert!(msg.contains("only server hosts"), "{msg}");
    }
}

/// A handler fault on a client host: the host exists, so the error must not
/// call it unknown while listing it among the known hosts.
#[test]
fn handler_fault_on_a_client_host_says_it_is_a_client() {
    let mut sim = store_and_player(1);
    sim.fault(Fault::handler("player").hang());
    let err = run_err(sim);
    let msg = err.to_string();
    assert!(msg.contains("`player`"), "{msg}");
    assert!(err.trace().is_none(), "checked before running: {msg}");
    assert!(err.is_misconfigured(), "{msg}");
    assert!(msg.contains("`player` is a client host"), "{msg}");
}

#[test]
fn run_that_reaches_its_duration_names_the_client_and_its_open_call() {
    let mut sim = Sim::builder().seed(5).duration(ms(2000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").hang());
    sim.client("player", |c| async move {
        // No deadline: this call waits forever.
        StoreClient::new(c.channel("store")).save(save()).await?;
        Ok(())
    });
    let err = run_err(sim);
    assert!(err.is_timeout(), "{err}");
    let msg = err.to_string();
    // The tick is named: a tick longer than what the clients wait for
    // would be the reason.
    assert!(msg.contains("(2000ms, tick 1ms)"), "{msg}");
    assert!(
        msg.contains("`player` waiting on r1 /tt.v1.Store/Save to store (no deadline; handler h1 on store has not answered; fault on it: hang)"),
        "{msg}"
    );
    assert!(msg.contains("raise SimBuilder::duration"), "{msg}");
    assert!(msg.contains("CHAOS_SEED=5"), "{msg}");
    let trace = err.trace().expect("the trace shows what it waits on");
    assert_eq!(trace.attempts("store", SAVE), 1);
}

#[test]
fn client_without_an_open_call_is_named_on_timeout() {
    let mut sim = Sim::builder().seed(5).duration(ms(500)).build();
    sim.server("store", |s| s);
    sim.client("sleeper", |_| async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok(())
    });
    let err = run_err(sim);
    assert!(err.is_timeout(), "{err}");
    assert!(
        err.to_string().contains("`sleeper` (no call open)"),
        "{err}"
    );
}

/// A Store whose `Save` panics.
#[derive(Debug, Clone, Copy)]
struct PanickingStore;

#[tonic::async_trait]
impl grpc_chaos_scenarios::services::pb::store_server::Store for PanickingStore {
    async fn save(&self, _: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        panic!("disk on fire")
    }

    async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        Ok(Response::new(LoadReply { total: 0 }))
    }
}

#[test]
fn panicking_handler_is_a_typed_error_and_the_client_sees_its_stream_reset() {
    let mut sim = Sim::builder().seed(9).build();
    sim.server("store", |s| s.add_service(StoreServer::new(PanickingStore)));
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .save(save())
            .await
            .expect_err("the handler panicked");
        // The client body carries on; the panic alone must fail the run.
        // tonic's server resets the stream of a handler that panicked
        // (tests/handler_panics.rs): CANCELLED, never a harness-made status.
        assert_eq!(err.code(), Code::Cancelled, "{err:?}");
        Ok(())
    });
    let err = run_err(sim);
    assert!(err.is_handler_panic(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains(SAVE), "{msg}");
    assert!(msg.contains("`store`"), "{msg}");
    assert!(msg.contains("disk on fire"), "{msg}");
    assert!(msg.contains("CHAOS_SEED=9"), "{msg}");
    let trace = err.trace().expect("trace");
    assert!(
        trace.events().iter().any(|e| e.host == "store"
            && matches!(&e.kind, EventKind::HandlerPanicked(p) if p.message == "disk on fire")),
        "{}",
        trace.render()
    );
    let outcome = trace.calls()[0].outcome().expect("the call ended");
    assert_eq!(outcome.code, "CANCELLED");
}

#[test]
fn client_body_error_is_a_client_failure_naming_the_host() {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("calm", |_| async { Ok(()) });
    sim.client("player", |c| async move {
        let reply = StoreClient::new(c.channel("store")).save(save()).await?;
        Err(format!("expected total 4, got {}", reply.into_inner().total).into())
    });
    let err = run_err(sim);
    assert!(err.is_client_failure(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("client `player` failed"), "{msg}");
    assert!(msg.contains("expected total 4, got 3"), "{msg}");
    assert!(!msg.contains("calm"), "{msg}");
    assert!(msg.contains("CHAOS_SEED=3"), "{msg}");
}

#[test]
fn panicking_client_body_is_a_client_failure_naming_the_host() {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| s);
    sim.client("player", |_| async {
        tokio::time::sleep(ms(5)).await;
        panic!("client gave up");
    });
    let err = run_err(sim);
    assert!(err.is_client_failure(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`player`"), "{msg}");
    assert!(msg.contains("CHAOS_SEED=3"), "{msg}");
    // No tokio task id: it is numbered across the process, so the same
    // failure would read differently next to other tests.
    assert!(
        msg.contains(r#"failed: panicked with message "client gave up""#),
        "{msg}"
    );
}

/// A server closure that panics (here: when the host restarts) must be
/// blamed on the server host, not on whichever clients are still running.
#[test]
fn panicking_server_setup_is_blamed_on_the_server() {
    let mut sim = Sim::builder().seed(3).build();
    let starts = Arc::new(AtomicUsize::new(0));
    let counter = starts.clone();
    sim.server("store", move |s| {
        if counter.fetch_add(1, Ordering::SeqCst) > 0 {
            panic!("config file missing");
        }
        s.add_service(Store::default().into_server())
    });
    sim.fault(Fault::restart("store").at(ms(10)));
    sim.client("player", |_| async {
        tokio::time::sleep(ms(100)).await;
        Ok(())
    });
    let err = run_err(sim);
    let msg = err.to_string();
    assert!(msg.contains("config file missing"), "{msg}");
    assert_eq!(
        starts.load(Ordering::SeqCst),
        2,
        "the restart ran the closure"
    );
    assert!(msg.contains("`store`"), "{msg}");
    assert!(!msg.contains("client `player` failed"), "{msg}");
}

/// A fault whose method exists in no request (a typo in the method name,
/// the service being right) runs fine but is reported: never silently a
/// no-op.
#[test]
fn a_fault_that_never_fires_is_reported_in_the_trace() -> grpc_chaos::Result {
    let mut sim = store_and_player(1);
    sim.fault(
        Fault::handler("store")
            .method("/tt.v1.Store/Sav")
            .delay(ms(100)),
    );
    sim.fault(
        Fault::inject("store", "player")
            .goaway(grpc_chaos::wire::ErrorCode::NoError, 0, b"")
            .at(Duration::ZERO),
    );
    let trace = sim.run()?;
    let unused: Vec<String> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FaultNeverFired { fault } => Some(fault.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(unused.len(), 2, "{unused:?}");
    assert!(unused[0].contains("/tt.v1.Store/Sav"), "{unused:?}");
    assert!(
        unused[1].contains("no connection from store to player"),
        "{unused:?}"
    );
    assert!(
        trace.render().contains("fault never fired"),
        "{}",
        trace.render()
    );
    Ok(())
}

#[test]
fn faults_that_need_the_wire_tap_are_refused_when_it_is_off() {
    use grpc_chaos::policy::KeepalivePolicy;
    use grpc_chaos::wire::FrameType;
    let untapped = || {
        let mut sim = Sim::builder().seed(5).wire_tap(false).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client("player", |_| async { Ok(()) });
        sim
    };
    let mut frames = untapped();
    frames.fault(Fault::frames().kind(FrameType::Ping).drop());
    let mut policy = untapped();
    policy.keepalive_policy("store", KeepalivePolicy::grpc_go());
    for (sim, what) in [(frames, "a frame fault"), (policy, "a keepalive policy")] {
        let err = run_err(sim);
        assert!(err.is_misconfigured(), "{err}");
        let msg = err.to_string();
        assert!(msg.contains(what), "{msg}");
        assert!(msg.contains("SimBuilder::wire_tap(false)"), "{msg}");
    }
}
