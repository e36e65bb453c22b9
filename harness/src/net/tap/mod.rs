//! The wire tap: every byte a host writes on a simulated connection passes
//! through here. It decodes HTTP/2 frames (one decoder per direction),
//! records each frame once, at the sender, and applies frame faults.
//!
//! Without frame faults the tap only watches: bytes go out as written.
//! With frame faults it cuts the stream at frame boundaries, so that a frame
//! can be dropped, kept back, or have an injected frame put before it; a
//! partial frame waits for its remaining bytes.
//!
//! On connections to a server host with connection policies (keepalive
//! enforcement is one), both directions also show every frame to the
//! connection's [`Policies`] (see [`policy`]), and each direction a policy
//! may alter is cut at frame boundaries, so that what a policy sends goes
//! out right behind the frame that set it off, and after a close nothing
//! the server writes does.
//!
//! While the link between the two hosts holds bytes (a TCP-like
//! partition, a paused host: `net/links.rs`), every frame written waits in
//! the writer task and leaves, in order, when the link opens; a partition's
//! `reset_after` resets the connection when the oldest waits too long
//! ([`DirectionTap::reset_conn`]). A frame written into a black hole is
//! marked lost, and so is every later frame of that direction (turmoil
//! never retransmits). With the tap off (`SimBuilder::wire_tap(false)`)
//! but such faults in the run, the tap runs *silent*: it records nothing
//! and only keeps bytes back for the links.
//!
//! Both directions of a connection share a [`TapPair`]: the SETTINGS in
//! flight (so that one direction's frame-size limit follows what the other
//! direction's receiver advertised, from the sender's ACK on, RFC 9113
//! §6.5.3), the injections a frame of one direction sets off for the other,
//! and the frames kept back that have not left. It is locked only when a
//! SETTINGS frame passes, a frame is kept back or leaves, or a trigger
//! matches: never for an ordinary frame.

mod conns;
pub(crate) mod ends;
mod inject;
mod pair;
mod policy;
mod preface;
mod raw;
mod reset;
mod summary;
mod writer;

use crate::recorder::event;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};

pub(crate) use conns::{lock as lock_conn, ConnState, Registry, SharedConn};
pub(crate) use ends::Written;
pub(crate) use pair::{TapPair, Until, Waiting};
pub(crate) use policy::Policies;
pub(crate) use raw::{RawRead, Read};
pub(crate) use reset::Reset;
pub(crate) use writer::spawn_writer;

use crate::error::Problems;
use crate::fault::{FrameInfo, FramePlan, FrameView, Injection, LinkState, Links, Verdict};
use crate::policy::Close;
use crate::recorder::event::{EventKind, Fate, FrameDetail, FrameFate, HostName, UndeliveredCause};
use crate::recorder::Recorder;
use crate::wire::{self, BlockKind, Decoder, Detail, Direction, Frame, FrameType, SettingId};

/// What the tap needs of the run, and no more: the recorder it writes the
/// frames into, the frame faults, the links' state, and where a problem
/// found while tapping goes. The wiring hands it down with each
/// connection; a clone shares everything it holds.
#[derive(Clone)]
pub(crate) struct TapEnv {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) frames: Arc<FramePlan>,
    /// Partitions, black holes and pauses in force.
    pub(crate) links: Arc<Links>,
    pub(crate) problems: Arc<Problems>,
    /// Whether connections are recorded
    /// ([`SimBuilder::wire_tap`](crate::SimBuilder::wire_tap)); off, the
    /// tap only keeps bytes back while a link holds them.
    pub(crate) wire_tap: bool,
    /// Whether credentials are recorded as sent
    /// ([`SimBuilder::show_credentials`](crate::SimBuilder::show_credentials)).
    pub(crate) show_credentials: bool,
}

/// Bytes ready to leave, and when (*simulated* time; `None`: now).
pub(crate) struct Out {
    pub(crate) bytes: Bytes,
    pub(crate) release: Option<Duration>,
    /// A named hold ([`Verdict::Hold`]): not due before its release,
    /// whatever `release` says.
    pub(crate) hold: Option<Arc<str>>,
    /// For a kept-back frame: what to record when it leaves.
    pub(crate) kept: Option<Kept>,
    /// When it was written, if the link held bytes then (*simulated*
    /// time): the start of its wait for a partition's `reset_after`.
    pub(crate) link_since: Option<Duration>,
    /// The offset in the sender's byte stream where these bytes end (for
    /// injected bytes: where they were put): once they leave, the frames
    /// recorded up to there are on the wire ([`ends::InFlight`]).
    pub(crate) end: u64,
}

