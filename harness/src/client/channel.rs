//! The recorded channel's type, reached at the crate root only
//! (`grpc_chaos::Channel`); its behaviour is this module's parent's.

use std::sync::Arc;

use super::{CallSite, Transport};

/// A real [`tonic::transport::Channel`] over the simulated network, wrapped
/// so that every call is recorded: start (path, `grpc-timeout`), end (status
/// as tonic reports it, and the spec's code), or the caller dropping it.
///
/// Use it wherever tonic's generated clients take a transport
/// (`StoreClient::new(host.channel("store"))`). Code that needs the concrete
/// `tonic::transport::Channel` type can use
/// [`Host::tonic_channel`](crate::Host::tonic_channel); calls through it are
/// derived from the wire ([`Call::seen_on_wire`](crate::trace::Call::seen_on_wire)),
/// with less known about each.
///
/// Each request gets an `x-grpc-chaos-call` header so the handler it reaches
/// can be linked to it.
#[derive(Clone)]
pub struct Channel {
    pub(super) inner: Transport,
    pub(super) call: Arc<CallSite>,
}
