//! A built-in connection policy for the boxes between a client and a
//! server host: idle timers, PINGs answered by the box, lifetime caps
//! ([`Middlebox`]); one [`BoxConn`] per connection runs it.

mod drain;
mod presets;
mod streams;
mod timeout;

pub use drain::Drain;
pub use timeout::{LocalReply, TimeoutStart, UpstreamTimeout};

use crate::recorder::event;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use crate::policy::connection::{ConnInfo, ConnectionPolicy, Effects, FrameView};
use crate::recorder::event::{
    EventKind, Fate, FrameDetail, IdleReset, PolicyAction, PolicyEnd, TimerRanOut, Writer,
};
use crate::wire::{encode, Direction, ErrorCode, FrameType};

/// A load balancer or proxy in front of a server host, emulated in the wire
/// tap as a [`ConnectionPolicy`]; register it with
/// [`Sim::middlebox`](crate::Sim::middlebox) on the host it fronts, or
/// with [`Sim::middlebox_between`](crate::Sim::middlebox_between) on one
/// link. Several on one host's connections form a chain, the first added
/// nearest the client (see [`Sim::middlebox`](crate::Sim::middlebox)).
///
/// The box is drawn as *transparent*: the client's connection and the
/// server's are one connection in the sim, and the box acts on it as the
/// real box acts on its two: it swallows frames, answers PINGs, sends
/// RST_STREAM and GOAWAY in the other end's name, and closes. What it
/// sends towards the server (RST_STREAM when it gives up on a stream) is
/// what a real box sends upstream.
///
/// Every field is optional and independent; [`Middlebox::new`] is a box
/// that forwards everything. Presets with their sources:
/// [`Middlebox::aws_alb`], [`Middlebox::aws_nlb`], [`Middlebox::envoy`],
/// [`Middlebox::nginx`], [`Middlebox::gcp_external_lb`]. All times are
/// *simulated*; nothing here reads a clock (the box's timers run on the
/// tap's policy timer, [`Effects::timer_at`]).
///
/// # Trace
/// Each act is one line at the server host saying what the box did and
/// why, then the frames it sent (`[sent by AWS ALB]`):
/// `c1 AWS ALB: answers PINGs itself …`,
/// `c1 connection closed by AWS ALB (idle timeout 60000ms: no DATA or
/// HEADERS since 1.001s)`, `c1 Envoy: RST_STREAM(CANCEL) on s1 both ways:
/// stream idle timeout …`.
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::policy::{Activity, Expiry, IdleTimeout, Middlebox};
///
/// // An ALB whose idle timeout was raised to 5 min (simulated).
/// let mut alb = Middlebox::aws_alb();
/// alb.connection_idle = Some(IdleTimeout::new(
///     Duration::from_secs(300),
///     Activity::DATA_OR_HEADERS,
///     Expiry::Close,
/// ));
/// # let mut sim = grpc_chaos::Sim::builder().build();
/// # sim.server("store", |s| s);
/// sim.middlebox("store", alb.for_clients(["player"]));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Middlebox {
    /// The box in the trace's words (`connection closed by <name>`).
    pub name: String,
    /// A timer on the whole connection. Default: none.
    pub connection_idle: Option<IdleTimeout>,
    /// A timer per stream, from the client's HEADERS; at expiry
    /// [`Expiry::RstStream`] resets only that stream. Default: none.
    pub stream_idle: Option<IdleTimeout>,
    /// Whether the box answers the client's PINGs or forwards them.
    /// Default: [`Pings::Forward`].
    pub pings: Pings,
    /// Whether the box answers the *server's* PINGs or forwards them to
    /// the client. [`Pings::Answer`]: the box ACKs each towards the server
    /// and the client never sees it, as a proxy that terminates HTTP/2 on
    /// its upstream connection does (nginx 1.22.1, measured:
    /// `calibration/fixtures/nginx/*/backend_pings.json`). Default:
    /// [`Pings::Forward`].
    pub server_pings: Pings,
    /// A cap on a connection's age. Default: none.
    pub connection_lifetime: Option<ConnectionLifetime>,
    /// A cap on a stream's age, from the client's HEADERS. Default: none.
    pub stream_lifetime: Option<StreamLifetime>,
    /// A per-connection stream limit at the box: the box advertises
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` = this many to the client (in the
    /// server's own SETTINGS, lowered to it when the server's is higher)
    /// and answers a client stream that would exceed it with
    /// RST_STREAM(REFUSED_STREAM) (RFC 9113 §5.1.2: "MUST treat this as a
    /// stream error … of type PROTOCOL_ERROR or REFUSED_STREAM"; REFUSED_STREAM
    /// says the request was not processed, §8.7, and gRPC's
    /// `PROTOCOL-HTTP2.md` maps it to UNAVAILABLE). The refused stream never
    /// reaches the server's handler. Default: none. `Some(0)` is a
    /// misconfiguration from [`Sim::run`](crate::Sim::run).
    ///
    /// A client only exceeds the limit before it has read the box's
    /// SETTINGS: hyper's client opens up to 100 streams on a new
    /// connection before the server's SETTINGS arrive (hyper
    /// `proto/h2/client.rs`, `DEFAULT_INITIAL_MAX_SEND_STREAMS`), and h2
    /// queues streams above the limit locally after (read, and seen in
    /// `tests/tests/keepalive/middleboxes.rs`). So a burst on a cold connection is
    /// refused in part; the same burst on a warm one waits in the client.
    ///
    /// How the box refuses without breaking HPACK: the box is drawn
    /// transparent (one connection), and the client's HEADERS may have
    /// added entries to the dynamic table its encoder shares with the
    /// server's decoder (RFC 7541 §2.3.2), so the box must not swallow it.
    /// It forwards the header block as the client wrote it, with one
    /// literal field *without indexing* appended (`connection: close`,
    /// RFC 7541 §6.2.2, which leaves the tables alone): h2's server decodes
    /// the whole block, so its table stays in step, then rejects the request
    /// as malformed (a connection-specific field, RFC 9113 §8.2.2) with
    /// RST_STREAM(PROTOCOL_ERROR) before any handler sees it (h2
    /// `frame/headers.rs` `HeaderBlock::load`, `codec/framed_read.rs`;
    /// read). The box swallows that RST_STREAM and every later frame of the
    /// stream except header blocks (which it forwards, for the same
    /// reason). A real proxy terminates HTTP/2 and decodes the block
    /// itself: nginx answers RST_STREAM(REFUSED_STREAM) and still parses
    /// the refused stream's header block (`ngx_http_v2.c`,
    /// `ngx_http_v2_state_headers`: "concurrent streams exceeded", then
    /// the header-block states with no stream; read), so its table stays
    /// in step; the wire toward the client is the same. h2 resets at most 1,024 such streams per
    /// connection before it answers GOAWAY(ENHANCE_YOUR_CALM) (h2
    /// `DEFAULT_LOCAL_RESET_COUNT_MAX`), so a box that refuses more than
    /// that on one connection is not emulated faithfully.
    pub max_concurrent_streams: Option<u32>,
    /// An upstream response timeout: at expiry the box ends the client's
    /// stream with the response the real box synthesizes (see
    /// [`UpstreamTimeout`]). Default: none.
    pub upstream_timeout: Option<UpstreamTimeout>,
    /// The hosts whose connections to the fronted server pass the box:
    /// client hosts, or server hosts that dial it (a gateway's channel to
    /// the store); empty (the default): every host's. Connections from
    /// other hosts are not touched. [`Sim::middlebox_between`](crate::Sim::middlebox_between)
    /// sets it to the one host it names.
    pub clients: Vec<String>,
    /// The code a server's RST_STREAM reaches the client with: `None` (the
    /// default), the server's own; `Some(code)`, the box rewrites it, as a
    /// proxy that terminates HTTP/2 answers an upstream reset with a
    /// reset of its own (Envoy 1.40.0 sends INTERNAL_ERROR whatever the
    /// server's code, measured: [`Middlebox::envoy`]).
    pub server_reset_code: Option<ErrorCode>,
    /// What the client gets when `stream_idle` runs out on a stream whose
    /// response headers have not gone out: `None` (the default),
    /// `stream_idle.on_expiry` as after them; `Some(reply)`, this local
    /// reply, and the server RST_STREAM with the code of
    /// `stream_idle.on_expiry` when that is [`Expiry::RstStream`] (CANCEL
    /// otherwise). Envoy answers a trailers-only UNAVAILABLE `stream
    /// timeout` (measured: [`Middlebox::envoy`]).
    pub stream_idle_reply: Option<LocalReply>,
    /// How a `connection_idle` expiry of [`Expiry::GoAway`] drains the
    /// connection: `None` (the default), one GOAWAY (last-stream-id = the
    /// last stream) and the close at once; `Some`, two GOAWAYs and a
    /// delayed close ([`Drain`]), as Envoy does (measured:
    /// [`Middlebox::envoy`]).
    pub idle_drain: Option<Drain>,
}

