//! The event vocabulary of a trace: a fixed set of words, so renders stay
//! stable and greppable.

use std::time::Duration;

use serde::Serialize;

pub use super::acts::{
    FaultAction, FaultReply, IdleReset, PolicyAction, PolicyEnd, TimerRanOut, UpstreamReply,
    UpstreamSince, Writer,
};
pub use super::fields::DebugData;
pub use super::fields::{
    binary_len, is_credential, is_custom_metadata, CREDENTIALS, CREDENTIAL_MASK,
};
pub use super::fields::{
    FrameDetail, FrameFlags, GoAway, HeaderFields, KeepaliveVerdict, LinkHold, SettingValues,
    ShownHeader, WaitingFor,
};
pub use super::frame_fate::FrameFate;
pub use super::host_name::HostName;
pub use super::payloads::{
    Balancer, CallFailedConnecting, CallStarted, CallStoppedReading, CallUndecodable, Effect,
    FaultFired, FrameNeverLeft, FrameReplaced, GrpcTimeoutInvalid, HandlerDequeued, HandlerDropped,
    HandlerFinished, HandlerPanicked, HandlerRejected, HandlerStarted, Hedge, HedgeStep,
    HedgeVerdict, KeepalivePing, Log, PodTerminationStarted, PolicyActed, PolicyClosed,
    PolicyReset, RetryAttempt, RetryDecision, ServerTimeout, ServerTimer, ShutdownStillDraining,
};
pub use super::resolution::{Resolution, ResolutionOutcome};
pub use super::tls::{
    alert_name, suite_name, version_name, TlsFailure, TlsHandshake, TlsOutcome, TlsSide,
};
pub use super::tls_message::{
    CertificateFields, ClientHelloFields, HelloProblem, ServerHelloFields, TlsMessage,
    TlsMessageKind, UnreadableHello,
};
use crate::wire::FrameType;

/// Id of a client call, numbered `r1, r2, …` in order of appearance.
/// JSON: the text's id, `"r1"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(into = "TextId")]
pub struct CallId(pub u32);

/// Id of one server handler run, numbered `h1, h2, …` in order of arrival.
/// JSON: the text's id, `"h1"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(into = "TextId")]
pub struct RunId(pub u32);

/// An id as the text render writes it (`r1`, `h1`), for JSON: a reader
/// matches the export against the trace it reviewed without a table.
#[derive(Serialize)]
#[serde(transparent)]
struct TextId(String);

impl From<CallId> for TextId {
    fn from(id: CallId) -> Self {
        Self(id.to_string())
    }
}

impl From<RunId> for TextId {
    fn from(id: RunId) -> Self {
        Self(id.to_string())
    }
}

impl std::fmt::Display for CallId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "r{}", self.0)
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "h{}", self.0)
    }
}

/// One recorded event: *simulated* time since the start of the run, the
/// host it happened on, and what happened.
///
/// 56 bytes inline, whatever the kind (a unit test keeps it so): one is
/// stored per recorded frame. The time is kept as whole nanoseconds in a
/// `u64` (8 bytes, where a `Duration` takes 16; read it with
/// [`Event::at`]); the host is an interned [`HostName`]; kinds larger
/// than a frame event hold their fields boxed (see [`EventKind`]).
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::recorder::event::{Event, EventKind};
/// let e = Event::new(Duration::from_micros(1500), "store", EventKind::HostCrashed);
/// assert_eq!(e.at(), Duration::from_micros(1500));
/// assert_eq!(e.host, "store");
/// ```
#[derive(Clone, PartialEq, Serialize)]
pub struct Event {
    /// Simulated time since the start of the run, whole nanoseconds
    /// ([`Event::at`]). JSON: `at_us`, microseconds.
    #[serde(rename = "at_us", serialize_with = "nanos_as_micros")]
    at_ns: u64,
    /// The host the event happened on (for host faults: the host affected).
    pub host: HostName,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// `Event { at: 1.5ms, host: "store", kind: HostCrashed }`: the time as a
/// `Duration`, as before it was kept in nanoseconds.
impl std::fmt::Debug for Event {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Event")
            .field("at", &self.at())
            .field("host", &self.host)
            .field("kind", &self.kind)
            .finish()
    }
}

impl Event {
    /// An event at `at` (*simulated* time since the start of the run) on
    /// `host`. The time is kept in whole nanoseconds: a fraction of a
    /// nanosecond is dropped (simulated time moves in whole ticks), and a
    /// time beyond `u64::MAX` nanoseconds (about 584 years) is kept as
    /// that, never a panic.
    pub fn new(at: Duration, host: impl Into<HostName>, kind: EventKind) -> Self {
        Self {
            at_ns: u64::try_from(at.as_nanos()).unwrap_or(u64::MAX),
            host: host.into(),
            kind,
        }
    }

    /// When it happened: *simulated* time since the start of the run
    /// (whole nanoseconds; see [`Event::new`] for the one bound).
    pub fn at(&self) -> Duration {
        Duration::from_nanos(self.at_ns)
    }
}

/// A gRPC status as reported by tonic, next to the code the gRPC
/// specification requires for the same situation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// The code tonic reported, by its gRPC name (`CANCELLED`).
    pub code: &'static str,
    /// The message tonic reported (`"Timeout expired"`).
    pub message: String,
    /// The code the gRPC specification requires (`DEADLINE_EXCEEDED`).
    pub spec_code: &'static str,
    /// Why the two differ, when they do (see [`crate::spec`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
}

impl Outcome {
    /// True when the call succeeded (`OK`).
    pub fn is_ok(&self) -> bool {
        self.code == "OK"
    }
}

