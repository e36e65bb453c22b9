//! The HPACK side of the decoder (RFC 7541, RFC 9113 §4.3): one
//! `httlib_hpack::Decoder` per direction, fenced so that hostile blocks cost
//! bounded time and memory and can never unwind into the caller.
//!
//! Why this library: the tap decodes every header block of every call, so
//! Huffman decoding is on the hot path of every story. httlib-hpack decodes
//! Huffman strings with precomputed tables (about 5 µs for a 7-field request
//! block, release build); loona-hpack and hpack build a hash-map Huffman
//! tree for every string they decode (about 500 µs for the same block),
//! which made the tap cost more than the calls it watched. The tests encode
//! their blocks with loona-hpack, so every block the tests decode comes from
//! an independent implementation.
//!
//! The fence, for the library's sharp edges:
//! - It reads one byte past a representation cut off at the end of its
//!   buffer. The block is handed over with [`PADDING`] after it, and a
//!   representation that reaches into the padding is reported as truncated.
//! - A crafted block can still make it panic (an integer overflow in debug
//!   builds, an empty string where a value must start). The panic is
//!   contained and reported as a decoding error.
//! - It removes each decoded field from the front of its buffer, which costs
//!   the rest of the block per field. [`DRAIN_BUDGET`] bounds that work.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::block::{BlockKind, HeaderBlock};

/// Per-field overhead HTTP/2 adds when sizing a header list, in octets
/// (RFC 9113 §6.5.2, RFC 7541 §4.1).
const FIELD_OVERHEAD: usize = 32;

/// The dynamic table size every HPACK context starts with, in octets: the
/// initial SETTINGS_HEADER_TABLE_SIZE (RFC 9113 §6.5.2, RFC 7541 §4.2).
const INITIAL_TABLE_SIZE: u32 = 4_096;

/// Zero octets after the block: enough for the longest integer the library
/// reads (5 octets), so a cut-off representation reads zeros instead of
/// running past the buffer.
const PADDING: [u8; 8] = [0; 8];

/// Octets the library may move while decoding one block (it shifts the rest
/// of the block forward after each field): 64 MiB, a few milliseconds. Only
/// a block of tens of thousands of fields gets near it; such a block is
/// reported as a decoding error instead of stalling the run.
const DRAIN_BUDGET: usize = 64 << 20;

/// Buffer capacity kept between blocks, in octets.
const RETAINED_BUFFER: usize = 64 * 1024;

/// HPACK decoding context for one direction of a connection.
pub(crate) struct FieldDecoder {
    inner: httlib_hpack::Decoder<'static>,
    max_header_list: usize,
    /// The block being decoded, then [`PADDING`]; reused between blocks.
    buf: Vec<u8>,
    /// Room for exactly one field: the library decodes as many
    /// representations per call as this has capacity, and one at a time is
    /// what lets the fence check each.
    field: Vec<(Vec<u8>, Vec<u8>, u8)>,
}

impl FieldDecoder {
    /// `max_table_size`: largest dynamic table size update accepted, octets.
    /// `max_header_list`: decoded octets (name + value + 32 per field) kept
    /// per block; the rest is decoded (to keep the HPACK state in step) but
    /// not stored.
    pub(crate) fn new(max_table_size: u32, max_header_list: u32) -> Self {
        let mut inner = httlib_hpack::Decoder::with_dynamic_size(INITIAL_TABLE_SIZE);
        // The peer's encoder announces its table size with a dynamic table
        // size update inside a block (RFC 7541 §6.3); it may not exceed the
        // SETTINGS_HEADER_TABLE_SIZE the receiver advertised on the other
        // direction, which this decoder does not see. A generous fixed cap
        // bounds memory instead of tracking that setting.
        inner.set_max_dynamic_size(max_table_size);
        Self {
            inner,
            max_header_list: max_header_list as usize,
            buf: Vec::new(),
            field: Vec::with_capacity(1),
        }
    }

    /// Decodes one complete field block (HEADERS or PUSH_PROMISE plus its
    /// CONTINUATIONs). On error the HPACK context is no longer in step with
    /// the peer's (RFC 9113 §4.3 makes this a connection error), so callers
    /// must not decode further blocks with it.
    pub(crate) fn decode(
        &mut self,
        fragment: &[u8],
        kind: BlockKind,
    ) -> Result<HeaderBlock, String> {
        self.buf.clear();
        self.buf.extend_from_slice(fragment);
        self.buf.extend_from_slice(&PADDING);
        let result = self.decode_fields(kind);
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf = Vec::new();
        }
        result.map_err(|e| format!("HPACK decoding failed: {e}"))
    }

    /// Decodes the representations in `buf` one by one, up to the padding.
    fn decode_fields(&mut self, kind: BlockKind) -> Result<HeaderBlock, String> {
        let mut block = HeaderBlock::new(kind);
        let mut used = 0usize;
        let mut moved = 0usize;
        let mut any_field = false;
        while self.buf.len() > PADDING.len() {
            moved += self.buf.len();
            if moved > DRAIN_BUDGET {
                return Err("too many fields in one block".to_owned());
            }
            let was_field = self.decode_one()?;
            if self.buf.len() < PADDING.len() {
                return Err("the block ends inside a field representation".to_owned());
            }
            if !was_field && any_field {
                // RFC 7541 §4.2: a size update MUST open the block.
                return Err("dynamic table size update after a field".to_owned());
            }
            any_field |= was_field;
            for (name, value, _) in self.field.drain(..) {
                // Indexed fields repeat dynamic table entries, so a tiny
                // block can name a large entry many times: stop copying
                // once the list exceeds the limit.
                used = used.saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
                if used > self.max_header_list {
                    block.set_truncated();
                } else {
                    block.push(name, value);
                }
            }
        }
        Ok(block)
    }

    /// Decodes the next representation into `field`; returns whether it was
    /// a field (not a dynamic table size update).
    fn decode_one(&mut self) -> Result<bool, String> {
        let Self {
            inner, buf, field, ..
        } = self;
        field.clear();
        // A library panic must not take the harness down: contain it and
        // report it. The context is discarded afterwards, so nobody
        // observes it half-updated.
        match catch_unwind(AssertUnwindSafe(|| inner.decode_exact(buf, field))) {
            Ok(Ok(_)) => Ok(!field.is_empty()),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err("malformed field representation".to_owned()),
        }
    }
}