/// An idle timer: how long, what resets it, what happens at expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdleTimeout {
    /// How long without activity, *simulated* time. Must not be zero.
    pub after: Duration,
    /// Which frames count as activity. [`Activity::NONE`]: the timer runs
    /// from the start (of the connection or stream) and nothing resets it.
    pub reset_by: Activity,
    /// Whose frames count. Default: [`Writers::Either`].
    pub written_by: Writers,
    /// What the box does when it runs out.
    pub on_expiry: Expiry,
    /// On a connection timer: the timer runs only while no stream is open
    /// (Envoy's `idle_timeout`), restarting when the last one ends.
    /// Default: `false` (streams do not hold it off; only frames do).
    pub only_without_streams: bool,
    /// On a stream timer: the timer runs only until the client's request
    /// is complete (its END_STREAM), as nginx's `client_body_timeout`
    /// does (measured with nginx 1.22.1, `calibration/`). Default: `false`.
    pub only_while_request_open: bool,
}

impl IdleTimeout {
    /// A timer of `after` reset by `reset_by` from either end, doing
    /// `on_expiry`.
    pub fn new(after: Duration, reset_by: Activity, on_expiry: Expiry) -> Self {
        Self {
            after,
            reset_by,
            written_by: Writers::Either,
            on_expiry,
            only_without_streams: false,
            only_while_request_open: false,
        }
    }
}