/// How a frame waits, from its own action and what queues ahead of it.
struct Keep {
    /// Whether its own rule keeps it back (delay, hold), not only what is
    /// queued ahead of it.
    own: bool,
    /// The latest time it may leave (its own, or a frame's ahead of it).
    release: Option<Duration>,
    /// Its own named hold, while unreleased.
    hold: Option<Arc<str>>,
    /// What the trace says it waits for; `None`: it passes.
    until: Option<Until>,
    /// Set when the link holds bytes now: when it was written.
    link_since: Option<Duration>,
}

/// A kept-back frame, remembered until it leaves.
pub(crate) struct Kept {
    stream: u32,
    frame: FrameType,
    since: Duration,
}

/// One direction of one connection, at its sender.
pub(crate) struct DirectionTap {
    decoder: Decoder,
    env: TapEnv,
    conn: u32,
    from: HostName,
    to: HostName,
    /// Cut at frame boundaries (frame faults exist) or only watch.
    cut: bool,
    /// Bytes received from the sender and not yet handed on.
    pending: BytesMut,
    /// Offset of `pending[0]` in this direction's byte stream.
    base: u64,
    events: Vec<wire::Event>,
    /// The connection's state, shared with the other direction's tap.
    conn_state: SharedConn,
    /// Whether the connection has policies: every frame then reaches
    /// `conn_state.policies`.
    policed: bool,
    /// `.after` injections that may fire on this connection, with their
    /// index among the run's injections.
    triggers: Vec<(usize, Injection)>,
    /// Set once a policy's close is queued (on the server → client
    /// direction): everything the sender writes from then on is dropped,
    /// and the writer closes the connection once the queue is out.
    closing: Option<Close>,
    /// The policies' buffers, reused from frame to frame; only on a
    /// connection with policies.
    scratch: Option<Box<policy::Scratch>>,
    /// Set once a policy reset the connection from this tap: take no more
    /// bytes (the writer stops at the reset flag).
    reset_done: bool,
    /// The wire tap is off, but the run has link faults: record nothing,
    /// only keep bytes back while the link holds them.
    silent: bool,
    /// Frames recorded as written that are not on the wire yet.
    in_flight: ends::InFlight,
    /// Set once the harness wrote a frame of its own into this direction
    /// (injected, or sent by a policy): a later one is not the first.
    wrote_own: std::cell::Cell<bool>,
    /// Bytes each direction put on the wire, shared with the other end.
    written: Arc<Written>,
    /// The header blocks this direction recorded last, shared with the
    /// frames that repeat them.
    blocks: summary::Blocks,
}

impl DirectionTap {
    pub(crate) fn new(
        env: TapEnv,
        conn: u32,
        direction: Direction,
        from: Arc<str>,
        to: Arc<str>,
        conn_state: SharedConn,
    ) -> Self {
        let (policed, reacts, written) = {
            let state = lock_conn(&conn_state);
            let (policed, reacts) = match &state.policies {
                Some(p) => (true, p.alters(direction)),
                None => (false, false),
            };
            (policed, reacts, state.written.clone())
        };
        Self {
            decoder: Decoder::new(direction),
            // Cut at frame boundaries under link faults too, so that each
            // frame waits (and is released) on its own.
            cut: env.frames.has_frame_rules() || reacts || env.links.active(),
            silent: !env.wire_tap,
            triggers: env.frames.triggers_between(&from, &to),
            blocks: summary::Blocks::new(env.show_credentials),
            env,
            conn,
            from: HostName::from(&from),
            to: HostName::from(&to),
            pending: BytesMut::new(),
            base: 0,
            events: Vec::new(),
            conn_state,
            policed,
            closing: None,
            scratch: policed.then(Box::default),
            reset_done: false,
            in_flight: ends::InFlight::default(),
            wrote_own: std::cell::Cell::new(false),
            written,
        }
    }

    /// Whether a policy's close is queued: take no more bytes; close once
    /// the queue is out ([`DirectionTap::close`]).
    pub(crate) fn closing(&self) -> bool {
        self.closing.is_some()
    }

    /// Whether this direction takes no more bytes: a policy's close is
    /// queued, or a policy reset the connection here.
    fn halted(&self) -> bool {
        self.closing.is_some() || self.reset_done
    }

    pub(crate) fn from(&self) -> &str {
        &self.from
    }

    pub(crate) fn to(&self) -> &str {
        &self.to
    }

    pub(crate) fn env(&self) -> &TapEnv {
        &self.env
    }

