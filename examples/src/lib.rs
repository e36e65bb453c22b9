//! A shop, standing in for a team's own services: `Orders` takes an order
//! and reserves its items with `Inventory`. Its own protos
//! (`proto/shop.proto`, compiled by `build.rs` with protox), its own
//! server setup ([`production`]) and no dependency on grpc-chaos: the
//! tests under `tests/shop/` bring the harness in as a dev-dependency, the
//! way a team's crate would.
//!
//! `src/main.rs` serves both services on real sockets with the same
//! [`production`] setup the tests run in the simulation.

mod deadline;
mod inventory;
mod orders;

pub use deadline::remaining;
pub use inventory::Inventory;
pub use orders::{Orders, Transport};

use std::time::Duration;

/// The generated messages, clients and servers of `shop.v1`.
#[allow(missing_docs, unreachable_pub)]
pub mod pb {
    tonic::include_proto!("shop.v1");
}

/// gRPC method paths, as `Fault::handler(..).method(..)` takes them
/// (`tests/shop/methods.rs` checks each against the generated client, with
/// `grpc_chaos::client::method_path`).
pub mod methods {
    /// `shop.v1.Inventory/Reserve`.
    pub const RESERVE: &str = "/shop.v1.Inventory/Reserve";
    /// `shop.v1.Inventory/WatchStock`.
    pub const WATCH_STOCK: &str = "/shop.v1.Inventory/WatchStock";
    /// `shop.v1.Orders/Place`.
    pub const PLACE: &str = "/shop.v1.Orders/Place";
}

/// The server options the shop deploys with, applied to tonic's builder:
/// a 2 s per-request timeout, at most 64 calls in flight per connection,
/// keepalive PINGs every 30 s (answered within 10 s) and connections
/// recycled after 30 minutes. `main` and the tests both call it, so the
/// simulation runs the server as deployed. Generic over the builder's
/// layer, `L`, so it applies to a builder that already has layers (the
/// harness puts its handler layer on the one it hands a test's
/// `configure`).
pub fn production<L>(server: tonic::transport::Server<L>) -> tonic::transport::Server<L> {
    server
        .timeout(Duration::from_secs(2))
        .concurrency_limit_per_connection(64)
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .max_connection_age(Duration::from_secs(30 * 60))
}

// The README's example is `tests/shop/deadline.rs`; it also compiles as a
// doctest here, where the shop and (as a dev-dependency) the harness are.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctest;
