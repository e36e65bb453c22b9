//! The pure part of the wire tap: HTTP/2 frames (RFC 9113) decoded from, and
//! encoded into, the bytes of one direction of a simulated TCP connection.
//!
//! Nothing here does I/O. The tap feeds each direction's bytes to its own
//! [`Decoder`], in whatever chunks the network delivers them, and gets back
//! [`Event`]s: the client preface, complete [`Frame`]s with their byte
//! offsets, and [`Event::Malformed`] when the peer breaks the protocol. The
//! [`encode`] functions build frames that faults inject.
//!
//! Guarantees the rest of the harness relies on:
//! - chunking does not matter: the same bytes give the same events however
//!   they are split across [`Decoder::feed`] calls;
//! - every octet fed is accounted for: covered by an event, counted as
//!   opaque after a fatal error, or still buffered
//!   ([`Decoder::pending_bytes`]);
//! - no input panics, and memory is bounded by [`Limits`].

mod block;
pub mod decode;
pub mod encode;
pub mod frame;
pub mod grpc_frame;
mod hpack;
mod streams;

#[cfg(test)]
mod proptests;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub use block::{percent_decode, BlockKind, HeaderBlock, DATE_MASK};
pub use decode::{Decoder, Event, Limits};
pub use frame::{Detail, ErrorCode, Frame, FrameType, SettingId};

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