/// What the frame faults did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "fate", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Fate {
    /// Sent on as written.
    Passed,
    /// Removed from the byte stream.
    Dropped,
    /// Kept back until `until` (*simulated* time since the start of the
    /// run); every later byte in that direction waits behind it.
    Delayed {
        /// When it is released.
        #[serde(rename = "until_us", serialize_with = "micros")]
        until: Duration,
    },
    /// Kept back until a release ([`FrameFault::hold`](crate::fault::FrameFault::hold)),
    /// at no time known in advance; every later byte in that direction
    /// waits behind it.
    Held,
    /// No rule touched it, but it was written behind a frame kept back
    /// until `until` (*simulated* time since the start of the run): TCP
    /// keeps order, so it leaves no earlier.
    Behind {
        /// When the frame ahead of it is released.
        #[serde(rename = "until_us", serialize_with = "micros")]
        until: Duration,
    },
    /// No rule touched it, but it was written behind a frame held until a
    /// release ([`Fate::Held`]); it leaves with that frame.
    BehindHeld,
    /// Written by the harness, not by the sender's HTTP/2 stack.
    Injected,
    /// Written while the link to its receiver was partitioned
    /// ([`Fault::partition`](crate::Fault::partition)): it waits at its
    /// sender, as in TCP's retransmission queue, and leaves at the repair
    /// (a `FrameReleased` then), or never if the connection is reset
    /// first; every later byte in that direction waits behind it.
    Partitioned,
    /// Written while its sender or its receiver was paused
    /// ([`Fault::pause`](crate::Fault::pause)): it waits at its sender and
    /// leaves at the resume (a `FrameReleased` then).
    Paused,
    /// Written while the link to its receiver was black-holed
    /// ([`Fault::black_hole`](crate::Fault::black_hole)): turmoil dropped
    /// it, and it never arrives.
    Lost,
    /// Written after an earlier frame of the same direction was lost in a
    /// black hole: turmoil delivers a connection's segments strictly in
    /// sequence and never retransmits, so this one never arrives either,
    /// even after the repair.
    LostBehind,
    /// Written by a peer the harness did not wire: a client that opened a
    /// raw `turmoil::net::TcpStream` to a sim server. Its bytes never pass
    /// a writer task, so the frame is recorded when the server *read* it
    /// (its time is the read's, one link latency or more after the write),
    /// and frame faults, partitions and pauses do not act on it. Bytes the
    /// server never read are not recorded. Open the connection with
    /// [`Host::raw_connect`](crate::Host::raw_connect) instead to have it
    /// recorded at the sender, like any other.
    ReadAtReceiver,
    /// A frame rule replaced its octets ([`Verdict::Replace`](crate::fault::Verdict::Replace)):
    /// it never reached the receiver as written; what arrived instead is
    /// recorded right after it, one
    /// [`EventKind::FrameReplaced`] per frame.
    Replaced {
        /// Octets that differ between what was sent and what arrived
        /// (compared position by position; a length difference counts
        /// each missing or extra octet).
        differing: u32,
        /// The first octet that differs, counted from the frame's first
        /// header octet (0); none when nothing differs.
        first_differing: Option<u32>,
        /// Octets that arrived instead.
        arrived: u32,
    },
    /// A connection policy ([`crate::policy::ConnectionPolicy`]) took the
    /// frame and did not forward it (a box that answers PINGs itself).
    Swallowed,
}

/// Why frames a host wrote never left it ([`EventKind::FramesUndelivered`]):
/// its writer found the socket gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UndeliveredCause {
    /// The host's own end had reset the connection: its HTTP/2 stack
    /// dropped it with the peer's bytes unread (a `ConnResetSent` at the
    /// host), and turmoil tore the socket down at once, its writes queued
    /// behind included.
    OwnReset,
    /// The peer had reset the connection (a `ConnResetSent` at the peer).
    PeerReset,
    /// The socket was gone for a reason the harness did not see: a raw
    /// peer's RST, as far as turmoil's error says (`BrokenPipe`).
    SocketGone,
}

/// Why a connection attempt failed, as the connector saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConnectFailure {
    /// The SYN reached no listener, or was dropped at once (turmoil:
    /// `ConnectionRefused`; a black-holed link fails this way too).
    Refused,
    /// The host is not in the sim.
    UnknownHost,
    /// The link stayed partitioned past the partition's `reset_after`, or
    /// past the 127 s Linux gives a SYN (`tcp_syn_retries` = 6).
    TimedOut,
    /// Any other I/O error.
    Other,
}

/// What a balanced channel's balancer learned about one replica's
/// connection, the steps of tonic's lazy reconnect
/// (`tonic/src/transport/channel/service/reconnect.rs`) as the balancer
/// (tower's `balance::p2c`) sees them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BalancerChange {
    /// Discovery added the replica after the channel was made (it joined).
    Added,
    /// Discovery removed the replica (it left): no new calls go to it.
    Removed,
    /// The balancer started connecting to it; it is not picked until the
    /// connection is up.
    Connecting,
    /// The connection is up: the replica can be picked.
    Ready,
    /// Picked, its connection turned out closed (the peer crashed,
    /// restarted or closed it): it is taken out of the ready set and
    /// redialled, and the call goes to another replica.
    Closed,
    /// The connection attempt failed. As in tonic's lazy reconnect, the
    /// replica then counts as ready with the error stored: the next call
    /// the balancer sends there fails with it, and the one after that
    /// redials.
    ConnectFailed {
        /// The error, in the harness's words.
        error: String,
    },
    /// The connection is up and the channel checks health: its
    /// `grpc.health.v1.Health/Watch` started, and the replica is not picked
    /// until the Watch answers SERVING (gRFC A17: the subchannel stays
    /// CONNECTING until the first answer). Recorded instead of `Ready`.
    HealthChecking,
    /// Client-side health checking (gRFC A17, "Client Workflow"): the
    /// replica's `grpc.health.v1.Health/Watch` stream answered `status`.
    /// Only [`HealthStatus::Serving`] keeps the replica in rotation; any
    /// other answer takes it out (A17: the subchannel goes to
    /// TRANSIENT_FAILURE) until the next SERVING.
    Health {
        /// The status the Watch stream answered.
        status: HealthStatus,
    },
    /// The Watch call failed with UNIMPLEMENTED: the replica serves no
    /// health service, so health checking is off for it and it counts as
    /// healthy (gRFC A17: "it will not retry the health-checking call, but
    /// it will treat the channel as healthy"; A17 asks for a channel trace
    /// event, this is it).
    HealthUnimplemented,
    /// The replica's server sent a GOAWAY: the Watch is cancelled (gRFC
    /// A17) and the connection replaced; the replica is out of rotation
    /// until the new connection's Watch answers SERVING.
    HealthWatchCancelled,
    /// The Watch stream ended or failed with another status: the replica
    /// stays out of rotation and the Watch is retried after `retry_in`
    /// (*simulated* time; gRFC A17, exponential backoff, reset by a
    /// received message).
    HealthWatchFailed {
        /// Why, in the harness's words (the gRPC status name and message).
        error: String,
        /// The wait before the next Watch. JSON: `retry_in_us`.
        #[serde(rename = "retry_in_us", serialize_with = "micros")]
        retry_in: Duration,
    },
    /// Outlier detection (gRFC A50) ejected the replica: it is not picked
    /// for `ejected_for` (*simulated* time), and returns at the first
    /// interval after that ([`BalancerChange::Unejected`]).
    Ejected {
        /// Which algorithm found it, with its numbers.
        why: Ejection,
        /// Its calls that ended OK in the interval judged.
        successes: u32,
        /// Its calls in the interval judged.
        calls: u32,
        /// How long it stays out: base_ejection_time × times ejected,
        /// capped. JSON: `ejected_for_us`.
        #[serde(rename = "ejected_for_us", serialize_with = "micros")]
        ejected_for: Duration,
    },
    /// Outlier detection returned the ejected replica to rotation after
    /// `after` (*simulated* time) out.
    Unejected {
        /// How long it was ejected. JSON: `after_us`.
        #[serde(rename = "after_us", serialize_with = "micros")]
        after: Duration,
    },
}

