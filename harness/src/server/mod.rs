//! The server a sim host runs: tonic's own
//! [`Server`](tonic::transport::Server) builder, configured as in
//! production ([`ServerHost::configure`](crate::ServerHost::configure)),
//! serving the host's routes on simulated connections.
//!
//! # Layer order
//!
//! A request passes, outermost first:
//!
//! | # | what | from |
//! |---|---|---|
//! | 1 | tonic's own stack: `RecoverError`, `load_shed`, `concurrency_limit_per_connection`, the `timeout` / `grpc-timeout` timer | tonic `transport/server/mod.rs` `MakeSvc::call` |
//! | 2 | [`HandlerLayer`]: records the handler run (`hN`) and applies [`Fault::handler`](crate::Fault::handler) faults | the harness, the builder's first `layer` |
//! | 3 | the layers your closure adds with `.layer(..)`, in the order added (the first added is the outermost, as in tonic) | you |
//! | 4 | the faults marked [`inside_layers`](crate::fault::HandlerFault::inside_layers) (no recording of their own) | the harness, wrapping the routes |
//! | 5 | the routes: each service added with [`ServerHost::add_service`](crate::ServerHost::add_service) / [`add_routes`](crate::ServerHost::add_routes), interceptors of `FooServer::with_interceptor` included | you |
//!
//! So a run `hN` is recorded for every request that reaches the service
//! stack, also one a layer of yours answers itself (its status is the
//! run's), and tonic's server `timeout` (or the request's `grpc-timeout`)
//! ends a run by dropping it and answering the stream itself (`hN handler
//! … dropped by tonic's server timeout after 1000ms (…): tonic answered
//! CANCELLED "Timeout expired" (spec DEADLINE_EXCEEDED)`, told from the
//! answer on the wire: [`ServerTimeout`](crate::recorder::event::ServerTimeout);
//! the caller gets `CANCELLED "Timeout expired"`). An error one of your layers returns instead of a response
//! is answered as tonic's `RecoverError` does when it is a `Status` (and
//! recorded as the run's status); any other error goes to hyper, which
//! resets the stream, and the run is recorded as dropped.
//!
//! # A serve fn's host
//!
//! A host added with [`Sim::server_fn`](crate::Sim::server_fn) builds its
//! server itself: the table above holds when its builder adds
//! [`ServeFnHost::handler_layer`](crate::ServeFnHost::handler_layer) as its
//! first layer; where it adds it elsewhere, the run `hN` starts there.
//! Row 4 does not exist on such a host (the harness does not wrap its
//! routes, so [`inside_layers`](crate::fault::HandlerFault::inside_layers)
//! faults are refused), and without the layer rows 2 and 4 are both
//! missing: the harness then sees its frames only.
//!
//! # Determinism
//!
//! tonic's connection task chooses with `tokio::select!` between serving
//! the connection, the `max_connection_age` timer and the shutdown signal;
//! tokio picks a ready branch at random, from an RNG only seeded with
//! `--cfg tokio_unstable`. When the age or a [`Fault::shutdown`](crate::Fault::shutdown)
//! falls on the very tick a request arrives on that connection, the order
//! of the two in the trace can differ between runs of one seed: put ages
//! and shutdowns off the times your traffic arrives (the catalog uses
//! 1025 ms against a 50 ms grid).
//!
//! # Options with no effect in the simulation
//!
//! The sim serves with `serve_with_incoming_shutdown` on simulated
//! connections, where tonic itself ignores `tcp_nodelay`, `tcp_keepalive`,
//! `tcp_keepalive_interval` and `tcp_keepalive_retries` (their docs say so;
//! turmoil's TCP has neither Nagle's algorithm nor keepalive probes).
//! Setting them changes nothing, and the harness cannot tell that they
//! were set (tonic's `Server` keeps its options private), so it records
//! nothing for them. Use HTTP/2 keepalive (`http2_keepalive_interval`,
//! modelled exactly) to find a dead peer. `tls_config` needs a tonic TLS
//! feature this crate does not enable; with it enabled in your own crate,
//! tonic would wrap TLS around the harness's connection, above the wire
//! tap, which would then read TLS records where HTTP/2 frames belong (a
//! `protocol error at byte 0` row) and check certificates on the wall
//! clock: serve TLS with [`ServerHost::tls`](crate::ServerHost::tls)
//! instead ([`crate::tls`]). Every other option is tonic's own code
//! running unchanged.

mod incoming;
mod serve;

use std::convert::Infallible;

use tonic::body::Body;
use tower::layer::util::{Identity, Stack};

pub(crate) mod handler;
pub use crate::net::{PeerInfo, SimConn};
pub use handler::{HandlerBody, HandlerLayer, HandlerService};
pub use incoming::{Incoming, Shutdown};
pub(crate) use serve::{default_serve, serve_fn, ServeFn, Signal};

/// Marks a side effect of your code at this instant: stock reserved, a row
/// written, a message sent. Inside a sim it is recorded as an
/// [`EventKind::Effect`](crate::recorder::event::EventKind::Effect) at
/// the host, with the handler run whose task called it, and
/// [`Trace::assert_no_stale_work`](crate::Trace::assert_no_stale_work)
/// fails when it came after the run's caller had given up. It is one
/// `tracing` event (target `grpc_chaos::effect`, field `effect = name`,
/// INFO): outside a sim it goes wherever your subscriber sends it, and
/// costs what an event costs. Any `tracing` event of yours with an
/// `effect` field counts the same, so an existing log line can be the
/// mark: `tracing::info!(effect = "reserve", order = id, "reserved")`.
///
/// ```
/// async fn reserve(order: u64) {
///     // ... take the stock ...
///     grpc_chaos::server::effect("reserve");
/// #   let _ = order;
/// }
/// ```
pub fn effect(name: &str) {
    tracing::info!(target: crate::recorder::EFFECT_TARGET, effect = name, "side effect");
}

/// The builder a [`ServerHost::configure`](crate::ServerHost::configure)
/// closure gets: `tonic::transport::Server::builder()` with the harness's
/// [`HandlerLayer`] already added as its first layer. Every option of
/// tonic's builder works on it as on `Server::builder()`; layers you add
/// go inside the harness's.
pub type Builder = tonic::transport::Server<Stack<HandlerLayer, Identity>>;

/// The service the builder's layers wrap: the host's routes behind the
/// faults marked [`inside_layers`](crate::fault::HandlerFault::inside_layers),
/// boxed. A layer in a configure closure must be a `tower::Layer` of it
/// (any layer generic over the service it wraps is).
pub type Routed =
    tower::util::BoxCloneSyncService<http::Request<Body>, http::Response<Body>, Infallible>;