/// A set of frame types that count as activity for an idle timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Activity(u8);

impl Activity {
    /// Nothing resets the timer.
    pub const NONE: Self = Self(0);
    /// DATA frames.
    pub const DATA: Self = Self(1);
    /// HEADERS frames (trailers included).
    pub const HEADERS: Self = Self(2);
    /// PING frames, ACKs included. On a stream timer a PING resets every
    /// open stream's timer.
    pub const PING: Self = Self(4);
    /// DATA or HEADERS: what an L7 box sees as "data" on HTTP/2.
    // `1 ^ 2` is the same set (the bits are disjoint): an equivalent mutant.
    pub const DATA_OR_HEADERS: Self = Self(1 | 2);
    /// Every frame of the connection (bytes on the TCP connection, as an L4
    /// box sees them): any frame type resets the timer.
    pub const ANY_FRAME: Self = Self(0xff);

    /// Whether a frame of `frame` type counts.
    pub fn contains(self, frame: FrameType) -> bool {
        if self.0 == 0xff {
            return true;
        }
        let bit = match frame {
            FrameType::Data => 1,
            FrameType::Headers => 2,
            FrameType::Ping => 4,
            _ => 0,
        };
        self.0 & bit != 0
    }

    /// The set as the trace records it (the row says `DATA or HEADERS`,
    /// `any frame`).
    pub(super) fn recorded(self) -> IdleReset {
        match self.0 {
            0 => IdleReset::Never,
            0xff => IdleReset::AnyFrame,
            bits => IdleReset::Frames(
                [
                    (1, FrameType::Data),
                    (2, FrameType::Headers),
                    (4, FrameType::Ping),
                ]
                .into_iter()
                .filter(|(b, _)| bits & b != 0)
                .map(|(_, t)| t)
                .collect(),
            ),
        }
    }
}

impl std::ops::BitOr for Activity {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// Whose frames reset an idle timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Writers {
    /// The client's and the server's.
    #[default]
    Either,
    /// Only what the client writes (a box's "send" timeout upstream is the
    /// other way round: see [`Middlebox::nginx`]).
    Client,
    /// Only what the server writes (nginx's `grpc_read_timeout`: reads
    /// from the backend).
    Server,
}