/// Which outlier-detection algorithm (gRFC A50) ejected a replica, with
/// the numbers it compared. Rates are in parts per million of calls
/// (500000 = 50 %).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "algorithm", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Ejection {
    /// Success-rate ejection: the replica's success rate was below
    /// `required_ppm`, the mean of the replicas judged less
    /// `stdev_factor` / 1000 standard deviations.
    SuccessRate {
        /// The mean success rate of the replicas judged.
        mean_ppm: i32,
        /// The line: mean − stdev × stdev_factor / 1000 (negative when
        /// the spread is wide).
        required_ppm: i32,
    },
    /// Failure-percentage ejection: more than `threshold` % of the
    /// replica's calls failed.
    FailurePercentage {
        /// The configured threshold, in percent.
        threshold: u32,
    },
}

/// A `grpc.health.v1` serving status (`health.proto`,
/// `HealthCheckResponse.ServingStatus`), with the proto's names in the
/// trace: `SERVING`, `NOT_SERVING`, `UNKNOWN`, `SERVICE_UNKNOWN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum HealthStatus {
    /// `UNKNOWN` (0): the server does not know yet.
    Unknown,
    /// `SERVING` (1): up and serving.
    Serving,
    /// `NOT_SERVING` (2): up, not serving.
    NotServing,
    /// `SERVICE_UNKNOWN` (3): the Watch named a service the server does
    /// not know (Watch only; `Check` fails with NOT_FOUND instead).
    ServiceUnknown,
}

impl HealthStatus {
    /// The status from its wire number; an unknown number is `UNKNOWN`.
    pub fn from_wire(n: i32) -> Self {
        match n {
            1 => Self::Serving,
            2 => Self::NotServing,
            3 => Self::ServiceUnknown,
            _ => Self::Unknown,
        }
    }

    /// The proto's name of the status: `NOT_SERVING`.
    pub fn proto_name(self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Serving => "SERVING",
            Self::NotServing => "NOT_SERVING",
            Self::ServiceUnknown => "SERVICE_UNKNOWN",
        }
    }
}

/// A handler run still open, named in an event about its host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenRun {
    /// The handler run.
    pub run: RunId,
    /// Its method path.
    pub path: String,
}

/// Where a handler fault acts relative to the layers a server's builder
/// adds ([`ServerHost::configure`](crate::ServerHost::configure)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LayerSide {
    /// Before the request reaches the server's first layer (the default).
    OutsideLayers,
    /// After the server's last layer, right before its routes
    /// ([`HandlerFault::inside_layers`](crate::fault::HandlerFault::inside_layers)).
    InsideLayers,
}

/// Where a handler panicked, which decides how its stream ends.
///
/// tonic's server catches no panic (tonic 0.14.9 has no catch-panic
/// layer): hyper polls the handler's future and its response body in a
/// task of its own per stream (hyper 1.12 `proto/h2/server.rs`,
/// `H2Stream`, spawned with `tokio::spawn` by hyper-util's
/// `TokioExecutor`), so a panic ends that task, tokio drops it, and h2
/// resets the stream whose handles it dropped with RST_STREAM(CANCEL)
/// (h2 0.4.20 `proto/streams/streams.rs`, `maybe_cancel`). The caller sees
/// CANCELLED; the connection and its other streams carry on. Measured
/// outside the simulation (the guide's [handler panics](crate::guide::handler_panics) page). The sim
/// catches the panic (to record it and fail the run) and asks hyper for
/// the same reset instead; the variants say where that is the same on
/// the wire and where not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum PanicSite {
    /// In its future (or a layer's), before the response: RST_STREAM
    /// (CANCEL) and nothing else on the stream, as in production.
    Handler,
    /// In its response body, after the response headers: RST_STREAM
    /// (CANCEL), as in production (DATA h2 still held for the stream is
    /// discarded in both).
    Body,
    /// In its response body, in the very poll of hyper's stream task that
    /// sent the response headers, after handing hyper a frame of the body
    /// (tonic's server does so when 32 KiB of messages, its yield
    /// threshold, are ready at once): the sim's reset discards the response
    /// headers h2 still held with the data, so the caller sees RST_STREAM
    /// (CANCEL) without them; in production h2 sends them before its
    /// reset.
    BodyHeadersUnsent,
}

