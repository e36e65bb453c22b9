//! Connection policies in the tap: the policies of one connection, shared
//! by its two writer tasks through the connection's state, and how the tap
//! performs what they ask ([`Effects`]).
//!
//! - The policies form a chain from the client to the server (the order
//!   added, keepalive enforcement last). A frame passes them in its
//!   direction's order until one swallows it; a frame one sends passes the
//!   policies between it and its end ([`DirectionTap::policy_frame`]).
//!   Their effects are performed by the tap of the frame's direction:
//!   frames for the same direction go right behind the frame, frames for
//!   the other direction wait in [`Policies`]'s outbox for that
//!   direction's writer (woken through the [`TapPair`]'s wake-up), a close
//!   is carried out by the server → client writer, a reset by this tap at
//!   once.
//! - Timers run in the server → client writer (the server host's runtime,
//!   simulated time): [`DirectionTap::policy_timer`] says when the next one
//!   is due, [`DirectionTap::on_policy_timer`] calls it back.
//!
//! [`TapPair`]: super::TapPair

use crate::recorder::event;
use std::collections::VecDeque;
use std::sync::Arc;
use std::task::Waker;
use std::time::Duration;

use bytes::Bytes;

use super::pair::side;
use super::{DirectionTap, Out};
use crate::fault::FrameView;
use crate::policy::{Close, ConnectionPolicy, Effects, PolicyReset, TimerChange};
use crate::recorder::event::Fate;

use super::lock_conn;
use crate::wire::{BlockKind, Direction};

/// The policies of one connection and what they left for the writers.
pub(crate) struct Policies {
    list: Vec<Entry>,
    /// Per direction: whether a policy may swallow or send frames there.
    alters: [bool; 2],
    /// Per direction: frames a policy sent there from the other one.
    outbox: [Vec<Outgoing>; 2],
    /// A close asked for from the client → server direction, for the
    /// server → client writer to carry out.
    close: Option<Close>,
    /// Set once a policy asked for a close: no frame reaches them after.
    closing: bool,
    /// Set once the close was carried out.
    closed: bool,
    /// The server's reader, woken when the connection is closed.
    reader: Option<Waker>,
}

/// A frame a policy sent, on its way to a writer: its octets, the block
/// kind of a HEADERS, and the policy's name (for its row: `[sent by
/// <name>]`).
type Outgoing = (Bytes, Option<BlockKind>, Arc<str>);

struct Entry {
    policy: Box<dyn ConnectionPolicy>,
    /// [`ConnectionPolicy::name`], shared with the frames it sends.
    name: Arc<str>,
    timer: Option<Duration>,
}

impl Policies {
    /// `list`'s policies, in the order they act.
    pub(crate) fn new(list: Vec<Box<dyn ConnectionPolicy>>) -> Self {
        let alters = [Direction::ClientToServer, Direction::ServerToClient]
            .map(|d| list.iter().any(|p| p.alters(d)));
        let list = list
            .into_iter()
            .map(|policy| Entry {
                name: policy.name().into(),
                policy,
                timer: None,
            })
            .collect();
        Self {
            list,
            alters,
            outbox: Default::default(),
            close: None,
            closing: false,
            closed: false,
            reader: None,
        }
    }

    /// Whether a policy may change `direction`: the tap cuts it at frame
    /// boundaries.
    pub(crate) fn alters(&self, direction: Direction) -> bool {
        self.alters[side(direction)]
    }

    /// The earliest timer asked for, *simulated* time.
    fn next_timer(&self) -> Option<Duration> {
        self.list.iter().filter_map(|e| e.timer).min()
    }

    /// Marks the connection closed and wakes the server's reader so that
    /// it sees the end of the stream.
    pub(crate) fn closed(&mut self) {
        self.closed = true;
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }

