//! One host's tonic server, with its builder's type erased: what the host
//! closure calls once it has its routes, its simulated listener and its
//! shutdown signal.

use std::future::Future;
use std::io;
use std::pin::Pin;

use bytes::Bytes;
use futures_util::Stream;
use tonic::body::Body;
use tonic::transport::Server;
use tower::Layer;

use super::{Builder, Routed};
use crate::net::SimConn;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The host's simulated connections, as accepted.
pub(crate) type Incoming = Pin<Box<dyn Stream<Item = io::Result<SimConn>>>>;

/// Completes when the host's graceful shutdown starts
/// ([`Fault::shutdown`](crate::Fault::shutdown)).
pub(crate) type Signal = Pin<Box<dyn Future<Output = ()>>>;

/// Serves the routes on the connections until the signal, then drains.
pub(crate) type ServeFn = Box<
    dyn FnOnce(
        Routed,
        Incoming,
        Signal,
    ) -> Pin<Box<dyn Future<Output = Result<(), tonic::transport::Error>>>>,
>;

/// The serve function of a configured builder: tonic's
/// `serve_with_incoming_shutdown`, which drops the listener when the signal
/// fires, tells every connection to shut down gracefully (hyper: GOAWAY,
/// PING, GOAWAY with the last stream id) and returns once every connection
/// has closed (tonic `transport/server/mod.rs` `serve_internal`).
pub(crate) fn serve_fn<L, ResBody>(server: Server<L>) -> ServeFn
where
    L: Layer<Routed> + 'static,
    L::Service: tower::Service<http::Request<Body>, Response = http::Response<ResBody>>
        + Clone
        + Send
        + 'static,
    <L::Service as tower::Service<http::Request<Body>>>::Future: Send,
    <L::Service as tower::Service<http::Request<Body>>>::Error: Into<BoxError> + Send + 'static,
    ResBody: http_body::Body<Data = Bytes> + Send + 'static,
    ResBody::Error: Into<BoxError>,
{
    Box::new(move |routes, incoming, signal| {
        Box::pin(server.serve_with_incoming_shutdown(routes, incoming, signal))
    })
}

/// The serve function of a host whose setup did not configure its builder:
/// tonic's defaults around the harness's layer.
pub(crate) fn default_serve(builder: Builder) -> ServeFn {
    serve_fn(builder)
}