/// What happened. The variant names are the trace's verbs.
///
/// Sized for the frame event, the one recorded 100,000s of times (40
/// bytes; the enum's tag costs nothing, it sits in a niche of the frame
/// variant): a variant whose fields would not fit in 32 bytes holds them in
/// a struct of the same name, boxed (`EventKind::CallStarted(Box<CallStarted>)`;
/// match it as `EventKind::CallStarted(c)` and read `c.path`), or, when
/// that is enough, a `Box<str>` where a `String` would be (a call's end is
/// recorded once per call: slimmer inline rather than one more allocation).
/// JSON is the same either way: the fields sit beside `"event"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// The host's software was stopped (turmoil `crash`).
    HostCrashed,
    /// The host's software was started again (turmoil `bounce`).
    HostRestarted,
    /// The links between `host` and `peer` were partitioned
    /// ([`Fault::partition`](crate::Fault::partition)): bytes sent across
    /// wait at their sender until the repair.
    Partitioned {
        /// The other side.
        peer: HostName,
        /// After how long a waiting byte resets its connection, if ever,
        /// *simulated* time.
        #[serde(
            rename = "reset_after_us",
            serialize_with = "opt_micros",
            skip_serializing_if = "Option::is_none"
        )]
        reset_after: Option<Duration>,
    },
    /// The links between `host` and `peer` were restored: bytes a
    /// partition kept back leave now; a black hole stops losing new ones.
    Repaired {
        /// The other side.
        peer: HostName,
    },
    /// The links between `host` and `peer` became a black hole (turmoil
    /// `partition`): every byte sent on them is lost.
    BlackHoled {
        /// The other side.
        peer: HostName,
    },
    /// The host was paused ([`Fault::pause`](crate::Fault::pause)): every
    /// byte to or from it waits at its sender until it resumes.
    HostPaused,
    /// The paused host resumed: the bytes kept back leave now.
    HostResumed,
    /// A channel on `host` started a connection attempt to `to`.
    ConnectStarted {
        /// The server host dialled.
        to: HostName,
        /// The attempt number on this channel, 1 for the first dial; a
        /// higher one is a redial.
        attempt: u32,
    },
    /// A connection attempt waits: the link to `to` is partitioned, or one
    /// of the two hosts is paused (a real SYN is retransmitted until it
    /// gets through).
    ConnectWaiting {
        /// The server host dialled.
        to: HostName,
        /// The attempt number on this channel.
        attempt: u32,
        /// Whether a pause holds it (else a partition).
        paused: bool,
    },
    /// A connection attempt succeeded: `conn` is the new connection.
    Connected {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The server host.
        to: HostName,
        /// The attempt number on this channel.
        attempt: u32,
        /// From the start of the attempt, *simulated* time.
        #[serde(rename = "took_us", serialize_with = "micros")]
        took: Duration,
        /// Whether it waited for a partition or a pause.
        waited: bool,
    },
    /// A TLS handshake on a connection ended ([`crate::tls`]), seen from
    /// the end that records it: its fields are in [`TlsHandshake`]
    /// (boxed).
    TlsHandshake(Box<TlsHandshake>),
    /// A TLS handshake message of a connection ([`crate::tls`]): a hello
    /// as it crossed the wire, a certificate sent or received, or bytes
    /// that are not the hello expected. Its fields are in [`TlsMessage`]
    /// (boxed).
    TlsMessage(Box<TlsMessage>),
    /// A connection attempt failed.
    ConnectFailed {
        /// The server host dialled.
        to: HostName,
        /// The attempt number on this channel.
        attempt: u32,
        /// Why.
        reason: ConnectFailure,
        /// From the start of the attempt, *simulated* time.
        #[serde(rename = "took_us", serialize_with = "micros")]
        took: Duration,
        /// Whether it waited for a partition or a pause.
        waited: bool,
    },
    /// The caller gave up a connection attempt before it ended: tonic's
    /// `Endpoint::connect_timeout` fired (or the channel was dropped).
    ConnectAbandoned {
        /// The server host dialled.
        to: HostName,
        /// The attempt number on this channel.
        attempt: u32,
        /// From the start of the attempt, *simulated* time.
        #[serde(rename = "after_us", serialize_with = "micros")]
        after: Duration,
        /// Whether it was waiting for a partition or a pause.
        waited: bool,
    },
    /// A partition's `reset_after` ran out while bytes of `host` waited on
    /// the connection: the connection is reset at both ends (reads and
    /// writes fail with `ConnectionReset`), and what waited never leaves.
    ConnReset {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The host at the other end.
        to: HostName,
        /// How long the oldest byte had waited, *simulated* time.
        #[serde(rename = "waited_us", serialize_with = "micros")]
        waited: Duration,
        /// Frames of `host` that waited and were discarded.
        discarded: usize,
    },
    /// The one-way latency between `host` and `peer` was set.
    LinkLatency {
        /// The other side.
        peer: HostName,
        /// New one-way latency, *simulated* time.
        #[serde(rename = "latency_us", serialize_with = "micros")]
        latency: Duration,
    },
    /// A serve fn's server ([`Sim::server_fn`](crate::Sim::server_fn))
    /// accepted its first connection without the harness's handler layer:
    /// the harness sees the host's frames, not its handler runs, and its
    /// handler faults cannot act. Recorded once per start of the host.
    ServeFnWithoutLayer,
    /// A server host's graceful shutdown started
    /// ([`Fault::shutdown`](crate::Fault::shutdown)): tonic's shutdown
    /// signal fired.
    ShutdownStarted {
        /// After how long the host is crashed if still draining, *simulated*
        /// time; none: it drains for as long as it takes.
        #[serde(rename = "grace_us", serialize_with = "opt_micros")]
        grace: Option<Duration>,
    },
    /// A Kubernetes pod termination began
    /// ([`Fault::pod_termination`](crate::Fault::pod_termination)): the
    /// pod of this replica host was deleted. Its parts follow as events of
    /// their own (`ReplicaLeft`, `ShutdownStarted`, and a crash at SIGKILL
    /// if it is still draining then). Times are from the deletion,
    /// *simulated*.
    ///
    /// Its fields are in [`PodTerminationStarted`] (boxed).
    PodTerminationStarted(Box<PodTerminationStarted>),
    /// The server's serve future returned after its graceful shutdown:
    /// every connection it had closed.
    ServeReturned {
        /// From the start of the shutdown, *simulated* time.
        #[serde(rename = "drained_us", serialize_with = "micros")]
        drained: Duration,
    },
    /// A shutdown's grace ran out with the server still draining; the host
    /// is crashed right after (a `HostCrashed` follows).
    ShutdownGraceOver {
        /// The grace, *simulated* time.
        #[serde(rename = "grace_us", serialize_with = "micros")]
        grace: Duration,
        /// Connections the server still had open.
        open_conns: u32,
    },
    /// The run ended while a server was still draining a graceful shutdown
    /// (recorded at the end of the run).
    ///
    /// Its fields are in [`ShutdownStillDraining`] (boxed).
    ShutdownStillDraining(Box<ShutdownStillDraining>),
    /// A handler fault acted on a request.
    ///
    /// Its fields are in [`FaultFired`] (boxed).
    FaultFired(Box<FaultFired>),
    /// A client started a call.
    ///
    /// Its fields are in [`CallStarted`] (boxed).
    CallStarted(Box<CallStarted>),
    /// The call started next (a `CallStarted` with the same id follows)
    /// was not made through a recorded channel: the wire tap saw its
    /// request HEADERS leave a tonic client (its `user-agent` names tonic)
    /// without the harness's call-id header, on connection `conn`, stream
    /// `stream`. Such a call comes from
    /// [`Host::tonic_channel`](crate::Host::tonic_channel) or
    /// [`Channel::into_inner`](crate::Channel::into_inner). Its start is
    /// when the HEADERS were written (not when the caller made it), its
    /// `timeout` the `grpc-timeout` sent (a deadline the caller set
    /// without sending one is not seen), and its end is read from the
    /// wire when the trace is built: the trailers, or an RST_STREAM (see
    /// [`Call::seen_on_wire`](crate::trace::Call::seen_on_wire)).
    CallSeenOnWire {
        /// The call.
        call: CallId,
        /// The connection its request went on (`c1` is 1).
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The stream.
        stream: u32,
    },
    /// A call through a plain tonic channel
    /// ([`Host::tonic_channel`](crate::Host::tonic_channel)) failed before
    /// its connection was up: the channel's connection attempt `attempt`
    /// failed, or its `Endpoint::connect_timeout` ran out, and tonic failed
    /// the call that waited for it. No frame of such a call is ever
    /// written, so it is not seen on the wire; this is all of it.
    ///
    /// Its fields are in [`CallFailedConnecting`] (boxed).
    CallFailedConnecting(Box<CallFailedConnecting>),
    /// A call ended with a status, as the caller saw it.
    CallEnded {
        /// The call.
        call: CallId,
        /// The method path (a `Box<str>`: 16 bytes, where a `String` takes
        /// 24, so the event fits beside a frame event unboxed).
        path: Box<str>,
        /// The status reported and the status the spec requires (boxed:
        /// it is most of the event's size).
        outcome: Box<Outcome>,
    },
    /// The caller dropped a call before it ended (its task was cancelled,
    /// or it stopped reading a response stream).
    CallDropped {
        /// The call.
        call: CallId,
        /// The method path.
        path: String,
    },
    /// The caller's tonic stopped reading a response right after a
    /// message header arrived, before the message was whole, and ended the
    /// call without its status: its decoder refused the header (recorded
    /// by the recorded channel, below tonic's codec, which does not pass
    /// its status down). With a Compressed-Flag of 0 or 1 that is the size
    /// limit: tonic says OUT_OF_RANGE "Error, decoded message length too
    /// large: found `message_len` bytes, the limit is: … bytes" (its
    /// `max_decoding_message_size`, default 4 MiB), the spec
    /// RESOURCE_EXHAUSTED ([`crate::spec::rules::DECODE_LIMIT`]); another
    /// flag is INTERNAL. A message that was already whole when the call was
    /// dropped is not recorded so: one that is not protobuf at all is a
    /// `CallUndecodable`; otherwise tonic's decoder refusing it cannot be
    /// told from a caller that stops after a message, and that is a
    /// `CallDropped`.
    ///
    /// Its fields are in [`CallStoppedReading`] (boxed).
    CallStoppedReading(Box<CallStoppedReading>),
    /// The caller's tonic could not decode a whole response message and
    /// ended the call without its status: the message is not protobuf at
    /// all, so tonic-prost's decoder refused it (INTERNAL "failed to decode
    /// Protobuf message: …", the spec's code for a response proto that
    /// does not parse: statuscodes.md). Recorded by the recorded channel,
    /// below tonic's codec, which does not pass its status down; see
    /// [`CallUndecodable`] for how the harness tells.
    ///
    /// Its fields are in [`CallUndecodable`] (boxed).
    CallUndecodable(Box<CallUndecodable>),
    /// A request reached a handler's queue (before any concurrency limit).
    ///
    /// Its fields are in [`HandlerStarted`] (boxed).
    HandlerStarted(Box<HandlerStarted>),
    /// A queued request got a slot under a concurrency limit.
    ///
    /// Its fields are in [`HandlerDequeued`] (boxed).
    HandlerDequeued(Box<HandlerDequeued>),
    /// A handler returned a status (for streams: its last message and
    /// trailers were produced).
    ///
    /// Its fields are in [`HandlerFinished`] (boxed).
    HandlerFinished(Box<HandlerFinished>),
    /// tonic's server answered the request before the user's handler got
    /// it: an unknown service or method, a message over its
    /// `max_decoding_message_size`, a message it could not decode, a
    /// unary request without a message, a request body that failed (see
    /// the handler layer's `seen` module for how the harness tells). The
    /// run's `HandlerStarted` is then the request's arrival in the handler
    /// layer, not a handler that started. A client-streaming or bidi
    /// handler that passes on such an error from its request stream at
    /// once (tonic calls it before reading anything) is recorded so too.
    ///
    /// Its fields are in [`HandlerRejected`] (boxed).
    HandlerRejected(Box<HandlerRejected>),
    /// A handler was dropped before it finished: the peer cancelled the
    /// stream, the connection closed, the host crashed, or tonic's server
    /// timer ran out (then [`HandlerDropped::timed_out`] says so).
    ///
    /// Its fields are in [`HandlerDropped`] (boxed).
    HandlerDropped(Box<HandlerDropped>),
    /// A handler panicked: its stream is reset with RST_STREAM(CANCEL),
    /// as tonic's server does (where the sim differs, [`PanicSite`] says
    /// so), and the run fails with
    /// [`Error::is_handler_panic`](crate::Error::is_handler_panic).
    ///
    /// Its fields are in [`HandlerPanicked`] (boxed).
    HandlerPanicked(Box<HandlerPanicked>),
    /// An HTTP/2 frame a host wrote on a connection (recorded once, at the
    /// sender, when it was written), and what the frame faults did with it.
    /// Every field is data; the words a render prints for it are made by
    /// the trace's row builder.
    Frame {
        /// The connection (`c1, c2, …` in order of appearance).
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The receiving host.
        to: HostName,
        /// The stream id (0 for connection-level frames).
        stream: u32,
        /// The frame type; JSON: its RFC 9113 name (`HEADERS`, `RST_STREAM`).
        #[serde(serialize_with = "frame_type")]
        frame: FrameType,
        /// The flags that matter (`END_STREAM`, `END_HEADERS`, `ACK`).
        flags: FrameFlags,
        /// The decoded payload.
        detail: FrameDetail,
        /// What the frame faults did with it, and, for a frame the harness
        /// wrote that breaks RFC 9113 (an injected RST_STREAM on stream 0),
        /// the rule it breaks, naming the section
        /// ([`FrameFate::invalid`]). JSON: `invalid` (absent when none),
        /// then `fate`.
        #[serde(flatten)]
        fate: FrameFate,
        /// Connection-level noise the default render hides (SETTINGS,
        /// connection and small WINDOW_UPDATEs, PRIORITY) unless a fault
        /// touched it.
        #[serde(skip)]
        noise: bool,
    },
    /// A delayed or held frame left the sender.
    FrameReleased {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The receiving host.
        to: HostName,
        /// The stream id.
        stream: u32,
        /// The frame type; JSON: its RFC 9113 name.
        #[serde(serialize_with = "frame_type")]
        frame: FrameType,
        /// How long it was kept back, *simulated* time.
        #[serde(rename = "kept_us", serialize_with = "micros")]
        kept: Duration,
    },
    /// A named hold ([`FrameFault::hold`](crate::fault::FrameFault::hold))
    /// was released: the frames it kept back leave now. Recorded at the
    /// host whose code called [`Host::release`](crate::Host::release); for
    /// a timed [`Fault::release`](crate::Fault::release), at the host the
    /// hold's frames come from (`FrameFault::from`), if it names one.
    HoldReleased {
        /// The hold's name.
        name: String,
        /// Whether a [`Fault::release`](crate::Fault::release) released it.
        timed: bool,
    },
    /// A kept-back frame was still waiting when the run ended: it never
    /// reached the receiver.
    ///
    /// Its fields are in [`FrameNeverLeft`] (boxed).
    FrameNeverLeft(Box<FrameNeverLeft>),
    /// A host closed its end of a connection: its HTTP/2 stack shut the
    /// connection down or dropped it (for a peer that broke the protocol
    /// before any frame, the close is the whole reaction). Recorded at that
    /// host once its last bytes left; closes at the end of the run and by a
    /// crash are not recorded. Shown in renders with
    /// [`RenderOptions::noise`](crate::trace::RenderOptions::noise).
    ConnClosed {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The host at the other end.
        to: HostName,
    },
    /// A host's HTTP/2 stack closed its end of a connection with bytes of
    /// the peer it had not read: turmoil, like TCP (RFC 9293 §3.10.4),
    /// answers with RST instead of FIN and tears the socket down at once,
    /// so the peer's reads fail with `ConnectionReset`, what this host
    /// still had queued never leaves (a [`EventKind::FramesUndelivered`]),
    /// and the peer's bytes not read by now never reach this host's
    /// application. Recorded at the host that reset, when it closed;
    /// closes by a crash are not recorded. Shown in renders with
    /// [`RenderOptions::noise`](crate::trace::RenderOptions::noise), like
    /// `ConnClosed`.
    ConnResetSent {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The host at the other end.
        to: HostName,
        /// Bytes of `to` this host's stack had read, octets.
        read: u64,
        /// Bytes `to` had put on the wire that this host never read,
        /// octets (in flight or unread when it reset); none when `to` is a
        /// raw peer, whose writes the harness does not count.
        #[serde(skip_serializing_if = "Option::is_none")]
        unread: Option<u64>,
    },
    /// Frames a host wrote, recorded as written, that never left it: when
    /// its writer got to them the socket was gone (reset). The frames stay
    /// in the trace as written; this says their fate. Recorded at the host
    /// when its writer found out.
    FramesUndelivered {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The receiving host.
        to: HostName,
        /// The first frames that never left, in order, as `(stream, type)`
        /// (at most 8; JSON: `[[0, "GOAWAY"], …]`; a boxed slice, 16
        /// bytes where a `Vec` takes 24).
        #[serde(serialize_with = "stream_frames")]
        frames: Box<[(u32, FrameType)]>,
        /// How many more never left.
        more: u32,
        /// Why.
        cause: UndeliveredCause,
    },
    /// A raw peer (a client on a raw `turmoil::net::TcpStream`, see
    /// [`Fate::ReadAtReceiver`]) closed its end of a connection, as the
    /// server's read saw it: end of stream (a FIN), or `ConnectionReset`
    /// (a RST: turmoil, like TCP, sends one for a socket closed with unread
    /// bytes, RFC 9293 §3.10.4). Recorded at the raw peer, at the
    /// server's read.
    RawPeerClosed {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The server host that saw it.
        to: HostName,
        /// A reset (RST) rather than a FIN.
        reset: bool,
    },
    /// Bytes on a connection that break RFC 9113; passed through untouched.
    ProtocolError {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The receiving host.
        to: HostName,
        /// Byte offset in the sender's stream.
        offset: u64,
        /// What was wrong, naming the RFC 9113 section (a `Box<str>`: 16
        /// bytes, where a `String` takes 24).
        reason: Box<str>,
    },
    /// A server host with a keepalive policy
    /// ([`Sim::keepalive_policy`](crate::Sim::keepalive_policy)) judged a
    /// PING it received (recorded on the server, when it acked the PING).
    ///
    /// Its fields are in [`KeepalivePing`] (boxed).
    KeepalivePing(Box<KeepalivePing>),
    /// Frames the server sent reset a connection's ping strikes.
    KeepaliveStrikesReset {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The client host.
        to: HostName,
        /// Strikes cleared.
        cleared: u32,
        /// The frame type that reset them (`DATA`, `HEADERS`,
        /// `WINDOW_UPDATE`); JSON: its RFC 9113 name.
        #[serde(serialize_with = "frame_type")]
        frame: FrameType,
    },
    /// The keepalive policy closed the connection after its GOAWAY (and
    /// whatever it sent for open calls). Recorded on the server.
    KeepaliveClosed {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The client host.
        to: HostName,
        /// The GOAWAY debug text, `too_many_pings`.
        reason: String,
    },
    /// What arrived in place of a frame a rule replaced (the frame before
    /// it, [`Fate::Replaced`]): one of the frames of the replacement,
    /// decoded on its own. Recorded at the sender, right after the frame
    /// it replaced.
    ///
    /// Its fields are in [`FrameReplaced`] (boxed).
    FrameReplaced(Box<FrameReplaced>),
    /// A connection policy ([`crate::policy::ConnectionPolicy`]) closed
    /// the connection. Recorded at the server host once what the policy
    /// sent before the close left.
    ///
    /// Its fields are in [`PolicyClosed`] (boxed).
    PolicyClosed(Box<PolicyClosed>),
    /// A connection policy reset the connection
    /// ([`Effects::reset`](crate::policy::Effects::reset)), as a TCP RST
    /// does: from then on both ends' reads and writes fail with
    /// `ConnectionReset`, and what either end still held never leaves.
    /// Recorded at the server host, at the reset.
    ///
    /// Its fields are in [`PolicyReset`] (boxed).
    PolicyReset(Box<PolicyReset>),
    /// A middlebox ([`crate::policy::Middlebox`]) acted on a connection:
    /// what it did and why, in its own words (`answers PINGs itself: …`,
    /// `RST_STREAM(CANCEL) on s1: stream idle timeout 60000ms …`).
    /// Recorded at the server host, before the frames it sent.
    ///
    /// Its fields are in [`PolicyActed`] (boxed).
    PolicyActed(Box<PolicyActed>),
    /// A C-core server's WINDOW_UPDATE for client DATA reset a
    /// connection's ping strikes ([`ResetOn::client_data`](crate::policy::ResetOn::client_data)):
    /// a write the real server makes and the emulated one (h2) does not,
    /// so no frame of it is on the wire. Recorded on the server.
    KeepaliveDataReset {
        /// The connection.
        #[serde(serialize_with = "conn_id")]
        conn: u32,
        /// The client host.
        to: HostName,
        /// Strikes cleared.
        cleared: u32,
        /// The stream whose DATA the update is for.
        stream: u32,
    },
    /// A retry layer (gRFC A6, [`crate::retry`]) on a channel made by
    /// [`Host::retry_channel`](crate::Host::retry_channel) is about to send
    /// an attempt. Recorded on the calling host immediately before the
    /// attempt's own `CallStarted`, which follows it in the log.
    ///
    /// Its fields are in [`RetryAttempt`] (boxed).
    RetryAttempt(Box<RetryAttempt>),
    /// A request arrived with a `grpc-timeout` the gRPC spec does not allow
    /// (`PROTOCOL-HTTP2.md` "Requests": 1 to 8 ASCII digits, then `H`, `M`,
    /// `S`, `m`, `u` or `n`), so its `HandlerStarted` has no timeout.
    /// Recorded on the server right after that `HandlerStarted`.
    ///
    /// Its fields are in [`GrpcTimeoutInvalid`] (boxed).
    GrpcTimeoutInvalid(Box<GrpcTimeoutInvalid>),
    /// A request arrived with `grpc-previous-rpc-attempts` (gRFC A6): the
    /// server's view of a retry. Recorded on the server right after its
    /// `HandlerStarted`.
    RetryArrived {
        /// The handler run.
        run: RunId,
        /// The method path.
        path: String,
        /// The header's value: attempts made before this one.
        previous: u32,
    },
    /// What a retry layer decided after an attempt ended, and why. Recorded
    /// on the calling host.
    ///
    /// Its fields are in [`RetryDecision`] (boxed).
    RetryDecision(Box<RetryDecision>),
    /// A step of a hedged call (gRFC A6 `hedgingPolicy`) through a retry
    /// layer: an attempt ended and what it meant, an attempt cancelled
    /// because another won, or a hedge not sent. Recorded on the calling
    /// host.
    ///
    /// Its fields are in [`Hedge`] (boxed).
    Hedge(Box<Hedge>),
    /// A fault that never acted during the run (recorded at its end): a
    /// typo in a method path, a window no request fell in, an injection with
    /// no connection to go on. It is not an error; it is a question. A
    /// retry policy of a [`Host::retry_channel`](crate::Host::retry_channel)
    /// or [`Host::retry_layer`](crate::Host::retry_layer) that matched no
    /// call is reported the same way, on the calling host.
    FaultNeverFired {
        /// The fault (or retry policy), described.
        fault: String,
    },
    /// A replica left its set's membership
    /// ([`Fault::leave`](crate::Fault::leave)); recorded at the replica.
    ReplicaLeft {
        /// The replica set.
        set: String,
    },
    /// A replica joined its set's membership
    /// ([`Fault::join`](crate::Fault::join)); recorded at the replica.
    ReplicaJoined {
        /// The replica set.
        set: String,
    },
    /// A [`Fault::health`](crate::Fault::health) set the status of
    /// `service` in the host's `grpc.health.v1.Health` service
    /// (tonic-health's `HealthReporter`); recorded at the server host.
    HealthSet {
        /// The service name (`""`: the whole server).
        service: String,
        /// The status now served.
        status: HealthStatus,
    },
    /// A balanced channel ([`Host::balanced_channel`](crate::Host::balanced_channel))
    /// handed a call to the connection of one replica: the balancer's
    /// pick. Recorded at the caller, right before the call goes on that
    /// connection; the call's `CallStarted` names the set.
    CallRouted {
        /// The call.
        call: CallId,
        /// The replica host it went to.
        replica: HostName,
        /// With DNS ([`Dns`](crate::balance::Dns)): the number of the
        /// answer the balancer's addresses came from
        /// ([`ResolutionOutcome::Answered`]); `None` (and absent in JSON)
        /// for a channel that watches the membership.
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<u32>,
    },
    /// A balanced channel with DNS ([`Dns`](crate::balance::Dns)) resolved
    /// its set's name: a new answer, or a failure. Recorded at the caller.
    ///
    /// Its fields are in [`Resolution`] (boxed).
    Resolution(Box<Resolution>),
    /// The DNS stopped answering for a replica set's name
    /// ([`Fault::dns_outage`](crate::Fault::dns_outage)); recorded at the
    /// set's name.
    DnsOutage,
    /// The DNS answers for the set's name again
    /// ([`Fault::dns_restore`](crate::Fault::dns_restore)); recorded at the
    /// set's name.
    DnsRestored,
    /// A balanced channel's view of one replica changed. Recorded at the
    /// caller when its balancer learns it: like tonic's, it polls its
    /// connections and discovery only while it routes a call, so a
    /// connection that came up between calls shows `Ready` at the next
    /// call, and a change of membership is applied then.
    ///
    /// Its fields are in [`Balancer`] (boxed).
    Balancer(Box<Balancer>),
    /// A `tracing` event emitted inside a host.
    ///
    /// Its fields are in [`Log`] (boxed).
    Log(Box<Log>),
    /// A side effect your code marked ([`server::effect`](crate::server::effect),
    /// or any `tracing` event with an `effect` field) inside a host,
    /// recorded instead of its `Log`: what
    /// [`Trace::assert_no_stale_work`](crate::Trace::assert_no_stale_work)
    /// compares with the caller's end.
    ///
    /// Its fields are in [`Effect`] (boxed).
    Effect(Box<Effect>),
}

