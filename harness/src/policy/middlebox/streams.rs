//! A middlebox's per-connection stream limit
//! ([`Middlebox::max_concurrent_streams`](super::Middlebox::max_concurrent_streams)):
//! the SETTINGS it advertises, the streams it refuses, and what it does
//! with the frames of a refused stream. Why the refused HEADERS is
//! forwarded with a field appended rather than swallowed is on the field's
//! docs (HPACK state is per connection).

use std::collections::BTreeSet;

use bytes::Bytes;

use super::BoxConn;
use crate::policy::connection::{Effects, FrameView};
use crate::recorder::event::{FrameDetail, PolicyAction};
use crate::wire::frame::flags;
use crate::wire::{encode, Direction, ErrorCode, FrameType, SettingId};

/// The field appended to a refused stream's header block: a literal
/// *without indexing* with a new name (RFC 7541 §6.2.2: `0x00`, then the
/// name and value as plain strings, §5.2), so neither peer's dynamic table
/// changes; `connection` makes the request malformed (RFC 9113 §8.2.2).
const MALFORMING_FIELD: &[u8] = b"\x00\x0aconnection\x05close";

/// The stream limit's state on one connection.
#[derive(Debug, Default)]
pub(crate) struct Limit {
    /// Streams the box refused: their frames do not reach the other end
    /// (header blocks excepted).
    refused: BTreeSet<u32>,
    /// A refused stream whose header block goes on in CONTINUATION frames:
    /// the field is appended to the last one.
    block_open: Option<u32>,
    /// Whether the trace already says what the box advertised.
    noted: bool,
}

impl BoxConn {
    /// The stream limit's part of a frame; true when it dealt with the
    /// frame and the rest of the box must not see it (a frame of a refused
    /// stream, a refused HEADERS).
    pub(super) fn limit_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) -> bool {
        let Some(limit) = self.cfg.max_concurrent_streams else {
            return false;
        };
        let id = frame.stream();
        let client = frame.direction() == Direction::ClientToServer;
        if self.limit.refused.contains(&id) {
            self.refused_frame(frame, fx);
            return true;
        }
        match frame.frame_type() {
            FrameType::Settings if !client && !frame.ack() => {
                self.advertise(frame, limit, fx);
                false
            }
            FrameType::Headers if client && id % 2 == 1 && id > self.max_stream => {
                let open = self.streams.len();
                if u32::try_from(open).unwrap_or(u32::MAX) < limit {
                    return false;
                }
                self.max_stream = id;
                self.limit.refused.insert(id);
                self.note(
                    fx,
                    PolicyAction::RefusedStream {
                        stream: id,
                        open,
                        limit,
                    },
                );
                fx.rst_stream(Direction::ServerToClient, id, ErrorCode::RefusedStream);
                self.malform(frame, fx);
                true
            }
            _ => false,
        }
    }

    /// The server's SETTINGS, with MAX_CONCURRENT_STREAMS lowered to the
    /// box's limit (added when absent): the client's one ACK then answers
    /// the frame the server sent, as it would have.
    fn advertise(&mut self, frame: &FrameView<'_>, limit: u32, fx: &mut Effects) {
        let FrameDetail::Settings { values } = frame.detail() else {
            return;
        };
        let mut merged: Vec<(SettingId, u32)> = values.to_vec();
        let mut found = false;
        for (id, value) in &mut merged {
            if *id == SettingId::MaxConcurrentStreams {
                *value = (*value).min(limit);
                found = true;
            }
        }
        if !found {
            merged.push((SettingId::MaxConcurrentStreams, limit));
        }
        if !self.limit.noted {
            self.limit.noted = true;
            let value = merged
                .iter()
                .find(|(id, _)| *id == SettingId::MaxConcurrentStreams)
                .map_or(limit, |(_, v)| *v);
            self.note(fx, PolicyAction::AdvertisesMaxStreams { value });
        }
        fx.swallow();
        fx.send(Direction::ServerToClient, encode::settings(&merged));
    }

    /// A frame of a refused stream: header blocks go on (HPACK), with the
    /// field appended while the refused HEADERS' block is still open;
    /// everything else (the client's DATA, h2's RST_STREAM(PROTOCOL_ERROR)
    /// back) is swallowed.
    fn refused_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        match frame.frame_type() {
            FrameType::Continuation if self.limit.block_open == Some(frame.stream()) => {
                self.malform(frame, fx);
            }
            FrameType::Headers | FrameType::Continuation => {}
            _ => fx.swallow(),
        }
    }

    /// Appends [`MALFORMING_FIELD`] to the header block fragment of a
    /// refused stream's HEADERS or CONTINUATION when it ends the block
    /// (END_HEADERS); otherwise remembers that the block goes on.
    fn malform(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        if !frame.flags().end_headers() {
            self.limit.block_open = Some(frame.stream());
            return;
        }
        self.limit.block_open = None;
        if let Some(bytes) = with_field(frame.bytes(), MALFORMING_FIELD) {
            fx.rewrite(bytes);
        }
    }
}

