//! The guide's "Your own serve function" example
//! (`harness/src/guide/serve_fn.md`), as a user would paste it.
//! `the_guide_shows_this_file` keeps the page and this file the same.

use std::future::Future;
use std::time::Duration;

use grpc_chaos::ServeFnHost;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use tokio::io::{AsyncRead, AsyncWrite};
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};
use tonic::codegen::tokio_stream::Stream;
use tonic::codegen::{Body as HttpBody, Bytes};
use tonic::service::Routes;
use tonic::transport::server::Connected;
use tonic::transport::Server;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Your production serve fn, with the outermost layer as a parameter:
/// `main` calls it with `tower::layer::util::Identity::new()`, a
/// `TcpIncoming` and a `ctrl_c()` future; the sim with the harness's
/// handler layer and its simulated connections.
async fn serve<L, B, I, IO, IE>(
    layer: L,
    incoming: I,
    shutdown: impl Future<Output = ()>,
) -> Result<(), tonic::transport::Error>
where
    L: tower::Layer<Routes> + Clone,
    L::Service: tower::Service<Request<Body>, Response = Response<B>> + Clone + Send + 'static,
    <L::Service as tower::Service<Request<Body>>>::Future: Send,
    <L::Service as tower::Service<Request<Body>>>::Error: Into<BoxError> + Send,
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    I: Stream<Item = Result<IO, IE>>,
    IO: AsyncRead + AsyncWrite + Connected + Unpin + Send + 'static,
    IO::ConnectInfo: Clone + Send + Sync + 'static,
    IE: Into<BoxError>,
{
    Server::builder()
        .timeout(Duration::from_secs(1))
        .layer(layer)
        .add_service(Store::with_work(Duration::from_millis(300)).into_server())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
}

#[test]
fn a_deploy_drains_the_store() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server_fn("store", |host: ServeFnHost| async move {
        serve(host.handler_layer(), host.incoming(), host.shutdown()).await
    });
    // The deploy's SIGTERM, while a save is in flight.
    sim.fault(Fault::shutdown("store").at(Duration::from_millis(105)));
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        store.save(SaveRequest::default()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    assert!(trace.render().contains("serve returned"));
    Ok(())
}

#[test]
fn as_main_calls_it_the_harness_sees_frames_only() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server_fn("store", |host: ServeFnHost| async move {
        let layer = tower::layer::util::Identity::new();
        serve(layer, host.incoming(), host.shutdown()).await
    });
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        store.save(SaveRequest::default()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    assert!(trace.render().contains(
        "serve fn without the handler layer: handler runs and handler faults are not seen on store; frames are"
    ));
    Ok(())
}

#[test]
fn the_guide_shows_this_file() {
    let page = include_str!("../../../harness/src/guide/serve_fn.md");
    let this = include_str!("readme_serve_fn.rs");
    let example = this
        .split_once("\n\n")
        .map(|(_, rest)| rest)
        .and_then(|rest| rest.split("\n#[test]\nfn the_guide_shows_this_file").next())
        .expect("the example part of this file");
    assert!(
        page.contains(example.trim_end()),
        "harness/src/guide/serve_fn.md's serve fn example differs from tests/tests/guide/readme_serve_fn.rs"
    );
}
