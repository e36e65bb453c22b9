//! The guide's "Your server as in production" example
//! (`harness/src/guide/production_server.md`), as a user would paste it.
//! `the_guide_shows_this_file` keeps the page and this file the same.

use std::task::{Context, Poll};
use std::time::Duration;

use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use tonic::service::InterceptorLayer;
use tonic::{Request, Status};

/// Your production auth check.
#[allow(clippy::result_large_err)]
fn auth(req: Request<()>) -> Result<Request<()>, Status> {
    match req.metadata().get("authorization") {
        Some(token) if token == "token" => Ok(req),
        _ => Err(Status::unauthenticated("no token")),
    }
}

#[test]
fn the_store_as_deployed() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| {
        // The calls your main makes, on tonic's own builder.
        s.configure(|b| {
            b.timeout(Duration::from_secs(1))
                .max_concurrent_streams(100)
                .max_connection_age(Duration::from_secs(30))
                .layer(InterceptorLayer::new(auth))
        })
        .add_service(Store::default().into_server())
    });
    // A slow disk: after the auth layer, so only authorised saves wait.
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .inside_layers()
            .delay(Duration::from_millis(1500)),
    );
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        let mut req = Request::new(SaveRequest {
            match_id: "m1".into(),
            points: 1,
        });
        req.metadata_mut().insert("authorization", "token".parse()?);
        // The server's own 1 s timeout ends the save, as in production.
        let err = store.save(req).await.unwrap_err();
        assert_eq!(err.message(), "Timeout expired");
        Ok(())
    });
    let trace = sim.run()?;
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// A layer for one service only: a tower-layered service loses tonic's
/// `NamedService`, so give it back with a small wrapper.
#[derive(Clone)]
struct StoreNamed<S>(S);

impl<S> tonic::server::NamedService for StoreNamed<S> {
    const NAME: &'static str = "tt.v1.Store";
}

impl<S: tower::Service<R>, R> tower::Service<R> for StoreNamed<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> S::Future {
        self.0.call(req)
    }
}

#[test]
fn one_service_behind_its_own_layer() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| {
        let store = tower::ServiceBuilder::new()
            .layer(InterceptorLayer::new(auth))
            .service(Store::default().into_server());
        s.add_service(StoreNamed(store))
    });
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        let req = SaveRequest::default();
        let err = store.save(req).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unauthenticated);
        Ok(())
    });
    sim.run()?;
    Ok(())
}

#[test]
fn the_guide_shows_this_file() {
    let example = grpc_chaos_tests::readme_example(include_str!("readme_server.rs"));
    assert!(
        include_str!("../../../harness/src/guide/production_server.md").contains(example),
        "harness/src/guide/production_server.md's server example differs from tests/tests/guide/readme_server.rs"
    );
}