/// `frame` (a whole HEADERS or CONTINUATION frame) with `field` appended to
/// its header block fragment, before any padding (RFC 9113 §6.2: the
/// fragment is followed by `Pad Length` octets of padding when PADDED is
/// set); `None` when the octets are not such a frame, or the result would
/// not fit the 16,384-octet frame size every peer accepts.
fn with_field(frame: &[u8], field: &[u8]) -> Option<Bytes> {
    const HEADER: usize = 9;
    let header = frame.get(..HEADER)?;
    let payload = frame.get(HEADER..)?;
    let ty = header[3];
    let padded = ty == FrameType::Headers.code() && header[4] & flags::PADDED != 0;
    let padding = if padded {
        usize::from(*payload.first()?)
    } else {
        0
    };
    let split = payload.len().checked_sub(padding)?;
    let mut out = Vec::with_capacity(payload.len() + field.len());
    out.extend_from_slice(&payload[..split]);
    out.extend_from_slice(field);
    out.extend_from_slice(&payload[split..]);
    if out.len() > 16_384 {
        return None;
    }
    let mut frame = encode::frame(FrameType::Headers, header[4], 0, &out);
    // The type and stream id as they were.
    frame[3] = ty;
    frame[5..9].copy_from_slice(&header[5..9]);
    Some(Bytes::from(frame))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Decoder, Detail, Event};

    #[test]
    fn the_field_lands_before_the_padding_and_decodes() {
        // HEADERS on s3, PADDED with 2 octets, END_HEADERS; block: `:method
        // POST` (static index 3).
        let payload = [2u8, 0x83, 0, 0];
        let frame = encode::frame(
            FrameType::Headers,
            flags::PADDED | flags::END_HEADERS,
            3,
            &payload,
        );
        let out = with_field(&frame, MALFORMING_FIELD).expect("fits");
        assert_eq!(&out[9..11], &[2, 0x83]);
        assert_eq!(&out[11..11 + MALFORMING_FIELD.len()], MALFORMING_FIELD);
        assert_eq!(&out[out.len() - 2..], &[0, 0]);
        let mut d = Decoder::new(Direction::ClientToServer);
        let mut events = Vec::new();
        d.feed(crate::wire::frame::PREFACE, &mut events);
        d.feed(&encode::settings(&[]), &mut events);
        events.clear();
        d.feed(&out, &mut events);
        let Some(Event::Frame(f)) = events.first() else {
            panic!("{events:?}");
        };
        assert_eq!(f.stream_id, 3);
        let Detail::Headers { block, .. } = &f.detail else {
            panic!("{f:?}");
        };
        assert_eq!(block.get("connection"), Some("close"));
        assert_eq!(block.get(":method"), Some("POST"));
    }

    #[test]
    fn a_continuation_keeps_its_type() {
        let frame = encode::frame(FrameType::Continuation, flags::END_HEADERS, 5, &[0x83]);
        let out = with_field(&frame, MALFORMING_FIELD).expect("fits");
        assert_eq!(out[3], FrameType::Continuation.code());
        assert_eq!(&out[5..9], &5u32.to_be_bytes());
        assert_eq!(out.len(), frame.len() + MALFORMING_FIELD.len());
    }
}