impl EventKind {
    /// The connection the event is about (`c1` is 1), for the events that
    /// have one.
    pub fn conn(&self) -> Option<u32> {
        match self {
            Self::Connected { conn, .. }
            | Self::ConnReset { conn, .. }
            | Self::Frame { conn, .. }
            | Self::FrameReleased { conn, .. }
            | Self::ConnClosed { conn, .. }
            | Self::ConnResetSent { conn, .. }
            | Self::FramesUndelivered { conn, .. }
            | Self::RawPeerClosed { conn, .. }
            | Self::ProtocolError { conn, .. }
            | Self::KeepaliveStrikesReset { conn, .. }
            | Self::KeepaliveClosed { conn, .. }
            | Self::KeepaliveDataReset { conn, .. } => Some(*conn),
            Self::FrameNeverLeft(e) => Some(e.conn),
            Self::KeepalivePing(e) => Some(e.conn),
            Self::FrameReplaced(e) => Some(e.conn),
            Self::PolicyClosed(e) => Some(e.conn),
            Self::PolicyReset(e) => Some(e.conn),
            Self::PolicyActed(e) => Some(e.conn),
            Self::TlsHandshake(e) => Some(e.conn),
            Self::TlsMessage(e) => Some(e.conn),
            _ => None,
        }
    }