impl Writers {
    fn counts(self, direction: Direction) -> bool {
        match self {
            Writers::Either => true,
            Writers::Client => direction == Direction::ClientToServer,
            Writers::Server => direction == Direction::ServerToClient,
        }
    }

    /// Whose frames count, as the trace records it: `None` for either's.
    pub(super) fn recorded(self) -> Option<Writer> {
        match self {
            Writers::Either => None,
            Writers::Client => Some(Writer::Client),
            Writers::Server => Some(Writer::Server),
        }
    }
}

/// What a box does when a timer runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// Closes the TCP connection: the client reads the end of the stream,
    /// the server's reads end (the tap's close; a real box may send FIN
    /// or RST, which the tap does not tell apart).
    Close,
    /// RST_STREAM with this code, to the client and to the server: on a
    /// stream timer the stream's, on a connection timer every open
    /// stream's (the connection stays).
    RstStream(ErrorCode),
    /// GOAWAY with this code to the client (last-stream-id: the highest
    /// stream the client opened), then the connection is closed.
    GoAway(ErrorCode),
    /// Forgets the flow and tells no one, as an L4 box drops its flow-table
    /// entry (the AWS NLB, [`Middlebox::aws_nlb`]): at expiry nothing is
    /// sent either way and the box records only its act (`forgets the flow
    /// …: nothing sent`). The next frame either end writes on that
    /// connection (any type, either direction) does not reach the other
    /// end (`[swallowed by a connection policy]`), and the box resets the
    /// connection then ([`Effects::reset`]: a TCP RST), recorded as `c1
    /// reset at both ends by <name> (frame after the idle timeout: RST; the
    /// flow was forgotten at …)`. On a stream timer it forgets the whole
    /// connection, as on a connection timer. After the expiry the box runs
    /// no more timers on that connection.
    ///
    /// From the reset on, both ends' reads and writes fail with
    /// `ConnectionReset` (`"connection reset by <name>"`), as after a real
    /// RST (RFC 9293 §3.10.7.4). For a call in flight, tonic then reports
    /// UNKNOWN "transport error" (spec: UNAVAILABLE), the `io::Error` of
    /// kind `ConnectionReset` in its source chain (measured in
    /// `tests/tests/keepalive/middlebox_nlb.rs`). One difference from the real box:
    /// the NLB sends its RST only to the end that wrote ("If a client or
    /// target sends data after the idle timeout period elapses, it
    /// receives a TCP RST packet"), so the other end learns nothing until
    /// it writes too; here both ends are reset at that instant. An end that
    /// never writes again is told at the other end's first write, not
    /// never.
    ForgetFlow,
}

/// What a box does with the client's PINGs (RFC 9113 §6.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Pings {
    /// They reach the server, which answers them (an L4 box).
    #[default]
    Forward,
    /// The box answers each at once and forwards none: the client's
    /// keepalive sees a healthy box, whatever the server behind it does (an
    /// L7 proxy that terminates HTTP/2: PING is a frame of one hop).
    Answer,
}

/// A cap on a connection's age: GOAWAY(NO_ERROR) to the client at
/// `after`, then the connection is closed `grace` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectionLifetime {
    /// Age at which the GOAWAY goes out, *simulated* time from the
    /// connection's open. Must not be zero.
    pub after: Duration,
    /// Time between the GOAWAY and the close, *simulated*; zero: at once.
    pub grace: Duration,
}

impl ConnectionLifetime {
    /// GOAWAY at `after`, close `grace` later.
    pub fn new(after: Duration, grace: Duration) -> Self {
        Self { after, grace }
    }
}

/// A cap on a stream's age: RST_STREAM with `code` to both ends at
/// `after` from the client's HEADERS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamLifetime {
    /// The cap, *simulated* time. Must not be zero.
    pub after: Duration,
    /// The RST_STREAM's code.
    pub code: ErrorCode,
}

impl StreamLifetime {
    /// RST_STREAM(`code`) at `after`.
    pub fn new(after: Duration, code: ErrorCode) -> Self {
        Self { after, code }
    }
}

