//! A decoded frame as the recorder keeps it: its flags, its payload as data
//! ([`FrameDetail`]) and whether it is noise the default render hides. No
//! words here: the trace's row builder makes them.

use std::collections::VecDeque;

use crate::recorder::event::{FrameDetail, FrameFlags, GoAway, HeaderFields};
use crate::wire::{Detail, Frame, FrameType, HeaderBlock};

/// Stream WINDOW_UPDATEs below this many octets are noise the default render
/// hides (RFC 9113's default window is 65,535 octets), as are SETTINGS and
/// connection-level WINDOW_UPDATEs, unless a fault touched them.
pub(crate) const SMALL_WINDOW_UPDATE: u32 = 65_535;

/// What the recorder keeps of one frame.
pub(crate) struct Summary {
    pub(crate) flags: FrameFlags,
    pub(crate) detail: FrameDetail,
    /// Noise the default render hides unless a fault touched the frame.
    pub(crate) noise: bool,
}

/// The header blocks one direction of a connection recorded last, so a
/// frame that carries the same fields shares the block already in the log
/// ([`HeaderFields`] is shared) instead of holding a copy: a server sends
/// the same response headers and `grpc-status: 0` trailers call after call.
/// Which frames share a block changes no output: blocks compare, render
/// and serialize by their fields.
#[derive(Default)]
pub(crate) struct Blocks(VecDeque<HeaderFields>);

/// Blocks a direction remembers: a unary call's request, response headers
/// and trailers, and a few more (a client's calls to two methods).
const BLOCKS_KEPT: usize = 8;

impl Blocks {
    /// The recorded form of `block`: one already recorded with the same
    /// fields, else a new one (remembered from now on).
    fn share(&mut self, block: &HeaderBlock) -> HeaderFields {
        let fields = || block.all().iter().map(|(n, v)| (n.as_str(), v.as_str()));
        let found = self.0.iter().position(|b| b.holds(block.kind, fields()));
        if let Some(hit) = found.and_then(|i| self.0.remove(i)) {
            // Most recent first: the next frame most likely repeats it.
            self.0.push_front(hit.clone());
            return hit;
        }
        let new = HeaderFields::new(block.kind, fields());
        self.0.push_front(new.clone());
        self.0.truncate(BLOCKS_KEPT);
        new
    }
}

/// The recorded form of `frame`; a header block is shared through `blocks`.
pub(crate) fn summarize(frame: &Frame, blocks: &mut Blocks) -> Summary {
    let flags = FrameFlags::NONE;
    let (flags, detail, noise) = match &frame.detail {
        Detail::Data {
            end_stream,
            data_len,
            compressed_flag,
            ..
        } => (
            flags.with(FrameFlags::END_STREAM, *end_stream),
            FrameDetail::Data {
                len: *data_len,
                compressed_flag: *compressed_flag,
            },
            false,
        ),
        Detail::Headers {
            end_stream,
            end_headers,
            block,
            ..
        } => (
            flags
                .with(FrameFlags::END_STREAM, *end_stream)
                .with(FrameFlags::END_HEADERS, *end_headers),
            FrameDetail::Headers(blocks.share(block)),
            false,
        ),
        Detail::RstStream { code } => (flags, FrameDetail::RstStream { code: *code }, false),
        // Connection setup: the same in every run of the same stack.
        Detail::Settings { ack, values } => (
            flags.with(FrameFlags::ACK, *ack),
            FrameDetail::Settings {
                values: values.as_slice().into(),
            },
            true,
        ),
        Detail::Ping { ack, opaque } => (
            flags.with(FrameFlags::ACK, *ack),
            FrameDetail::Ping { payload: *opaque },
            false,
        ),
        Detail::GoAway {
            last_stream_id,
            code,
            debug,
        } => (
            flags,
            FrameDetail::GoAway(Box::new(GoAway {
                last_stream_id: *last_stream_id,
                code: *code,
                debug: debug.as_slice().into(),
            })),
            false,
        ),
        Detail::WindowUpdate { increment } => (
            flags,
            FrameDetail::WindowUpdate {
                increment: *increment,
            },
            frame.stream_id == 0 || *increment < SMALL_WINDOW_UPDATE,
        ),
        Detail::Continuation { end_headers } => (
            flags.with(FrameFlags::END_HEADERS, *end_headers),
            FrameDetail::Empty,
            false,
        ),
        Detail::PushPromise {
            promised_stream_id,
            end_headers,
            ..
        } => (
            flags.with(FrameFlags::END_HEADERS, *end_headers),
            FrameDetail::PushPromise {
                promised_stream: *promised_stream_id,
            },
            false,
        ),
        Detail::Priority | Detail::Unknown => {
            (flags, FrameDetail::Empty, frame.ty == FrameType::Priority)
        }
    };
    Summary {
        flags,
        detail,
        noise,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Direction, Event};

    /// The same fields on two frames are one block in the log; other fields
    /// are another.
    #[test]
    fn a_repeated_block_is_shared_and_a_different_one_is_not() {
        let mut blocks = Blocks::default();
        let block = |fields: &[(&str, &str)]| {
            let hpack = crate::wire::encode::hpack_literal(fields);
            let bytes = crate::wire::encode::headers(1, &hpack, true, true);
            let mut events = Vec::new();
            let mut decoder = crate::wire::Decoder::new(Direction::ServerToClient);
            decoder.feed(&crate::wire::encode::settings(&[]), &mut events);
            decoder.feed(&bytes, &mut events);
            events.into_iter().find_map(|e| match e {
                Event::Frame(f) if f.ty == FrameType::Headers => Some(f),
                _ => None,
            })
        };
        let trailers = [("grpc-status", "0")];
        let (Some(a), Some(b), Some(c)) = (
            block(&trailers),
            block(&trailers),
            block(&[("grpc-status", "14")]),
        ) else {
            panic!("three HEADERS frames decode");
        };
        let detail = |f: &Frame, blocks: &mut Blocks| match summarize(f, blocks).detail {
            FrameDetail::Headers(h) => Some(h),
            _ => None,
        };
        let (Some(a), Some(b), Some(c)) = (
            detail(&a, &mut blocks),
            detail(&b, &mut blocks),
            detail(&c, &mut blocks),
        ) else {
            panic!("three header blocks");
        };
        assert!(a.shares_block_with(&b));
        assert!(!a.shares_block_with(&c));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(
            c.get(crate::recorder::event::ShownHeader::GrpcStatus),
            Some("14")
        );
    }
}