    /// Whether the event is progress for the no-progress rule of an
    /// unbounded run ([`SimBuilder::no_progress_limit`](crate::SimBuilder::no_progress_limit)):
    /// everything a run records except the connection's upkeep, which goes
    /// on by itself while a call hangs.
    ///
    /// Not progress: frames on stream 0 other than GOAWAY (PING and its
    /// ACK, SETTINGS, the connection's WINDOW_UPDATE, PRIORITY: a channel
    /// with `http2_keep_alive_interval` PINGs an idle connection for good,
    /// hyper's `proto/h2/ping.rs`), their release from a delay or hold, and
    /// a keepalive policy's bookkeeping of them (a PING judged, strikes
    /// reset). Also not: what the end of a run records about itself
    /// (frames that never left, faults that never fired, a server still
    /// draining). Progress: every frame on a stream (HEADERS, DATA,
    /// RST_STREAM, a stream's WINDOW_UPDATE) whatever a fault did with it,
    /// GOAWAY, every call, attempt, handler, fault, host, link and
    /// connection event, a policy's action, and a log line of your code.
    pub(crate) fn is_progress(&self) -> bool {
        let upkeep = |stream: u32, frame: FrameType| stream == 0 && frame != FrameType::GoAway;
        match self {
            Self::Frame { stream, frame, .. } | Self::FrameReleased { stream, frame, .. } => {
                !upkeep(*stream, *frame)
            }
            Self::FrameReplaced(r) => !upkeep(r.stream, r.frame),
            Self::KeepalivePing(_)
            | Self::KeepaliveStrikesReset { .. }
            | Self::KeepaliveDataReset { .. }
            | Self::FrameNeverLeft(_)
            | Self::FaultNeverFired { .. }
            | Self::ShutdownStillDraining(_) => false,
            Self::HostCrashed
            | Self::HostRestarted
            | Self::Partitioned { .. }
            | Self::Repaired { .. }
            | Self::BlackHoled { .. }
            | Self::HostPaused
            | Self::HostResumed
            | Self::ConnectStarted { .. }
            | Self::ConnectWaiting { .. }
            | Self::Connected { .. }
            | Self::TlsHandshake(_)
            | Self::TlsMessage(_)
            | Self::ConnectFailed { .. }
            | Self::ConnectAbandoned { .. }
            | Self::ConnReset { .. }
            | Self::LinkLatency { .. }
            | Self::ServeFnWithoutLayer
            | Self::ShutdownStarted { .. }
            | Self::PodTerminationStarted(_)
            | Self::ServeReturned { .. }
            | Self::ShutdownGraceOver { .. }
            | Self::FaultFired(_)
            | Self::CallStarted(_)
            | Self::CallSeenOnWire { .. }
            | Self::CallEnded { .. }
            | Self::CallDropped { .. }
            | Self::CallStoppedReading(_)
            | Self::CallFailedConnecting(_)
            | Self::CallUndecodable(_)
            | Self::HandlerStarted(_)
            | Self::HandlerDequeued(_)
            | Self::HandlerFinished(_)
            | Self::HandlerRejected(_)
            | Self::HandlerDropped(_)
            | Self::HandlerPanicked(_)
            | Self::HoldReleased { .. }
            | Self::ConnClosed { .. }
            | Self::ConnResetSent { .. }
            | Self::FramesUndelivered { .. }
            | Self::RawPeerClosed { .. }
            | Self::ProtocolError { .. }
            | Self::KeepaliveClosed { .. }
            | Self::PolicyClosed(_)
            | Self::PolicyReset(_)
            | Self::PolicyActed(_)
            | Self::RetryAttempt(_)
            | Self::GrpcTimeoutInvalid(_)
            | Self::RetryArrived { .. }
            | Self::RetryDecision(_)
            | Self::Hedge(_)
            | Self::ReplicaLeft { .. }
            | Self::ReplicaJoined { .. }
            | Self::HealthSet { .. }
            | Self::CallRouted { .. }
            | Self::Resolution(_)
            | Self::DnsOutage
            | Self::DnsRestored
            | Self::Balancer(_)
            | Self::Effect(_)
            | Self::Log(_) => true,
        }
    }

