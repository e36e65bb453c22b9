//! The connection-policy trait ([`ConnectionPolicy`]) and what a policy can do ([`Effects`]).

use std::time::Duration;

use bytes::Bytes;

pub(crate) use crate::fault::FrameView;
use crate::recorder::event::{EventKind, PolicyEnd};
use crate::wire::{encode, BlockKind, Direction, ErrorCode};

/// Connection policies: code that sits on one connection in the wire tap,
/// sees every frame both ways, and acts on the connection — the shape of a
/// server's keepalive enforcement or of a middlebox (a proxy's idle timer,
/// a box that answers PINGs itself, a lifetime cap, a stream limit).
///
/// The shape is quinn-proto's sans-I/O `Connection` (STYLE.md §14): a
/// policy does no I/O and reads no clock; the tap hands it each frame
/// ([`ConnectionPolicy::on_frame`]) and, when the policy asked for one, a
/// timer callback at a *simulated* instant ([`ConnectionPolicy::on_timer`]);
/// the policy answers through [`Effects`]: pass the frame (the default),
/// swallow it, send frames towards either end, close the connection, set
/// or clear its timer. [`KeepalivePolicy`](super::KeepalivePolicy)
/// enforcement is one.
///
/// Register one with [`Sim::connection_policy`](crate::Sim::connection_policy):
/// every connection to that server host gets its own instance, made when
/// the connection opens.
///
/// # Where it sits, and when it runs
/// - A frame reaches the policy at its sender's tap, after the frame
///   faults ([`FrameView::fate`] says what they did: a frame they dropped
///   never reaches the receiver; a policy at the server usually ignores
///   client frames with [`Fate::Dropped`](crate::recorder::event::Fate::Dropped)).
///   Both directions of a connection reach the same instance, each in the
///   order written; the two directions interleave in the order the
///   simulated hosts run (deterministic for a seed).
/// - What it sends into the direction of the frame goes right behind that
///   frame; into the other direction, between two whole frames as soon as
///   that direction's writer runs (the same instant, or a tick later).
/// - Its timer runs in the server host's writer task on simulated time:
///   the callback comes at the first tick at or after the instant asked
///   for (an instant already past: at once). One timer per policy; a
///   policy that needs several deadlines (an idle timer per stream) asks
///   for the earliest.
/// - A close ends the connection as a server's close does: what was sent
///   before it leaves, then nothing more the server writes does, the client
///   reads the end of the stream, and the server's reads end. The trace
///   shows `connection closed by <name> (<reason>)`.
/// - A reset ([`Effects::reset`]) is a TCP RST at once: nothing more
///   leaves either end, and both ends' reads and writes fail with
///   `ConnectionReset`. The trace shows `c1 reset at both ends by <name>
///   (<reason>)`.
/// - Frames a policy sends are recorded `[sent by <name>]` (not
///   `[injected]`, which is a `Fault::inject`'s); a frame it swallows
///   `[swallowed by a connection policy]`.
/// - Several policies on one connection form a chain from the client to
///   the server, in the order added (see
///   [`Sim::middlebox`](crate::Sim::middlebox)): a client's frame passes
///   them first to last, a server's frame last to first; a frame one
///   swallows reaches none behind it; a frame one sends passes only the
///   policies between it and the end it is sent to (they see it with
///   [`Fate::Injected`](crate::recorder::event::Fate::Injected), and one of
///   them may swallow it: it is then recorded `[swallowed by a connection
///   policy]` at its sender's host instead of `[sent by <name>]`). After a close
///   or reset no policy sees anything more.
///
/// # Cost
/// The tap runs on every frame: a policy's `on_frame` should not allocate
/// for a frame it passes. [`ConnectionPolicy::alters`] tells the tap which
/// directions the policy may change; a direction it does not alter is only
/// watched (its bytes pass as written, and [`FrameView::bytes`] is empty
/// there unless the run has frame faults).
///
/// An example, a box that answers PINGs itself:
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::fault::FrameView;
/// use grpc_chaos::policy::{ConnectionPolicy, Effects};
/// use grpc_chaos::wire::{Direction, FrameType};
///
/// /// A box that answers the client's PINGs itself and forwards none.
/// struct AnswersPings;
///
/// impl ConnectionPolicy for AnswersPings {
///    fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
///        if frame.direction() == Direction::ClientToServer
///            && frame.frame_type() == FrameType::Ping
///            && !frame.ack()
///        {
///            if let grpc_chaos::recorder::event::FrameDetail::Ping { payload } = frame.detail() {
///                fx.ping_ack(Direction::ServerToClient, *payload);
///            }
///            fx.swallow();
///        }
///    }
///
///    fn name(&self) -> String {
///        "a PING-answering box".to_owned()
///    }
/// }
/// # let _ = AnswersPings;
/// ```
pub trait ConnectionPolicy: Send + 'static {
    /// A frame one end wrote (see [`FrameView`]); react through `fx`.
    fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects);

    /// The timer set with [`Effects::timer_at`] is due; `fx.now()` is the
    /// *simulated* time. The timer is cleared before the call: set it
    /// again for another callback. Default: nothing.
    fn on_timer(&mut self, fx: &mut Effects) {
        let _ = fx;
    }

    /// Whether the policy may swallow frames of `direction`, or send
    /// frames into it: the tap then cuts that direction's bytes at frame
    /// boundaries. Asked once, when the connection opens. An effect on a
    /// direction this says `false` for is not performed, and the run fails
    /// with a misconfiguration that says so. Default: `true` both ways.
    fn alters(&self, direction: Direction) -> bool {
        let _ = direction;
        true
    }

    /// The policy in the trace's words (`connection closed by <name>`, and
    /// `[sent by <name>]` on the rows of the frames it sends). Default: `a
    /// connection policy`.
    fn name(&self) -> String {
        "a connection policy".to_owned()
    }
}

