//! Frames to inject (RFC 9113 §6): each function returns the complete wire
//! octets of one frame, 9-octet header included, ready to splice between
//! two frames of the same direction.
//!
//! The control frames faults inject ([`goaway`], [`rst_stream`], [`ping`],
//! [`settings`], [`window_update`]) keep their payloads within 16,384
//! octets, the `SETTINGS_MAX_FRAME_SIZE` every receiver accepts before it
//! says otherwise (RFC 9113 §4.2), so an injected frame is never a
//! FRAME_SIZE_ERROR by construction. The frames a scripted peer speaks
//! with ([`headers`], [`continuation`], [`data`], with [`hpack_literal`]
//! and [`grpc_message`] for their payloads) carry whatever length they are
//! given: a hostile peer's oversized frame is built the same way. Stream ids and
//! increments are 31-bit: the reserved bit is cleared (RFC 9113 §4.1).

use super::frame::{
    flags, ErrorCode, FrameType, SettingId, DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER_LEN,
};

/// Largest GOAWAY debug data emitted, in octets: 16,384 minus the 8 octets
/// of last-stream-id and error code.
pub const MAX_GOAWAY_DEBUG: usize = DEFAULT_MAX_FRAME_SIZE as usize - 8;

/// Most parameters one SETTINGS frame carries: 16,384 / 6 = 2,730.
pub const MAX_SETTINGS: usize = DEFAULT_MAX_FRAME_SIZE as usize / 6;

