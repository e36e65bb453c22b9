//! Graceful shutdown as a fault (`Fault::shutdown`): tonic's
//! `serve_with_incoming_shutdown` drains, the trace shows the GOAWAYs, the
//! calls in flight, the new calls, and when serve returned.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::{codes, ms};
use tonic::Code;

fn save(points: u32) -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points,
    }
}

fn kinds<'a>(trace: &'a grpc_chaos::Trace, host: &'a str) -> Vec<&'a EventKind> {
    trace.events_on(host).map(|e| &e.kind).collect()
}

/// A store whose saves take 300 ms, shut down at 100 ms while one save is
/// in flight; a second save starts at 200 ms.
fn drain_during_a_save(seed: u64) -> Sim {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(300)).into_server())
    });
    sim.fault(Fault::shutdown("store").at(ms(100)));
    sim.client("player", |c| async move {
        let store = StoreClient::new(c.channel("store"));
        let mut first = store.clone();
        let in_flight = tokio::spawn(async move { first.save(save(1)).await });
        tokio::time::sleep(ms(200)).await;
        let late = store.clone().save(save(2)).await;
        let first = in_flight.await.expect("joined");
        assert!(first.is_ok(), "the call in flight finishes: {first:?}");
        assert!(late.is_err(), "a new call fails: {late:?}");
        Ok(())
    });
    sim
}

#[test]
fn a_drain_lets_the_call_in_flight_finish_and_refuses_new_ones() -> grpc_chaos::Result {
    let trace = drain_during_a_save(1).run()?;
    // The new call goes to the connection that got the GOAWAY: hyper's
    // client refuses to send it there and tonic's channel has not redialled
    // yet, so it fails at once with CANCELLED "operation was canceled"
    // (the spec asks UNAVAILABLE of a server that is shutting down).
    assert_eq!(codes(&trace), ["OK", "CANCELLED"]);
    let late = &trace.calls()[1];
    assert_eq!(late.latency(), Some(Duration::ZERO));
    let store = kinds(&trace, "store");
    let started = store
        .iter()
        .position(|k| matches!(k, EventKind::ShutdownStarted { grace: None }));
    let returned = store
        .iter()
        .position(|k| matches!(k, EventKind::ServeReturned { .. }));
    let finished = store
        .iter()
        .position(|k| matches!(k, EventKind::HandlerFinished(f) if f.code == "OK"));
    assert!(
        started < finished && finished < returned,
        "shutdown, then the save finishes, then serve returns: {store:?}"
    );
    let render = trace.render();
    assert!(
        render.contains("GOAWAY NO_ERROR last-stream-id=2147483647"),
        "h2's first GOAWAY of a graceful shutdown:\n{render}"
    );
    insta::assert_snapshot!(render);
    Ok(())
}

#[test]
fn the_grace_crashes_a_server_still_draining() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(2).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).hang());
    sim.fault(Fault::shutdown("store").grace(ms(500)).at(ms(100)));
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .save(save(1))
            .await
            .unwrap_err();
        // The crash cuts the stream: tonic's UNKNOWN "transport error".
        assert_eq!(err.code(), Code::Unknown, "{err}");
        Ok(())
    });
    let trace = sim.run()?;
    let render = trace.render();
    assert!(
        render.contains("600.000  store                shutdown grace of 500ms over with 1 connection still open: crashing the host"),
        "{render}"
    );
    assert!(
        render.contains("600.000  store                host crashed"),
        "{render}"
    );
    insta::assert_snapshot!(render);
    Ok(())
}

#[test]
fn a_server_still_draining_at_the_end_says_what_it_waits_on() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).hang());
    sim.fault(Fault::shutdown("store").at(ms(100)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        // The call stays open past the end of the player's body.
        tokio::spawn(async move { store.save(save(1)).await });
        tokio::time::sleep(ms(300)).await;
        Ok(())
    });
    let trace = sim.run()?;
    let last = trace.events().last().expect("events");
    match &last.kind {
        EventKind::ShutdownStillDraining(draining) => {
            assert_eq!((draining.since, draining.open_conns), (ms(100), 1));
            assert_eq!(draining.waiting_on.len(), 1);
            assert_eq!(draining.waiting_on[0].path, SAVE);
        }
        other => panic!("{other:?}"),
    }
    let render = trace.render();
    assert!(
        render.contains("shutdown still draining at the end of the run (started at 100ms): 1 connection open, waiting on h1 /tt.v1.Store/Save"),
        "{render}"
    );
    Ok(())
}

#[test]
fn a_restart_after_a_shutdown_serves_again() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(4).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::shutdown("store").at(ms(100)));
    sim.fault(Fault::restart("store").at(ms(500)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1)).await?;
        tokio::time::sleep(ms(200)).await;
        assert!(store.save(save(2)).await.is_err(), "nothing listens");
        tokio::time::sleep(ms(400)).await;
        store.save(save(3)).await?;
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(codes(&trace), ["OK", "UNAVAILABLE", "OK"]);
    let store = kinds(&trace, "store");
    assert!(store
        .iter()
        .any(|k| matches!(k, EventKind::ServeReturned { .. })));
    assert!(store.iter().any(|k| matches!(k, EventKind::HostRestarted)));
    Ok(())
}