/// What the function given to
/// [`Sim::connection_policy`](crate::Sim::connection_policy) is told about
/// a connection when it opens, to make that connection's policy.
#[derive(Debug, Clone, Copy)]
pub struct ConnInfo<'a> {
    pub(crate) conn: u32,
    pub(crate) client: &'a str,
    pub(crate) server: &'a str,
    pub(crate) opened_at: Duration,
}

impl<'a> ConnInfo<'a> {
    /// The connection's id, as the trace numbers it (`1` for `c1`).
    pub fn conn(&self) -> u32 {
        self.conn
    }

    /// The host that dialled.
    pub fn client(&self) -> &'a str {
        self.client
    }

    /// The server host.
    pub fn server(&self) -> &'a str {
        self.server
    }

    /// When the connection opened: *simulated* time since the start of
    /// the run.
    pub fn opened_at(&self) -> Duration {
        self.opened_at
    }
}

/// How a connection is closed, and how the trace says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Close {
    /// Keepalive enforcement after too_many_pings (`KeepaliveClosed`).
    Keepalive(String),
    /// Any other policy (`PolicyClosed`).
    Policy {
        /// The policy's name.
        policy: String,
        /// Why.
        reason: PolicyEnd,
    },
}

/// A TCP reset a policy asked for ([`Effects::reset`]), and how the trace
/// says so (`PolicyReset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PolicyReset {
    /// The policy's name.
    pub(crate) policy: String,
    /// Why.
    pub(crate) reason: PolicyEnd,
}

/// A frame a policy sends.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    pub(crate) direction: Direction,
    pub(crate) bytes: Bytes,
    /// The block kind the receiver sees for a HEADERS frame (a decoder of
    /// the frame alone cannot know the response headers went out).
    pub(crate) kind: Option<BlockKind>,
}

/// What a policy asks of its timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TimerChange {
    /// Leave it as it is.
    #[default]
    Keep,
    /// Call back at this instant.
    Set(Duration),
    /// No callback.
    Clear,
}

/// What a policy does in answer to a frame or a timer; each call adds to
/// it. Nothing happens until the call returns; then the tap performs the
/// effects in this order: the frame (swallowed or not) and its trace line,
/// the policy's own trace lines, the frames sent (in the order sent), the
/// close.
#[derive(Debug, Default)]
pub struct Effects {
    pub(crate) now: Duration,
    pub(crate) swallow: bool,
    pub(crate) sends: Vec<Sent>,
    pub(crate) close: Option<Close>,
    /// A TCP reset asked for ([`Effects::reset`]).
    pub(crate) reset: Option<PolicyReset>,
    pub(crate) timer: TimerChange,
    /// Events to record at the server host, after the frame's own.
    pub(crate) records: Vec<EventKind>,
    /// The policy's name, for a close (shared with the tap's entry: set
    /// before each call without a copy).
    pub(crate) name: std::sync::Arc<str>,
    /// Octets that go on the wire instead of the frame
    /// [`ConnectionPolicy::on_frame`] is looking at ([`Effects::rewrite`]).
    pub(crate) rewrite: Option<Bytes>,
}

impl Effects {
    /// Effects at `now`, for policy `name`; reused (its buffers kept) from
    /// call to call.
    pub(crate) fn begin(&mut self, now: Duration) {
        self.now = now;
        self.swallow = false;
        self.sends.clear();
        self.close = None;
        self.reset = None;
        self.timer = TimerChange::Keep;
        self.records.clear();
        self.rewrite = None;
    }

    /// *Simulated* time now, since the start of the run.
    pub fn now(&self) -> Duration {
        self.now
    }

    /// The frame [`ConnectionPolicy::on_frame`] is looking at does not
    /// reach its receiver (no effect in [`ConnectionPolicy::on_timer`]).
    pub fn swallow(&mut self) {
        self.swallow = true;
    }

