//! Deterministic fault injection for tonic gRPC services.
//!
//! `grpc-chaos` runs real tonic servers and clients on a simulated network
//! ([turmoil]), breaks it on purpose — crash a host, slow a handler, cut a
//! link — and records what the gRPC stack did in a [`Trace`] you can query,
//! assert on, and snapshot. Time is *simulated*: a 10-minute story costs
//! milliseconds, and the same seed gives byte-identical traces.
//!
//! ```
//! use std::time::Duration;
//! use grpc_chaos::{Fault, Sim};
//!
//! let mut sim = Sim::builder().seed(7).build();
//! sim.server("store", |s| s);
//! sim.client("player", |_| async { Ok(()) });
//! sim.fault(Fault::restart("store").at(Duration::ZERO));
//! let trace = sim.run()?;
//! assert_eq!(trace.seed(), 7);
//! # Ok::<(), grpc_chaos::Error>(())
//! ```
//!
//! Data flows one way: [`Sim`] (world) → the wiring of every connection →
//! [faults](Fault) → the recorder → [`Trace`] → renderers.
//!
//! The [`guide`] has a page per topic: your own services, your server as
//! in production, faults, replicas, keepalive, middleboxes, retries,
//! reading a trace, determinism and replay, exploration.
//!
//! [turmoil]: https://docs.rs/turmoil

#![warn(missing_debug_implementations)]
// Edition 2024 (for its merged doctests, CONTRIBUTING.md "The guide and its
// doctests"): clippy would fold 32 nested `if let`s into let chains (Rust
// 1.88). Left for a change of its own, so this one moves no code.
#![allow(clippy::collapsible_if)]

pub mod balance;
pub mod check;
pub mod client;
pub mod deadline;
pub mod env;
mod error;
pub mod explore;
pub mod fault;
#[cfg(test)]
mod flow_check;
pub mod guide;
mod net;
pub mod policy;
pub mod recorder;
pub mod retry;
pub mod server;
mod sim;
pub mod spec;
pub mod tls;
pub mod trace;
mod units;
pub mod wire;

/// Entry points for the fuzz targets in `fuzz/` (`ci/fuzz.sh` and
/// cargo-fuzz build with `--cfg fuzzing`). Not part of the API: absent
/// from every other build, undocumented, and free to change with any
/// release.
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing {
    /// Drives both directions of one connection's wire tap with `data`
    /// (octets, frame rules, clock moves and releases, all read from it)
    /// and panics when the tap breaks one of its promises
    /// (`harness/src/net/tap/fuzzing.rs` lists them).
    pub fn tap(data: &[u8]) {
        crate::net::fuzzing::run(data);
    }
}

// The crate's front: twelve names (ci/api.sh refuses a thirteenth).
// Everything else is in a module, at one path (ci/public-api.txt lists
// them).
pub use client::channel::Channel;
pub use client::generic::GrpcChannel;
pub use error::{Error, Result};
pub use fault::value::Fault;
pub use sim::{defaults, Host, ServeFnHost, ServerHost, Sim, SimBuilder};
pub use spec::spec_code;
pub use trace::query::Trace;

// The crate's own README (its crates.io page) runs as a doctest, so its
// example stays true; it ships in the package, so this holds there too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;