impl Middlebox {
    /// A box named `name` that forwards everything and has no timer.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            connection_idle: None,
            stream_idle: None,
            pings: Pings::Forward,
            server_pings: Pings::Forward,
            connection_lifetime: None,
            stream_lifetime: None,
            max_concurrent_streams: None,
            upstream_timeout: None,
            clients: Vec::new(),
            server_reset_code: None,
            stream_idle_reply: None,
            idle_drain: None,
        }
    }

    /// Only connections from these hosts (client hosts, or server hosts
    /// that dial the fronted one) pass the box.
    pub fn for_clients<S: Into<String>>(mut self, hosts: impl IntoIterator<Item = S>) -> Self {
        self.clients = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// The box's fields that must not be zero, for
    /// [`Sim::run`](crate::Sim::run)'s checks: `(field, value)`.
    pub(crate) fn durations(&self) -> Vec<(&'static str, Duration)> {
        let mut out = Vec::new();
        if let Some(t) = &self.connection_idle {
            out.push(("connection_idle.after", t.after));
        }
        if let Some(t) = &self.stream_idle {
            out.push(("stream_idle.after", t.after));
        }
        if let Some(l) = &self.connection_lifetime {
            out.push(("connection_lifetime.after", l.after));
        }
        if let Some(l) = &self.stream_lifetime {
            out.push(("stream_lifetime.after", l.after));
        }
        if let Some(t) = &self.upstream_timeout {
            out.push(("upstream_timeout.after", t.after));
        }
        out
    }
}

/// One connection through a [`Middlebox`].
pub(crate) struct BoxConn {
    pub(super) cfg: Arc<Middlebox>,
    pub(super) conn: u32,
    pub(super) client: String,
    /// Whether this connection passes the box (its client is listed).
    pub(super) active: bool,
    pub(super) opened_at: Duration,
    /// The last activity that resets the connection timer.
    pub(super) last: Duration,
    pub(super) streams: BTreeMap<u32, Stream>,
    pub(super) max_stream: u32,
    pub(super) pings_noted: bool,
    pub(super) server_pings_noted: bool,
    pub(super) goaway_at: Option<Duration>,
    /// The stream limit and the streams it refused.
    pub(super) limit: streams::Limit,
    /// Streams the box ended at their upstream timeout.
    pub(super) ended: timeout::Ended,
    /// When an [`Expiry::ForgetFlow`] timer ran out: the box no longer
    /// knows the connection, and resets it at its next frame.
    pub(super) forgotten: Option<Duration>,
    /// The idle drain under way, if any ([`Drain`]).
    pub(super) drain: drain::Draining,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Stream {
    pub(super) opened: Duration,
    pub(super) last: Duration,
    pub(super) client_done: bool,
    pub(super) server_done: bool,
    /// When the client's request was complete (its END_STREAM).
    pub(super) request_end: Option<Duration>,
    /// The server's last HEADERS or DATA on the stream (from its open).
    pub(super) last_read: Duration,
    /// Whether the server's response headers went out.
    pub(super) response_headers: bool,
}

/// Which of the box's timers is due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Due {
    ConnIdle,
    StreamIdle(u32),
    StreamLife(u32),
    Upstream(u32),
    GoAway,
    GraceOver,
    Drain,
}

impl BoxConn {
    pub(crate) fn new(cfg: Arc<Middlebox>, info: &ConnInfo<'_>) -> Self {
        let active = cfg.clients.is_empty() || cfg.clients.iter().any(|c| c == info.client());
        Self {
            cfg,
            conn: info.conn(),
            client: info.client().to_owned(),
            active,
            opened_at: info.opened_at(),
            last: info.opened_at(),
            streams: BTreeMap::new(),
            max_stream: 0,
            pings_noted: false,
            server_pings_noted: false,
            goaway_at: None,
            drain: drain::Draining::default(),
            limit: Default::default(),
            ended: Default::default(),
            forgotten: None,
        }
    }

    pub(super) fn note(&self, fx: &mut Effects, action: PolicyAction) {
        fx.record(EventKind::PolicyActed(Box::new(event::PolicyActed {
            conn: self.conn,
            to: (&self.client).into(),
            policy: self.cfg.name.clone(),
            action,
        })));
    }

