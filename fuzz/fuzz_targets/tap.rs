//! Arbitrary octets through the wire tap, in both directions of one
//! connection, under frame rules the input picks (drop, delay,
//! hold_until, a named hold, and a rule of the test's own that returns
//! every verdict, replacements with broken frames included), with the
//! clock moved and holds released in between. No input panics, and the
//! tap keeps its accounting: every octet written is on the wire, queued,
//! pending, dropped or replaced; what leaves is in order; everything
//! kept back leaves once released, or is recorded as undelivered when
//! the socket goes (`harness/src/net/tap/fuzzing.rs` has the checks).
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::contained_panics_are_not_crashes();
    grpc_chaos::fuzzing::tap(data);
});
