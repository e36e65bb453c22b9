//! Injected frames: put on the wire at a time by the writer task, or set
//! off by a frame of either direction ([`InjectAt::after`]).
//!
//! [`InjectAt::after`]: crate::fault::InjectAt::after

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::Notify;

use super::lock_conn;
use super::{DirectionTap, Out};
use crate::fault::Injection;
use crate::wire::{self, BlockKind, Direction, Frame};

impl DirectionTap {
    /// Puts `injection`'s frame on this direction's queue, behind what is
    /// there, leaving no earlier than `release` (*simulated* time), and
    /// records it as injected.
    pub(crate) fn inject(
        &mut self,
        injection: &Injection,
        release: Option<Duration>,
        out: &mut VecDeque<Out>,
    ) {
        injection.mark_fired();
        let bytes = Bytes::from(injection.frame.bytes.clone());
        self.put_injected(bytes, None, None, release, out);
    }

    /// Records a frame the harness wrote (an injection, or the frame of
    /// the connection policy named `policy`; `kind` overrides the block
    /// kind of HEADERS) and
    /// queues it behind what is there. Queued behind a kept-back frame, it
    /// waits too (TCP keeps order), and the trace says when it left.
    pub(super) fn put_injected(
        &self,
        bytes: Bytes,
        kind: Option<BlockKind>,
        policy: Option<Arc<str>>,
        release: Option<Duration>,
        out: &mut VecDeque<Out>,
    ) {
        let head = self.record_injected_as(&bytes, kind, policy);
        let now = self.env.recorder.now();
        let keep = self.keep(None, now, out);
        let kept = keep
            .until
            .zip(head)
            .map(|(until, (stream, frame))| self.kept(stream, frame, now, until));
        out.push_back(Out {
            bytes,
            release: release.max(keep.release),
            hold: None,
            kept,
            link_since: keep.link_since,
            end: self.base,
        });
    }

    /// The `.after` injections `frame` triggers on this connection (each
    /// counted as matched), for [`DirectionTap::fire_triggers`].
    pub(super) fn fired_triggers(&self, frame: &Frame, ack: bool, now: Duration) -> Vec<Injection> {
        // Allocates only when a trigger fires.
        let mut fired = Vec::new();
        if self.triggers.is_empty() || self.closing() {
            return fired;
        }
        let info = self.frame_info(frame, ack, now);
        for (index, injection) in &self.triggers {
            let Some(trigger) = injection.trigger() else {
                continue;
            };
            if trigger.matches(&info)
                && lock_conn(&self.conn_state)
                    .tap
                    .trigger_matched(*index, trigger.nth)
            {
                fired.push(injection.clone());
            }
        }
        fired
    }

    /// Fires the injections `frame` triggered ([`DirectionTap::fired_triggers`]):
    /// into this direction right behind `frame` (which leaves no earlier
    /// than `release`), or posted to the other direction's writer.
    pub(super) fn fire_triggers(
        &mut self,
        fired: Vec<Injection>,
        release: Option<Duration>,
        out: &mut VecDeque<Out>,
    ) {
        for injection in fired {
            if *injection.from == *self.from {
                self.inject(&injection, release, out);
            } else {
                let other = opposite(self.decoder.direction());
                lock_conn(&self.conn_state).tap.post(other, injection);
            }
        }
    }

    /// Queues what the other direction's frames set off for this one.
    /// Queues what the other direction's frames set off for this one, and
    /// what a connection policy sent into it from there.
    pub(crate) fn take_posted(&mut self, out: &mut VecDeque<Out>) {
        if self.closing() {
            return;
        }
        let direction = self.decoder.direction();
        let posted = lock_conn(&self.conn_state).tap.take_posted(direction);
        for injection in &posted {
            self.inject(injection, None, out);
        }
        self.take_policy_posted(out);
    }

    /// What wakes this direction's writer when the other direction posts
    /// an injection for it.
    pub(crate) fn posted_wake(&self) -> Arc<Notify> {
        lock_conn(&self.conn_state)
            .tap
            .wake(self.decoder.direction())
    }
}

/// The frame an event of an injected frame's own decode stands for, and
/// the RFC 9113 rule it breaks, if any. A frame the harness writes is
/// recorded as what it is even when it breaks the protocol (an RST_STREAM
/// on stream 0, §6.4): the decoder reports that as malformed and keeps no
/// detail, so the frame is read again without the rules. `fed`: octets the
/// decoder took before `bytes`.
pub(super) fn injected_frame(
    event: wire::Event,
    bytes: &[u8],
    fed: u64,
) -> Option<(Frame, Option<String>)> {
    match event {
        wire::Event::Frame(frame) => Some((frame, None)),
        wire::Event::Malformed { offset, reason, .. } => {
            let start = usize::try_from(offset.checked_sub(fed)?).ok()?;
            let (frame, broken) = wire::decode::frame_despite_rules(bytes.get(start..)?)?;
            Some((frame, Some(broken.unwrap_or(reason))))
        }
        wire::Event::Preface { .. } => None,
    }
}

fn opposite(direction: Direction) -> Direction {
    match direction {
        Direction::ClientToServer => Direction::ServerToClient,
        Direction::ServerToClient => Direction::ClientToServer,
    }
}