#[test]
fn a_shutdown_of_a_crashed_host_is_a_fault_that_never_fired() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(5).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::crash("store").at(ms(50)));
    sim.fault(Fault::shutdown("store").at(ms(100)));
    sim.client("player", |_| async move {
        tokio::time::sleep(ms(200)).await;
        Ok(())
    });
    let render = sim.run()?.render();
    assert!(
        render.contains("fault never fired: graceful shutdown of store at 100ms: the host's server was not running"),
        "{render}"
    );
    Ok(())
}

/// A shutdown at 0 ms, before any host has run, and one at the instant of
/// a restart, before the restarted server runs again, fire as the server
/// starts: it serves nothing new (the call is refused), and serve returns.
#[test]
fn a_shutdown_before_the_server_starts_takes_effect_as_it_starts() -> grpc_chaos::Result {
    for (restart, shutdown) in [(None, ms(0)), (Some(ms(100)), ms(100))] {
        let mut sim = Sim::builder().seed(6).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        if let Some(at) = restart {
            sim.fault(Fault::crash("store").at(ms(50)));
            sim.fault(Fault::restart("store").at(at));
        }
        sim.fault(Fault::shutdown("store").at(shutdown));
        sim.client("player", move |c| async move {
            tokio::time::sleep(shutdown + ms(10)).await;
            let refused = StoreClient::new(c.channel("store")).save(save(1)).await;
            assert!(
                refused.is_err(),
                "a server shutting down from its start serves nothing"
            );
            Ok(())
        });
        let trace = sim.run()?;
        let store = kinds(&trace, "store");
        let started = trace.events_on("store").find_map(|e| match e.kind {
            EventKind::ShutdownStarted { .. } => Some(e.at()),
            _ => None,
        });
        assert_eq!(started, Some(shutdown), "{}", trace.render());
        assert!(
            store
                .iter()
                .any(|k| matches!(k, EventKind::ServeReturned { .. })),
            "{}",
            trace.render()
        );
        assert!(
            !store
                .iter()
                .any(|k| matches!(k, EventKind::FaultNeverFired { .. })),
            "{}",
            trace.render()
        );
    }
    Ok(())
}

// Bad input.

#[test]
fn a_shutdown_of_a_client_host_is_refused_before_the_run() {
    let mut sim = Sim::builder().seed(6).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::shutdown("player").at(ms(10)));
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().unwrap_err();
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("graceful shutdown of player: `player` is a client host; only server hosts"),
        "{err}"
    );
}

#[test]
fn a_grace_that_ends_after_the_run_is_refused_before_the_run() {
    let mut sim = Sim::builder()
        .seed(7)
        .duration(Duration::from_secs(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::shutdown("store")
            .grace(Duration::from_secs(30))
            .at(Duration::from_secs(1)),
    );
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().unwrap_err();
    assert!(err.is_misconfigured(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("graceful shutdown of store at 1000ms with grace 30000ms: the grace ends at 31000ms, after the end of the run (10000ms)"),
        "{msg}"
    );
    assert!(msg.contains("shorten the grace"), "{msg}");
}

/// A shutdown at `at`, on the instant a save sent at 100 ms reaches the store.
fn shutdown_as_a_save_arrives(at: Duration) -> Sim {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(30)).into_server())
    });
    sim.fault(Fault::shutdown("store").at(at));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1)).await?;
        tokio::time::sleep(ms(100)).await;
        let _ = store.save(save(2)).await;
        Ok(())
    });
    sim
}

/// The summary's "order by chance" lines of the run `sim` builds. The run is made
/// on a thread of its own: its order may differ between processes on
/// purpose, and the determinism canary checks only a test's own thread.
fn chance_lines(sim: fn() -> Sim) -> Vec<String> {
    let trace = std::thread::spawn(move || {
        sim()
            .run()
            .map(|t| t.render_summary(None))
            .map_err(|e| e.to_string())
    })
    .join()
    .expect("no panic")
    .expect("the run passes");
    let mut lines = trace
        .lines()
        .skip_while(|l| !l.starts_with("  order by chance"));
    let first = lines.next().map(str::to_owned);
    first
        .into_iter()
        .chain(
            lines
                .take_while(|l| l.starts_with("   "))
                .map(str::to_owned),
        )
        .collect()
}

#[test]
fn a_shutdown_on_the_tick_a_request_arrives_is_flagged_as_an_order_by_chance() {
    // The save sent at 133 ms starts its handler at 134 ms: tonic's select!
    // sees the signal and the request in one tick (measured: the GOAWAY
    // lands before or after the handler's start, 4 of 8 processes each).
    let lines = chance_lines(|| shutdown_as_a_save_arrives(ms(134)));
    if grpc_chaos::check::tokio_rng_seeded() {
        assert!(
            lines.is_empty(),
            "seeded: nothing left to chance: {lines:?}"
        );
        return;
    }
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert!(line.contains("134.000  store"), "{line}");
    assert!(
        line.contains("shutdown signal and a handler start in one tick"),
        "{line}"
    );
    assert!(line.contains("--cfg tokio_unstable"), "{line}");
}

#[test]
fn a_shutdown_off_the_request_ticks_leaves_nothing_to_chance() {
    // One tick early, and after the last call: nothing else moves then.
    let off: [fn() -> Sim; 3] = [
        || shutdown_as_a_save_arrives(ms(133)),
        || shutdown_as_a_save_arrives(ms(120)),
        || shutdown_as_a_save_arrives(ms(250)),
    ];
    for (i, sim) in off.into_iter().enumerate() {
        let lines = chance_lines(sim);
        assert!(lines.is_empty(), "shutdown number {i}: {lines:?}");
    }
}
