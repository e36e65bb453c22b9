//! A decoded frame as the recorder keeps it: its flags, its payload as data
//! ([`FrameDetail`]) and whether it is noise the default render hides. No
//! words here: the trace's row builder makes them.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::recorder::event::{
    is_credential, FrameDetail, FrameFlags, GoAway, HeaderFields, CREDENTIAL_MASK,
};
use crate::recorder::header_fields::Likeness;
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
/// A block that differs from one of these in a single short value (the
/// harness's call id, new on every request) shares that one's field list
/// and keeps only the value ([`HeaderFields::with_value`]). Which frames
/// share a block or a list changes no output: blocks compare, render and
/// serialize by their fields.
///
/// The decoder hands back the very block it decoded before when the same
/// octets come again with the HPACK table unchanged
/// ([`Detail::Headers`]' block is shared): such a block is found by its
/// pointer, without comparing fields.
///
/// Credentials ([`CREDENTIALS`](crate::recorder::event::CREDENTIALS)) are
/// recorded masked unless the run shows them; the recorded form is also
/// what a frame rule's [`FrameView`](crate::fault::FrameView) shows, so a
/// rule reads `<masked>` too (the bytes on the wire are never touched).
pub(crate) struct Blocks {
    kept: VecDeque<Remembered>,
    /// [`SimBuilder::show_credentials`](crate::SimBuilder::show_credentials).
    show_credentials: bool,
}

/// A block recorded lately and the decoded block it was last recorded for.
struct Remembered {
    fields: HeaderFields,
    from: Arc<HeaderBlock>,
}

/// Blocks a direction remembers: a unary call's request, response headers
/// and trailers, and a few more (a client's calls to two methods).
const BLOCKS_KEPT: usize = 8;

impl Blocks {
    /// Blocks of a direction that records credentials as sent when
    /// `show_credentials`, else masked.
    pub(crate) fn new(show_credentials: bool) -> Self {
        Self {
            kept: VecDeque::new(),
            show_credentials,
        }
    }

    /// The recorded form of `block`: one already recorded with the same
    /// fields, else one that shares the list of a block that differs in
    /// one value, else a new one (remembered from now on).
    fn share(&mut self, block: &Arc<HeaderBlock>) -> HeaderFields {
        let decoded_before = self.kept.iter().position(|r| Arc::ptr_eq(&r.from, block));
        if let Some(hit) = decoded_before.and_then(|i| self.hit_at(i, block)) {
            return hit;
        }
        let mask = !self.show_credentials;
        let fields = || {
            block.all().iter().map(move |(n, v)| {
                let n = n.as_str();
                match mask && is_credential(n) {
                    true => (n, CREDENTIAL_MASK),
                    false => (n, v.as_str()),
                }
            })
        };
        let mut near = None;
        let mut same = None;
        for (i, b) in self.kept.iter().enumerate() {
            match b.fields.likeness(block.kind, fields()) {
                Likeness::Same => {
                    same = Some(i);
                    break;
                }
                Likeness::OneValue(field) if near.is_none() => near = Some((i, field)),
                _ => {}
            }
        }
        if let Some(hit) = same.and_then(|i| self.hit_at(i, block)) {
            return hit;
        }
        let shared = near.and_then(|(i, field)| {
            let value = fields().nth(field)?.1;
            Some((i, self.kept[i].fields.with_value(field, value)?))
        });
        let new = match shared {
            Some((i, new)) => {
                // It takes the place of a block with a value of its own for
                // the same field (the previous call's id, not sent again),
                // so the requests of one method take two places, not all
                // eight; a block of the list's own values stays
                // (`grpc-status: 0` trailers come back after an error's).
                if self.kept[i].fields.own_field() == new.own_field() {
                    self.kept.remove(i);
                }
                new
            }
            None => HeaderFields::new(block.kind, fields()),
        };
        self.kept.push_front(Remembered {
            fields: new.clone(),
            from: block.clone(),
        });
        self.kept.truncate(BLOCKS_KEPT);
        new
    }

