//! Incremental decoder for one direction of an HTTP/2 connection
//! (RFC 9113 §3.4 preface, §4 framing, §6 frame definitions).
//!
//! The decoder is a small state machine over octets: preface → frame header
//! → payload → frame header … A frame is reported once its last octet has
//! arrived, so chunking never changes the events. Field blocks are held back
//! until END_HEADERS so that HEADERS can carry the decoded block (§6.10
//! forbids anything in between, so nothing else is delayed by this).
//!
//! Errors come in two strengths, following RFC 9113 §5.4:
//! - a bad frame whose length is still trustworthy and that does not touch
//!   the HPACK context (a 7-octet PING, DATA on stream 0 …) is reported as
//!   [`Event::Malformed`] with `len: Some(_)` and skipped: decoding resyncs at
//!   the next frame header;
//! - anything that breaks framing or the HPACK context (bad preface, frame
//!   over the size limit, HPACK error, CONTINUATION out of place …) is
//!   reported once with `len: None`, after which the direction is opaque: its
//!   octets are only counted. A real peer would close the connection here.

mod blocks;
mod messages;
mod parse;

use self::blocks::PendingBlock;
pub(crate) use self::parse::frame_despite_rules;
use self::parse::{check_skippable, Bad, Head};
use super::frame::{
    flags, Detail, Frame, FrameType, DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_LEN,
    MAX_FRAME_SIZE_LIMIT, PREFACE,
};
use super::hpack::FieldDecoder;
use super::streams::StreamKinds;
use super::Direction;

/// Buffer capacity kept between frames, in octets; a larger buffer left by a
/// big frame is shrunk back so an idle connection holds little memory.
const RETAINED_BUFFER: usize = 64 * 1024;

/// Bounds on what one [`Decoder`] buffers and keeps, all in octets.
///
/// Exceeding a bound is reported as [`Event::Malformed`] (the direction then
/// goes opaque), except `max_header_list`, which only truncates what a
/// [`HeaderBlock`](super::HeaderBlock) keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest frame payload accepted, in octets. Default 16,384, the
    /// initial `SETTINGS_MAX_FRAME_SIZE` every receiver starts with (RFC
    /// 9113 §4.2, §6.5.2). A receiver that advertises more lets its peer
    /// send more once the peer acked it (§6.5.3): follow that with
    /// [`Decoder::set_max_frame_size`], as the wire tap does. Clamped to
    /// 16,384 ..= 16,777,215 (2^24 - 1).
    pub max_frame_size: u32,
    /// Largest field block held while waiting for END_HEADERS, counted as
    /// wire octets of the HEADERS/PUSH_PROMISE frame and its CONTINUATIONs
    /// including their 9-octet headers. Default 1 MiB (1,048,576). Bounds
    /// CONTINUATION floods.
    pub max_header_block: u32,
    /// Decoded octets of one field block kept in a
    /// [`HeaderBlock`](super::HeaderBlock), sized as RFC 9113 §6.5.2 does
    /// (name + value + 32 per field). Default 1 MiB.
    pub max_header_list: u32,
    /// Largest HPACK dynamic table size update accepted (RFC 7541 §6.3).
    /// Default 1 MiB, far above the 4,096 every HTTP/2 stack starts with.
    pub max_table_size: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_size: DEFAULT_MAX_FRAME_SIZE,
            max_header_block: 1 << 20,
            max_header_list: 1 << 20,
            max_table_size: 1 << 20,
        }
    }
}

/// What the decoder saw, in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The 24-octet client connection preface (RFC 9113 §3.4), always at
    /// offset 0 of the client→server direction.
    Preface {
        /// Byte offset of the preface's first octet (0).
        offset: u64,
    },
    /// A complete frame.
    Frame(Frame),
    /// The peer broke RFC 9113 at `offset`.
    Malformed {
        /// Byte offset of the first octet not covered by an earlier event:
        /// the start of the bad frame, or of the field block it interrupted.
        offset: u64,
        /// `Some(n)`: the bad item spans `n` octets from `offset` and
        /// decoding resumed after it. `None`: fatal; every octet from
        /// `offset` on is opaque (counted by [`Decoder::opaque_bytes`]).
        len: Option<u64>,
        /// Human-readable cause, naming the RFC 9113 section broken.
        reason: String,
    },
}

