//! The fields of the event kinds too large to sit inline in
//! [`EventKind`](super::event::EventKind): each such variant holds one of
//! these boxed (a pointer inline, the fields on the heap), so an event is
//! only as large as a frame event, and the rare or per-call events that
//! carry paths, messages and several durations pay for their own space.
//! Field names, docs and JSON are those the variants had inline: JSON
//! puts the fields beside `"event"` as before.

use std::time::Duration;

use serde::Serialize;

use super::event::{
    BalancerChange, CallId, FaultAction, FrameDetail, FrameFlags, HostName, KeepaliveVerdict,
    LayerSide, OpenRun, Outcome, PanicSite, PolicyAction, PolicyEnd, RunId, WaitingFor,
};
use crate::wire::FrameType;

/// The fields of [`EventKind::FaultFired`](super::event::EventKind::FaultFired),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultFired {
    /// The handler run it acted on.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// What it did (the trace says `delay 2000ms`).
    pub action: FaultAction,
    /// Which side of the server's own layers it acted on, on a host
    /// whose builder has layers of its own
    /// ([`ServerHost::configure`](crate::ServerHost::configure)); none
    /// on a host without (both sides are then the same place).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side: Option<LayerSide>,
}

/// The fields of [`EventKind::CallStarted`](super::event::EventKind::CallStarted),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallStarted {
    /// The call.
    pub call: CallId,
    /// The host called.
    pub target: HostName,
    /// The method path, `/package.Service/Method`.
    pub path: String,
    /// The `grpc-timeout` sent, if any.
    #[serde(rename = "timeout_us", serialize_with = "super::event::opt_micros")]
    pub timeout: Option<Duration>,
    /// The handler run on this host the call was made from, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<RunId>,
}

/// The fields of [`EventKind::CallStoppedReading`](super::event::EventKind::CallStoppedReading),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large (a rare event: tonic's decoder refused a
/// message header).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallStoppedReading {
    /// The call.
    pub call: CallId,
    /// The method path.
    pub path: String,
    /// The message's Message-Length, octets.
    pub message_len: u32,
    /// Octets of the message that had arrived.
    pub received: u64,
    /// Its Compressed-Flag octet.
    pub flag: u8,
}

/// The fields of [`EventKind::HandlerDequeued`](super::event::EventKind::HandlerDequeued),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandlerDequeued {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// How long it waited, *simulated* time.
    #[serde(rename = "queued_us", serialize_with = "super::event::micros")]
    pub queued: Duration,
}

/// The fields of [`EventKind::CallUndecodable`](super::event::EventKind::CallUndecodable),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
///
/// **How the harness knows** (read in tonic 0.14.9 `codec/decode.rs` and
/// prost 0.14): the response body was dropped without its status right
/// after a DATA frame that completed a message, and the first message that
/// frame completed does not parse as protobuf even with every field
/// unknown (prost's `impl Message for ()`, which skips each field by its
/// wire type: a truncated varint or field, wire type 6 or 7, tag 0, an
/// unmatched group end). tonic polls the body only when it holds no whole
/// message, and decodes the first one as soon as it is whole, so that
/// message was decoded, and prost fails on such bytes for every message
/// type. A message that parses so but not as the caller's type (a wire
/// type its field does not have, invalid UTF-8 in a string) cannot be told
/// from a caller that stops after it: that stays a `CallDropped`. So does a
/// compressed one (Compressed-Flag 1: the harness does not decompress).
/// It assumes the caller decodes protobuf, as tonic's generated clients
/// do (tonic-prost).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallUndecodable {
    /// The call.
    pub call: CallId,
    /// The method path.
    pub path: String,
    /// The length of the message it could not decode, octets.
    pub message_len: u32,
}