    /// The id an event is about, for [`Recorder::while_driving_host`](super::Recorder::while_driving_host):
    /// `(0, run)`, `(1, call)`, `(2, connection)`, else `(3, 0)`.
    pub(crate) fn id_key(&self) -> (u8, u32) {
        match self {
            Self::HandlerDequeued(e) => (0, e.run.0),
            Self::HandlerDropped(e) => (0, e.run.0),
            Self::HandlerStarted(e) => (0, e.run.0),
            Self::HandlerFinished(e) => (0, e.run.0),
            Self::HandlerPanicked(e) => (0, e.run.0),
            Self::HandlerRejected(e) => (0, e.run.0),
            Self::FaultFired(e) => (0, e.run.0),
            Self::GrpcTimeoutInvalid(e) => (0, e.run.0),
            Self::CallStarted(e) => (1, e.call.0),
            Self::CallStoppedReading(e) => (1, e.call.0),
            Self::CallFailedConnecting(e) => (1, e.call.0),
            Self::CallUndecodable(e) => (1, e.call.0),
            Self::CallSeenOnWire { call, .. }
            | Self::CallEnded { call, .. }
            | Self::CallDropped { call, .. } => (1, call.0),
            Self::FrameReplaced(e) => (2, e.conn),
            Self::Frame { conn, .. }
            | Self::ConnClosed { conn, .. }
            | Self::RawPeerClosed { conn, .. }
            | Self::ConnResetSent { conn, .. }
            | Self::FramesUndelivered { conn, .. } => (2, *conn),
            _ => (3, 0),
        }
    }
}