impl Event {
    /// Byte offset where the event starts in its direction's stream.
    pub fn offset(&self) -> u64 {
        match self {
            Event::Preface { offset } | Event::Malformed { offset, .. } => *offset,
            Event::Frame(frame) => frame.offset,
        }
    }

    /// Octets the event covers, or `None` for a fatal [`Event::Malformed`]
    /// (which covers the rest of the stream).
    pub fn wire_len(&self) -> Option<u64> {
        match self {
            Event::Preface { .. } => Some(PREFACE.len() as u64),
            Event::Frame(frame) => Some(frame.wire_len()),
            Event::Malformed { len, .. } => *len,
        }
    }
}

/// Where the decoder is in the octet stream.
enum State {
    /// Client→server only: `matched` octets of [`PREFACE`] seen so far.
    Preface { matched: usize },
    /// Collecting the 9-octet frame header.
    Head {
        raw: [u8; FRAME_HEADER_LEN],
        have: usize,
    },
    /// Collecting (or skipping) a payload.
    Payload(Payload),
    /// After a fatal error: octets are only counted, from `since`.
    Opaque { since: u64 },
}

struct Payload {
    head: Head,
    /// Payload octets still to come.
    remaining: u32,
    /// Whether the payload is buffered in `Decoder::buf`; DATA and unknown
    /// frames are not (only their first octet, the Pad Length, matters).
    keep: bool,
    first: Option<u8>,
    /// Set when the header already showed the frame is bad but skippable.
    reject: Option<String>,
    /// A DATA frame's gRPC message follower (not for a rejected frame).
    data: Option<messages::InData>,
}

/// Where the frame-size limit in force came from, for the FRAME_SIZE_ERROR
/// report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FrameSizeFrom {
    /// The initial `SETTINGS_MAX_FRAME_SIZE`, 16,384 octets.
    Initial,
    /// [`Limits::max_frame_size`] given to [`Decoder::with_limits`].
    Limits,
    /// [`Decoder::set_max_frame_size`]: the receiver's advertised value.
    Settings,
}

impl FrameSizeFrom {
    fn describe(self) -> &'static str {
        match self {
            Self::Initial => "the initial SETTINGS_MAX_FRAME_SIZE, RFC 9113 §6.5.2",
            Self::Limits => "Limits::max_frame_size",
            Self::Settings => {
                "the SETTINGS_MAX_FRAME_SIZE the receiver advertised, in force since the sender acked it, RFC 9113 §6.5.3"
            }
        }
    }
}

/// Decodes one direction of one HTTP/2 connection. See the [module
/// docs](self) for the error model and [`Limits`] for memory bounds.
pub struct Decoder {
    direction: Direction,
    limits: Limits,
    frame_size_from: FrameSizeFrom,
    state: State,
    /// Octets fed so far; the offset of the next octet.
    pos: u64,
    /// End offset of the last event; `pos - accounted` octets are pending.
    accounted: u64,
    /// Whether a frame header has been seen (the first frame must be
    /// SETTINGS, RFC 9113 §3.4).
    seen_frame: bool,
    buf: Vec<u8>,
    pending: Option<PendingBlock>,
    hpack: FieldDecoder,
    streams: StreamKinds,
    messages: messages::Messages,
}

impl std::fmt::Debug for Decoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.state {
            State::Preface { .. } => "preface",
            State::Head { .. } => "frame header",
            State::Payload(_) => "payload",
            State::Opaque { .. } => "opaque",
        };
        f.debug_struct("Decoder")
            .field("direction", &self.direction)
            .field("state", &state)
            .field("bytes_fed", &self.pos)
            .field("pending_bytes", &self.pending_bytes())
            .field("opaque_bytes", &self.opaque_bytes())
            .finish_non_exhaustive()
    }
}

impl Decoder {
    /// A decoder for `direction` with default [`Limits`]. Client→server
    /// decoders expect the 24-octet preface first (RFC 9113 §3.4).
    pub fn new(direction: Direction) -> Self {
        Self::with_limits(direction, Limits::default())
    }

