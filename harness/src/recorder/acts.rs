//! What a handler fault or a middlebox did, as data: the numbers, codes
//! and *simulated* durations of each act, with no words. The trace's
//! renderers say them (`delay 2000ms`, `RST_STREAM(CANCEL) on s1 both
//! ways: …`), so a reworded line cannot change what a query matches.
//!
//! Serialized on its own (serde), each act is an object tagged by
//! `"kind"` (snake case) with its fields beside it, durations in
//! *simulated* µs (`after_us`), error codes by their RFC 9113 names:
//! `{"kind": "delay", "by_us": 2000000}`. The trace's JSON export writes
//! an act's words instead, as it always has (`"action": "delay 2000ms"`).

use std::time::Duration;

use serde::Serialize;

use crate::wire::{ErrorCode, FrameType};

/// What a handler fault did to a request:
/// [`FaultFired::action`](super::event::FaultFired::action).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FaultAction {
    /// Held the request this long before the handler, *simulated* time.
    Delay {
        /// The delay.
        #[serde(rename = "by_us", serialize_with = "super::event::micros")]
        by: Duration,
    },
    /// Answered with `code` without running the handler.
    Abort {
        /// The gRPC status name (`UNAVAILABLE`).
        code: &'static str,
        /// How the answer was sent.
        reply: FaultReply,
    },
    /// Never answered.
    Hang,
    /// Failed the `nth` of the first `of` matching requests with `code`.
    FailFirst {
        /// Which matching request this was, from 1.
        nth: u32,
        /// How many the fault fails.
        of: u32,
        /// The gRPC status name.
        code: &'static str,
        /// How the answer was sent.
        reply: FaultReply,
    },
}

/// How a handler fault's answer was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct FaultReply {
    /// The `grpc-retry-pushback-ms` sent, if any (ms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushback_ms: Option<i64>,
    /// Whether response headers went first (the status in trailers).
    pub after_headers: bool,
}