pub(crate) fn micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// [`Event::at`]'s nanoseconds as the microseconds [`micros`] writes for
/// the same `Duration` (truncated).
fn nanos_as_micros<S: serde::Serializer>(ns: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(ns / 1_000)
}

/// A connection as the text writes it: `c1`.
pub(crate) fn conn_id<S: serde::Serializer>(conn: &u32, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_args!("c{conn}"))
}

pub(crate) fn frame_type<S: serde::Serializer>(t: &FrameType, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(t)
}

fn stream_frames<S: serde::Serializer>(
    frames: &[(u32, FrameType)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(frames.len()))?;
    for (stream, frame) in frames {
        seq.serialize_element(&(stream, frame.to_string()))?;
    }
    seq.end()
}

pub(crate) fn opt_micros<S: serde::Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => micros(d, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// One `Event` is stored per recorded frame and the log holds 100,000s:
    /// its inline size is the log's floor per frame. The frame variant
    /// sets it: 40 bytes of `EventKind` (three ids, type, flags, a 16-byte
    /// detail, its fate one pointer, the noise flag), the enum's tag kept
    /// in the niche of that `bool`, which only works while every other
    /// variant fits in the 32 bytes beside it. Variants larger are boxed
    /// (`payloads`) or hold `Box<str>`/`Box<[_]>` for `String`/`Vec`, so a
    /// field that grows one past 32 bytes fails here rather than making
    /// every event 8 bytes larger. The time is 8 bytes (nanoseconds), the
    /// host 4: 52, padded to 56.
    #[test]
    fn an_event_stays_within_56_bytes() {
        assert_eq!(std::mem::size_of::<EventKind>(), 40);
        assert_eq!(std::mem::size_of::<Event>(), 56);
        assert_eq!(std::mem::size_of::<HostName>(), 4);
        assert_eq!(std::mem::size_of::<FrameFate>(), 8);
    }

    /// The time reads back to the nanosecond, serializes as the
    /// microseconds a `Duration` did, and saturates past `u64` nanoseconds
    /// (about 584 years) instead of panicking.
    #[test]
    fn an_event_keeps_its_time_in_nanoseconds_and_saturates() {
        let at = Duration::new(12, 345_678_901);
        let e = Event::new(at, "store", EventKind::HostCrashed);
        assert_eq!(e.at(), at);
        assert_eq!(
            format!("{e:?}"),
            r#"Event { at: 12.345678901s, host: "store", kind: HostCrashed }"#
        );
        let json = serde_json::to_value(&e).expect("serializes");
        assert_eq!(
            json["at_us"], 12_345_678,
            "truncated like Duration::as_micros"
        );
        let far = Event::new(Duration::MAX, "store", EventKind::HostCrashed);
        assert_eq!(far.at(), Duration::from_nanos(u64::MAX));
        let just_past = Duration::from_nanos(u64::MAX) + Duration::from_nanos(1);
        assert_eq!(
            Event::new(just_past, "store", EventKind::HostCrashed).at(),
            Duration::from_nanos(u64::MAX)
        );
        assert_eq!(
            serde_json::to_value(&far).expect("serializes")["at_us"],
            u64::MAX / 1_000
        );
    }
}