    /// Every timer with its instant, earliest first among equals by kind.
    fn deadlines(&self) -> Vec<(Duration, Due)> {
        let mut out = Vec::new();
        if self.forgotten.is_some() {
            // A forgotten flow has no timers: the box knows nothing of it.
            return out;
        }
        if let Some(t) = &self.cfg.connection_idle {
            if !self.draining() && (!t.only_without_streams || self.streams.is_empty()) {
                out.push((self.last + t.after, Due::ConnIdle));
            }
        }
        if let Some(at) = self.drain_due() {
            out.push((at, Due::Drain));
        }
        for (&id, s) in &self.streams {
            if let Some(t) = &self.cfg.stream_idle {
                if !t.only_while_request_open || !s.client_done {
                    out.push((s.last + t.after, Due::StreamIdle(id)));
                }
            }
            if let Some(l) = &self.cfg.stream_lifetime {
                out.push((s.opened + l.after, Due::StreamLife(id)));
            }
            if let Some(at) = self.upstream_due(id) {
                out.push((at, Due::Upstream(id)));
            }
        }
        if let Some(l) = &self.cfg.connection_lifetime {
            match self.goaway_at {
                None => out.push((self.opened_at + l.after, Due::GoAway)),
                Some(at) => out.push((at + l.grace, Due::GraceOver)),
            }
        }
        out
    }

    pub(super) fn arm(&self, fx: &mut Effects) {
        match self.deadlines().iter().map(|(at, _)| *at).min() {
            Some(at) => fx.timer_at(at),
            None => fx.clear_timer(),
        }
    }

    /// Stream bookkeeping: opens, END_STREAM both ways, resets.
    fn track(&mut self, frame: &FrameView<'_>) {
        let (id, now) = (frame.stream(), frame.now());
        let client = frame.direction() == Direction::ClientToServer;
        match frame.frame_type() {
            FrameType::Headers if client && id % 2 == 1 && id > self.max_stream => {
                self.max_stream = id;
                self.streams.insert(
                    id,
                    Stream {
                        opened: now,
                        last: now,
                        client_done: false,
                        server_done: false,
                        request_end: None,
                        last_read: now,
                        response_headers: false,
                    },
                );
            }
            FrameType::RstStream => {
                self.streams.remove(&id);
                return;
            }
            _ => {}
        }
        if !client && id == 0 && frame.frame_type() == FrameType::Ping {
            // A read from the server: nginx's read timer restarts on it
            // (measured, see TimeoutStart::EachRead). nginx has one
            // upstream connection per stream; here one PING counts for all.
            self.streams.values_mut().for_each(|s| s.last_read = now);
        }
        if let (false, Some(s)) = (client, self.streams.get_mut(&id)) {
            match frame.frame_type() {
                FrameType::Headers => {
                    s.response_headers = true;
                    s.last_read = now;
                }
                FrameType::Data => s.last_read = now,
                _ => {}
            }
        }
        if frame.flags().end_stream() {
            if let Some(s) = self.streams.get_mut(&id) {
                if client {
                    s.client_done = true;
                    s.request_end = Some(now);
                } else {
                    s.server_done = true;
                }
                if s.client_done && s.server_done {
                    self.streams.remove(&id);
                    if self.streams.is_empty() {
                        // Envoy's idle timer restarts when the last stream ends.
                        self.last = now;
                    }
                }
            }
        }
    }

    /// Activity: resets the timers the frame counts for.
    fn activity(&mut self, frame: &FrameView<'_>) {
        let (kind, now, dir) = (frame.frame_type(), frame.now(), frame.direction());
        if let Some(t) = &self.cfg.connection_idle {
            if t.reset_by.contains(kind) && t.written_by.counts(dir) {
                self.last = now;
            }
        }
        if let Some(t) = &self.cfg.stream_idle {
            if t.reset_by.contains(kind) && t.written_by.counts(dir) {
                if frame.stream() == 0 {
                    if kind == FrameType::Ping {
                        self.streams.values_mut().for_each(|s| s.last = now);
                    }
                } else if let Some(s) = self.streams.get_mut(&frame.stream()) {
                    s.last = now;
                }
            }
        }
    }

    /// What the trace records of an idle timer `t` (of `stream`, or the
    /// connection's) that ran out, its last activity at `since`.
    fn idle_timer(&self, stream: Option<u32>, t: &IdleTimeout, since: Duration) -> TimerRanOut {
        TimerRanOut::Idle {
            stream,
            after: t.after,
            reset_by: t.reset_by.recorded(),
            written_by: t.written_by.recorded(),
            since,
        }
    }