/// The fields of [`EventKind::CallFailedConnecting`](super::event::EventKind::CallFailedConnecting),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
///
/// **How the harness knows** (read in tonic 0.14.9 and tower 0.5, and
/// measured): a plain tonic channel is lazy; its buffer worker
/// (`tower::buffer`) dials only for a call it holds, and its reconnect
/// service (`transport/channel/service/reconnect.rs`) keeps a failed
/// dial's error and returns it from the `call` of that very request. So
/// each failed dial fails the one call that waited for it, which tonic
/// reports as UNAVAILABLE with the connector's error (`status.rs`, a
/// `ConnectError`), and a dial given up at the connect timeout as UNKNOWN
/// "transport error" (hyper-timeout's error, a `transport::Error` to the
/// caller; measured with both kinds of channel). A dial dropped because
/// the channel itself was dropped fails no call and is not recorded so.
/// The method, the start and any deadline of the call are not seen: tonic
/// hands the connector the endpoint's URI, never the request. Not known
/// either: whether the call still waited when the dial failed. A caller
/// that gave up first (its own `tokio::time::timeout`, a dropped future)
/// is gone from tower's buffer, and tonic keeps the error for the next
/// call; the row is then recorded at the dial's failure all the same.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallFailedConnecting {
    /// The call (numbered where it failed, as it is first seen there).
    pub call: CallId,
    /// The server host the channel dials.
    pub target: HostName,
    /// The connection attempt the call waited for (`connect attempt N`).
    pub attempt: u32,
    /// What tonic told the caller, and the spec's code.
    pub outcome: Outcome,
}

/// The fields of [`EventKind::HandlerDropped`](super::event::EventKind::HandlerDropped),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandlerDropped {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// From start to the drop, *simulated* time.
    #[serde(rename = "ran_us", serialize_with = "super::event::micros")]
    pub ran: Duration,
    /// Set when the trace is built, not by the recorder: tonic's server
    /// timer dropped the run, and tonic answered its stream itself (see
    /// [`ServerTimeout`]); none for every other drop, and whenever the
    /// harness cannot tell (the wire tap off, or more runs dropped at that
    /// instant than the answers can be told apart by). JSON: absent when
    /// none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<ServerTimeout>,
}

/// tonic's server timer ended a handler run: its `GrpcTimeout` layer
/// (tonic 0.14.9 `transport/service/grpc_timeout.rs`, outside the
/// harness's handler layer: `transport/server/mod.rs`, `MakeSvc::call`)
/// sleeps for the shorter of the request's `grpc-timeout` and the
/// server's `Server::timeout`, from the request's arrival; when the sleep
/// ends first it returns `TimeoutExpired`, tonic's `RecoverError` answers
/// the stream trailers-only with `Status::from_error`'s CANCELLED "Timeout
/// expired", and the handler's future is dropped.
///
/// **How the harness knows** (read, not guessed): the run was dropped at
/// the very instant its host wrote that answer, trailers-only
/// `grpc-status=1` `grpc-message="Timeout expired"`, on the stream of a
/// request from the run's caller for the run's method (its call id too,
/// when the caller used a recorded channel). The handler layer sits right
/// inside tonic's timer, so nothing else between the two answers a stream
/// and drops the handler. Without the call id several such runs at one
/// instant are all tied when the answers number as many (each answer drops
/// one of them), and none when fewer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerTimeout {
    /// Which of the two durations ran out.
    #[serde(flatten)]
    pub timer: ServerTimer,
    /// What tonic answered (CANCELLED "Timeout expired"), and the code
    /// the spec requires (DEADLINE_EXCEEDED, [`crate::spec::rules::SERVER_DEADLINE`]).
    pub outcome: Outcome,
}

/// Which duration tonic's server timer ran for ([`ServerTimeout`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "timer", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerTimer {
    /// The request's `grpc-timeout`, as tonic's server read it: the run
    /// lasted at least that long. (A `Server::timeout` as short would
    /// look the same; tonic keeps its options private.)
    GrpcTimeout {
        /// The `grpc-timeout`, *simulated* time.
        #[serde(rename = "grpc_timeout_us", serialize_with = "super::event::micros")]
        timeout: Duration,
    },
    /// The server's own `Server::timeout`: the request sent no
    /// `grpc-timeout` tonic reads, or one the run did not last.
    ServerTimeout {
        /// The request's `grpc-timeout`, if it sent one, *simulated* time.
        #[serde(
            rename = "grpc_timeout_us",
            serialize_with = "super::event::opt_micros",
            skip_serializing_if = "Option::is_none"
        )]
        grpc_timeout: Option<Duration>,
    },
}

/// The fields of [`EventKind::ShutdownStillDraining`](super::event::EventKind::ShutdownStillDraining),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large (recorded at most once per server, at the end
/// of the run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShutdownStillDraining {
    /// When the shutdown started, *simulated* time since the start.
    #[serde(rename = "since_us", serialize_with = "super::event::micros")]
    pub since: Duration,
    /// Connections the server still had open.
    pub open_conns: u32,
    /// The handler runs on the host still running.
    pub waiting_on: Vec<OpenRun>,
}

