//! Connection policies in the tap: the policies of one connection, shared
//! by its two writer tasks through the connection's state, and how the tap
//! performs what they ask ([`Effects`]).
//!
//! - A frame of either direction reaches every policy in the order added
//!   ([`DirectionTap::policy_frame`]); their effects are performed by the
//!   tap of that direction: frames for the same direction go right behind
//!   the frame, frames for the other direction wait in [`Policies`]'s
//!   outbox for that direction's writer (woken through the [`TapPair`]'s
//!   wake-up), a close is carried out by the server → client writer.
//! - Timers run in the server → client writer (the server host's runtime,
//!   simulated time): [`DirectionTap::policy_timer`] says when the next one
//!   is due, [`DirectionTap::on_policy_timer`] calls it back.
//!
//! [`TapPair`]: super::TapPair

use crate::recorder::event;
use std::collections::VecDeque;
use std::task::Waker;
use std::time::Duration;

use bytes::Bytes;

use super::pair::side;
use super::{DirectionTap, Out};
use crate::fault::FrameView;
use crate::policy::{Close, ConnectionPolicy, Effects, TimerChange};

use super::lock_conn;
use crate::wire::{BlockKind, Direction};

/// The policies of one connection and what they left for the writers.
pub(crate) struct Policies {
    list: Vec<Entry>,
    /// Per direction: whether a policy may swallow or send frames there.
    alters: [bool; 2],
    /// Per direction: frames a policy sent there from the other one.
    outbox: [Vec<(Bytes, Option<BlockKind>)>; 2],
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

struct Entry {
    policy: Box<dyn ConnectionPolicy>,
    name: String,
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
                name: policy.name(),
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
    other: Vec<(Direction, (Bytes, Option<BlockKind>))>,
    /// Events policies recorded for the frame being handled.
    events: Vec<crate::recorder::event::EventKind>,
}

/// What the policies asked for, gathered over all of them.
#[derive(Default)]
pub(super) struct Asked {
    pub(super) swallow: bool,
    /// Octets to put on the wire in the frame's place (`Effects::rewrite`).
    pub(super) rewrite: Option<Bytes>,
    /// Frames for the direction the tap is on, in order.
    here: Vec<(Bytes, Option<BlockKind>)>,
    close: Option<Close>,
    /// Effects on a direction no policy said it alters.
    refused: Option<(String, Direction)>,
}

impl DirectionTap {
    /// Shows `view` to the connection's policies; records what they record
    /// is left to [`DirectionTap::policy_records`]. Returns what they asked
    /// for; `None` without policies (or once one asked for a close).
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
        let mut fx = std::mem::take(&mut scratch.effects);
        let mut asked = Asked::default();
        let mut timer_earlier = false;
        let alters = policies.alters;
        for entry in &mut policies.list {
            fx.reset(view.now());
            fx.name.clone_from(&entry.name);
            entry.policy.on_frame(view, &mut fx);
            timer_earlier |= apply_timer(entry, fx.timer);
            asked.swallow |= fx.swallow;
            self.take_effects(&mut fx, &mut asked, alters, scratch);
        }
        scratch.effects = fx;
        let mut wake = false;
        if let Some(close) = &asked.close {
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
        wake |= timer_earlier && direction == Direction::ClientToServer;
        drop(state);
        if wake {
            self.wake_other();
        }
        Some(asked)
    }

    /// Moves what one policy asked into `asked` (frames for this
    /// direction, a close) and `self.pending_other` (frames for the other
    /// direction); keeps the events to record in `scratch`.
    fn take_effects(
        &self,
        fx: &mut Effects,
        asked: &mut Asked,
        alters: [bool; 2],
        scratch: &mut Scratch,
    ) {
        let direction = self.decoder.direction();
        scratch.events.append(&mut fx.records);
        if fx.swallow && !alters[side(direction)] {
            asked.refused.get_or_insert((fx.name.clone(), direction));
            asked.swallow = false;
        }
        if let Some(bytes) = fx.rewrite.take() {
            if alters[side(direction)] {
                asked.rewrite.get_or_insert(bytes);
            } else {
                asked.refused.get_or_insert((fx.name.clone(), direction));
            }
        }
        for send in fx.sends.drain(..) {
            if !alters[side(send.direction)] {
                asked
                    .refused
                    .get_or_insert((fx.name.clone(), send.direction));
            } else if send.direction == direction {
                asked.here.push((send.bytes, send.kind));
            } else {
                scratch
                    .other
                    .push((send.direction, (send.bytes, send.kind)));
            }
        }
        if let Some(close) = fx.close.take() {
            asked.close.get_or_insert(close);
        }
    }

    /// Records what the policies recorded for the last frame, at the
    /// server host.
    pub(super) fn policy_records(&self, scratch: &mut Scratch) {
        if scratch.events.is_empty() {
            return;
        }
        let server = self.server_host();
        for event in scratch.events.drain(..) {
            self.env.recorder.push(server, event);
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
        for (bytes, kind) in asked.here {
            self.put_injected(bytes, kind, None, out);
        }
        if let Some(close) = asked.close {
            self.closing = Some(close);
        }
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
        for (bytes, kind) in frames {
            self.put_injected(bytes, kind, None, out);
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
    /// ask.
    pub(crate) fn on_policy_timer(&mut self, out: &mut VecDeque<Out>) {
        let now = self.env.recorder.now();
        let conn_state = self.conn_state.clone();
        let mut state = lock_conn(&conn_state);
        let Some(policies) = state.policies.as_mut() else {
            return;
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut fx = std::mem::take(&mut scratch.effects);
        let mut asked = Asked::default();
        let alters = policies.alters;
        for entry in &mut policies.list {
            if entry.timer.is_none_or(|t| t > now) {
                continue;
            }
            entry.timer = None;
            fx.reset(now);
            fx.name.clone_from(&entry.name);
            entry.policy.on_timer(&mut fx);
            apply_timer(entry, fx.timer);
            // There is no frame to swallow or rewrite.
            fx.swallow = false;
            fx.rewrite = None;
            self.take_effects(&mut fx, &mut asked, alters, &mut scratch);
        }
        scratch.effects = fx;
        if asked.close.is_some() {
            policies.closing = true;
        }
        let wake = post_other(&mut scratch, policies);
        drop(state);
        if wake {
            self.wake_other();
        }
        self.policy_records(&mut scratch);
        self.scratch = scratch;
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
