//! The HPACK side of the decoder (RFC 7541, RFC 9113 §4.3): one
//! `loona_hpack::Decoder` per direction, fenced so that hostile blocks cost
//! bounded memory and can never unwind into the caller.

use std::panic::{catch_unwind, AssertUnwindSafe};

use super::block::{BlockKind, HeaderBlock};

/// Per-field overhead HTTP/2 adds when sizing a header list, in octets
/// (RFC 9113 §6.5.2, RFC 7541 §4.1).
const FIELD_OVERHEAD: usize = 32;

/// HPACK decoding context for one direction of a connection.
pub(crate) struct FieldDecoder {
    inner: loona_hpack::Decoder<'static>,
    max_header_list: usize,
}

impl FieldDecoder {
    /// `max_table_size`: largest dynamic table size update accepted, octets.
    /// `max_header_list`: decoded octets (name + value + 32 per field) kept
    /// per block; the rest is decoded (to keep the HPACK state in step) but
    /// not stored.
    pub(crate) fn new(max_table_size: u32, max_header_list: u32) -> Self {
        let mut inner = loona_hpack::Decoder::new();
        // The peer's encoder announces its table size with a dynamic table
        // size update inside a block (RFC 7541 §6.3); it may not exceed the
        // SETTINGS_HEADER_TABLE_SIZE the receiver advertised on the other
        // direction, which this decoder does not see. A generous fixed cap
        // bounds memory instead of tracking that setting.
        inner.set_max_allowed_table_size(max_table_size as usize);
        Self {
            inner,
            max_header_list: max_header_list as usize,
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
        let mut block = HeaderBlock::new(kind);
        let mut used = 0usize;
        let limit = self.max_header_list;
        let inner = &mut self.inner;
        // loona-hpack returns errors for every malformed input we know of
        // (checked by the property tests), but a library panic must not take
        // the harness down with it: contain it and report it as a decoding
        // error. The context is discarded afterwards, so observing it in a
        // half-updated state cannot happen.
        let result = catch_unwind(AssertUnwindSafe(|| {
            inner.decode_with_cb(fragment, |name, value| {
                // Indexed fields are borrowed from the dynamic table, so a
                // tiny block can name a large entry many times: stop copying
                // once the list exceeds the limit.
                used = used.saturating_add(name.len() + value.len() + FIELD_OVERHEAD);
                if used > limit {
                    block.set_truncated();
                } else {
                    block.push(&name, &value);
                }
            })
        }));
        match result {
            Ok(Ok(())) => Ok(block),
            Ok(Err(err)) => Err(format!("HPACK decoding failed: {err}")),
            Err(_) => Err("HPACK decoder panicked".to_owned()),
        }
    }
}