/// The fields of [`EventKind::PodTerminationStarted`](super::event::EventKind::PodTerminationStarted),
/// boxed: inline, three durations would make every event larger. Times
/// are from the pod's deletion, *simulated*.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PodTerminationStarted {
    /// Until the replica leaves its set (clients have seen its endpoint
    /// removed).
    #[serde(rename = "endpoint_lag_us", serialize_with = "super::event::micros")]
    pub endpoint_lag: Duration,
    /// Until SIGTERM (the preStop hook's run).
    #[serde(rename = "sigterm_us", serialize_with = "super::event::micros")]
    pub sigterm: Duration,
    /// Until SIGKILL.
    #[serde(rename = "sigkill_us", serialize_with = "super::event::micros")]
    pub sigkill: Duration,
}

/// The fields of [`EventKind::HandlerStarted`](super::event::EventKind::HandlerStarted),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandlerStarted {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// The host the request came from.
    pub from: HostName,
    /// The client call it belongs to, when the caller used a recorded
    /// channel.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<CallId>,
    /// The incoming `grpc-timeout`, if any.
    #[serde(rename = "timeout_us", serialize_with = "super::event::opt_micros")]
    pub timeout: Option<Duration>,
    /// How many requests for this method this host had received, this
    /// one included (the server-side attempt number).
    pub nth: u32,
}

/// The fields of [`EventKind::HandlerFinished`](super::event::EventKind::HandlerFinished),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandlerFinished {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// The gRPC code name.
    pub code: &'static str,
    /// The status message.
    pub message: String,
    /// From start to finish, *simulated* time.
    #[serde(rename = "ran_us", serialize_with = "super::event::micros")]
    pub ran: Duration,
}

/// The fields of [`EventKind::HandlerRejected`](super::event::EventKind::HandlerRejected),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandlerRejected {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// What tonic answered, and the code the spec requires.
    pub outcome: Outcome,
    /// Why, in the trace's words.
    pub why: &'static str,
    /// From arrival to the answer, *simulated* time.
    #[serde(rename = "ran_us", serialize_with = "super::event::micros")]
    pub ran: Duration,
}

/// The fields of [`EventKind::HandlerPanicked`](super::event::EventKind::HandlerPanicked),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HandlerPanicked {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// The panic payload, when it was a string.
    pub message: String,
    /// Where it panicked, which says how the stream ended.
    pub site: PanicSite,
}

/// The fields of [`EventKind::FrameNeverLeft`](super::event::EventKind::FrameNeverLeft),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameNeverLeft {
    /// The connection.
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The receiving host.
    pub to: HostName,
    /// The stream id.
    pub stream: u32,
    /// The frame type; JSON: its RFC 9113 name.
    #[serde(serialize_with = "super::event::frame_type")]
    pub frame: FrameType,
    /// When the sender wrote it, *simulated* time since the start.
    #[serde(rename = "written_us", serialize_with = "super::event::micros")]
    pub written: Duration,
    /// What it was waiting for: a time past the end, or a release.
    pub waiting_for: WaitingFor,
}

/// The fields of [`EventKind::KeepalivePing`](super::event::EventKind::KeepalivePing),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeepalivePing {
    /// The connection.
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The client host that sent the PING.
    pub from: HostName,
    /// Ok, a strike, one strike too many (GOAWAY follows), or a PING
    /// after the GOAWAY was decided; JSON: `verdict` and, for a strike,
    /// `n` and `of` (see [`KeepaliveVerdict`]).
    #[serde(flatten)]
    pub verdict: KeepaliveVerdict,
    /// Strikes counted after this PING.
    pub strikes: u32,
    /// Time since the PING the gap is measured from, *simulated* time;
    /// none for the first PING, or the first after server frames reset
    /// the count (see [`crate::policy`]).
    #[serde(rename = "gap_us", serialize_with = "super::event::opt_micros")]
    pub gap: Option<Duration>,
    /// The minimum gap that applied, *simulated* time.
    #[serde(rename = "allowed_us", serialize_with = "super::event::micros")]
    pub allowed: Duration,
    /// Calls open on the connection when the server read the PING.
    pub open_calls: usize,
    /// Whether server frames reset the count since the previous PING.
    pub after_reset: bool,
}

