//! Arbitrary octets as an HPACK field block (RFC 7541) on a well-formed
//! client connection: a HEADERS frame cut into CONTINUATIONs where the
//! input says, sent twice so the second decode runs against the dynamic
//! table the first one left. No input panics; a block the decoder rejects
//! makes the direction opaque and nothing after it is decoded.
#![no_main]

use grpc_chaos::wire::encode::{frame, settings};
use grpc_chaos::wire::{Decoder, Direction, Event, FrameType};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

/// RFC 9113 §3.4.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const END_HEADERS: u8 = 0x4;
const END_STREAM: u8 = 0x1;

fuzz_target!(|data: &[u8]| {
    common::contained_panics_are_not_crashes();
    let Some((&cut, block)) = data.split_first() else {
        return;
    };
    let mut wire = PREFACE.to_vec();
    wire.extend(settings(&[]));
    for stream in [1, 3] {
        wire.extend(headers(stream, block, usize::from(cut)));
    }
    let mut decoder = Decoder::new(Direction::ClientToServer);
    let mut events = Vec::new();
    decoder.feed(&wire, &mut events);
    decoder.finish(&mut events);
    let fatal = events
        .iter()
        .position(|e| matches!(e, Event::Malformed { len: None, .. }));
    if let Some(at) = fatal {
        assert_eq!(at + 1, events.len(), "nothing is decoded after a fatal error");
    }
});

/// HEADERS with END_STREAM for `stream`, its block cut at `cut` octets
/// into a CONTINUATION (no cut when `cut` is past the end).
fn headers(stream: u32, block: &[u8], cut: usize) -> Vec<u8> {
    if cut == 0 || cut >= block.len() {
        return frame(FrameType::Headers, END_HEADERS | END_STREAM, stream, block);
    }
    let (first, rest) = block.split_at(cut);
    let mut out = frame(FrameType::Headers, END_STREAM, stream, first);
    out.extend(frame(FrameType::Continuation, END_HEADERS, stream, rest));
    out
}