    fn reset_stream(&mut self, fx: &mut Effects, id: u32, code: ErrorCode, why: &TimerRanOut) {
        let why = why.clone();
        self.note(
            fx,
            PolicyAction::ResetStream {
                stream: id,
                code,
                why,
            },
        );
        fx.rst_stream(Direction::ServerToClient, id, code);
        fx.rst_stream(Direction::ClientToServer, id, code);
        self.streams.remove(&id);
    }

    fn expire(&mut self, fx: &mut Effects, expiry: Expiry, stream: Option<u32>, why: TimerRanOut) {
        match expiry {
            Expiry::Close => fx.close_for(PolicyEnd::Timer(why)),
            Expiry::ForgetFlow => {
                self.forgotten = Some(fx.now());
                self.note(fx, PolicyAction::ForgetFlow { why });
            }
            Expiry::GoAway(code) => {
                let reason = PolicyEnd::Timer(why.clone());
                self.note(
                    fx,
                    PolicyAction::GoAwayThenClose {
                        code,
                        last_stream: self.max_stream,
                        why,
                    },
                );
                fx.goaway(Direction::ServerToClient, self.max_stream, code, b"");
                fx.close_for(reason);
            }
            Expiry::RstStream(code) => {
                let ids: Vec<u32> = match stream {
                    Some(id) => vec![id],
                    None => self.streams.keys().copied().collect(),
                };
                for id in ids {
                    self.reset_stream(fx, id, code, &why);
                }
                if stream.is_none() {
                    // The connection stays: its timer starts over.
                    self.last = fx.now();
                }
            }
        }
    }
}

impl BoxConn {
    /// Stream `id`'s idle timer ran out before its response headers: the
    /// box's `stream_idle_reply` to the client, RST_STREAM upstream.
    fn idle_reply(&mut self, fx: &mut Effects, id: u32, expiry: Expiry, why: TimerRanOut) {
        let Some(local) = self.cfg.stream_idle_reply.clone() else {
            return;
        };
        let upstream_code = match expiry {
            Expiry::RstStream(code) => code,
            _ => ErrorCode::Cancel,
        };
        let reply = timeout::send_local_reply(fx, id, &local);
        fx.rst_stream(Direction::ClientToServer, id, upstream_code);
        self.note(
            fx,
            PolicyAction::StreamIdleReply {
                stream: id,
                reply,
                upstream_code,
                why,
            },
        );
        self.streams.remove(&id);
        self.ended.streams.insert(id);
        if self.streams.is_empty() {
            self.last = fx.now();
        }
    }

    /// A server's RST_STREAM goes on with `server_reset_code`, if set.
    fn rewrite_server_reset(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        let (Some(to), FrameDetail::RstStream { code: from }) =
            (self.cfg.server_reset_code, frame.detail())
        else {
            return;
        };
        if frame.direction() != Direction::ServerToClient || *from == to {
            return;
        }
        let (stream, from) = (frame.stream(), *from);
        self.note(fx, PolicyAction::RewritesServerReset { stream, from, to });
        fx.rewrite(bytes::Bytes::from(encode::rst_stream(stream, to)));
    }

    /// A PING (not an ACK) the box answers itself: the ACK goes back to
    /// its writer, the PING goes no further.
    fn answer_ping(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        let FrameDetail::Ping { payload } = frame.detail() else {
            return;
        };
        if frame.frame_type() != FrameType::Ping || frame.ack() {
            return;
        }
        let client = frame.direction() == Direction::ClientToServer;
        let back = match client {
            true => Direction::ServerToClient,
            false => Direction::ClientToServer,
        };
        let (mode, noted) = match client {
            true => (self.cfg.pings, &mut self.pings_noted),
            false => (self.cfg.server_pings, &mut self.server_pings_noted),
        };
        if mode != Pings::Answer {
            return;
        }
        let first = !std::mem::replace(noted, true);
        if first {
            let act = match client {
                true => PolicyAction::AnswersPings,
                false => PolicyAction::AnswersServerPings,
            };
            self.note(fx, act);
        }
        fx.ping_ack(back, *payload);
        fx.swallow();
    }
}

