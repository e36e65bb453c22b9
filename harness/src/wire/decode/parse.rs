//! Frame-header parsing and the payload rules of RFC 9113 §6 for frames
//! that carry no field block.

use crate::wire::frame::{flags, Detail, ErrorCode, Frame, FrameType, SettingId, FRAME_HEADER_LEN};

/// A parsed 9-octet frame header (RFC 9113 §4.1).
#[derive(Clone, Copy, Debug)]
pub(super) struct Head {
    pub(super) offset: u64,
    pub(super) len: u32,
    pub(super) ty: FrameType,
    pub(super) flags: u8,
    pub(super) stream_id: u32,
}

impl Head {
    pub(super) fn parse(offset: u64, raw: &[u8; FRAME_HEADER_LEN]) -> Self {
        Self {
            offset,
            len: u32::from_be_bytes([0, raw[0], raw[1], raw[2]]),
            ty: FrameType::from(raw[3]),
            flags: raw[4],
            stream_id: read_u31(&raw[5..9]),
        }
    }

    pub(super) fn wire_len(&self) -> u64 {
        FRAME_HEADER_LEN as u64 + u64::from(self.len)
    }

    pub(super) fn has(&self, flag: u8) -> bool {
        self.flags & flag == flag
    }

    pub(super) fn frame(&self, detail: Detail) -> Frame {
        Frame {
            offset: self.offset,
            len: self.len,
            ty: self.ty,
            flags: self.flags,
            stream_id: self.stream_id,
            detail,
        }
    }
}

/// How a complete frame failed.
pub(super) enum Bad {
    /// Self-delimiting and HPACK-neutral: report and resync.
    Skip(String),
    /// Report and go opaque.
    Fatal(String),
}

pub(super) fn skip(head: &Head, what: &str) -> Bad {
    Bad::Skip(format!(
        "{} on stream {} at offset {}: {what}",
        head.ty, head.stream_id, head.offset
    ))
}

/// Frame-header checks for frames that can be skipped without losing sync
/// (fixed sizes and stream-id rules of RFC 9113 §6). Header-block frames are
/// checked in `check_fatal` instead.
pub(super) fn check_skippable(head: &Head) -> Result<(), String> {
    match skippable_problem(head) {
        Some(what) => Err(format!("{what}; frame at offset {}", head.offset)),
        None => Ok(()),
    }
}

/// The rule of RFC 9113 §6 the frame header `head` breaks, if any, in words
/// that name the section but not the frame's offset.
pub(super) fn skippable_problem(head: &Head) -> Option<String> {
    let (ty, id, len) = (head.ty, head.stream_id, head.len);
    match ty {
        FrameType::Data | FrameType::Priority | FrameType::RstStream if id == 0 => {
            Some(format!("{ty} on stream 0 (RFC 9113 §{})", section(ty)))
        }
        FrameType::Settings | FrameType::Ping | FrameType::GoAway if id != 0 => Some(format!(
            "{ty} on stream {id}, must be 0 (RFC 9113 §{})",
            section(ty)
        )),
        FrameType::Priority if len != 5 => Some(format!(
            "PRIORITY of {len} octets, must be 5 (RFC 9113 §6.3)"
        )),
        FrameType::RstStream if len != 4 => Some(format!(
            "RST_STREAM of {len} octets, must be 4 (RFC 9113 §6.4)"
        )),
        FrameType::WindowUpdate if len != 4 => Some(format!(
            "WINDOW_UPDATE of {len} octets, must be 4 (RFC 9113 §6.9)"
        )),
        FrameType::Ping if len != 8 => {
            Some(format!("PING of {len} octets, must be 8 (RFC 9113 §6.7)"))
        }
        FrameType::Settings if head.has(flags::ACK) && len != 0 => Some(format!(
            "SETTINGS ACK with {len} payload octets, must be 0 (RFC 9113 §6.5)"
        )),
        FrameType::Settings if len % 6 != 0 => Some(format!(
            "SETTINGS of {len} octets, not a multiple of 6 (RFC 9113 §6.5)"
        )),
        FrameType::GoAway if len < 8 => Some(format!(
            "GOAWAY of {len} octets, at least 8 (RFC 9113 §6.8)"
        )),
        _ => None,
    }
}