/// What a middlebox did on a connection:
/// [`PolicyActed::action`](super::event::PolicyActed::action).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PolicyAction {
    /// RST_STREAM(`code`) on `stream`, to the client and to the server.
    ResetStream {
        /// The stream.
        stream: u32,
        /// The error code.
        #[serde(serialize_with = "display")]
        code: ErrorCode,
        /// The timer that ran out.
        why: TimerRanOut,
    },
    /// Dropped its flow-table entry, sending nothing.
    ForgetFlow {
        /// The timer that ran out.
        why: TimerRanOut,
    },
    /// GOAWAY(`code`) to the client, then a close.
    GoAwayThenClose {
        /// The error code.
        #[serde(serialize_with = "display")]
        code: ErrorCode,
        /// The GOAWAY's last-stream-id.
        last_stream: u32,
        /// The timer that ran out.
        why: TimerRanOut,
    },
    /// Started answering the connection's PINGs itself.
    AnswersPings,
    /// Started answering the server's PINGs itself: they do not reach the
    /// client.
    AnswersServerPings,
    /// GOAWAY(NO_ERROR) at the connection's lifetime; closes after `grace`.
    LifetimeGoAway {
        /// The GOAWAY's last-stream-id.
        last_stream: u32,
        /// The lifetime, *simulated* time.
        #[serde(rename = "after_us", serialize_with = "super::event::micros")]
        after: Duration,
        /// The grace before the close, *simulated* time.
        #[serde(rename = "grace_us", serialize_with = "super::event::micros")]
        grace: Duration,
    },
    /// A stream's upstream timeout ran out and the box answered the client.
    UpstreamTimeout {
        /// The stream.
        stream: u32,
        /// The timeout, *simulated* time.
        #[serde(rename = "after_us", serialize_with = "super::event::micros")]
        after: Duration,
        /// What its timer ran from.
        since: UpstreamSince,
        /// What the client got.
        reply: UpstreamReply,
        /// Whether the server got RST_STREAM(`upstream_code`).
        reset_upstream: bool,
        /// The code of that RST_STREAM.
        #[serde(serialize_with = "display")]
        upstream_code: ErrorCode,
    },
    /// The connection's idle timer ran out and its drain began:
    /// GOAWAY(`code`, last-stream-id 2^31-1) to the client.
    DrainStarted {
        /// The GOAWAY's code.
        #[serde(serialize_with = "display")]
        code: ErrorCode,
        /// Until the second GOAWAY, *simulated* time.
        #[serde(rename = "drain_timeout_us", serialize_with = "super::event::micros")]
        drain_timeout: Duration,
        /// The timer that ran out.
        why: TimerRanOut,
    },
    /// The drain's second GOAWAY(`code`, `last_stream`); the close follows
    /// `close_delay` later.
    DrainGoAway {
        /// The GOAWAY's code.
        #[serde(serialize_with = "display")]
        code: ErrorCode,
        /// Its last-stream-id.
        last_stream: u32,
        /// Until the close, *simulated* time.
        #[serde(rename = "close_delay_us", serialize_with = "super::event::micros")]
        close_delay: Duration,
    },
    /// A stream's idle timer ran out before its response headers and the
    /// box answered the client (`Middlebox::stream_idle_reply`).
    StreamIdleReply {
        /// The stream.
        stream: u32,
        /// What the client got.
        reply: UpstreamReply,
        /// The code of the RST_STREAM the server got.
        #[serde(serialize_with = "display")]
        upstream_code: ErrorCode,
        /// The timer that ran out.
        why: TimerRanOut,
    },
    /// The server's HEADERS on a stream the box ended went on with
    /// END_STREAM cleared (noted once per stream).
    LateHeaders {
        /// The stream.
        stream: u32,
    },
    /// RST_STREAM(REFUSED_STREAM) on a stream past the box's limit.
    RefusedStream {
        /// The stream.
        stream: u32,
        /// Streams open then.
        open: usize,
        /// The limit it advertised.
        limit: u32,
    },
    /// The server's RST_STREAM(`from`) went on to the client as
    /// RST_STREAM(`to`) (`Middlebox::server_reset_code`).
    RewritesServerReset {
        /// The stream.
        stream: u32,
        /// The server's code.
        #[serde(serialize_with = "display")]
        from: ErrorCode,
        /// The code the client got.
        #[serde(serialize_with = "display")]
        to: ErrorCode,
    },
    /// SETTINGS_MAX_CONCURRENT_STREAMS sent to the client in place of the
    /// server's SETTINGS (noted once).
    AdvertisesMaxStreams {
        /// The value sent.
        value: u32,
    },
}

/// Which of a middlebox's timers ran out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "timer", rename_all = "snake_case")]
pub enum TimerRanOut {
    /// An idle timeout: the connection's, or `stream`'s.
    Idle {
        /// The stream, for a stream timer.
        #[serde(skip_serializing_if = "Option::is_none")]
        stream: Option<u32>,
        /// The timeout, *simulated* time.
        #[serde(rename = "after_us", serialize_with = "super::event::micros")]
        after: Duration,
        /// Which frames reset it.
        reset_by: IdleReset,
        /// Whose frames count: `None` for either end's.
        #[serde(skip_serializing_if = "Option::is_none")]
        written_by: Option<Writer>,
        /// The last activity (or the open), *simulated* time.
        #[serde(rename = "since_us", serialize_with = "super::event::micros")]
        since: Duration,
    },
    /// A stream's lifetime.
    StreamLifetime {
        /// The lifetime, *simulated* time.
        #[serde(rename = "after_us", serialize_with = "super::event::micros")]
        after: Duration,
        /// When the stream opened, *simulated* time.
        #[serde(rename = "opened_us", serialize_with = "super::event::micros")]
        opened: Duration,
    },
}