    /// A decoder with explicit [`Limits`]; `max_frame_size` is clamped to
    /// 16,384 ..= 16,777,215 octets (RFC 9113 §4.2).
    pub fn with_limits(direction: Direction, mut limits: Limits) -> Self {
        limits.max_frame_size = clamp_frame_size(limits.max_frame_size);
        let frame_size_from = if limits.max_frame_size == DEFAULT_MAX_FRAME_SIZE {
            FrameSizeFrom::Initial
        } else {
            FrameSizeFrom::Limits
        };
        let state = match direction {
            Direction::ClientToServer => State::Preface { matched: 0 },
            Direction::ServerToClient => State::Head {
                raw: [0; FRAME_HEADER_LEN],
                have: 0,
            },
        };
        Self {
            direction,
            limits,
            frame_size_from,
            state,
            pos: 0,
            accounted: 0,
            seen_frame: false,
            buf: Vec::new(),
            pending: None,
            hpack: FieldDecoder::new(limits.max_table_size, limits.max_header_list),
            streams: StreamKinds::new(direction),
            messages: messages::Messages::default(),
        }
    }

    /// The direction this decoder was built for.
    pub fn direction(&self) -> Direction {
        self.direction
    }

    /// The limits in force (after clamping).
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Sets the largest frame payload accepted from the next frame header
    /// on, in octets, clamped to 16,384 ..= 16,777,215 (RFC 9113 §4.2,
    /// §6.5.2). Call it with the receiver's `SETTINGS_MAX_FRAME_SIZE` when
    /// the sender acks the SETTINGS frame that carried it (§6.5.3); feed
    /// with [`Decoder::feed_until_event`] so that no frame header after the
    /// ACK was parsed before the call. A frame over the limit is reported
    /// as a fatal [`Event::Malformed`] naming the limit and this source.
    pub fn set_max_frame_size(&mut self, octets: u32) {
        self.limits.max_frame_size = clamp_frame_size(octets);
        self.frame_size_from = FrameSizeFrom::Settings;
    }

    /// Streams whose gRPC message framing this direction still follows.
    #[cfg(test)]
    pub(crate) fn followed_streams(&self) -> usize {
        self.messages.len()
    }

    /// Octets fed so far.
    pub fn bytes_fed(&self) -> u64 {
        self.pos
    }

    /// Octets counted, not decoded, since a fatal [`Event::Malformed`]
    /// (including the bad item itself); 0 while decoding normally.
    pub fn opaque_bytes(&self) -> u64 {
        match self.state {
            State::Opaque { since } => self.pos - since,
            _ => 0,
        }
    }

    /// Octets fed but not yet covered by an event: a partial frame, or a
    /// field block waiting for its CONTINUATIONs.
    pub fn pending_bytes(&self) -> u64 {
        match self.state {
            State::Opaque { .. } => 0,
            _ => self.pos - self.accounted,
        }
    }

    /// Whether the decoder only counts octets now: after a fatal
    /// [`Event::Malformed`] or [`Decoder::finish`].
    pub fn is_opaque(&self) -> bool {
        matches!(self.state, State::Opaque { .. })
    }

    /// Feeds the next octets of this direction and appends what they
    /// complete to `out`. Never panics; buffers at most one frame payload
    /// plus one pending field block (see [`Limits`]).
    pub fn feed(&mut self, mut bytes: &[u8], out: &mut Vec<Event>) {
        while !bytes.is_empty() {
            let taken = self.feed_until_event(bytes, out);
            bytes = &bytes[taken..];
        }
    }

