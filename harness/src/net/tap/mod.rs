//! The wire tap: every byte a host writes on a simulated connection passes
//! through here. It decodes HTTP/2 frames (one decoder per direction),
//! records each frame once, at the sender, and applies frame faults.
//!
//! Without frame faults the tap only watches: bytes go out as written.
//! With frame faults it cuts the stream at frame boundaries, so that a frame
//! can be dropped, kept back, or have an injected frame put before it; a
//! partial frame waits for its remaining bytes.

mod describe;
mod writer;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

pub(crate) use writer::spawn_writer;

use crate::fault::{FrameAction, FrameInfo};
use crate::recorder::event::{EventKind, Fate};
use crate::sim::Shared;
use crate::wire::{self, Decoder, Detail, Direction, Frame};

/// Bytes ready to leave, and when (*simulated* time; `None`: now).
pub(crate) struct Out {
    pub(crate) bytes: Bytes,
    pub(crate) release: Option<Duration>,
    /// For a kept-back frame: what to record when it leaves.
    pub(crate) kept: Option<Kept>,
}

/// A kept-back frame, remembered until it leaves.
pub(crate) struct Kept {
    stream: u32,
    frame: String,
    since: Duration,
}

/// One direction of one connection, at its sender.
pub(crate) struct DirectionTap {
    decoder: Decoder,
    shared: Arc<Shared>,
    conn: u32,
    from: Arc<str>,
    to: Arc<str>,
    /// Cut at frame boundaries (frame faults exist) or only watch.
    cut: bool,
    /// Bytes received from the sender and not yet handed on.
    pending: BytesMut,
    /// Offset of `pending[0]` in this direction's byte stream.
    base: u64,
    events: Vec<wire::Event>,
}

impl DirectionTap {
    pub(crate) fn new(
        shared: Arc<Shared>,
        conn: u32,
        direction: Direction,
        from: Arc<str>,
        to: Arc<str>,
    ) -> Self {
        Self {
            decoder: Decoder::new(direction),
            cut: shared.has_frame_rules(),
            shared,
            conn,
            from,
            to,
            pending: BytesMut::new(),
            base: 0,
            events: Vec::new(),
        }
    }

    pub(crate) fn from(&self) -> &str {
        &self.from
    }

    pub(crate) fn to(&self) -> &str {
        &self.to
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Takes bytes the sender wrote; queues what may leave, and when.
    pub(crate) fn on_bytes(&mut self, chunk: &[u8], out: &mut VecDeque<Out>) {
        self.pending.extend_from_slice(chunk);
        self.decoder.feed(chunk, &mut self.events);
        let events = std::mem::take(&mut self.events);
        for event in &events {
            self.on_event(event, out);
        }
        self.events = events;
        self.events.clear();
        if !self.cut || self.decoder.is_opaque() {
            let end = self.base + self.pending.len() as u64;
            self.emit(end, None, None, out);
        }
    }

    fn on_event(&mut self, event: &wire::Event, out: &mut VecDeque<Out>) {
        match event {
            wire::Event::Preface { .. } => {
                let end = event.offset() + event.wire_len().unwrap_or(0);
                self.emit(end, None, None, out);
            }
            wire::Event::Frame(frame) => self.on_frame(frame, out),
            wire::Event::Malformed {
                offset,
                len,
                reason,
            } => {
                self.record(EventKind::ProtocolError {
                    conn: self.conn,
                    to: self.to.to_string(),
                    offset: *offset,
                    reason: reason.clone(),
                });
                // Passed through untouched: the receiver's HTTP/2 stack
                // decides what a protocol error means.
                let end = len.map_or(self.base + self.pending.len() as u64, |n| offset + n);
                self.emit(end, None, None, out);
            }
        }
    }

    fn on_frame(&mut self, frame: &Frame, out: &mut VecDeque<Out>) {
        let now = self.shared.recorder.now();
        let ack = matches!(
            frame.detail,
            Detail::Ping { ack: true, .. } | Detail::Settings { ack: true, .. }
        );
        let info = FrameInfo {
            from: &self.from,
            to: &self.to,
            kind: frame.ty,
            ack,
            stream: frame.stream_id,
            at: now,
        };
        let action = self.shared.frame_action(&info);
        let release = match action {
            Some(FrameAction::Delay(d)) => Some(now + d),
            Some(FrameAction::HoldUntil(t)) if t > now => Some(t),
            _ => None,
        };
        let fate = match (action, release) {
            (Some(FrameAction::Drop), _) => Fate::Dropped,
            (_, Some(until)) => Fate::Delayed { until },
            _ => Fate::Passed,
        };
        let (detail, noise) = describe::describe(frame);
        let name = frame.ty.to_string();
        self.record(EventKind::Frame {
            conn: self.conn,
            to: self.to.to_string(),
            stream: frame.stream_id,
            frame: name.clone(),
            detail,
            fate,
            noise,
        });
        let end = frame.offset + frame.wire_len();
        match fate {
            Fate::Dropped => self.discard(end),
            _ => {
                let kept = release.map(|_| Kept {
                    stream: frame.stream_id,
                    frame: name,
                    since: now,
                });
                self.emit(end, release, kept, out);
            }
        }
    }

    /// Records a frame the harness injects into this direction.
    pub(crate) fn record_injected(&self, bytes: &[u8]) {
        let mut events = Vec::new();
        let direction = self.decoder.direction();
        let mut decoder = Decoder::new(direction);
        if direction == Direction::ClientToServer {
            // The injected frame is decoded on its own: give the decoder the
            // preface it expects first.
            decoder.feed(wire::frame::PREFACE, &mut events);
            events.clear();
        }
        decoder.feed(bytes, &mut events);
        for e in events {
            if let wire::Event::Frame(frame) = e {
                let (detail, noise) = describe::describe(&frame);
                self.record(EventKind::Frame {
                    conn: self.conn,
                    to: self.to.to_string(),
                    stream: frame.stream_id,
                    frame: frame.ty.to_string(),
                    detail,
                    fate: Fate::Injected,
                    noise,
                });
            }
        }
    }

    /// Records that a kept-back frame left.
    pub(crate) fn record_release(&self, kept: &Kept) {
        let now = self.shared.recorder.now();
        self.record(EventKind::FrameReleased {
            conn: self.conn,
            to: self.to.to_string(),
            stream: kept.stream,
            frame: kept.frame.clone(),
            kept: now.saturating_sub(kept.since),
        });
    }

    fn record(&self, kind: EventKind) {
        self.shared.recorder.push(&self.from, kind);
    }

    /// Hands on the pending bytes up to stream offset `end`.
    fn emit(
        &mut self,
        end: u64,
        release: Option<Duration>,
        kept: Option<Kept>,
        out: &mut VecDeque<Out>,
    ) {
        if let Some(bytes) = self.take(end) {
            out.push_back(Out {
                bytes,
                release,
                kept,
            });
        }
    }

    /// Drops the pending bytes up to stream offset `end`.
    fn discard(&mut self, end: u64) {
        let _ = self.take(end);
    }

    fn take(&mut self, end: u64) -> Option<Bytes> {
        let n = usize::try_from(end.saturating_sub(self.base)).unwrap_or(usize::MAX);
        let n = n.min(self.pending.len());
        if n == 0 {
            return None;
        }
        self.base += n as u64;
        Some(self.pending.split_to(n).freeze())
    }
}
