//! The read side of a connection the harness did not dial: a client that
//! opened a raw `turmoil::net::TcpStream` to a sim server writes straight
//! to turmoil's socket, past every writer task, so the tap never sees its
//! bytes at the sender. The server end of every accepted connection carries
//! one of these until it knows: at the first bytes (or end) it reads, the
//! client end has either registered as the harness's own
//! ([`ConnState::dialled`](crate::sim::ConnState), set before a dialled
//! client can write anything) and this is dropped, or it has not, and every
//! byte the server reads from then on is decoded and recorded here, at the
//! raw peer, when the server read it ([`Fate::ReadAtReceiver`]).
//!
//! The cost on a dialled connection is one branch per read of the server
//! and one lock at its first read.

use std::sync::Arc;

use super::{lock_conn, SharedConn, TapEnv};
use crate::recorder::event::{EventKind, Fate};
use crate::wire::{self, Decoder, Direction};

/// The raw-peer tap of one accepted connection.
pub(crate) struct RawRead {
    env: TapEnv,
    conn: u32,
    /// The client host (the raw peer).
    peer: Arc<str>,
    /// The server host reading.
    me: Arc<str>,
    state: SharedConn,
    decoder: Decoder,
    events: Vec<wire::Event>,
    /// Set once the client end is known to be raw.
    raw: bool,
}

/// What the server end's read saw, for [`RawRead::on_read`].
pub(crate) enum Read<'a> {
    /// Bytes.
    Bytes(&'a [u8]),
    /// End of stream: the peer's FIN.
    End,
    /// `ConnectionReset`: the peer's RST (turmoil sends one when a socket
    /// is closed with unread bytes, or gets bytes for a socket it no longer
    /// has).
    Reset,
}

impl RawRead {
    pub(crate) fn new(
        env: TapEnv,
        conn: u32,
        peer: Arc<str>,
        me: Arc<str>,
        state: SharedConn,
    ) -> Self {
        Self {
            env,
            conn,
            peer,
            me,
            state,
            decoder: Decoder::new(Direction::ClientToServer),
            events: Vec::new(),
            raw: false,
        }
    }

    /// Takes what the server read. Returns `false` when the tap has no more
    /// to do (the client is the harness's own, or the connection ended):
    /// the caller drops it.
    pub(crate) fn on_read(&mut self, read: Read<'_>) -> bool {
        if !self.raw {
            if lock_conn(&self.state).dialled {
                return false;
            }
            self.raw = true;
        }
        match read {
            Read::Bytes(bytes) => {
                self.decoder.feed(bytes, &mut self.events);
                let events = std::mem::take(&mut self.events);
                for event in &events {
                    self.record(event);
                }
                self.events = events;
                self.events.clear();
                true
            }
            Read::End | Read::Reset => {
                self.decoder.finish(&mut self.events);
                let events = std::mem::take(&mut self.events);
                for event in &events {
                    self.record(event);
                }
                self.env.recorder.push(
                    &self.peer,
                    EventKind::RawPeerClosed {
                        conn: self.conn,
                        to: (&self.me).into(),
                        reset: matches!(read, Read::Reset),
                    },
                );
                false
            }
        }
    }

    fn record(&self, event: &wire::Event) {
        let kind = match event {
            wire::Event::Preface { .. } => return,
            wire::Event::Frame(frame) => {
                // A raw peer is rare: no block shared across its frames.
                let summary = super::summary::summarize(
                    frame,
                    &mut super::summary::Blocks::new(self.env.show_credentials),
                );
                EventKind::Frame {
                    conn: self.conn,
                    to: (&self.me).into(),
                    stream: frame.stream_id,
                    frame: frame.ty,
                    flags: summary.flags,
                    detail: summary.detail,
                    fate: Fate::ReadAtReceiver.into(),
                    noise: summary.noise,
                }
            }
            wire::Event::Malformed { offset, reason, .. } => EventKind::ProtocolError {
                conn: self.conn,
                to: (&self.me).into(),
                offset: *offset,
                reason: reason.clone().into(),
            },
        };
        self.env.recorder.push(&self.peer, kind);
    }
}