/// The fields of [`EventKind::FrameReplaced`](super::event::EventKind::FrameReplaced),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameReplaced {
    /// The connection.
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The receiving host.
    pub to: HostName,
    /// The stream id.
    pub stream: u32,
    /// The frame type; JSON: its RFC 9113 name.
    #[serde(serialize_with = "super::event::frame_type")]
    pub frame: FrameType,
    /// The flags that matter.
    pub flags: FrameFlags,
    /// The decoded payload.
    pub detail: FrameDetail,
    /// The RFC 9113 rule it breaks, if it breaks one. JSON: absent
    /// when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalid: Option<Box<str>>,
}

/// The fields of [`EventKind::PolicyClosed`](super::event::EventKind::PolicyClosed),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyClosed {
    /// The connection.
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The client host.
    pub to: HostName,
    /// The policy, by its [`name`](crate::policy::ConnectionPolicy::name).
    pub policy: String,
    /// Why: a policy's own words, or the middlebox's timer. JSON: its
    /// words (the trace's JSON export).
    #[serde(skip)]
    pub reason: PolicyEnd,
}

/// The fields of [`EventKind::PolicyReset`](super::event::EventKind::PolicyReset),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyReset {
    /// The connection.
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The client host.
    pub to: HostName,
    /// The policy, by its [`name`](crate::policy::ConnectionPolicy::name).
    pub policy: String,
    /// Why: a policy's own words, or what the middlebox saw. JSON: its
    /// words (the trace's JSON export).
    #[serde(skip)]
    pub reason: PolicyEnd,
    /// Frames either end had kept back (a frame rule, a partition) that
    /// were discarded.
    pub discarded: usize,
}

/// The fields of [`EventKind::PolicyActed`](super::event::EventKind::PolicyActed),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicyActed {
    /// The connection.
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The client host.
    pub to: HostName,
    /// The box, by its [`name`](crate::policy::ConnectionPolicy::name).
    pub policy: String,
    /// What it did, and why.
    pub action: PolicyAction,
}

/// The fields of [`EventKind::RetryAttempt`](super::event::EventKind::RetryAttempt),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryAttempt {
    /// The logical call (`g1, g2, …` in order of first attempt): every
    /// attempt of one call through the layer shares it.
    pub group: u32,
    /// The host called.
    pub target: HostName,
    /// The method path.
    pub path: String,
    /// The attempt number, 1 for the original call.
    pub attempt: u32,
    /// The delay the layer waited before it (zero for attempt 1),
    /// *simulated* time. For a hedge: the time since the previous attempt
    /// was sent.
    #[serde(rename = "delay_us", serialize_with = "super::event::micros")]
    pub delay: Duration,
    /// The call is hedged (gRFC A6 `hedgingPolicy`): this attempt runs
    /// beside the earlier ones instead of after them, and its end is a
    /// `Hedge` event, not a `RetryDecision`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hedged: bool,
}

/// The fields of [`EventKind::Hedge`](super::event::EventKind::Hedge),
/// boxed like the other retry-layer events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hedge {
    /// The logical call (see `RetryAttempt`).
    pub group: u32,
    /// The method path.
    pub path: String,
    /// The attempt (hedge number, 1 for the original) the step is about.
    pub attempt: u32,
    /// What happened to it.
    pub step: HedgeStep,
}

/// One step of a hedged call, about one attempt.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum HedgeStep {
    /// The attempt ended and the layer decided.
    Ended {
        /// How it ended, as the layer saw it (see `RetryDecision::outcome`).
        outcome: String,
        /// The gRPC code name of the attempt, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'static str>,
        /// Whether it received response headers (committed).
        committed: bool,
        /// Its `grpc-retry-pushback-ms`, negative when it said stop.
        #[serde(skip_serializing_if = "Option::is_none")]
        pushback_ms: Option<i64>,
        /// What that means for the call.
        verdict: HedgeVerdict,
    },
    /// The attempt was in flight when `winner` won (or, `None`, when the
    /// deadline passed); the layer dropped it then, so its stream is reset.
    Cancelled {
        /// The winning attempt (the one the call committed to).
        #[serde(skip_serializing_if = "Option::is_none")]
        winner: Option<u32>,
        /// The call committed to `winner` before it ended, because the
        /// request passed the buffer limit (a `Committed` step); `false`:
        /// `winner`'s response won.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        buffer_limit: bool,
    },
    /// The call committed to this attempt while it was in flight (gRFC A6
    /// "Memory Management (Buffering)"): its request passed the replay
    /// buffer's limit, so the others are cancelled and no hedge follows.
    Committed {
        /// The rule (`buffer_limit`).
        stop: &'static str,
    },
    /// This hedge was due but not sent; no further hedge will be.
    NotSent {
        /// The rule (`throttled`, `max_attempts`, `pushback_stop`,
        /// `buffer_limit`, `deadline`).
        stop: &'static str,
    },
}