    /// Sends `frame` — whole HTTP/2 frames, header included (see
    /// `wire::encode`, feature `unstable-codec`) — into `direction`, as if its
    /// sender had written it: [`Direction::ServerToClient`] reaches the
    /// client.
    pub fn send(&mut self, direction: Direction, frame: impl Into<Bytes>) {
        self.send_as(direction, frame.into(), None);
    }

    /// [`Effects::send`], with the block kind the receiver sees for a
    /// HEADERS frame.
    pub(crate) fn send_as(&mut self, direction: Direction, bytes: Bytes, kind: Option<BlockKind>) {
        self.sends.push(Sent {
            direction,
            bytes,
            kind,
        });
    }

    /// Sends GOAWAY (RFC 9113 §6.8) into `direction`.
    pub fn goaway(
        &mut self,
        direction: Direction,
        last_stream_id: u32,
        code: ErrorCode,
        debug: &[u8],
    ) {
        self.send(direction, encode::goaway(last_stream_id, code, debug));
    }

    /// Sends RST_STREAM (RFC 9113 §6.4) on `stream` into `direction`.
    pub fn rst_stream(&mut self, direction: Direction, stream: u32, code: ErrorCode) {
        self.send(direction, encode::rst_stream(stream, code));
    }

    /// Sends a PING ACK (RFC 9113 §6.7) with `opaque` into `direction`.
    pub fn ping_ack(&mut self, direction: Direction, opaque: [u8; 8]) {
        self.send(direction, encode::ping(true, opaque));
    }

    /// Closes the connection once the frames sent before it left; `reason`
    /// is shown in the trace. Later frames of the connection are no longer
    /// shown to the policy.
    pub fn close(&mut self, reason: impl Into<String>) {
        self.close_for(PolicyEnd::Said(reason.into()));
    }

    /// [`Effects::close`] with a typed reason (the middlebox's).
    pub(crate) fn close_for(&mut self, reason: PolicyEnd) {
        self.close = Some(Close::Policy {
            policy: self.name.to_string(),
            reason,
        });
    }

    /// Resets the connection, as a TCP RST does (RFC 9293 §3.10.7.4), at
    /// once: nothing more leaves either end — what either end's writer
    /// still held (kept-back frames, frames sent by this or another policy
    /// in the same call) is discarded — and from then on both ends' reads
    /// and writes fail with `ConnectionReset` (the error a partition's
    /// `reset_after` gives, with the policy's name in its message). No end
    /// reads the end of the stream first, unlike [`Effects::close`]. The
    /// trace shows `c1 reset at both ends by <name> (<reason>)`
    /// ([`EventKind::PolicyReset`]); `reason` is the policy's words. In
    /// [`ConnectionPolicy::on_frame`] the frame looked at is not delivered
    /// either (the reset comes before it reaches the receiver): its row
    /// says `[swallowed by a connection policy]`. Wins over a close asked
    /// for in the same call. Later frames of the connection are no longer
    /// shown to any policy.
    pub fn reset(&mut self, reason: impl Into<String>) {
        self.reset_for(PolicyEnd::Said(reason.into()));
    }

    /// [`Effects::reset`] with a typed reason (the middlebox's).
    pub(crate) fn reset_for(&mut self, reason: PolicyEnd) {
        self.reset = Some(PolicyReset {
            policy: self.name.to_string(),
            reason,
        });
    }

    /// Puts `bytes` on the wire instead of the frame
    /// [`ConnectionPolicy::on_frame`] is looking at, in its place in the
    /// stream (no effect in [`ConnectionPolicy::on_timer`], or when a frame
    /// fault already dropped or replaced the frame). The frame is recorded
    /// as its sender wrote it; the policy says in its own trace line what
    /// it changed. Crate-private: a middlebox uses it to keep the
    /// receiver's HPACK decoder in step with a header block it must not
    /// deliver as written (see [`super::Middlebox::max_concurrent_streams`]).
    pub(crate) fn rewrite(&mut self, bytes: Bytes) {
        self.rewrite = Some(bytes);
    }

    /// Keepalive enforcement's close: recorded as `KeepaliveClosed`.
    pub(crate) fn close_keepalive(&mut self, reason: String) {
        self.close = Some(Close::Keepalive(reason));
    }

    /// Records `event` at the server host, after the frame's own line.
    pub(crate) fn record(&mut self, event: EventKind) {
        self.records.push(event);
    }

    /// Calls [`ConnectionPolicy::on_timer`] at `at` (*simulated* time since
    /// the start of the run), replacing any earlier request.
    pub fn timer_at(&mut self, at: Duration) {
        self.timer = TimerChange::Set(at);
    }

    /// Cancels the timer.
    pub fn clear_timer(&mut self) {
        self.timer = TimerChange::Clear;
    }
}
