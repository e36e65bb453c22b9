//! The pure part of the wire tap: HTTP/2 frames (RFC 9113) decoded from, and
//! encoded into, the bytes of one direction of a simulated TCP connection.
//!
//! Nothing here does I/O. The tap feeds each direction's bytes to its own
//! `Decoder`, in whatever chunks the network delivers them, and gets back
//! `Event`s: the client preface, complete `Frame`s with their byte
//! offsets, and `Event::Malformed` when the peer breaks the protocol. The
//! `encode` functions build frames that faults inject.
//!
//! The codec itself (`decode`, `encode`, `frame`, `grpc_frame`, and
//! `Decoder`, `Event`, `Limits`, `Frame`, `percent_decode` here) is public
//! only with the `unstable-codec` feature, as h2 keeps its codec behind
//! `unstable`: a test that speaks HTTP/2 itself
//! ([`Host::raw_connect`](crate::Host::raw_connect)) or a fuzz target
//! enables it, and it may change in any release. The frame vocabulary the
//! rest of the API uses ([`FrameType`], [`ErrorCode`], [`SettingId`],
//! [`Detail`], [`Direction`], [`BlockKind`], [`HeaderBlock`]) is public
//! either way.
//!
//! Guarantees the rest of the harness relies on:
//! - chunking does not matter: the same bytes give the same events however
//!   they are split across `Decoder::feed` calls;
//! - every octet fed is accounted for: covered by an event, counted as
//!   opaque after a fatal error, or still buffered
//!   (`Decoder::pending_bytes`);
//! - no input panics, and memory is bounded by `Limits`.

mod block;
#[cfg(feature = "unstable-codec")]
pub mod decode;
#[cfg(feature = "unstable-codec")]
pub mod encode;
#[cfg(feature = "unstable-codec")]
pub mod frame;
#[cfg(feature = "unstable-codec")]
pub mod grpc_frame;
// Without the feature the codec is the crate's own: its `pub` items are
// reachable only from here, and the parts only users call (some encoders,
// accessors) are unused.
#[cfg(not(feature = "unstable-codec"))]
#[allow(unreachable_pub, dead_code)]
pub(crate) mod decode;
#[cfg(not(feature = "unstable-codec"))]
#[allow(unreachable_pub, dead_code)]
pub(crate) mod encode;
#[cfg(not(feature = "unstable-codec"))]
#[allow(unreachable_pub, dead_code)]
pub(crate) mod frame;
#[cfg(not(feature = "unstable-codec"))]
#[allow(unreachable_pub, dead_code)]
pub(crate) mod grpc_frame;
mod hpack;
pub(crate) mod protobuf;
mod streams;

#[cfg(test)]
mod proptests;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

#[cfg(feature = "unstable-codec")]
pub use block::percent_decode;
pub use block::{BlockKind, HeaderBlock, DATE_MASK};
// Without the feature, only the crate's tests name these here.
#[cfg(not(feature = "unstable-codec"))]
#[cfg_attr(not(test), allow(unused_imports))]
pub(crate) use block::percent_decode;
#[cfg(not(feature = "unstable-codec"))]
#[cfg_attr(not(test), allow(unused_imports))]
pub(crate) use decode::Limits;
#[cfg(not(feature = "unstable-codec"))]
pub(crate) use decode::{Decoder, Event};
#[cfg(feature = "unstable-codec")]
pub use decode::{Decoder, Event, Limits};
#[cfg(feature = "unstable-codec")]
pub use frame::Frame;
#[cfg(not(feature = "unstable-codec"))]
pub(crate) use frame::Frame;
pub use frame::{Detail, ErrorCode, FrameType, SettingId};

/// Which way the bytes flow on a connection. It decides whether the client
/// connection preface is expected (RFC 9113 §3.4) and how field blocks are
/// classified ([`BlockKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From the peer that dialled (the gRPC client) to the listener.
    ClientToServer,
    /// From the listener (the gRPC server) back to the dialler.
    ServerToClient,
}