/// Builds a frame from its parts. `payload` beyond 16,777,215 octets (the
/// 24-bit length field's maximum) is cut to fit; every caller in this module
/// stays far below that.
pub fn frame(ty: FrameType, flags: u8, stream_id: u32, payload: &[u8]) -> Vec<u8> {
    let payload = &payload[..payload
        .len()
        .min(super::frame::MAX_FRAME_SIZE_LIMIT as usize)];
    let mut out = Vec::with_capacity(FRAME_HEADER_LEN + payload.len());
    // Lossless: the payload was cut to 2^24 - 1 octets above.
    let len = payload.len() as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(ty.code());
    out.push(flags);
    out.extend_from_slice(&(stream_id & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// GOAWAY (RFC 9113 §6.8) on stream 0. `debug` longer than
/// [`MAX_GOAWAY_DEBUG`] octets is cut to that length.
pub fn goaway(last_stream_id: u32, code: ErrorCode, debug: &[u8]) -> Vec<u8> {
    let debug = &debug[..debug.len().min(MAX_GOAWAY_DEBUG)];
    let mut payload = Vec::with_capacity(8 + debug.len());
    payload.extend_from_slice(&(last_stream_id & 0x7fff_ffff).to_be_bytes());
    payload.extend_from_slice(&code.code().to_be_bytes());
    payload.extend_from_slice(debug);
    frame(FrameType::GoAway, 0, 0, &payload)
}

/// RST_STREAM (RFC 9113 §6.4). `stream_id` must be non-zero for the peer to
/// accept it; 0 is encoded as given (useful to test a peer's reaction).
pub fn rst_stream(stream_id: u32, code: ErrorCode) -> Vec<u8> {
    frame(
        FrameType::RstStream,
        0,
        stream_id,
        &code.code().to_be_bytes(),
    )
}

/// PING (RFC 9113 §6.7) on stream 0; `ack` sets the ACK flag, which a
/// response to a PING must carry with the same `opaque` octets.
pub fn ping(ack: bool, opaque: [u8; 8]) -> Vec<u8> {
    frame(
        FrameType::Ping,
        if ack { flags::ACK } else { 0 },
        0,
        &opaque,
    )
}

/// SETTINGS (RFC 9113 §6.5) on stream 0 with the given parameters in order;
/// values past the first [`MAX_SETTINGS`] are left out.
pub fn settings(values: &[(SettingId, u32)]) -> Vec<u8> {
    let values = &values[..values.len().min(MAX_SETTINGS)];
    let mut payload = Vec::with_capacity(values.len() * 6);
    for (id, value) in values {
        payload.extend_from_slice(&id.code().to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(FrameType::Settings, 0, 0, &payload)
}

/// SETTINGS with the ACK flag and an empty payload (RFC 9113 §6.5.3).
pub fn settings_ack() -> Vec<u8> {
    frame(FrameType::Settings, flags::ACK, 0, &[])
}

/// WINDOW_UPDATE (RFC 9113 §6.9); `stream_id` 0 updates the connection
/// window. `increment` is in octets, 1 ..= 2^31 - 1 for the peer to accept
/// it; the reserved bit is cleared.
pub fn window_update(stream_id: u32, increment: u32) -> Vec<u8> {
    frame(
        FrameType::WindowUpdate,
        0,
        stream_id,
        &(increment & 0x7fff_ffff).to_be_bytes(),
    )
}

/// HEADERS (RFC 9113 §6.2) on `stream_id` carrying the field block fragment
/// `block` (build one with [`hpack_literal`]), with `END_STREAM` and
/// `END_HEADERS` as asked; no padding, no priority. Unlike the functions
/// above it does not keep the payload within 16,384 octets: a hostile peer
/// may want a frame the receiver must refuse, so that is the caller's choice
/// (the 24-bit length field still caps it, as [`frame`] does).
pub fn headers(stream_id: u32, block: &[u8], end_stream: bool, end_headers: bool) -> Vec<u8> {
    let mut f = 0;
    if end_stream {
        f |= flags::END_STREAM;
    }
    if end_headers {
        f |= flags::END_HEADERS;
    }
    frame(FrameType::Headers, f, stream_id, block)
}

/// CONTINUATION (RFC 9113 §6.10) on `stream_id`: the next fragment of a
/// field block, `END_HEADERS` when it is the last. Its length is the
/// caller's choice, as for [`headers`].
pub fn continuation(stream_id: u32, block: &[u8], end_headers: bool) -> Vec<u8> {
    let f = if end_headers { flags::END_HEADERS } else { 0 };
    frame(FrameType::Continuation, f, stream_id, block)
}

/// DATA (RFC 9113 §6.1) on `stream_id`, unpadded, `END_STREAM` when asked.
/// Its length is the caller's choice, as for [`headers`]; wrap a gRPC
/// message in [`grpc_message`] first.
pub fn data(stream_id: u32, payload: &[u8], end_stream: bool) -> Vec<u8> {
    let f = if end_stream { flags::END_STREAM } else { 0 };
    frame(FrameType::Data, f, stream_id, payload)
}

/// A gRPC Length-Prefixed-Message (grpc `doc/PROTOCOL-HTTP2.md`): a
/// compressed-flag octet of 0, the 4-octet big-endian length, then
/// `message` (an encoded protobuf; empty for a default message). A message
/// longer than `u32::MAX` octets is cut to that length.
pub fn grpc_message(message: &[u8]) -> Vec<u8> {
    let message = &message[..message.len().min(u32::MAX as usize)];
    let mut out = Vec::with_capacity(5 + message.len());
    out.push(0);
    // Lossless: cut to u32::MAX above.
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// A field block (HPACK, RFC 7541) holding `fields` in order, each as a
/// "Literal Header Field without Indexing — New Name" (§6.2.2) with plain,
/// non-Huffman strings: any HPACK decoder reads it, it leaves the dynamic
/// table alone, and its bytes are exactly predictable. Names should be
/// lower case (RFC 9113 §8.2.1); nothing is checked, so a hostile peer can
/// send what it likes.
///
/// ```
/// # #[cfg(feature = "unstable-codec")] {
/// use grpc_chaos::wire::encode::{headers, hpack_literal};
///
/// let block = hpack_literal(&[(":status", "200"), ("content-type", "application/grpc")]);
/// let frame = headers(1, &block, false, true);
/// assert_eq!(frame[3], 0x1, "a HEADERS frame");
/// assert_eq!(&block[..2], &[0x00, 7], "literal, new name, 7 octets");
/// # }
/// ```
pub fn hpack_literal(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, value) in fields {
        out.push(0x00);
        hpack_string(&mut out, name.as_bytes());
        hpack_string(&mut out, value.as_bytes());
    }
    out
}

/// An HPACK string literal, not Huffman-coded (RFC 7541 §5.2): its length
/// as an integer with a 7-bit prefix (§5.1), then the octets.
fn hpack_string(out: &mut Vec<u8>, s: &[u8]) {
    let mut len = s.len();
    if len < 0x7f {
        out.push(len as u8);
    } else {
        out.push(0x7f);
        len -= 0x7f;
        while len >= 0x80 {
            out.push((len % 0x80) as u8 | 0x80);
            len /= 0x80;
        }
        out.push(len as u8);
    }
    out.extend_from_slice(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Decoder, Detail, Direction, Event};

    #[test]
    fn a_literal_block_decodes_to_its_fields_long_values_included() {
        let long = "x".repeat(300);
        let block = hpack_literal(&[
            (":method", "POST"),
            (":path", "/tt.v1.Store/Save"),
            ("grpc-timeout", &long),
        ]);
        let mut bytes = crate::wire::frame::PREFACE.to_vec();
        bytes.extend(settings(&[]));
        bytes.extend(headers(1, &block[..10], false, false));
        bytes.extend(continuation(1, &block[10..], true));
        bytes.extend(data(1, &grpc_message(b"ab"), true));
        let mut events = Vec::new();
        Decoder::new(Direction::ClientToServer).feed(&bytes, &mut events);
        let frames: Vec<_> = events
            .iter()
            .filter_map(|e| match e {
                Event::Frame(f) => Some(f),
                _ => None,
            })
            .collect();
        assert_eq!(frames.len(), 4, "{events:?}");
        let Detail::Headers { block: fields, .. } = &frames[1].detail else {
            panic!("{:?}", frames[1]);
        };
        assert_eq!(fields.path.as_deref(), Some("/tt.v1.Store/Save"));
        assert_eq!(fields.grpc_timeout.as_deref(), Some(long.as_str()));
        let Detail::Data {
            data_len,
            end_stream,
            ..
        } = &frames[3].detail
        else {
            panic!("{:?}", frames[3]);
        };
        assert_eq!((*data_len, *end_stream), (7, true), "5-octet prefix + 2");
    }

    #[test]
    fn hpack_lengths_use_the_7_bit_prefix_integer() {
        // RFC 7541 §5.1: 127 = 0x7f 0x00; 300 = 0x7f, 173 % 128 | 0x80, 1.
        let mut out = Vec::new();
        hpack_string(&mut out, &[b'a'; 127]);
        assert_eq!(&out[..2], &[0x7f, 0x00]);
        out.clear();
        hpack_string(&mut out, &[b'a'; 300]);
        assert_eq!(&out[..3], &[0x7f, 0xad, 0x01]);
        assert_eq!(out.len(), 303);
    }
}