/// The section of RFC 9113 that defines a stream-id rule's frame type.
fn section(ty: FrameType) -> &'static str {
    match ty {
        FrameType::Data => "6.1",
        FrameType::Priority => "6.3",
        FrameType::RstStream => "6.4",
        FrameType::Settings => "6.5",
        FrameType::Ping => "6.7",
        _ => "6.8",
    }
}

/// Reads a big-endian u32 from the first 4 octets; short input reads as 0
/// (callers have checked lengths already, this only avoids a panic path).
pub(super) fn read_u32(bytes: &[u8]) -> u32 {
    match bytes.get(..4) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// Reads a 31-bit value (stream id, window increment) with the reserved bit
/// cleared (RFC 9113 §4.1, §6.8, §6.9).
pub(super) fn read_u31(bytes: &[u8]) -> u32 {
    read_u32(bytes) & 0x7fff_ffff
}

/// Decodes the payload of a complete frame that carries no field block.
/// `first` is the first payload octet of an unbuffered (DATA, unknown)
/// frame; `payload` the buffered payload of the others, whose size
/// [`check_skippable`] has already validated.
pub(super) fn detail(head: &Head, first: Option<u8>, payload: &[u8]) -> Result<Detail, Bad> {
    Ok(match head.ty {
        FrameType::Data => {
            let padded_len = if head.has(flags::PADDED) {
                let pad = first.ok_or_else(|| skip(head, "PADDED with an empty payload (§6.1)"))?;
                if u32::from(pad) >= head.len {
                    return Err(skip(head, "padding as long as the payload (§6.1)"));
                }
                Some(pad)
            } else {
                None
            };
            let overhead = padded_len.map_or(0, |p| u32::from(p) + 1);
            Detail::Data {
                end_stream: head.has(flags::END_STREAM),
                padded_len,
                data_len: head.len - overhead,
                compressed_flag: None,
            }
        }
        FrameType::Priority => Detail::Priority,
        FrameType::RstStream => Detail::RstStream {
            code: ErrorCode::from(read_u32(payload)),
        },
        FrameType::Settings => Detail::Settings {
            ack: head.has(flags::ACK),
            values: payload
                .chunks_exact(6)
                .map(|c| {
                    (
                        SettingId::from(u16::from_be_bytes([c[0], c[1]])),
                        read_u32(&c[2..]),
                    )
                })
                .collect(),
        },
        FrameType::Ping => {
            let mut opaque = [0; 8];
            // check_skippable let only 8-octet PINGs through.
            opaque.copy_from_slice(payload.get(..8).unwrap_or(&[0; 8]));
            Detail::Ping {
                ack: head.has(flags::ACK),
                opaque,
            }
        }
        FrameType::GoAway => Detail::GoAway {
            last_stream_id: read_u31(payload),
            code: ErrorCode::from(read_u32(payload.get(4..).unwrap_or_default())),
            debug: payload.get(8..).unwrap_or_default().to_vec(),
        },
        FrameType::WindowUpdate => Detail::WindowUpdate {
            increment: read_u31(payload),
        },
        // Field-block frames are assembled by the decoder, never parsed here.
        FrameType::Headers
        | FrameType::PushPromise
        | FrameType::Continuation
        | FrameType::Unknown(_) => Detail::Unknown,
    })
}

/// Decodes the one frame at the start of `bytes` whatever RFC 9113 §6 says
/// about its stream id and size, and returns it with the rule it breaks.
/// For frames the harness writes on purpose (an injected RST_STREAM on
/// stream 0 must still be recorded as what it is); a [`Decoder`] reports
/// such a frame as [`Event::Malformed`] and keeps no detail. A field-block
/// frame keeps [`Detail::Unknown`]: its block needs the connection's HPACK
/// context. `None`: fewer than 9 octets.
///
/// [`Decoder`]: super::Decoder
/// [`Event::Malformed`]: super::Event::Malformed
pub(crate) fn frame_despite_rules(bytes: &[u8]) -> Option<(Frame, Option<String>)> {
    let raw: &[u8; FRAME_HEADER_LEN] = bytes.get(..FRAME_HEADER_LEN)?.try_into().ok()?;
    let head = Head::parse(0, raw);
    let end = bytes.len().min(FRAME_HEADER_LEN + head.len as usize);
    let payload = &bytes[FRAME_HEADER_LEN..end];
    let problem = skippable_problem(&head);
    // Only DATA padding can fail here; such a frame keeps no detail.
    let detail = detail(&head, payload.first().copied(), payload).unwrap_or(Detail::Unknown);
    Some((head.frame(detail), problem))
}
