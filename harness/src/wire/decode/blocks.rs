//! Field-block assembly (RFC 9113 §4.3, §6.2, §6.6, §6.10): HEADERS or
//! PUSH_PROMISE plus CONTINUATIONs, held until END_HEADERS, then decoded and
//! reported in wire order.

use super::parse::{read_u31, Bad, Head};
use super::{Decoder, Event};
use crate::wire::frame::{flags, Detail, FrameType};
use crate::wire::BlockKind;
use std::sync::Arc;

/// A field block waiting for END_HEADERS (RFC 9113 §6.10).
pub(super) struct PendingBlock {
    pub(super) head: Head,
    pub(super) padded_len: Option<u8>,
    /// PUSH_PROMISE only: the promised stream.
    pub(super) promised: Option<u32>,
    pub(super) fragment: Vec<u8>,
    pub(super) continuations: Vec<Head>,
    /// Wire octets so far, frame headers included.
    pub(super) wire: u64,
}

impl Decoder {
    /// HEADERS or PUSH_PROMISE: strip padding and priority, then hold the
    /// fragment until END_HEADERS.
    pub(super) fn start_block(
        &mut self,
        head: Head,
        payload: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), Bad> {
        let fatal = |what: &str| {
            Bad::Fatal(format!(
                "{} on stream {} at offset {}: {what}",
                head.ty, head.stream_id, head.offset
            ))
        };
        let mut rest = payload;
        let padded_len = if head.has(flags::PADDED) {
            let (&pad, tail) = rest
                .split_first()
                .ok_or_else(|| fatal("PADDED with an empty payload (RFC 9113 §6.2, §6.6)"))?;
            rest = tail;
            Some(pad)
        } else {
            None
        };
        let promised = if head.ty == FrameType::PushPromise {
            let id = rest.get(..4).map(read_u31).ok_or_else(|| {
                fatal("payload too short for the promised stream id (RFC 9113 §6.6)")
            })?;
            // `get(..4)` succeeded, so at least 4 octets remain.
            rest = &rest[4..];
            Some(id)
        } else {
            if head.has(flags::PRIORITY) {
                rest = rest.get(5..).ok_or_else(|| {
                    fatal("payload too short for the PRIORITY fields (RFC 9113 §6.2)")
                })?;
            }
            None
        };
        if let Some(pad) = padded_len {
            let keep = rest.len().checked_sub(usize::from(pad)).ok_or_else(|| {
                fatal(
                    "padding longer than the field block fragment (RFC 9113 §6.2: PROTOCOL_ERROR)",
                )
            })?;
            // `keep` = len - pad, checked not to underflow above.
            rest = &rest[..keep];
        }
        self.pending = Some(PendingBlock {
            head,
            padded_len,
            promised,
            fragment: rest.to_vec(),
            continuations: Vec::new(),
            wire: head.wire_len(),
        });
        if head.has(flags::END_HEADERS) {
            self.finish_block(out)?;
        }
        Ok(())
    }

    pub(super) fn continue_block(
        &mut self,
        head: Head,
        payload: &[u8],
        out: &mut Vec<Event>,
    ) -> Result<(), Bad> {
        let Some(block) = self.pending.as_mut() else {
            // check_fatal rejects CONTINUATION without a pending block.
            return Err(Bad::Fatal(
                "CONTINUATION without a field block (RFC 9113 §6.10)".to_owned(),
            ));
        };
        block.fragment.extend_from_slice(payload);
        block.continuations.push(head);
        block.wire += head.wire_len();
        if head.has(flags::END_HEADERS) {
            self.finish_block(out)?;
        }
        Ok(())
    }

    /// END_HEADERS reached: decode the block, then report the HEADERS (or
    /// PUSH_PROMISE) frame and its CONTINUATIONs in wire order.
    fn finish_block(&mut self, out: &mut Vec<Event>) -> Result<(), Bad> {
        let Some(pending) = self.pending.take() else {
            return Ok(());
        };
        let head = pending.head;
        let end_headers = head.has(flags::END_HEADERS);
        // The same octets as a block decoded while the table was as it is
        // now decode to that block (`FieldDecoder::recall`); a block decoded
        // now that left the table unchanged is remembered.
        let recalled = self.hpack.recall(&pending.fragment).cloned();
        let was_recalled = recalled.is_some();
        let (mut block, mut remember) = match recalled {
            Some(known) => (known, false),
            None => {
                let (block, neutral) = self
                    .hpack
                    .decode(&pending.fragment, BlockKind::Request)
                    .map_err(|err| {
                        Bad::Fatal(format!(
                            "{err} in the field block of {} on stream {} at offset {} (RFC 9113 §4.3: COMPRESSION_ERROR)",
                            head.ty, head.stream_id, head.offset
                        ))
                    })?;
                (Arc::new(block), neutral)
            }
        };
        let end_stream = head.has(flags::END_STREAM);
        if pending.promised.is_none() {
            let kind =
                self.streams
                    .classify(head.stream_id, end_stream, block.grpc_status.is_some());
            if end_stream {
                // Trailers, or a request without a body.
                self.stream_ended(head.stream_id);
            }
            if block.kind != kind {
                // A recalled block in another place (a response's fields
                // now as trailers) gets a copy, remembered in its stead.
                remember |= was_recalled;
                Arc::make_mut(&mut block).kind = kind;
            }
        }
        if remember {
            self.hpack.remember(&pending.fragment, &block);
        }
        let detail = match pending.promised {
            Some(promised_stream_id) => Detail::PushPromise {
                promised_stream_id,
                end_headers,
                block,
            },
            None => Detail::Headers {
                end_stream,
                end_headers,
                padded_len: pending.padded_len,
                block,
            },
        };
        self.emit(out, head.frame(detail));
        for cont in pending.continuations {
            let end_headers = cont.has(flags::END_HEADERS);
            self.emit(out, cont.frame(Detail::Continuation { end_headers }));
        }
        Ok(())
    }
}