    /// Takes bytes the sender wrote; queues what may leave, and when.
    ///
    /// Watching only (no frame faults, no policy reaction), the chunk goes on
    /// as written, without a copy: this runs on every write of every
    /// connection.
    pub(crate) fn on_bytes(&mut self, chunk: Bytes, out: &mut VecDeque<Out>) {
        if self.halted() {
            return;
        }
        if self.silent {
            let link_since = self.link_holds().then(|| self.env.recorder.now());
            out.push_back(Out {
                bytes: chunk,
                release: None,
                hold: None,
                kept: None,
                link_since,
                end: 0,
            });
            return;
        }
        if self.cut {
            self.pending.extend_from_slice(&chunk);
        }
        // Read once per chunk, not per frame: reading the simulated clock
        // costs a lookup in turmoil's world, and the clock cannot move
        // while this (synchronous) call runs.
        let now = self.env.recorder.now();
        let mut rest: &[u8] = &chunk;
        // An event at a time: a SETTINGS ACK moves the frame-size limit
        // for the frames right behind it (RFC 9113 §6.5.3).
        while !rest.is_empty() && !self.halted() {
            let taken = self.decoder.feed_until_event(rest, &mut self.events);
            rest = &rest[taken..];
            let events = std::mem::take(&mut self.events);
            for event in &events {
                if self.halted() {
                    break;
                }
                // Watching, `pending` stays empty and the emits are no-ops.
                self.on_event(event, now, out);
            }
            self.events = events;
            self.events.clear();
        }
        if self.halted() {
            // A policy closed or reset the connection: the rest never leaves.
            self.pending.clear();
            return;
        }
        if !self.cut {
            out.push_back(Out {
                bytes: chunk,
                release: None,
                hold: None,
                kept: None,
                link_since: None,
                end: self.decoder.bytes_fed(),
            });
        } else if self.decoder.is_opaque() {
            let end = self.base + self.pending.len() as u64;
            self.emit(end, None, None, None, out);
        }
    }

    fn on_event(&mut self, event: &wire::Event, now: Duration, out: &mut VecDeque<Out>) {
        match event {
            wire::Event::Preface { .. } => {
                let end = event.offset() + event.wire_len().unwrap_or(0);
                self.emit(end, None, None, None, out);
            }
            wire::Event::Frame(frame) => self.on_frame(frame, now, out),
            wire::Event::Malformed {
                offset,
                len,
                reason,
            } => {
                self.record(EventKind::ProtocolError {
                    conn: self.conn,
                    to: self.to,
                    offset: *offset,
                    reason: reason.clone().into(),
                });
                // Passed through untouched: the receiver's HTTP/2 stack
                // decides what a protocol error means.
                let end = len.map_or(self.base + self.pending.len() as u64, |n| offset + n);
                self.emit(end, None, None, None, out);
            }
        }
    }