    /// Feeds octets from the front of `bytes` until one completes an event
    /// (or all of them), appends the events to `out`, and returns how many
    /// octets it took: at least one when `bytes` is not empty. Use it
    /// instead of [`Decoder::feed`] when an event changes how the octets
    /// after it must be read (a SETTINGS ACK that moves the frame-size
    /// limit, [`Decoder::set_max_frame_size`]). One step may complete
    /// several events (a HEADERS frame and its CONTINUATIONs).
    pub fn feed_until_event(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> usize {
        let before = out.len();
        let mut used = 0;
        while used < bytes.len() {
            let (taken, step) = self.step(&bytes[used..]);
            self.pos += taken as u64;
            used += taken;
            self.on_step(step, out);
            // An opaque direction swallows the rest in one more step, so a
            // preface mismatch (which takes no octet) still makes progress.
            if out.len() > before && !self.is_opaque() {
                break;
            }
        }
        used
    }

    fn on_step(&mut self, step: Step, out: &mut Vec<Event>) {
        match step {
            Step::More => {}
            Step::PrefaceDone => {
                out.push(Event::Preface { offset: 0 });
                self.accounted = PREFACE.len() as u64;
            }
            Step::BadPreface { tls: false } => {
                self.fail(
                    out,
                    "connection preface mismatch (RFC 9113 §3.4)".to_owned(),
                );
            }
            Step::BadPreface { tls: true } => {
                self.fail(
                    out,
                    "connection preface mismatch (RFC 9113 §3.4): its first octet, 22, \
                     begins a TLS handshake record (RFC 8446 §5.1): the client likely \
                     speaks TLS to a plaintext end"
                        .to_owned(),
                );
            }
            Step::Head(head) => self.on_head(head, out),
            Step::PayloadDone => self.on_payload(out),
        }
    }

    /// Consumes what the current state can take from `bytes` (at least one
    /// octet, or none with `BadPreface`) and says what that completed.
    fn step(&mut self, bytes: &[u8]) -> (usize, Step) {
        // In every arm `n` is at most `bytes.len()` and at most the room
        // left in the current state, so the slices below are in bounds.
        match &mut self.state {
            State::Opaque { .. } => (bytes.len(), Step::More),
            State::Preface { matched } => {
                let start = *matched;
                let n = bytes.len().min(PREFACE.len() - start);
                if bytes[..n] != PREFACE[start..start + n] {
                    // A TLS record where the preface belongs (RFC 8446
                    // §5.1: content type 22, handshake): the peer likely
                    // speaks TLS to a plaintext end. Judged on the first
                    // octet alone, the one the mismatch is found at, so
                    // the answer does not depend on how the octets were
                    // cut (a second-octet check said otherwise for a lone
                    // first octet than for the same octets whole).
                    let tls = start == 0 && bytes[0] == 0x16;
                    return (0, Step::BadPreface { tls });
                }
                *matched += n;
                if *matched == PREFACE.len() {
                    self.state = State::Head {
                        raw: [0; FRAME_HEADER_LEN],
                        have: 0,
                    };
                    return (n, Step::PrefaceDone);
                }
                (n, Step::More)
            }
            State::Head { raw, have } => {
                let n = bytes.len().min(FRAME_HEADER_LEN - *have);
                raw[*have..*have + n].copy_from_slice(&bytes[..n]);
                *have += n;
                if *have < FRAME_HEADER_LEN {
                    return (n, Step::More);
                }
                // The header's first octet sits 9 octets before the end of
                // what has been fed once these `n` octets are counted.
                let offset = self.pos + n as u64 - FRAME_HEADER_LEN as u64;
                (n, Step::Head(Head::parse(offset, raw)))
            }
            State::Payload(payload) => {
                // `remaining` is at most 2^24 - 1, so the casts are lossless.
                let n = bytes.len().min(payload.remaining as usize);
                if payload.keep {
                    self.buf.extend_from_slice(&bytes[..n]);
                } else if payload.first.is_none() {
                    payload.first = bytes.first().copied();
                }
                if let Some(data) = &mut payload.data {
                    data.take(payload.head.len - payload.remaining, &bytes[..n]);
                }
                payload.remaining -= n as u32;
                if payload.remaining == 0 {
                    (n, Step::PayloadDone)
                } else {
                    (n, Step::More)
                }
            }
        }
    }

    /// Tells the decoder the direction has ended (the connection closed).
    /// Reports a partial frame or an unfinished field block as
    /// [`Event::Malformed`] (RFC 9113 §6.10, §4.1); later octets are opaque.
    pub fn finish(&mut self, out: &mut Vec<Event>) {
        let pending = self.pos - self.accounted;
        let reason = match &self.state {
            State::Opaque { .. } => return,
            State::Preface { matched } if *matched > 0 => format!(
                "connection ended after {matched} of {} preface octets (RFC 9113 §3.4)",
                PREFACE.len()
            ),
            State::Head { have, .. } if *have > 0 => format!(
                "connection ended inside a frame header ({have} of {FRAME_HEADER_LEN} octets, RFC 9113 §4.1)"
            ),
            State::Payload(p) => format!(
                "connection ended inside a {} frame on stream {} ({} of {} payload octets, RFC 9113 §4.1)",
                p.head.ty,
                p.head.stream_id,
                p.head.len - p.remaining,
                p.head.len
            ),
            _ => match &self.pending {
                Some(block) => format!(
                    "connection ended inside the field block of stream {} ({} after {} CONTINUATION frames, {} octets; CONTINUATION expected, RFC 9113 §6.10)",
                    block.head.stream_id,
                    block.head.ty,
                    block.continuations.len(),
                    block.wire
                ),
                None => String::new(),
            },
        };
        if pending > 0 {
            out.push(Event::Malformed {
                offset: self.accounted,
                len: Some(pending),
                reason,
            });
        }
        self.pending = None;
        self.accounted = self.pos;
        self.state = State::Opaque { since: self.pos };
        self.recycle_buf();
    }

    /// Reports a fatal error and turns the direction opaque from the first
    /// unaccounted octet on.
    fn fail(&mut self, out: &mut Vec<Event>, reason: String) {
        out.push(Event::Malformed {
            offset: self.accounted,
            len: None,
            reason,
        });
        self.state = State::Opaque {
            since: self.accounted,
        };
        self.pending = None;
        self.buf = Vec::new();
    }

    fn emit(&mut self, out: &mut Vec<Event>, frame: Frame) {
        self.accounted = frame.offset + frame.wire_len();
        out.push(Event::Frame(frame));
    }

    fn recycle_buf(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf.shrink_to(RETAINED_BUFFER);
        }
    }

