//! How a connection's bytes end: the close of one end (a FIN, or a RST for
//! an end closed with bytes it never read) and the frames a sender wrote
//! that never left because the socket was gone by then.
//!
//! turmoil's TCP follows RFC 9293 §3.10.4 here: a socket dropped with
//! unread bytes sends RST and is torn down at once, so its own writer's
//! later writes fail (`BrokenPipe`), bytes still in flight to it are
//! discarded on arrival, and the peer's reads fail with `ConnectionReset`.
//! What the harness can know, it records:
//! - the end that reset, and how many bytes of the peer it had read next to
//!   how many the peer's writer had put on the wire (the difference never
//!   reached its application); unknown for a raw peer, whose writes the
//!   harness does not count;
//! - each frame recorded as written that was still in its writer's queue
//!   when a write failed: it never left ([`EventKind::FramesUndelivered`]).
//!
//! Bytes that left but were discarded at a peer that had already reset are
//! counted in the first (as unread), not named frame by frame.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::pair::side;
use super::{lock_conn, SharedConn, TapEnv};
use crate::recorder::event::{EventKind, UndeliveredCause};
use crate::wire::{Direction, FrameType};

/// Most frames an [`EventKind::FramesUndelivered`] names; the rest are
/// counted.
pub(crate) const NAMED_UNDELIVERED: usize = 8;

/// Bytes each direction's writer has put on the wire, shared by both ends
/// (an atomic: counted on every write, never under the connection's lock).
#[derive(Debug, Default)]
pub(crate) struct Written([AtomicU64; 2]);

impl Written {
    pub(crate) fn add(&self, direction: Direction, n: usize) {
        self.0[side(direction)].fetch_add(n as u64, Ordering::Relaxed);
    }

    pub(crate) fn get(&self, direction: Direction) -> u64 {
        self.0[side(direction)].load(Ordering::Relaxed)
    }
}

/// The frames of one direction recorded as written and not yet on the
/// wire, by the offset in the sender's byte stream where each ends.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    frames: VecDeque<(u64, u32, FrameType)>,
}

impl InFlight {
    /// A frame ending at stream offset `end` was recorded and queued.
    pub(crate) fn queued(&mut self, end: u64, stream: u32, frame: FrameType) {
        self.frames.push_back((end, stream, frame));
    }

    /// The sender's stream up to offset `end` is on the wire.
    pub(crate) fn left(&mut self, end: u64) {
        while self.frames.front().is_some_and(|(e, ..)| *e <= end) {
            self.frames.pop_front();
        }
    }

    /// The frames not on the wire yet: their end offset, stream, type.
    #[cfg(any(test, fuzzing))]
    pub(crate) fn frames(&self) -> impl Iterator<Item = &(u64, u32, FrameType)> {
        self.frames.iter()
    }

    /// Takes what never left.
    pub(crate) fn take(&mut self) -> VecDeque<(u64, u32, FrameType)> {
        std::mem::take(&mut self.frames)
    }
}

/// One end of a connection, as its close sees it.
pub(crate) struct CloseEnd {
    pub(crate) env: TapEnv,
    pub(crate) conn: u32,
    pub(crate) peer: Arc<str>,
    /// The direction this end writes.
    pub(crate) direction: Direction,
    pub(crate) state: SharedConn,
}

impl CloseEnd {
    /// This end is being dropped with bytes of the peer unread (`read`:
    /// how many it had read): turmoil sends RST. Notes it for this end's
    /// writer task, which records it once it has taken (and recorded) what
    /// the stack wrote before the drop, so the trace reads in the stack's
    /// order. Not noted while the driver crashes or restarts the host
    /// (closes by a crash are not recorded).
    pub(crate) fn reset_with_unread(&self, read: u64) {
        if self.env.recorder.driving_host() {
            return;
        }
        let peer_dir = match self.direction {
            Direction::ClientToServer => Direction::ServerToClient,
            Direction::ServerToClient => Direction::ClientToServer,
        };
        let mut state = lock_conn(&self.state);
        // A raw client's writes are not counted.
        let counted = state.dialled || peer_dir == Direction::ServerToClient;
        let unread = counted.then(|| state.written.get(peer_dir).saturating_sub(read));
        state.reset_by[side(self.direction)] = true;
        state.reset_note[side(self.direction)] = Some(EventKind::ConnResetSent {
            conn: self.conn,
            to: (&self.peer).into(),
            read,
            unread,
        });
    }
}

/// The reset `direction`'s end noted at its close, if any, to record now.
pub(crate) fn take_reset_note(state: &SharedConn, direction: Direction) -> Option<EventKind> {
    lock_conn(state).reset_note[side(direction)].take()
}

/// Why a writer's frames never left, from who had reset the connection.
pub(crate) fn cause(state: &SharedConn, direction: Direction) -> UndeliveredCause {
    let state = lock_conn(state);
    if state.reset_by[side(direction)] {
        UndeliveredCause::OwnReset
    } else if state.reset_by[1 - side(direction)] {
        UndeliveredCause::PeerReset
    } else {
        UndeliveredCause::SocketGone
    }
}