    /// Whether a policy closed the connection.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed
    }

    /// Registers the server's reader to be woken when the connection is
    /// closed.
    pub(crate) fn wake_reader_on_close(&mut self, waker: &Waker) {
        match &mut self.reader {
            Some(w) if w.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
    }
}

/// A tap's buffers for its policies, kept from frame to frame so that a
/// frame they pass allocates nothing.
#[derive(Default)]
pub(super) struct Scratch {
    /// What the policies are told to do.
    effects: Effects,
    /// Frames policies sent into the other direction, for its outbox.
    other: Vec<(Direction, Outgoing)>,
    /// Events policies recorded for the frame being handled.
    events: Vec<crate::recorder::event::EventKind>,
    /// Frames policies sent that still have boxes to pass.
    hops: VecDeque<Hop>,
    /// Rows of injected frames a box nearer their receiver swallowed:
    /// (sender host, event).
    swallowed: Vec<(Arc<str>, crate::recorder::event::EventKind)>,
}

/// A frame a policy sent, on its way through the chain towards the end of
/// its direction.
struct Hop {
    bytes: Bytes,
    kind: Option<BlockKind>,
    direction: Direction,
    /// The policy that sent it (an index into the chain).
    from: usize,
}

/// The most frames policies may send each other in answer to one frame or
/// timer before the tap gives up (a loop between two policies).
const HOP_LIMIT: usize = 256;

/// What the policies asked for, gathered over all of them.
#[derive(Default)]
pub(super) struct Asked {
    pub(super) swallow: bool,
    /// Octets to put on the wire in the frame's place (`Effects::rewrite`).
    pub(super) rewrite: Option<Bytes>,
    /// Frames for the direction the tap is on, in order.
    here: Vec<Outgoing>,
    close: Option<Close>,
    /// A reset (`Effects::reset`): carried out by this tap at once.
    pub(super) reset: Option<PolicyReset>,
    /// Effects on a direction no policy said it alters.
    refused: Option<(String, Direction)>,
    /// A policy's timer moved earlier.
    timer_earlier: bool,
    /// The policies sent each other more than [`HOP_LIMIT`] frames.
    looped: bool,
}

impl Asked {
    /// A close or a reset was asked for: no policy sees anything more.
    fn ending(&self) -> bool {
        self.close.is_some() || self.reset.is_some()
    }

    /// The octets of the first frames policies sent into the frame's own
    /// direction (they go right behind it), if any.
    pub(super) fn first_here(&self) -> Option<&Bytes> {
        self.here.first().map(|(bytes, ..)| bytes)
    }
}

/// The chain positions a frame of `direction` passes after position
/// `after` (`None`: from its writer), in the order it passes them: the
/// chain runs from the client (0) to the server (`n - 1`).
fn chain(direction: Direction, after: Option<usize>, n: usize) -> std::ops::Range<usize> {
    match (direction, after) {
        (Direction::ClientToServer, None) => 0..n,
        (Direction::ClientToServer, Some(i)) => (i + 1).min(n)..n,
        (Direction::ServerToClient, None) => 0..n,
        (Direction::ServerToClient, Some(i)) => 0..i.min(n),
    }
}

/// [`chain`] as the frame meets them: server → client frames meet the
/// positions from the highest down.
fn in_order(direction: Direction, range: std::ops::Range<usize>) -> impl Iterator<Item = usize> {
    let up = direction == Direction::ClientToServer;
    let (a, b) = (range.clone(), range);
    a.filter(move |_| up).chain(b.rev().filter(move |_| !up))
}