    /// A frame header is complete: check what can be checked before the
    /// payload arrives, then collect or skip the payload.
    fn on_head(&mut self, head: Head, out: &mut Vec<Event>) {
        if let Err(reason) = self.check_fatal(&head) {
            self.fail(out, reason);
            return;
        }
        let keep = !matches!(head.ty, FrameType::Data | FrameType::Unknown(_));
        let reject = check_skippable(&head).err();
        let data = (head.ty == FrameType::Data && reject.is_none()).then(|| {
            self.messages
                .start(head.stream_id, head.len, head.has(flags::PADDED))
        });
        self.state = State::Payload(Payload {
            head,
            remaining: head.len,
            keep: keep && reject.is_none(),
            first: None,
            reject,
            data,
        });
        if head.len == 0 {
            self.on_payload(out);
        }
    }

    /// Header-level errors that break framing or the HPACK context.
    fn check_fatal(&mut self, head: &Head) -> Result<(), String> {
        let at = head.offset;
        let (ty, id) = (head.ty, head.stream_id);
        // A broken preface says more than the size of what broke it.
        if !self.seen_frame {
            self.seen_frame = true;
            if ty != FrameType::Settings || head.has(flags::ACK) {
                return Err(format!(
                    "first frame is {ty}, not SETTINGS (RFC 9113 §3.4: the connection preface ends with SETTINGS)"
                ));
            }
        }
        if head.len > self.limits.max_frame_size {
            return Err(format!(
                "{ty} frame at offset {at} has a {} octet payload, over the {} octet limit ({}); RFC 9113 §4.2: FRAME_SIZE_ERROR",
                head.len,
                self.limits.max_frame_size,
                self.frame_size_from.describe()
            ));
        }
        let block_frame = matches!(
            ty,
            FrameType::Headers | FrameType::PushPromise | FrameType::Continuation
        );
        match &self.pending {
            Some(block) if ty != FrameType::Continuation || id != block.head.stream_id => {
                return Err(format!(
                    "{ty} on stream {id} at offset {at} inside the field block of stream {} (RFC 9113 §6.10: only CONTINUATION on that stream may follow)",
                    block.head.stream_id
                ));
            }
            None if ty == FrameType::Continuation => {
                return Err(format!(
                    "CONTINUATION on stream {id} at offset {at} without a preceding HEADERS or PUSH_PROMISE (RFC 9113 §6.10)"
                ));
            }
            _ => {}
        }
        if block_frame && id == 0 {
            return Err(format!(
                "{ty} at offset {at} on stream 0 (RFC 9113 §6.2, §6.6, §6.10: PROTOCOL_ERROR)"
            ));
        }
        if block_frame {
            let held = self.pending.as_ref().map_or(0, |b| b.wire);
            if held + head.wire_len() > u64::from(self.limits.max_header_block) {
                return Err(format!(
                    "field block of stream {id} exceeds {} wire octets at offset {at} (CONTINUATION flood guard)",
                    self.limits.max_header_block
                ));
            }
        }
        Ok(())
    }