/// Which frames reset an idle timer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IdleReset {
    /// None: it runs from the open.
    Never,
    /// Every frame.
    AnyFrame,
    /// Frames of these types (none: nothing it knows of).
    Frames(#[serde(serialize_with = "frame_types")] Vec<FrameType>),
}

/// One end of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Writer {
    /// The end that dialled.
    Client,
    /// The end that listened.
    Server,
}

/// What an upstream timeout ran from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum UpstreamSince {
    /// The end of the request, at `at`.
    RequestEnd {
        /// *Simulated* time.
        #[serde(rename = "at_us", serialize_with = "super::event::micros")]
        at: Duration,
    },
    /// The last read from the server, at `at`.
    LastRead {
        /// *Simulated* time.
        #[serde(rename = "at_us", serialize_with = "super::event::micros")]
        at: Duration,
    },
}

/// What a middlebox sent the client when an upstream timeout ran out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum UpstreamReply {
    /// RST_STREAM(`code`): the response headers had gone out.
    RstStream {
        /// The error code.
        #[serde(serialize_with = "display")]
        code: ErrorCode,
    },
    /// A trailers-only gRPC response.
    TrailersOnly {
        /// The `grpc-status` number.
        status: u32,
        /// The `grpc-message`.
        message: String,
    },
    /// A plain HTTP response.
    Http {
        /// The `:status`.
        status: u16,
        /// The `content-type`.
        content_type: String,
        /// The body's length, bytes.
        body_len: usize,
    },
}

fn display<S: serde::Serializer>(v: &impl std::fmt::Display, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn frame_types<S: serde::Serializer>(types: &[FrameType], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(types.iter().map(ToString::to_string))
}

/// Why a connection policy closed or reset a connection:
/// [`PolicyClosed::reason`](super::event::PolicyClosed::reason) and
/// [`PolicyReset::reason`](super::event::PolicyReset::reason). A policy of
/// your own gives its words ([`PolicyEnd::Said`]); the built-in middlebox
/// gives the numbers, and the trace's renderers say them. The trace's JSON
/// export writes the words (`"reason": "idle timeout 350000ms: …"`), as it
/// always has.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyEnd {
    /// A policy's own words, as given to
    /// [`Effects::close`](crate::policy::Effects::close) or
    /// [`Effects::reset`](crate::policy::Effects::reset).
    Said(String),
    /// A middlebox timer ran out.
    Timer(TimerRanOut),
    /// A frame came after the middlebox forgot the flow (its idle timeout
    /// with [`Expiry::ForgetFlow`](crate::policy::Expiry::ForgetFlow)): the
    /// box answers it with a TCP RST.
    ForgottenFlow {
        /// When the flow was forgotten, *simulated* time since the start of
        /// the run.
        at: Duration,
        /// The frame that came.
        frame: FrameType,
        /// Which end sent it.
        from: Writer,
    },
    /// The connection lifetime ran out and the box closed the connection
    /// right after its GOAWAY (no grace).
    LifetimeNoGrace {
        /// The lifetime, *simulated* time.
        after: Duration,
    },
    /// A drain ([`Middlebox::idle_drain`](crate::policy::Middlebox::idle_drain))
    /// ended: the close `close_delay` after its second GOAWAY.
    DrainOver {
        /// The delay between the last GOAWAY and the close, *simulated*
        /// time.
        close_delay: Duration,
    },
    /// The grace after the connection lifetime's GOAWAY ended.
    LifetimeGraceOver {
        /// The lifetime, *simulated* time.
        after: Duration,
        /// The grace, *simulated* time.
        grace: Duration,
    },
}

impl PolicyEnd {
    /// The policy's own words, for [`PolicyEnd::Said`]; `None` for the
    /// built-in middlebox's reasons (the renderers say those).
    pub fn said(&self) -> Option<&str> {
        match self {
            Self::Said(s) => Some(s),
            _ => None,
        }
    }
}