impl DirectionTap {
    /// Shows `view` to the connection's policies, in chain order (see
    /// [`Sim::middlebox`](crate::Sim::middlebox)): a frame one swallows
    /// reaches none behind it; what one sends passes the policies between
    /// it and the end it is sent to. What they record is left to
    /// [`DirectionTap::policy_records`]. Returns what they asked for;
    /// `None` without policies (or once one asked for a close or reset).
    pub(super) fn policy_frame(
        &self,
        view: &FrameView<'_>,
        scratch: &mut Scratch,
    ) -> Option<Asked> {
        if !self.policed {
            return None;
        }
        let direction = self.decoder.direction();
        let conn_state = self.conn_state.clone();
        let mut state = lock_conn(&conn_state);
        let policies = state.policies.as_mut()?;
        if policies.closing {
            return None;
        }
        let mut asked = Asked::default();
        asked.swallow = self.pass(policies, view, None, &mut asked, scratch);
        self.run_hops(policies, &mut asked, scratch);
        let mut wake = false;
        if asked.reset.is_some() {
            // This tap carries it out ([`DirectionTap::policy_act`]).
            policies.closing = true;
        } else if let Some(close) = &asked.close {
            policies.closing = true;
            if direction == Direction::ClientToServer {
                // The server → client writer carries it out.
                policies.close = Some(close.clone());
                asked.close = None;
                wake = true;
            }
        }
        wake |= post_other(scratch, policies);
        // The server → client writer sleeps on its timer: one that moved
        // earlier from the other direction must wake it.
        wake |= asked.timer_earlier && direction == Direction::ClientToServer;
        drop(state);
        if wake {
            self.wake_other();
        }
        Some(asked)
    }

    /// Shows `view` to the policies it passes after chain position `after`
    /// (`None`: it comes from its writer), in order, until one swallows it
    /// or asks for a close or reset; gathers what they ask into `asked` and
    /// the frames they send into `scratch.hops`. Returns whether one
    /// swallowed it.
    fn pass(
        &self,
        policies: &mut Policies,
        view: &FrameView<'_>,
        after: Option<usize>,
        asked: &mut Asked,
        scratch: &mut Scratch,
    ) -> bool {
        let direction = view.direction();
        let alters = policies.alters;
        let range = chain(direction, after, policies.list.len());
        let mut fx = std::mem::take(&mut scratch.effects);
        let mut swallowed = false;
        for i in in_order(direction, range) {
            if asked.ending() {
                break;
            }
            let Some(entry) = policies.list.get_mut(i) else {
                break;
            };
            fx.begin(view.now());
            fx.name = entry.name.clone();
            entry.policy.on_frame(view, &mut fx);
            asked.timer_earlier |= apply_timer(entry, fx.timer);
            if after.is_some() {
                // A frame a policy sent is not rewritten (crate-private use:
                // the stream limit's header blocks, which come from a host).
                fx.rewrite = None;
            }
            if self.take_effects(&mut fx, i, direction, asked, alters, scratch) {
                swallowed = true;
                break;
            }
        }
        scratch.effects = fx;
        swallowed
    }