/// What an ended attempt of a hedged call meant (gRFC A6 "Summary of Retry
/// and Hedging Logic").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum HedgeVerdict {
    /// Its response is the call's (OK, a fatal code, or response headers).
    Won,
    /// Non-fatal: the next hedge goes at once.
    NextNow,
    /// Non-fatal with a pushback ≥ 0: the next hedge goes after `delay`
    /// (*simulated* time).
    NextAfter {
        /// The pushback.
        #[serde(rename = "delay_us", serialize_with = "super::event::micros")]
        delay: Duration,
    },
    /// Non-fatal, and no further hedge will be sent; others still run.
    NoMoreHedges {
        /// The rule.
        stop: &'static str,
    },
    /// Non-fatal, the last attempt in flight, no hedge to come: the call
    /// fails with this attempt's status.
    Failed {
        /// The rule that left no hedge.
        stop: &'static str,
    },
}

/// The fields of [`EventKind::GrpcTimeoutInvalid`](super::event::EventKind::GrpcTimeoutInvalid),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GrpcTimeoutInvalid {
    /// The handler run.
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// The value as sent (invalid UTF-8 replaced by U+FFFD).
    pub raw: String,
    /// What tonic's server reads it as (`tonic/src/transport/service/grpc_timeout.rs`):
    /// none when it ignores it and runs without a deadline of its own,
    /// else the deadline it applies (a leading `+` passes tonic's
    /// parse), *simulated* time.
    #[serde(rename = "tonic_reads_us", serialize_with = "super::event::opt_micros")]
    pub tonic_reads: Option<Duration>,
}

/// The fields of [`EventKind::RetryDecision`](super::event::EventKind::RetryDecision),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RetryDecision {
    /// The logical call (see `RetryAttempt`).
    pub group: u32,
    /// The method path.
    pub path: String,
    /// The attempt that ended.
    pub attempt: u32,
    /// How it ended, as the layer saw it (`trailers-only UNAVAILABLE
    /// pushback=500ms`, `response headers (committed)`).
    pub outcome: String,
    /// The gRPC code name of the attempt, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// Whether the attempt received response headers (committed).
    pub committed: bool,
    /// The `grpc-retry-pushback-ms` it carried: `None` when absent, a
    /// negative number when it said stop (or could not be parsed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pushback_ms: Option<i64>,
    /// When retrying: the delay before the next attempt, *simulated* time.
    #[serde(rename = "retry_in_us", serialize_with = "super::event::opt_micros")]
    pub retry_in: Option<Duration>,
    /// When retrying on backoff: the exponent `n` used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_n: Option<u32>,
    /// When stopping: the rule that stopped it (`max_attempts`,
    /// `not_retryable_code`, `committed`, `pushback_stop`, `throttled`,
    /// `deadline`, `succeeded` …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<&'static str>,
}

/// The fields of [`EventKind::Balancer`](super::event::EventKind::Balancer),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Balancer {
    /// The replica set.
    pub set: String,
    /// The replica host.
    pub replica: HostName,
    /// What changed.
    pub change: BalancerChange,
}

/// The fields of [`EventKind::Log`](super::event::EventKind::Log),
/// boxed: inline, the variant would be larger than a frame event and make
/// every event that large.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Log {
    /// `ERROR`, `WARN`, `INFO`, `DEBUG` or `TRACE`.
    pub level: &'static str,
    /// The event's target (usually the module path).
    pub target: String,
    /// The message and fields, rendered `message key=value …`.
    pub message: String,
}

/// The fields of [`EventKind::Effect`](super::event::EventKind::Effect),
/// boxed as [`Log`] is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Effect {
    /// The effect's name, the value of the event's `effect` field
    /// (`reserve`).
    pub name: String,
    /// The handler run whose task committed it; `None` outside a handler's
    /// own task (a task it spawned, a client's body).
    pub run: Option<RunId>,
    /// The event's message and its other fields, rendered as a log line's.
    pub message: String,
}
