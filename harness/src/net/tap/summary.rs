//! A decoded frame as the recorder keeps it: its flags, its payload as data
//! ([`FrameDetail`]) and whether it is noise the default render hides. No
//! words here: the trace's row builder makes them.

use crate::recorder::event::{FrameDetail, FrameFlags, HeaderFields};
use crate::wire::{Detail, Frame, FrameType, HeaderBlock};

/// Stream WINDOW_UPDATEs below this many octets are noise the default render
/// hides (RFC 9113's default window is 65,535 octets), as are SETTINGS and
/// connection-level WINDOW_UPDATEs, unless a fault touched them.
pub(crate) const SMALL_WINDOW_UPDATE: u32 = 65_535;

/// What the recorder keeps of one frame.
pub(crate) struct Summary {
    pub(crate) flags: FrameFlags,
    pub(crate) detail: FrameDetail,
    /// Noise the default render hides unless a fault touched the frame.
    pub(crate) noise: bool,
}

/// The recorded form of `frame`.
pub(crate) fn summarize(frame: &Frame) -> Summary {
    let flags = FrameFlags::NONE;
    let (flags, detail, noise) = match &frame.detail {
        Detail::Data {
            end_stream,
            data_len,
            compressed_flag,
            ..
        } => (
            flags.with(FrameFlags::END_STREAM, *end_stream),
            FrameDetail::Data {
                len: *data_len,
                compressed_flag: *compressed_flag,
            },
            false,
        ),
        Detail::Headers {
            end_stream,
            end_headers,
            block,
            ..
        } => (
            flags
                .with(FrameFlags::END_STREAM, *end_stream)
                .with(FrameFlags::END_HEADERS, *end_headers),
            FrameDetail::Headers(shown(block)),
            false,
        ),
        Detail::RstStream { code } => (flags, FrameDetail::RstStream { code: *code }, false),
        // Connection setup: the same in every run of the same stack.
        Detail::Settings { ack, values } => (
            flags.with(FrameFlags::ACK, *ack),
            FrameDetail::Settings {
                values: values.as_slice().into(),
            },
            true,
        ),
        Detail::Ping { ack, opaque } => (
            flags.with(FrameFlags::ACK, *ack),
            FrameDetail::Ping { payload: *opaque },
            false,
        ),
        Detail::GoAway {
            last_stream_id,
            code,
            debug,
        } => (
            flags,
            FrameDetail::GoAway {
                last_stream_id: *last_stream_id,
                code: *code,
                debug: debug.as_slice().into(),
            },
            false,
        ),
        Detail::WindowUpdate { increment } => (
            flags,
            FrameDetail::WindowUpdate {
                increment: *increment,
            },
            frame.stream_id == 0 || *increment < SMALL_WINDOW_UPDATE,
        ),
        Detail::Continuation { end_headers } => (
            flags.with(FrameFlags::END_HEADERS, *end_headers),
            FrameDetail::Empty,
            false,
        ),
        Detail::PushPromise {
            promised_stream_id,
            end_headers,
            ..
        } => (
            flags.with(FrameFlags::END_HEADERS, *end_headers),
            FrameDetail::PushPromise {
                promised_stream: *promised_stream_id,
            },
            false,
        ),
        Detail::Priority | Detail::Unknown => {
            (flags, FrameDetail::Empty, frame.ty == FrameType::Priority)
        }
    };
    Summary {
        flags,
        detail,
        noise,
    }
}

/// Every field of `block`, in wire order, as decoded.
fn shown(block: &HeaderBlock) -> HeaderFields {
    let fields = block
        .all()
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()));
    HeaderFields::new(block.kind, fields)
}
