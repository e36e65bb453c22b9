//! A serve fn (`Sim::server_fn`): the user's own `serve(incoming,
//! shutdown)` runs unchanged on a sim host, with the harness's handler
//! layer or without it, across a shutdown, a restart and a failure.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::server::HandlerLayer;
use grpc_chaos::ServeFnHost;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::ms;
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::codegen::tokio_stream::Stream;
use tonic::transport::server::Connected;
use tonic::transport::Server;
use tonic::Code;

fn save(points: u32) -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points,
    }
}

/// A production serve fn, generic over its connections as tonic's
/// `serve_with_incoming_shutdown` is: `main` passes a `TcpIncoming` and
/// `ctrl_c()`, the sim its simulated ones.
async fn serve<I, IO, IE>(
    incoming: I,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error>
where
    I: Stream<Item = Result<IO, IE>>,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
    IE: Into<Box<dyn StdError + Send + Sync>>,
{
    Server::builder()
        .timeout(Duration::from_secs(5))
        .add_service(Store::with_work(ms(50)).into_server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}

/// The same serve fn with the harness's handler layer added first.
async fn serve_layered<I, IO, IE>(
    layer: HandlerLayer,
    incoming: I,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error>
where
    I: Stream<Item = Result<IO, IE>>,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
    IE: Into<Box<dyn StdError + Send + Sync>>,
{
    Server::builder()
        .timeout(Duration::from_secs(5))
        .layer(layer)
        .add_service(Store::with_work(ms(50)).into_server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}

/// A player that saves twice, 200 ms apart; `Ok` codes of both.
fn player(sim: &mut Sim) {
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        let first = store.save(save(1)).await.map(|_| ()).map_err(|s| s.code());
        tokio::time::sleep(ms(200)).await;
        let second = store.save(save(2)).await.map(|_| ()).map_err(|s| s.code());
        assert_eq!(first, Err(Code::Unavailable), "the handler fault answered");
        assert!(second.is_ok(), "the second save ran: {second:?}");
        Ok(())
    });
}

fn kinds<'a>(trace: &'a grpc_chaos::Trace, host: &'a str) -> Vec<&'a EventKind> {
    trace.events_on(host).map(|e| &e.kind).collect()
}

#[test]
fn a_serve_fn_with_the_handler_layer_is_recorded_faulted_and_shut_down() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(3).build();
    sim.server_fn("store", |host: ServeFnHost| async move {
        serve_layered(host.handler_layer(), host.incoming(), host.shutdown()).await
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .fail_first(1, Code::Unavailable),
    );
    // While the second save runs (it arrives at about 205 ms, takes 50 ms).
    sim.fault(Fault::shutdown("store").at(ms(225)));
    player(&mut sim);
    let trace = sim.run()?;
    let store = kinds(&trace, "store");
    let runs = store
        .iter()
        .filter(|k| matches!(k, EventKind::HandlerStarted(_)))
        .count();
    assert_eq!(runs, 2, "both saves are handler runs: {store:?}");
    assert!(store.iter().any(|k| matches!(k, EventKind::FaultFired(_))));
    let started = store
        .iter()
        .position(|k| matches!(k, EventKind::ShutdownStarted { .. }));
    let returned = store
        .iter()
        .position(|k| matches!(k, EventKind::ServeReturned { .. }));
    assert!(
        started.is_some() && started < returned,
        "the fault resolved the serve fn's shutdown future and serve returned: {store:?}"
    );
    assert!(!store
        .iter()
        .any(|k| matches!(k, EventKind::ServeFnWithoutLayer)));
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// A serve fn that does not add the handler layer.
fn without_layer(sim: &mut Sim) {
    sim.server_fn("store", |host: ServeFnHost| async move {
        serve(host.incoming(), host.shutdown()).await
    });
}

#[test]
fn a_serve_fn_without_the_layer_shows_its_frames_and_says_what_it_cannot_see() -> grpc_chaos::Result
{
    let mut sim = Sim::builder().seed(3).build();
    without_layer(&mut sim);
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1)).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let store = kinds(&trace, "store");
    assert!(!store
        .iter()
        .any(|k| matches!(k, EventKind::HandlerStarted(_))));
    assert!(store.iter().any(|k| matches!(k, EventKind::Frame { .. })));
    let text = trace.render();
    assert_eq!(
        text.matches("serve fn without the handler layer: handler runs and handler faults are not seen on store; frames are")
            .count(),
        1,
        "{text}"
    );
    insta::assert_snapshot!(text);
    Ok(())
}

#[test]
fn a_handler_fault_on_a_serve_fn_without_the_layer_is_a_misconfiguration() {
    let mut sim = Sim::builder().seed(3).build();
    without_layer(&mut sim);
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(100)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1)).await?;
        Ok(())
    });
    let err = sim.run().expect_err("a fault that cannot act");
    assert!(err.is_misconfigured(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("host `store` runs a serve fn"), "{msg}");
    assert!(msg.contains(".layer(host.handler_layer())"), "{msg}");
    let trace = err.trace().expect("the run's trace");
    assert!(trace
        .render()
        .contains("serve fn without the handler layer"));
}

