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
//!
//! A block is decoded once per HPACK context state: a block that neither
//! inserts into the dynamic table nor resizes it (only indexed fields and
//! literals without indexing, RFC 7541 §6.1, §6.2.2, §6.2.3) leaves the
//! context as it found it, so the same octets decode to the same fields
//! until the table next changes. A server sends such blocks call after call
//! (its response headers and `grpc-status: 0` trailers, once their fields
//! are in the table); [`FieldDecoder::recall`] hands the earlier result back
//! instead of decoding them again.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

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

/// Blocks remembered for [`FieldDecoder::recall`]: a unary call's response
/// headers and trailers, and a few more.
const RECALLED: usize = 4;

/// Longest block remembered for [`FieldDecoder::recall`], in octets: the
/// blocks that repeat are small; a large one is decoded each time rather
/// than kept and compared.
const RECALLED_LEN: usize = 512;

/// A block that left the dynamic table as it found it, and what it decoded
/// to.
struct Recalled {
    fragment: Vec<u8>,
    /// [`FieldDecoder::changes`] when it was decoded.
    changes: u64,
    block: Arc<HeaderBlock>,
}

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
    /// How many decoded blocks changed the dynamic table (an insertion or a
    /// size update): a remembered block is valid while this has not moved.
    changes: u64,
    /// Table-neutral blocks decoded lately, most recent first.
    recalled: VecDeque<Recalled>,
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
            changes: 0,
            recalled: VecDeque::new(),
        }
    }

    /// What `fragment` decodes to, if it is a block decoded earlier that
    /// left the dynamic table unchanged, and the table has not changed
    /// since: decoding it again would give the same fields and leave the
    /// table as it is. The block's kind is the one it was remembered with.
    pub(crate) fn recall(&self, fragment: &[u8]) -> Option<&Arc<HeaderBlock>> {
        self.recalled
            .iter()
            .find(|r| r.changes == self.changes && r.fragment == fragment)
            .map(|r| &r.block)
    }

    /// Remembers what `fragment` decoded to, for [`FieldDecoder::recall`],
    /// if it is small. Only for a block that left the table unchanged (what
    /// [`FieldDecoder::decode`] said of it), decoded since the table last
    /// changed. Replaces an entry for the same octets.
    pub(crate) fn remember(&mut self, fragment: &[u8], block: &Arc<HeaderBlock>) {
        if fragment.len() > RECALLED_LEN {
            return;
        }
        let changes = self.changes;
        // Entries from before the table's last change can never match again.
        self.recalled
            .retain(|r| r.changes == changes && r.fragment != fragment);
        self.recalled.push_front(Recalled {
            fragment: fragment.to_vec(),
            changes,
            block: block.clone(),
        });
        self.recalled.truncate(RECALLED);
    }

    /// Decodes one complete field block (HEADERS or PUSH_PROMISE plus its
    /// CONTINUATIONs). On error the HPACK context is no longer in step with
    /// the peer's (RFC 9113 §4.3 makes this a connection error), so callers
    /// must not decode further blocks with it.
    ///
    /// Also returns whether the block left the dynamic table unchanged (it
    /// may then be [remembered](FieldDecoder::remember)).
    pub(crate) fn decode(
        &mut self,
        fragment: &[u8],
        kind: BlockKind,
    ) -> Result<(HeaderBlock, bool), String> {
        self.buf.clear();
        self.buf.extend_from_slice(fragment);
        self.buf.extend_from_slice(&PADDING);
        let before = self.changes;
        let result = self.decode_fields(kind);
        if self.buf.capacity() > RETAINED_BUFFER {
            self.buf = Vec::new();
        }
        let neutral = self.changes == before;
        result
            .map(|block| (block, neutral))
            .map_err(|e| format!("HPACK decoding failed: {e}"))
    }

    /// Decodes the representations in `buf` one by one, up to the padding.
    fn decode_fields(&mut self, kind: BlockKind) -> Result<HeaderBlock, String> {
        let mut block = HeaderBlock::new(kind);
        let mut used = 0usize;
        let mut moved = 0usize;
        let mut any_field = false;
        let mut changed = false;
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
            changed |= !was_field;
            for (name, value, flags) in self.field.drain(..) {
                changed |= flags & httlib_hpack::Decoder::WITH_INDEXING != 0;
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
        // Counted only for a block decoded whole; after an error the context
        // is discarded.
        self.changes += u64::from(changed);
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