    /// Entry `i`, now recorded for `block`, moved to the front: the next
    /// frame most likely repeats it.
    fn hit_at(&mut self, i: usize, block: &Arc<HeaderBlock>) -> Option<HeaderFields> {
        let mut hit = self.kept.remove(i)?;
        hit.from = block.clone();
        let fields = hit.fields.clone();
        self.kept.push_front(hit);
        Some(fields)
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

    /// The first HEADERS frame `fields` encode into, decoded (a literal
    /// block, so nothing depends on an HPACK table).
    fn headers_frame(direction: Direction, fields: &[(&str, &str)]) -> Option<Frame> {
        let hpack = crate::wire::encode::hpack_literal(fields);
        let bytes = crate::wire::encode::headers(1, &hpack, true, true);
        let mut events = Vec::new();
        let mut decoder = crate::wire::Decoder::new(direction);
        if direction == Direction::ClientToServer {
            decoder.feed(crate::wire::frame::PREFACE, &mut events);
        }
        decoder.feed(&crate::wire::encode::settings(&[]), &mut events);
        decoder.feed(&bytes, &mut events);
        events.into_iter().find_map(|e| match e {
            Event::Frame(f) if f.ty == FrameType::Headers => Some(f),
            _ => None,
        })
    }

    /// Requests that differ only in the harness's call id share one field
    /// list, each keeping its own id; a request that differs in two values
    /// gets a list of its own; every block reads back what was sent.
    #[test]
    fn requests_that_differ_in_their_call_id_share_one_list() {
        let mut blocks = Blocks::new(false);
        let request = |id: &str, path: &str| {
            let fields = [
                (":method", "POST"),
                (":path", path),
                ("content-type", "application/grpc"),
                (crate::recorder::CALL_ID_HEADER, id),
            ];
            headers_frame(Direction::ClientToServer, &fields)
        };
        let mut recorded = Vec::new();
        for (id, path) in [
            ("1", "/a.B/C"),
            ("2", "/a.B/C"),
            ("3", "/a.B/C"),
            ("4", "/a.B/D"),
        ] {
            let Some(frame) = request(id, path) else {
                panic!("request {id} decodes");
            };
            let FrameDetail::Headers(h) = summarize(&frame, &mut blocks).detail else {
                panic!("a header block");
            };
            assert_eq!(h.field(crate::recorder::CALL_ID_HEADER), Some(id));
            assert_eq!(h.request_path(), Some(path));
            recorded.push(h);
        }
        let [one, two, three, four] = &recorded[..] else {
            panic!("four blocks");
        };
        assert!(two.shares_fields_with(one) && three.shares_fields_with(one));
        assert!(!two.shares_block_with(one) && !three.shares_block_with(two));
        assert!(!four.shares_fields_with(one), "path and id differ");
        // Remembered: the first request, the last that shares its list
        // (it took the second's place), and the fourth.
        assert_eq!(blocks.kept.len(), 3);
        assert!(
            blocks.kept[0].fields.shares_block_with(four)
                && blocks.kept[1].fields.shares_block_with(three)
        );
        let names: Vec<&str> = three.all().map(|(n, _)| n).collect();
        assert_eq!(
            names,
            [":method", ":path", "content-type", "x-grpc-chaos-call"]
        );
    }

    /// The same fields on two frames are one block in the log; other fields
    /// are another.
    #[test]
    fn a_repeated_block_is_shared_and_a_different_one_is_not() {
        let mut blocks = Blocks::new(false);
        let block = |fields: &[(&str, &str)]| headers_frame(Direction::ServerToClient, fields);
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

    /// A block the decoder hands back again (the same `Arc`: the same
    /// octets, the HPACK table unchanged) is the block recorded for it,
    /// also after other blocks were recorded in between.
    #[test]
    fn the_same_decoded_block_is_the_same_recorded_block() {
        let mut blocks = Blocks::new(false);
        let frames = [
            headers_frame(Direction::ServerToClient, &[("grpc-status", "0")]),
            headers_frame(Direction::ServerToClient, &[(":status", "200")]),
        ];
        let [Some(trailers), Some(response)] = frames else {
            panic!("two HEADERS frames decode");
        };
        let detail = |f: &Frame, blocks: &mut Blocks| match summarize(f, blocks).detail {
            FrameDetail::Headers(h) => Some(h),
            _ => None,
        };
        let first = detail(&trailers, &mut blocks);
        let _ = detail(&response, &mut blocks);
        let again = detail(&trailers, &mut blocks);
        let (Some(first), Some(again)) = (first, again) else {
            panic!("header blocks");
        };
        assert!(first.shares_block_with(&again));
        assert_eq!(blocks.kept.len(), 2, "nothing new remembered");
    }
}