    /// Takes the frames policies sent through the policies between their
    /// sender and the end they go to, in the order sent; what gets through
    /// goes to `asked` (this direction) or `scratch.other` (the other).
    fn run_hops(&self, policies: &mut Policies, asked: &mut Asked, scratch: &mut Scratch) {
        let mut passed = 0;
        while let Some(hop) = scratch.hops.pop_front() {
            let n = policies.list.len();
            let sender = policies
                .list
                .get(hop.from)
                .map_or_else(|| Arc::from("a connection policy"), |e| e.name.clone());
            if chain(hop.direction, Some(hop.from), n).is_empty() || asked.ending() {
                // Nothing between it and its end, or the policies are done.
                self.deliver(hop, sender, asked, scratch);
                continue;
            }
            passed += 1;
            if passed > HOP_LIMIT {
                asked.looped = true;
                scratch.hops.clear();
                break;
            }
            let (from, to) = self.hosts_of(hop.direction);
            for (frame, broken, bytes) in self.split_frames(&hop.bytes, hop.direction) {
                // Sent frames are rare: no block shared with the sender's.
                let mut summary = super::summary::summarize(
                    &frame,
                    &mut super::summary::Blocks::new(self.env.show_credentials),
                );
                if let (Some(kind), crate::recorder::event::FrameDetail::Headers(block)) =
                    (hop.kind, &mut summary.detail)
                {
                    block.set_kind(kind);
                }
                let view = FrameView {
                    from,
                    to,
                    direction: hop.direction,
                    conn: self.conn,
                    frame: frame.ty,
                    flags: summary.flags,
                    stream: frame.stream_id,
                    len: frame.len,
                    detail: &summary.detail,
                    bytes: &bytes,
                    now: self.env.recorder.now(),
                    fate: Fate::Injected,
                };
                if self.pass(policies, &view, Some(hop.from), asked, scratch) {
                    let (sender, event) = (
                        Arc::<str>::from(from),
                        crate::recorder::event::EventKind::Frame {
                            conn: self.conn,
                            to: to.into(),
                            stream: frame.stream_id,
                            frame: frame.ty,
                            flags: summary.flags,
                            detail: summary.detail,
                            fate: crate::recorder::event::FrameFate::with_rule(
                                Fate::Swallowed,
                                broken,
                            ),
                            noise: summary.noise,
                        },
                    );
                    scratch.swallowed.push((sender, event));
                } else {
                    self.deliver(
                        Hop {
                            bytes,
                            kind: hop.kind,
                            direction: hop.direction,
                            from: hop.from,
                        },
                        sender.clone(),
                        asked,
                        scratch,
                    );
                }
            }
        }
    }

    /// A frame `sender` (a policy's name) sent that passed every policy on
    /// its way: queued for its direction.
    fn deliver(&self, hop: Hop, sender: Arc<str>, asked: &mut Asked, scratch: &mut Scratch) {
        if hop.direction == self.decoder.direction() {
            asked.here.push((hop.bytes, hop.kind, sender));
        } else {
            scratch
                .other
                .push((hop.direction, (hop.bytes, hop.kind, sender)));
        }
    }

    /// The (sender, receiver) hosts of `direction` on this connection.
    fn hosts_of(&self, direction: Direction) -> (&str, &str) {
        if direction == self.decoder.direction() {
            (&self.from, &self.to)
        } else {
            (&self.to, &self.from)
        }
    }

    /// Moves what one policy (at chain position `at`) asked into `asked`
    /// (a close, a reset, a rewrite) and `scratch.hops` (the frames it
    /// sent); keeps the events to record in `scratch`. Returns whether it
    /// swallowed the frame of `direction` it was shown.
    fn take_effects(
        &self,
        fx: &mut Effects,
        at: usize,
        direction: Direction,
        asked: &mut Asked,
        alters: [bool; 2],
        scratch: &mut Scratch,
    ) -> bool {
        scratch.events.append(&mut fx.records);
        let mut swallow = fx.swallow;
        if swallow && !alters[side(direction)] {
            asked
                .refused
                .get_or_insert((fx.name.to_string(), direction));
            swallow = false;
        }
        if let Some(bytes) = fx.rewrite.take() {
            if alters[side(direction)] {
                asked.rewrite.get_or_insert(bytes);
            } else {
                asked
                    .refused
                    .get_or_insert((fx.name.to_string(), direction));
            }
        }
        for send in fx.sends.drain(..) {
            if alters[side(send.direction)] {
                scratch.hops.push_back(Hop {
                    bytes: send.bytes,
                    kind: send.kind,
                    direction: send.direction,
                    from: at,
                });
            } else {
                asked
                    .refused
                    .get_or_insert((fx.name.to_string(), send.direction));
            }
        }
        if let Some(reset) = fx.reset.take() {
            asked.reset.get_or_insert(reset);
        }
        if let Some(close) = fx.close.take() {
            asked.close.get_or_insert(close);
        }
        swallow
    }

