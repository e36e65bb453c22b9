//! Arbitrary octets into the frame decoder, in both directions: no input
//! panics, every octet is accounted for, and cutting the same octets into
//! other chunks gives the same events (the guarantees of `wire`'s docs).
#![no_main]

use grpc_chaos::wire::{Decoder, Direction, Event};
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::contained_panics_are_not_crashes();
    let Some((&control, bytes)) = data.split_first() else {
        return;
    };
    let direction = if control & 1 == 0 {
        Direction::ClientToServer
    } else {
        Direction::ServerToClient
    };
    // The chunk size comes from the input, so the fuzzer explores cuts.
    let chunk = usize::from(control >> 1).max(1);
    let whole = decode(direction, bytes, bytes.len().max(1));
    let cut = decode(direction, bytes, chunk);
    assert_eq!(whole, cut, "chunks of {chunk} octets changed the events");
});

/// Decodes `bytes` fed `chunk` octets at a time, checks the accounting,
/// then ends the direction.
fn decode(direction: Direction, bytes: &[u8], chunk: usize) -> Vec<Event> {
    let mut decoder = Decoder::new(direction);
    let mut events = Vec::new();
    for piece in bytes.chunks(chunk) {
        decoder.feed(piece, &mut events);
        assert_eq!(decoder.bytes_fed(), covered(&events, &decoder));
    }
    decoder.finish(&mut events);
    events
}

/// Octets the events cover, plus what is buffered or opaque: always every
/// octet fed.
fn covered(events: &[Event], decoder: &Decoder) -> u64 {
    let mut end = 0;
    for e in events {
        assert!(e.offset() >= end, "events overlap or go back: {e:?}");
        match e.wire_len() {
            Some(len) => end = e.offset() + len,
            None => return e.offset() + decoder.opaque_bytes(),
        }
    }
    end + decoder.pending_bytes()
}
