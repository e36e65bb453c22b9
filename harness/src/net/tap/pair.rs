//! What the two taps of one connection share, besides keepalive: each
//! runs in its own writer task, on its own host, and learns from the other
//! only through here.
//!
//! - SETTINGS in flight (RFC 9113 §6.5.3): the frame-size limit of one
//!   direction is set by the *other* direction's SETTINGS, and takes
//!   effect when this direction's sender acks them.
//! - Injections one direction's frame set off for the other
//!   ([`InjectAt::after`](crate::fault::InjectAt::after)), and the wake-up
//!   of the writer that must send them.
//! - Frames kept back that have not left, so that the end of the run can
//!   say which never did.
//!
//! Everything is indexed by direction with [`side`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;

use crate::fault::Injection;
use crate::recorder::event::{HostName, LinkHold, WaitingFor};
use crate::wire::{Direction, FrameType};

/// The index of `direction` in the per-direction arrays.
pub(crate) fn side(direction: Direction) -> usize {
    match direction {
        Direction::ClientToServer => 0,
        Direction::ServerToClient => 1,
    }
}

/// Until when a kept-back frame waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Until {
    /// A *simulated* time.
    At(Duration),
    /// The release of a named hold (its own, or one ahead of it).
    Released(Arc<str>),
    /// The link opening: the repair of a partition (`paused` false) or
    /// the resume of a paused host.
    Link {
        /// Whether a pause holds it.
        paused: bool,
    },
}

impl Until {
    /// The recorded form of what it waits for.
    pub(crate) fn waiting_for(&self) -> WaitingFor {
        match self {
            Self::At(until) => WaitingFor::Time { until: *until },
            Self::Released(hold) => WaitingFor::Release {
                hold: hold.to_string(),
            },
            Self::Link { paused } => WaitingFor::Link {
                link: if *paused {
                    LinkHold::Pause
                } else {
                    LinkHold::Partition
                },
                lost_with_sender: false,
            },
        }
    }
}

/// A kept-back frame that has not left yet.
#[derive(Debug, Clone)]
pub(crate) struct Waiting {
    pub(crate) from: HostName,
    pub(crate) to: HostName,
    pub(crate) stream: u32,
    pub(crate) frame: FrameType,
    /// When it was written, *simulated* time.
    pub(crate) since: Duration,
    pub(crate) until: Until,
}

/// How often an `.after` injection's trigger matched on this connection.
#[derive(Debug)]
struct TriggerCount {
    /// Index among the run's injections.
    index: usize,
    matched: u32,
    fired: bool,
}

/// The part of a connection's shared state the taps own.
#[derive(Debug, Default)]
pub(crate) struct TapPair {
    /// Per direction: SETTINGS frames (not ACKs) its sender put on the wire
    /// that the receiver has not acked yet, oldest first, each with the
    /// `SETTINGS_MAX_FRAME_SIZE` it carried, if any. An ACK acknowledges
    /// the oldest (§6.5.3).
    unacked: [VecDeque<Option<u32>>; 2],
    /// Per direction: injections a frame of the other direction set off,
    /// for this direction's writer to send.
    inbox: [Vec<Injection>; 2],
    /// Per direction: wakes that direction's writer when its inbox fills.
    wake: [Arc<Notify>; 2],
    triggers: Vec<TriggerCount>,
    /// Per direction: kept-back frames not yet gone, oldest first.
    waiting: [VecDeque<Waiting>; 2],
    /// Per direction: a segment was lost in a black hole, so nothing
    /// later arrives (turmoil delivers in sequence, never retransmits).
    broken: [bool; 2],
}

impl TapPair {
    /// `direction`'s sender put a SETTINGS frame (not an ACK) on the wire.
    pub(crate) fn settings_sent(&mut self, direction: Direction, max_frame_size: Option<u32>) {
        self.unacked[side(direction)].push_back(max_frame_size);
    }

    /// `direction`'s sender acked the other direction's oldest SETTINGS;
    /// returns the `SETTINGS_MAX_FRAME_SIZE` it carried, now in force for
    /// frames `direction` sends (§6.5.3). An ACK with nothing to ack (a
    /// protocol error the receiver reports) changes nothing.
    pub(crate) fn settings_acked(&mut self, direction: Direction) -> Option<u32> {
        self.unacked[1 - side(direction)].pop_front().flatten()
    }

    /// Counts a match of trigger `index`; true when this is the one that
    /// fires it (`nth`, 1-based; the first when `None`). Fires once.
    pub(crate) fn trigger_matched(&mut self, index: usize, nth: Option<u32>) -> bool {
        let count = match self.triggers.iter_mut().position(|t| t.index == index) {
            Some(at) => &mut self.triggers[at],
            None => {
                self.triggers.push(TriggerCount {
                    index,
                    matched: 0,
                    fired: false,
                });
                let last = self.triggers.len() - 1;
                &mut self.triggers[last]
            }
        };
        if count.fired {
            return false;
        }
        count.matched += 1;
        count.fired = nth.is_none_or(|n| n == count.matched);
        count.fired
    }

    /// Hands `injection` to `direction`'s writer and wakes it.
    pub(crate) fn post(&mut self, direction: Direction, injection: Injection) {
        self.inbox[side(direction)].push(injection);
        // A stored permit if the writer is busy: it looks again.
        self.wake[side(direction)].notify_one();
    }

    /// Takes what other directions posted for `direction`.
    pub(crate) fn take_posted(&mut self, direction: Direction) -> Vec<Injection> {
        std::mem::take(&mut self.inbox[side(direction)])
    }

    /// What wakes `direction`'s writer when something is posted for it.
    pub(crate) fn wake(&self, direction: Direction) -> Arc<Notify> {
        self.wake[side(direction)].clone()
    }

    /// A frame of `direction` was kept back.
    pub(crate) fn kept(&mut self, direction: Direction, waiting: Waiting) {
        self.waiting[side(direction)].push_back(waiting);
    }

    /// The oldest kept-back frame of `direction` left.
    pub(crate) fn left(&mut self, direction: Direction) {
        self.waiting[side(direction)].pop_front();
    }

    /// A segment of `direction` was lost in a black hole.
    pub(crate) fn broke(&mut self, direction: Direction) {
        self.broken[side(direction)] = true;
    }

    /// Whether a segment of `direction` was lost in a black hole.
    pub(crate) fn is_broken(&self, direction: Direction) -> bool {
        self.broken[side(direction)]
    }

    /// Forgets every kept-back frame (the connection was reset: none will
    /// leave); returns how many there were.
    pub(crate) fn discard_waiting(&mut self) -> usize {
        let n = self.waiting.iter().map(VecDeque::len).sum();
        self.waiting = Default::default();
        n
    }

    /// Kept-back frames that have not left, client→server first.
    pub(crate) fn still_waiting(&self) -> impl Iterator<Item = &Waiting> {
        self.waiting.iter().flatten()
    }
}