#[test]
fn an_inside_layers_fault_on_a_serve_fn_is_refused_before_the_run() {
    let mut sim = Sim::builder().seed(3).build();
    without_layer(&mut sim);
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .inside_layers()
            .delay(ms(100)),
    );
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().expect_err("inside_layers cannot act");
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.trace().is_none(), "refused before the run: {err}");
    assert!(err.to_string().contains("inside_layers"), "{err}");
}

#[test]
fn a_restart_runs_the_serve_fn_again() -> grpc_chaos::Result {
    let starts = Arc::new(AtomicU32::new(0));
    let mut sim = Sim::builder().seed(3).build();
    let counted = starts.clone();
    sim.server_fn("store", move |host: ServeFnHost| {
        counted.fetch_add(1, Ordering::Relaxed);
        async move { serve_layered(host.handler_layer(), host.incoming(), host.shutdown()).await }
    });
    sim.fault(Fault::restart("store").at(ms(100)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1)).await?;
        tokio::time::sleep(ms(200)).await;
        // The old connection died with the restart: tonic's channel
        // redials, to the serve fn's second start.
        let _ = store.save(save(2)).await;
        store.save(save(3)).await?;
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(starts.load(Ordering::Relaxed), 2);
    let store = kinds(&trace, "store");
    let restarted = store
        .iter()
        .position(|k| matches!(k, EventKind::HostRestarted))
        .expect("restarted");
    let after = store[restarted..]
        .iter()
        .filter(|k| matches!(k, EventKind::HandlerFinished(f) if f.code == "OK"))
        .count();
    assert!(after >= 1, "the second start served: {store:?}");
    Ok(())
}

#[test]
fn a_serve_fn_that_returns_an_error_fails_the_run_naming_the_host() {
    let mut sim = Sim::builder().seed(3).build();
    sim.server_fn("store", |_host: ServeFnHost| async move {
        Err::<(), _>(std::io::Error::other("the config file is missing"))
    });
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().expect_err("the server failed");
    let msg = err.to_string();
    assert!(
        msg.contains("server host `store` failed: the config file is missing"),
        "{msg}"
    );
}

#[test]
fn a_serve_fn_that_returns_without_a_shutdown_fails_the_run() {
    let mut sim = Sim::builder().seed(3).build();
    sim.server_fn("store", |_host: ServeFnHost| async move {
        Ok::<(), std::io::Error>(())
    });
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().expect_err("the server stopped");
    assert!(
        err.to_string()
            .contains("server host `store` failed: its server stopped without a Fault::shutdown; its Sim::server or Sim::server_fn closure must not panic, return an error, or return before a Fault::shutdown"),
        "{err}"
    );
}

#[test]
fn taking_the_incoming_stream_twice_is_a_misconfiguration() {
    let mut sim = Sim::builder().seed(3).build();
    sim.server_fn("store", |host: ServeFnHost| async move {
        let _first = host.incoming();
        serve(host.incoming(), host.shutdown()).await
    });
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().expect_err("one listener");
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("ServeFnHost::incoming was called twice on host `store`"),
        "{err}"
    );
}