    /// Records what the policies recorded for the last frame, at the
    /// server host.
    pub(super) fn policy_records(&self, scratch: &mut Scratch) {
        if scratch.events.is_empty() && scratch.swallowed.is_empty() {
            return;
        }
        let server = self.server_host();
        for event in scratch.events.drain(..) {
            self.env.recorder.push(server, event);
        }
        for (sender, event) in scratch.swallowed.drain(..) {
            self.env.recorder.push(&sender, event);
        }
    }

    /// Performs what the policies asked for after the frame went on:
    /// frames sent into this direction go right behind it; a close stops
    /// this direction taking bytes (on the server → client direction).
    pub(super) fn policy_act(&mut self, asked: Asked, out: &mut VecDeque<Out>) {
        if let Some((policy, direction)) = asked.refused {
            self.env.problems.misconfigured(format!(
                "{policy} acted on the {} direction of c{}, which its `alters` says it does not \
                 alter; return true from ConnectionPolicy::alters for that direction",
                match direction {
                    Direction::ClientToServer => "client → server",
                    Direction::ServerToClient => "server → client",
                },
                self.conn
            ));
        }
        if asked.looped {
            self.env.problems.misconfigured(format!(
                "connection policies on c{} sent each other more than {HOP_LIMIT} frames in \
                 answer to one frame or timer; a policy must not answer every frame another \
                 policy sends",
                self.conn
            ));
        }
        if let Some(reset) = asked.reset {
            // Nothing sent in the same call leaves: the reset comes first.
            self.reset_by_policy(reset, out);
            return;
        }
        for (bytes, kind, sender) in asked.here {
            self.put_injected(bytes, kind, Some(sender), None, out);
        }
        if let Some(close) = asked.close {
            self.closing = Some(close);
        }
    }

    /// Carries out a policy's reset at once: what either direction kept
    /// back is discarded, both ends' reads and writes fail from now on
    /// (`net/conn.rs`), both writer tasks stop, and the reset is recorded
    /// at the server host.
    fn reset_by_policy(&mut self, reset: PolicyReset, out: &mut VecDeque<Out>) {
        let (discarded, flag) = {
            let mut state = lock_conn(&self.conn_state);
            if let Some(p) = state.policies.as_mut() {
                p.closing = true;
            }
            (state.tap.discard_waiting(), state.reset.clone())
        };
        out.clear();
        self.pending.clear();
        // Counted as discarded: not named again as undelivered.
        self.in_flight.take();
        self.reset_done = true;
        let client = match self.decoder.direction() {
            Direction::ClientToServer => self.from,
            Direction::ServerToClient => self.to,
        };
        self.env.recorder.push(
            self.server_host(),
            crate::recorder::event::EventKind::PolicyReset(Box::new(
                crate::recorder::event::PolicyReset {
                    conn: self.conn,
                    to: client,
                    policy: reset.policy.clone(),
                    reason: reset.reason,
                    discarded,
                },
            )),
        );
        flag.fire_by(&reset.policy);
    }

    /// Queues what a policy sent into this direction from the other one,
    /// and takes up a close asked for there.
    pub(super) fn take_policy_posted(&mut self, out: &mut VecDeque<Out>) {
        if !self.policed {
            return;
        }
        let direction = self.decoder.direction();
        let (frames, close) = {
            let mut state = lock_conn(&self.conn_state);
            let Some(policies) = state.policies.as_mut() else {
                return;
            };
            let close = match direction {
                Direction::ServerToClient => policies.close.take(),
                Direction::ClientToServer => None,
            };
            (std::mem::take(&mut policies.outbox[side(direction)]), close)
        };
        for (bytes, kind, sender) in frames {
            self.put_injected(bytes, kind, Some(sender), None, out);
        }
        if let Some(close) = close {
            self.closing = Some(close);
        }
    }

