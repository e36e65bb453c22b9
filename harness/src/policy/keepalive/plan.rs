//! The reaction plan: what the emulated server puts on the wire once patience runs out.

use serde::Serialize;

use super::{KeepalivePolicy, OnTooManyPings};
use crate::wire::ErrorCode;
/// GOAWAY debug data sent by grpc-go, C-core and grpc-java alike.
pub const TOO_MANY_PINGS: &[u8] = b"too_many_pings";
/// gRPC status code UNAVAILABLE (grpc `doc/statuscodes.md`).
pub const UNAVAILABLE: u32 = 14;

/// A call the server still has open when it gives up on the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OpenStream {
    /// HTTP/2 stream id.
    pub id: u32,
    /// Whether the server already sent this call's response HEADERS; then a
    /// status goes out as trailers, not as a trailers-only response.
    pub response_headers_sent: bool,
}

/// One step of the reaction, in the order the tap must perform it. Frames
/// are described, not encoded; another module encodes them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Action {
    /// GOAWAY frame (RFC 9113 §6.8).
    SendGoAway {
        /// Highest stream id the server accepted.
        last_stream_id: u32,
        /// Error code: [`ErrorCode::EnhanceYourCalm`].
        code: ErrorCode,
        /// Debug data: [`TOO_MANY_PINGS`].
        debug: &'static [u8],
    },
    /// Trailers-only response on a call whose response headers were not
    /// sent: one HEADERS frame with END_STREAM carrying `:status: 200`,
    /// `content-type: application/grpc`, `grpc-status` and `grpc-message`.
    SendTrailersOnly {
        /// HTTP/2 stream id.
        stream_id: u32,
        /// `grpc-status` code.
        grpc_status: u32,
        /// `grpc-message` text (to be percent-encoded by the encoder).
        message: &'static str,
    },
    /// Trailers on a call whose response headers were already sent: one
    /// HEADERS frame with END_STREAM carrying `grpc-status` and
    /// `grpc-message`.
    SendTrailers {
        /// HTTP/2 stream id.
        stream_id: u32,
        /// `grpc-status` code.
        grpc_status: u32,
        /// `grpc-message` text (to be percent-encoded by the encoder).
        message: &'static str,
    },
    /// RST_STREAM frame (RFC 9113 §6.4).
    SendRstStream {
        /// HTTP/2 stream id.
        stream_id: u32,
        /// Error code: [`ErrorCode::NoError`] (C-core) or
        /// [`ErrorCode::Cancel`] (grpc-java).
        code: ErrorCode,
    },
    /// Close the TCP connection (after flushing the frames above).
    CloseConnection,
}

/// The ordered actions that follow a [`PingVerdict::TooManyPings`].
///
/// `last_stream_id` is the highest stream id the server accepted on this
/// connection; `open` the calls it still had open (any order: they are
/// handled in ascending stream id so traces are stable).
///
/// The ACK of the offending PING is not in the list: it comes from the real
/// server behind the tap and must reach the client *before* these actions.
/// Everything the real server writes afterwards should be dropped.
///
/// [`PingVerdict::TooManyPings`]: super::PingVerdict::TooManyPings
pub fn reaction(policy: &KeepalivePolicy, last_stream_id: u32, open: &[OpenStream]) -> Vec<Action> {
    let mut open = open.to_vec();
    open.sort_by_key(|stream| stream.id);

    let mut actions = vec![Action::SendGoAway {
        last_stream_id,
        code: ErrorCode::EnhanceYourCalm,
        debug: TOO_MANY_PINGS,
    }];
    match policy.on_too_many_pings {
        OnTooManyPings::CloseAfterGoAway => {}
        OnTooManyPings::TrailersOnlyThenReset { status, message } => {
            for stream in &open {
                actions.push(status_action(*stream, status, message));
                actions.push(Action::SendRstStream {
                    stream_id: stream.id,
                    code: ErrorCode::NoError,
                });
            }
        }
        OnTooManyPings::ResetStreamsThenClose { code } => {
            actions.extend(open.iter().map(|stream| Action::SendRstStream {
                stream_id: stream.id,
                code,
            }));
        }
    }
    actions.push(Action::CloseConnection);
    actions
}

fn status_action(stream: OpenStream, grpc_status: u32, message: &'static str) -> Action {
    if stream.response_headers_sent {
        Action::SendTrailers {
            stream_id: stream.id,
            grpc_status,
            message,
        }
    } else {
        Action::SendTrailersOnly {
            stream_id: stream.id,
            grpc_status,
            message,
        }
    }
}