impl ConnectionPolicy for BoxConn {
    fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        if !self.active || frame.fate() == Fate::Dropped {
            return;
        }
        if let Some(at) = self.forgotten {
            // The box has no entry for the flow: the frame goes nowhere,
            // and the connection is reset (see Expiry::ForgetFlow).
            fx.swallow();
            fx.reset_for(PolicyEnd::ForgottenFlow {
                at,
                frame: frame.frame_type(),
                from: match frame.direction() {
                    Direction::ClientToServer => Writer::Client,
                    Direction::ServerToClient => Writer::Server,
                },
            });
            fx.clear_timer();
            return;
        }
        if self.ended_frame(frame, fx) || self.limit_frame(frame, fx) {
            self.arm(fx);
            return;
        }
        self.rewrite_server_reset(frame, fx);
        self.track(frame);
        self.activity(frame);
        self.answer_ping(frame, fx);
        self.arm(fx);
    }

    fn on_timer(&mut self, fx: &mut Effects) {
        let now = fx.now();
        let mut due: Vec<(Duration, Due)> = self
            .deadlines()
            .into_iter()
            .filter(|(at, _)| *at <= now)
            .collect();
        due.sort_by_key(|(at, _)| *at);
        for (_, what) in due {
            match what {
                Due::ConnIdle => {
                    let Some(t) = self.cfg.connection_idle else {
                        continue;
                    };
                    let why = self.idle_timer(None, &t, self.last);
                    match t.on_expiry {
                        Expiry::GoAway(code) if self.cfg.idle_drain.is_some() => {
                            self.start_drain(fx, code, why);
                        }
                        expiry => self.expire(fx, expiry, None, why),
                    }
                }
                Due::Drain => {
                    if let Some(Expiry::GoAway(code)) =
                        self.cfg.connection_idle.map(|t| t.on_expiry)
                    {
                        self.drain_step(fx, code);
                    }
                }
                Due::StreamIdle(id) => {
                    let (Some(t), Some(s)) = (self.cfg.stream_idle, self.streams.get(&id)) else {
                        continue;
                    };
                    let why = self.idle_timer(Some(id), &t, s.last);
                    if !s.response_headers && self.cfg.stream_idle_reply.is_some() {
                        self.idle_reply(fx, id, t.on_expiry, why);
                    } else {
                        self.expire(fx, t.on_expiry, Some(id), why);
                    }
                }
                Due::StreamLife(id) => {
                    let (Some(l), Some(s)) = (self.cfg.stream_lifetime, self.streams.get(&id))
                    else {
                        continue;
                    };
                    let why = TimerRanOut::StreamLifetime {
                        after: l.after,
                        opened: s.opened,
                    };
                    self.reset_stream(fx, id, l.code, &why);
                }
                Due::Upstream(id) => {
                    // A reply already sent (a reset, another timer) ends it.
                    if self.upstream_due(id).is_some_and(|at| at <= now) {
                        self.upstream_expired(fx, id);
                    }
                }
                Due::GoAway => {
                    let Some(l) = self.cfg.connection_lifetime else {
                        continue;
                    };
                    self.goaway_at = Some(now);
                    self.note(
                        fx,
                        PolicyAction::LifetimeGoAway {
                            last_stream: self.max_stream,
                            after: l.after,
                            grace: l.grace,
                        },
                    );
                    fx.goaway(
                        Direction::ServerToClient,
                        self.max_stream,
                        ErrorCode::NoError,
                        b"",
                    );
                    if l.grace.is_zero() {
                        fx.close_for(PolicyEnd::LifetimeNoGrace { after: l.after });
                    }
                }
                Due::GraceOver => {
                    let Some(l) = self.cfg.connection_lifetime else {
                        continue;
                    };
                    fx.close_for(PolicyEnd::LifetimeGraceOver {
                        after: l.after,
                        grace: l.grace,
                    });
                }
            }
            if fx.close.is_some() {
                return;
            }
            if self.forgotten.is_some() {
                // Nothing else is due on a flow the box no longer knows.
                break;
            }
        }
        self.arm(fx);
    }

    fn alters(&self, _direction: Direction) -> bool {
        self.active
    }

    fn name(&self) -> String {
        self.cfg.name.clone()
    }
}

#[cfg(test)]
mod tests;
