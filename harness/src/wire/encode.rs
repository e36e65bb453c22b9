//! Frames to inject (RFC 9113 §6): each function returns the complete wire
//! octets of one frame, 9-octet header included, ready to splice between
//! two frames of the same direction.
//!
//! Payloads are kept within 16,384 octets, the `SETTINGS_MAX_FRAME_SIZE`
//! every receiver accepts before it says otherwise (RFC 9113 §4.2), so an
//! injected frame is never a FRAME_SIZE_ERROR by construction. Stream ids and
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