    /// The payload of the current frame is complete.
    fn on_payload(&mut self, out: &mut Vec<Event>) {
        let next = State::Head {
            raw: [0; FRAME_HEADER_LEN],
            have: 0,
        };
        let State::Payload(payload) = std::mem::replace(&mut self.state, next) else {
            // on_payload is only called from the Payload state.
            return;
        };
        let head = payload.head;
        if let Some(reason) = payload.reject {
            self.skip(out, &head, reason);
            return;
        }
        let buf = std::mem::take(&mut self.buf);
        let result = self.on_frame(head, payload.first, payload.data, &buf, out);
        self.buf = buf;
        self.recycle_buf();
        match result {
            Ok(()) => {}
            Err(Bad::Skip(reason)) => self.skip(out, &head, reason),
            Err(Bad::Fatal(reason)) => self.fail(out, reason),
        }
    }

    /// Reports a bad but self-delimiting frame and moves past it.
    fn skip(&mut self, out: &mut Vec<Event>, head: &Head, reason: String) {
        out.push(Event::Malformed {
            offset: head.offset,
            len: Some(head.wire_len()),
            reason,
        });
        self.accounted = head.offset + head.wire_len();
    }

    /// The stream ended in this direction (END_STREAM on DATA or on its
    /// trailers, or RST_STREAM): what is kept per open stream goes.
    fn stream_ended(&mut self, stream: u32) {
        self.messages.ended(stream);
        self.streams.ended(stream);
    }

    /// Decodes a complete frame. `first` is the first payload octet of an
    /// unbuffered frame; `payload` the buffered payload otherwise.
    fn on_frame(
        &mut self,
        head: Head,
        first: Option<u8>,
        data: Option<messages::InData>,
        payload: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), Bad> {
        match head.ty {
            FrameType::Headers | FrameType::PushPromise => self.start_block(head, payload, out),
            FrameType::Continuation => self.continue_block(head, payload, out),
            _ => {
                let mut detail = parse::detail(&head, first, payload)?;
                let ended = match &mut detail {
                    Detail::Data {
                        end_stream,
                        compressed_flag,
                        ..
                    } => {
                        if let Some(data) = data {
                            *compressed_flag = data.first_flag();
                            self.messages.done(data, *end_stream);
                        }
                        *end_stream
                    }
                    Detail::RstStream { .. } => true,
                    _ => false,
                };
                if ended {
                    self.stream_ended(head.stream_id);
                }
                self.emit(out, head.frame(detail));
                Ok(())
            }
        }
    }
}

/// Clamps a frame-size limit to what `SETTINGS_MAX_FRAME_SIZE` may say,
/// 16,384 ..= 16,777,215 octets (RFC 9113 §6.5.2).
fn clamp_frame_size(octets: u32) -> u32 {
    octets.clamp(DEFAULT_MAX_FRAME_SIZE, MAX_FRAME_SIZE_LIMIT)
}

/// What one [`Decoder::step`] completed.
enum Step {
    More,
    PrefaceDone,
    /// Not the preface; `tls`: the first octets are a TLS record's.
    BadPreface {
        tls: bool,
    },
    Head(Head),
    PayloadDone,
}