    /// `now`: the simulated instant the sender wrote the frame's chunk.
    fn on_frame(&mut self, frame: &Frame, now: Duration, out: &mut VecDeque<Out>) {
        let mut scratch = self.scratch.take();
        let summary = summary::summarize(frame, &mut self.blocks);
        let ack = summary.flags.ack();
        let info = self.frame_info(frame, ack, now);
        let end = frame.offset + frame.wire_len();
        // The frame's octets, when the tap keeps them (it cuts the stream).
        let start = usize::try_from(frame.offset.saturating_sub(self.base)).unwrap_or(usize::MAX);
        let stop = usize::try_from(end.saturating_sub(self.base)).unwrap_or(usize::MAX);
        let bytes = self.pending.get(start..stop).unwrap_or_default();
        let mut view = FrameView {
            from: &self.from,
            to: &self.to,
            direction: self.decoder.direction(),
            conn: self.conn,
            frame: frame.ty,
            flags: summary.flags,
            stream: frame.stream_id,
            len: frame.len,
            detail: &summary.detail,
            bytes,
            now,
            fate: Fate::Passed,
        };
        let verdict = self.env.frames.frame_verdict(&info, &view);
        let keep = self.keep(verdict.as_ref(), now, out);
        let lost = self.lost(verdict.as_ref());
        // A frame the rule kept back says so; one that only waits behind
        // a kept-back frame says that instead, so a reader does not take it
        // for a match of the rule.
        let fate = lost.unwrap_or(match (&verdict, &keep.until, keep.own) {
            (Some(Verdict::Drop), ..) => Fate::Dropped,
            (Some(Verdict::Replace(with)), ..) => replaced(bytes, with),
            (_, Some(Until::Link { paused: true }), _) => Fate::Paused,
            (_, Some(Until::Link { paused: false }), _) => Fate::Partitioned,
            (_, Some(Until::At(until)), true) => Fate::Delayed { until: *until },
            (_, Some(Until::Released(_)), true) => Fate::Held,
            (_, Some(Until::At(until)), false) => Fate::Behind { until: *until },
            (_, Some(Until::Released(_)), false) => Fate::BehindHeld,
            (_, None, _) => Fate::Passed,
        });
        view.fate = fate;
        let mut asked = scratch
            .as_deref_mut()
            .and_then(|scratch| self.policy_frame(&view, scratch));
        // A reset asked for at this frame keeps it from its receiver too.
        let swallowed = asked
            .as_ref()
            .is_some_and(|a| a.swallow || a.reset.is_some())
            && matches!(fate, Fate::Passed | Fate::Behind { .. } | Fate::BehindHeld);
        let fate = if swallowed { Fate::Swallowed } else { fate };
        if let Some((path, timeout)) = self.unrecorded_call(frame) {
            let call = self.env.recorder.next_call();
            let recorder = &self.env.recorder;
            recorder.push_at(
                now,
                self.from,
                EventKind::CallSeenOnWire {
                    call,
                    conn: self.conn,
                    stream: frame.stream_id,
                },
            );
            recorder.push_at(
                now,
                self.from,
                EventKind::CallStarted(Box::new(event::CallStarted {
                    call,
                    target: self.to,
                    path,
                    timeout,
                    parent: None,
                })),
            );
        }
        // What arrives in place of a replaced frame, decoded on its own.
        let mut arrived = match &verdict {
            Some(Verdict::Replace(with)) if !matches!(fate, Fate::Lost | Fate::LostBehind) => {
                Some(self.decode_alone(with))
            }
            _ => None,
        };
        // Matched now, fired behind the frame below: a preface SETTINGS'
        // row says whether one of them takes its place.
        let fired = self.fired_triggers(frame, ack, now);
        let preface = preface::is_preface_settings(frame, self.decoder.direction());
        self.env.recorder.push_at(
            now,
            self.from,
            EventKind::Frame {
                conn: self.conn,
                to: self.to,
                stream: frame.stream_id,
                frame: frame.ty,
                flags: summary.flags,
                detail: summary.detail,
                fate: match preface {
                    true => self.preface_fate(fate, arrived.as_deref(), &fired, asked.as_ref()),
                    false => fate.into(),
                },
                noise: summary.noise,
            },
        );
        let replacement = match verdict {
            Some(Verdict::Replace(with)) if !matches!(fate, Fate::Lost | Fate::LostBehind) => {
                self.record_replacement(arrived.take().unwrap_or_default(), preface);
                Some(with)
            }
            // A policy's rewrite of a frame that leaves as written (or
            // waits to): the frame's row stays as its sender wrote it; the
            // policy's own line says what it changed.
            None if !matches!(
                fate,
                Fate::Dropped | Fate::Swallowed | Fate::Lost | Fate::LostBehind
            ) =>
            {
                asked.as_mut().and_then(|a| a.rewrite.take())
            }
            _ => None,
        };
        if frame.ty == FrameType::Settings {
            self.track_settings(&frame.detail, fate);
        }
        if let Some(scratch) = scratch.as_deref_mut() {
            self.policy_records(scratch);
        }
        self.scratch = scratch;
        match (fate, replacement) {
            (Fate::Dropped | Fate::Swallowed, _) => self.discard(end),
            (_, Some(with)) => {
                self.discard(end);
                let kept = keep
                    .until
                    .map(|until| self.kept(frame.stream_id, frame.ty, now, until));
                // What arrives instead stands where the frame stood in the
                // sender's stream: it is on the wire once these bytes are.
                self.in_flight.queued(end, frame.stream_id, frame.ty);
                out.push_back(Out {
                    bytes: with,
                    release: keep.release,
                    hold: keep.hold,
                    kept,
                    link_since: keep.link_since,
                    end,
                });
            }
            _ => {
                self.in_flight.queued(end, frame.stream_id, frame.ty);
                let kept = keep
                    .until
                    .map(|until| self.kept(frame.stream_id, frame.ty, now, until));
                self.emit_held(end, keep.release, keep.hold, kept, keep.link_since, out);
            }
        }
        self.fire_triggers(fired, keep.release, out);
        if let Some(asked) = asked {
            self.policy_act(asked, out);
        }
    }