    /// When the next policy timer is due, *simulated* time; only the server
    /// → client writer runs them.
    pub(crate) fn policy_timer(&self) -> Option<Duration> {
        if !self.policed || self.decoder.direction() != Direction::ServerToClient {
            return None;
        }
        let state = lock_conn(&self.conn_state);
        let policies = state.policies.as_ref()?;
        if policies.closing {
            return None;
        }
        policies.next_timer()
    }

    /// Calls back every policy whose timer is due, and performs what they
    /// ask; what they send passes the policies between them and its end.
    pub(crate) fn on_policy_timer(&mut self, out: &mut VecDeque<Out>) {
        let now = self.env.recorder.now();
        let conn_state = self.conn_state.clone();
        let mut state = lock_conn(&conn_state);
        let Some(policies) = state.policies.as_mut() else {
            return;
        };
        // Made with the tap when the connection has policies, as here.
        let mut scratch = self.scratch.take().unwrap_or_default();
        let mut fx = std::mem::take(&mut scratch.effects);
        let mut asked = Asked::default();
        let alters = policies.alters;
        let direction = self.decoder.direction();
        for (i, entry) in policies.list.iter_mut().enumerate() {
            if entry.timer.is_none_or(|t| t > now) || asked.ending() {
                continue;
            }
            entry.timer = None;
            fx.begin(now);
            fx.name = entry.name.clone();
            entry.policy.on_timer(&mut fx);
            apply_timer(entry, fx.timer);
            // There is no frame to swallow or rewrite.
            fx.swallow = false;
            fx.rewrite = None;
            self.take_effects(&mut fx, i, direction, &mut asked, alters, &mut scratch);
        }
        scratch.effects = fx;
        self.run_hops(policies, &mut asked, &mut scratch);
        if asked.ending() {
            policies.closing = true;
        }
        let wake = post_other(&mut scratch, policies);
        drop(state);
        if wake {
            self.wake_other();
        }
        self.policy_records(&mut scratch);
        self.scratch = Some(scratch);
        self.policy_act(asked, out);
    }

    /// Carries out a policy's close once what it sent left: marks the
    /// connection closed (the server's reads end) and records it.
    pub(crate) fn close(&mut self) {
        let Some(close) = self.closing.take() else {
            return;
        };
        if let Some(p) = lock_conn(&self.conn_state).policies.as_mut() {
            p.closed();
        }
        let (conn, to) = (self.conn, self.to);
        let event = match close {
            Close::Keepalive(reason) => {
                crate::recorder::event::EventKind::KeepaliveClosed { conn, to, reason }
            }
            Close::Policy { policy, reason } => {
                crate::recorder::event::EventKind::PolicyClosed(Box::new(event::PolicyClosed {
                    conn,
                    to,
                    policy,
                    reason,
                }))
            }
        };
        self.record(event);
    }

    /// The server host of this connection.
    fn server_host(&self) -> &str {
        match self.decoder.direction() {
            Direction::ServerToClient => &self.from,
            Direction::ClientToServer => &self.to,
        }
    }

    /// Wakes the other direction's writer.
    fn wake_other(&self) {
        let other = match self.decoder.direction() {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        };
        lock_conn(&self.conn_state).tap.wake(other).notify_one();
    }
}

/// Moves the frames policies sent into the other direction to its outbox;
/// true when there were any.
fn post_other(scratch: &mut Scratch, policies: &mut Policies) -> bool {
    let any = !scratch.other.is_empty();
    for (to, frame) in scratch.other.drain(..) {
        policies.outbox[side(to)].push(frame);
    }
    any
}

/// Applies a policy's timer request; true when the timer is now due
/// earlier than before (the writer that runs it must look again).
fn apply_timer(entry: &mut Entry, change: TimerChange) -> bool {
    match change {
        TimerChange::Keep => false,
        TimerChange::Clear => {
            entry.timer = None;
            false
        }
        TimerChange::Set(at) => {
            let earlier = entry.timer.is_none_or(|t| at < t);
            entry.timer = Some(at);
            earlier
        }
    }
}