    /// The path and `grpc-timeout` of a request a tonic client wrote
    /// without the harness's call-id header (a call through a channel the
    /// harness does not record: [`crate::Host::tonic_channel`]); `None`
    /// for any other frame. tonic's channel puts `tonic/<version>` in the
    /// `user-agent` of every request (`transport/channel/service/user_agent.rs`),
    /// which tells its calls from a raw peer's requests.
    fn unrecorded_call(&self, frame: &Frame) -> Option<(String, Option<Duration>)> {
        let Detail::Headers { block, .. } = &frame.detail else {
            return None;
        };
        let tonic = block
            .get("user-agent")
            .is_some_and(|ua| ua.contains("tonic/"));
        let unrecorded = block.get(crate::recorder::CALL_ID_HEADER).is_none();
        let request = self.decoder.direction() == Direction::ClientToServer
            && block.kind == BlockKind::Request;
        if !(request && tonic && unrecorded) {
            return None;
        }
        Some((block.path.clone()?, block.grpc_timeout_duration()))
    }

    /// How a frame waits: for its own action, and behind what queues ahead
    /// of it (TCP keeps order: it leaves no earlier, and the trace must say
    /// so).
    fn keep(&self, verdict: Option<&Verdict>, now: Duration, out: &VecDeque<Out>) -> Keep {
        let own = match verdict {
            Some(Verdict::Delay(d)) => Some(now.saturating_add(*d)),
            Some(Verdict::HoldUntil(t)) if *t > now => Some(*t),
            _ => None,
        };
        let hold = match verdict {
            Some(Verdict::Hold(name)) if !self.env.frames.is_released(name) => Some(name.clone()),
            _ => None,
        };
        let ahead = out
            .iter()
            .filter_map(|o| o.release)
            .max()
            .filter(|t| *t > now);
        let release = own.max(ahead);
        let held_ahead = || {
            out.iter()
                .filter_map(|o| o.hold.as_ref())
                .find(|h| !self.env.frames.is_released(h))
                .cloned()
        };
        // The link: a frame written while it holds bytes waits for it,
        // whatever else holds it, and the trace says the link is why.
        let link = self.env.links.state(&self.from, &self.to);
        let by_link = link.holds().then_some(Until::Link {
            paused: link == LinkState::Paused,
        });
        let until = hold
            .clone()
            .map(Until::Released)
            .or(by_link)
            .or_else(|| held_ahead().map(Until::Released))
            .or(release.map(Until::At));
        Keep {
            own: own.is_some() || hold.is_some(),
            release,
            hold,
            until,
            link_since: link.holds().then_some(now),
        }
    }

    /// Whether the link to the receiver holds bytes now (a partition, a
    /// pause).
    fn link_holds(&self) -> bool {
        self.env.links.state(&self.from, &self.to).holds()
    }

    /// Whether a frame written now is lost, and how: written into a black
    /// hole ([`Fate::Lost`]), or behind a frame that was
    /// ([`Fate::LostBehind`]): turmoil delivers in sequence and never
    /// retransmits. Decided when the frame is written; a frame a fault
    /// drops is not on the wire at all.
    fn lost(&self, verdict: Option<&Verdict>) -> Option<Fate> {
        if !self.env.links.active() || matches!(verdict, Some(Verdict::Drop)) {
            return None;
        }
        let direction = self.decoder.direction();
        let mut state = lock_conn(&self.conn_state);
        if self.env.links.state(&self.from, &self.to) == LinkState::BlackHole {
            let behind = state.tap.is_broken(direction);
            state.tap.broke(direction);
            return Some(if behind { Fate::LostBehind } else { Fate::Lost });
        }
        state.tap.is_broken(direction).then_some(Fate::LostBehind)
    }

    /// What the fault rules and triggers match `frame` on.
    fn frame_info(&self, frame: &Frame, ack: bool, now: Duration) -> FrameInfo<'_> {
        FrameInfo {
            from: &self.from,
            to: &self.to,
            kind: frame.ty,
            ack,
            stream: frame.stream_id,
            at: now,
        }
    }

    /// Notes a kept-back frame in the connection's state (for the end of
    /// the run, should it never leave) and returns what to record when it
    /// leaves.
    fn kept(&self, stream: u32, frame: FrameType, since: Duration, until: Until) -> Kept {
        let waiting = Waiting {
            from: self.from,
            to: self.to,
            stream,
            frame,
            since,
            until,
        };
        lock_conn(&self.conn_state)
            .tap
            .kept(self.decoder.direction(), waiting);
        Kept {
            stream,
            frame,
            since,
        }
    }

    /// Follows the SETTINGS exchange of RFC 9113 §6.5.3: this direction's
    /// SETTINGS wait for the peer's ACK; this direction's ACK puts the
    /// peer's oldest unacked `SETTINGS_MAX_FRAME_SIZE` in force for the
    /// frames this direction sends next (§4.2).
    fn track_settings(&mut self, detail: &Detail, fate: Fate) {
        let Detail::Settings { ack, values } = detail else {
            return;
        };
        let direction = self.decoder.direction();
        let mut state = lock_conn(&self.conn_state);
        if *ack {
            // The sender applies the settings as it acks them, whatever the
            // network then does with the ACK.
            if let Some(size) = state.tap.settings_acked(direction) {
                drop(state);
                self.decoder.set_max_frame_size(size);
            }
        } else if !matches!(fate, Fate::Dropped | Fate::Swallowed) {
            // A SETTINGS frame the network lost is never acked.
            state.tap.settings_sent(direction, max_frame_size(values));
        }
    }

    /// The connection's reset flag, shared with both ends.
    pub(crate) fn reset_flag(&self) -> Arc<Reset> {
        lock_conn(&self.conn_state).reset.clone()
    }

    /// When this direction resets the connection, if the link is
    /// partitioned with a `reset_after` now: that long after the oldest
    /// queued byte written while the link held bytes (TCP's retransmission
    /// timer starts when a segment is first sent). *Simulated* time.
    pub(crate) fn reset_due(&self, queue: &VecDeque<Out>) -> Option<(Duration, Duration)> {
        let LinkState::Partitioned {
            reset_after: Some(limit),
        } = self.env.links.state(&self.from, &self.to)
        else {
            return None;
        };
        let since = queue.iter().find_map(|o| o.link_since)?;
        Some((since, since.saturating_add(limit)))
    }

    /// Resets the connection at both ends: what either direction kept back
    /// is discarded (it never leaves), and the reset is recorded here, at
    /// the host whose bytes waited `since` (*simulated* time).
    pub(crate) fn reset_conn(&mut self, since: Duration, queue: &mut VecDeque<Out>) {
        let (discarded, reset) = {
            let mut state = lock_conn(&self.conn_state);
            (state.tap.discard_waiting(), state.reset.clone())
        };
        queue.clear();
        // Counted as discarded below: not named again as undelivered.
        self.in_flight.take();
        let now = self.env.recorder.now();
        self.record(EventKind::ConnReset {
            conn: self.conn,
            to: self.to,
            waited: now.saturating_sub(since),
            discarded,
        });
        reset.fire();
    }

    /// `item` is on the wire.
    pub(crate) fn wrote(&mut self, item: &Out) {
        self.in_flight.left(item.end);
        self.written.add(self.decoder.direction(), item.bytes.len());
    }

    /// The sender's stream ended (its end closed, or the socket is gone):
    /// a partial frame or an unfinished field block (a CONTINUATION flood
    /// never ended) is recorded as a protocol error, so what the decoder
    /// held back is in the trace.
    pub(crate) fn finish(&mut self) {
        if self.silent {
            return;
        }
        let mut events = Vec::new();
        self.decoder.finish(&mut events);
        for event in &events {
            if let wire::Event::Malformed { offset, reason, .. } = event {
                self.record(EventKind::ProtocolError {
                    conn: self.conn,
                    to: self.to,
                    offset: *offset,
                    reason: reason.clone().into(),
                });
            }
        }
    }

    /// Whether the other end reset the connection.
    pub(crate) fn peer_reset(&self) -> bool {
        ends::cause(&self.conn_state, self.decoder.direction()) == UndeliveredCause::PeerReset
    }

    /// Records this end's reset, if its close noted one
    /// ([`ends::CloseEnd::reset_with_unread`]); returns whether it did.
    pub(crate) fn record_reset_note(&self) -> bool {
        let note = ends::take_reset_note(&self.conn_state, self.decoder.direction());
        let noted = note.is_some();
        if let (Some(kind), false) = (note, self.silent) {
            self.record(kind);
        }
        noted
    }

    /// A write failed: the socket is gone. Records this end's reset, if it
    /// was the one that reset, then the frames recorded as written that
    /// never left, if any, and why.
    pub(crate) fn record_undelivered(&mut self) {
        self.finish();
        self.record_reset_note();
        let frames = self.in_flight.take();
        if frames.is_empty() || self.silent {
            return;
        }
        let cause = ends::cause(&self.conn_state, self.decoder.direction());
        let more = frames.len().saturating_sub(ends::NAMED_UNDELIVERED);
        self.record(EventKind::FramesUndelivered {
            conn: self.conn,
            to: self.to,
            frames: frames
                .iter()
                .take(ends::NAMED_UNDELIVERED)
                .map(|(_, stream, frame)| (*stream, *frame))
                .collect(),
            more: u32::try_from(more).unwrap_or(u32::MAX),
            cause,
        });
    }

    /// Records that the sender closed its end of the connection.
    pub(crate) fn record_closed(&self) {
        self.record(EventKind::ConnClosed {
            conn: self.conn,
            to: self.to,
        });
    }

    /// Records injected frames, or frames the connection policy named
    /// `policy` sent; `kind` overrides the block kind of HEADERS.
    /// An injected SETTINGS frame counts among this direction's SETTINGS:
    /// the receiver's stack will ack it (RFC 9113 §6.5.3). An injected ACK
    /// does not count as this direction applying the peer's: the sender's
    /// stack did not.
    /// Returns the stream id and type of the (last) frame recorded.
    fn record_injected_as(
        &self,
        bytes: &[u8],
        kind: Option<BlockKind>,
        policy: Option<Arc<str>>,
    ) -> Option<(u32, FrameType)> {
        let mut head = None;
        let direction = self.decoder.direction();
        for (frame, broken) in self.decode_alone(bytes) {
            let broken = match self.before_preface() {
                Some(rule) => preface::before(&frame, rule, broken),
                None => broken,
            };
            self.wrote_own.set(true);
            if let (Detail::Settings { ack: false, values }, None) = (&frame.detail, &broken) {
                lock_conn(&self.conn_state)
                    .tap
                    .settings_sent(direction, max_frame_size(values));
            }
            // Injected frames are rare: no block shared with the sender's.
            let mut summary =
                summary::summarize(&frame, &mut summary::Blocks::new(self.env.show_credentials));
            if let (Some(kind), FrameDetail::Headers(block)) = (kind, &mut summary.detail) {
                block.set_kind(kind);
            }
            self.record(EventKind::Frame {
                conn: self.conn,
                to: self.to,
                stream: frame.stream_id,
                frame: frame.ty,
                flags: summary.flags,
                detail: summary.detail,
                fate: match &policy {
                    Some(policy) => FrameFate::sent_by_policy(policy.clone(), broken),
                    None => FrameFate::with_rule(Fate::Injected, broken),
                },
                noise: summary.noise,
            });
            head = Some((frame.stream_id, frame.ty));
        }
        head
    }

    /// What a frame the harness writes now would go before, if anything:
    /// the sender has not written its preface SETTINGS yet (nor the magic,
    /// from a client) and no frame of the harness's went first.
    fn before_preface(&self) -> Option<preface::Before> {
        let magic = match self.decoder.direction() {
            Direction::ClientToServer => wire::frame::PREFACE.len() as u64,
            Direction::ServerToClient => 0,
        };
        match self.decoder.bytes_fed() {
            _ if self.wrote_own.get() => None,
            fed if fed < magic => Some(preface::Before::Magic),
            fed if fed == magic => Some(preface::Before::Settings),
            _ => None,
        }
    }

    /// `bytes` (frames the harness writes) decoded on their own, each with
    /// the RFC 9113 rule it breaks, if any.
    fn decode_alone(&self, bytes: &[u8]) -> Vec<(Frame, Option<String>)> {
        let (events, fed) = decode_on_its_own(self.decoder.direction(), bytes);
        events
            .into_iter()
            .filter_map(|e| inject::injected_frame(e, bytes, fed))
            .collect()
    }

    /// `bytes` (whole frames a policy sent into `direction`) cut into its
    /// frames: each decoded on its own, with the RFC 9113 rule it breaks,
    /// if any, and its own octets.
    fn split_frames(
        &self,
        bytes: &Bytes,
        direction: Direction,
    ) -> Vec<(Frame, Option<String>, Bytes)> {
        let (events, fed) = decode_on_its_own(direction, bytes);
        // Whole frames, one after another: each starts where the last ended
        // (a frame decoded despite its rules carries no stream offset).
        let mut at = 0usize;
        events
            .into_iter()
            .filter_map(|e| inject::injected_frame(e, bytes, fed))
            .map(|(frame, broken)| {
                let start = at.min(bytes.len());
                let stop = usize::try_from(frame.wire_len())
                    .map_or(bytes.len(), |n| start.saturating_add(n).min(bytes.len()));
                at = stop;
                (frame, broken, bytes.slice(start..stop))
            })
            .collect()
    }

    /// Records what arrived in place of a replaced frame: one
    /// `FrameReplaced` per frame `arrived` (decoded on its own); in place of
    /// a connection `preface`'s SETTINGS, the first must be a SETTINGS.
    fn record_replacement(&self, arrived: Vec<(Frame, Option<String>)>, preface: bool) {
        for (i, (frame, broken)) in arrived.into_iter().enumerate() {
            let broken = match (preface, i) {
                (true, 0) => preface::in_place(&frame, broken),
                _ => broken,
            };
            let summary =
                summary::summarize(&frame, &mut summary::Blocks::new(self.env.show_credentials));
            self.record(EventKind::FrameReplaced(Box::new(event::FrameReplaced {
                conn: self.conn,
                to: self.to,
                stream: frame.stream_id,
                frame: frame.ty,
                flags: summary.flags,
                detail: summary.detail,
                invalid: broken.map(String::into_boxed_str),
            })));
        }
    }

    /// Records that a kept-back frame left.
    pub(crate) fn record_release(&self, kept: &Kept) {
        lock_conn(&self.conn_state)
            .tap
            .left(self.decoder.direction());
        let now = self.env.recorder.now();
        self.record(EventKind::FrameReleased {
            conn: self.conn,
            to: self.to,
            stream: kept.stream,
            frame: kept.frame,
            kept: now.saturating_sub(kept.since),
        });
    }

    fn record(&self, kind: EventKind) {
        self.env.recorder.push(self.from, kind);
    }

    /// Hands on the pending bytes up to stream offset `end`.
    fn emit(
        &mut self,
        end: u64,
        release: Option<Duration>,
        hold: Option<Arc<str>>,
        kept: Option<Kept>,
        out: &mut VecDeque<Out>,
    ) {
        self.emit_held(end, release, hold, kept, None, out);
    }

    /// [`DirectionTap::emit`], for bytes written while the link holds
    /// bytes (`link_since`: when).
    fn emit_held(
        &mut self,
        end: u64,
        release: Option<Duration>,
        hold: Option<Arc<str>>,
        kept: Option<Kept>,
        link_since: Option<Duration>,
        out: &mut VecDeque<Out>,
    ) {
        if let Some(bytes) = self.take(end) {
            out.push_back(Out {
                bytes,
                release,
                hold,
                kept,
                link_since,
                end: self.base,
            });
        }
    }

    /// Whether `item` may leave now: its time has come, its named hold,
    /// if any, was released, and the link does not hold bytes (a frame
    /// kept back by a rule that comes due during a partition waits for the
    /// repair too). `now` reads the simulated clock; it is called only for
    /// an item with a release time (reading it is a lookup in the world).
    pub(crate) fn is_due(&self, item: &Out, now: impl FnOnce() -> Duration) -> bool {
        item.release.is_none_or(|t| t <= now())
            && item
                .hold
                .as_ref()
                .is_none_or(|h| self.env.frames.is_released(h))
            && !self.link_holds()
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

/// The fate of a frame `sent` whose octets a rule replaced `with`: how
/// many octets differ, position by position (a length difference counts
/// each octet missing or extra), and where the first is.
fn replaced(sent: &[u8], with: &[u8]) -> Fate {
    let common = sent.len().min(with.len());
    let mut differing = sent.len().max(with.len()) - common;
    let mut first = (differing > 0).then_some(common);
    for (i, (a, b)) in sent.iter().zip(with).enumerate() {
        if a != b {
            differing += 1;
            first = Some(first.map_or(i, |f| f.min(i)));
        }
    }
    let octets = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Fate::Replaced {
        differing: octets(differing),
        first_differing: first.map(octets),
        arrived: octets(with.len()),
    }
}

/// The `SETTINGS_MAX_FRAME_SIZE` a SETTINGS frame carries: the last one
/// when repeated (RFC 9113 §6.5.3 applies values in order).
fn max_frame_size(values: &[(SettingId, u32)]) -> Option<u32> {
    values
        .iter()
        .rev()
        .find(|(id, _)| *id == SettingId::MaxFrameSize)
        .map(|(_, v)| *v)
}

#[cfg(any(test, fuzzing))]
pub(crate) mod fuzzing;
/// `bytes` (frames the harness writes into `direction`) decoded on their
/// own: a decoder is given the preface and the SETTINGS frame it expects
/// first (RFC 9113 §3.4), then `bytes`; its events for `bytes`, and how many
/// octets it had been fed before them.
fn decode_on_its_own(direction: Direction, bytes: &[u8]) -> (Vec<wire::Event>, u64) {
    let mut events = Vec::new();
    let mut decoder = Decoder::new(direction);
    if direction == Direction::ClientToServer {
        decoder.feed(wire::frame::PREFACE, &mut events);
    }
    decoder.feed(&wire::encode::settings(&[]), &mut events);
    events.clear();
    let fed = decoder.bytes_fed();
    decoder.feed(bytes, &mut events);
    (events, fed)
}

#[cfg(test)]
mod fuzz_seeds;
#[cfg(test)]
mod mock_io;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

#[cfg(test)]
mod pair_tests;
