//! Frames in the trace's words: fixed vocabulary, no wall clock, so renders
//! are byte-stable.

use std::fmt::Write as _;

use crate::wire::{BlockKind, Detail, Frame, FrameType, HeaderBlock};

/// Stream WINDOW_UPDATEs below this many octets are noise the default render
/// hides (RFC 9113's default window is 65,535 octets), as are SETTINGS and
/// connection-level WINDOW_UPDATEs, unless a fault touched them.
pub(crate) const SMALL_WINDOW_UPDATE: u32 = 65_535;

/// The gRPC headers the trace shows (PROTOCOL-HTTP2.md, gRFC A6), in the
/// order the sender wrote them; the rest (content-type, user-agent, the
/// harness's own call-id header …) would only add noise.
const SHOWN: &[&str] = &[
    "grpc-timeout",
    "grpc-status",
    "grpc-message",
    "grpc-retry-pushback-ms",
    "grpc-previous-rpc-attempts",
];

/// The text of a frame and whether it is noise the default render hides.
pub(crate) fn describe(frame: &Frame) -> (String, bool) {
    match &frame.detail {
        Detail::Data {
            end_stream,
            data_len,
            ..
        } => (
            with_flag(format!("{data_len} bytes"), *end_stream, "END_STREAM"),
            false,
        ),
        Detail::Headers {
            end_stream, block, ..
        } => (
            with_flag(block_text(block), *end_stream, "END_STREAM"),
            false,
        ),
        Detail::RstStream { code } => (code.to_string(), false),
        Detail::Settings { ack: true, .. } => ("ack".to_owned(), true),
        // Connection setup: the same in every run of the same stack.
        Detail::Settings { values, .. } => {
            let v: Vec<String> = values.iter().map(|(id, v)| format!("{id}={v}")).collect();
            (v.join(" "), true)
        }
        Detail::Ping { ack, opaque } => {
            let hex: String = opaque.iter().map(|b| format!("{b:02x}")).collect();
            let text = if *ack { format!("ack {hex}") } else { hex };
            (text, false)
        }
        Detail::GoAway {
            last_stream_id,
            code,
            debug,
        } => {
            let mut text = format!("{code} last-stream-id={last_stream_id}");
            if !debug.is_empty() {
                let _ = write!(text, " {:?}", String::from_utf8_lossy(debug));
            }
            (text, false)
        }
        Detail::WindowUpdate { increment } => (
            format!("+{increment}"),
            frame.stream_id == 0 || *increment < SMALL_WINDOW_UPDATE,
        ),
        Detail::Continuation { end_headers } => {
            (with_flag(String::new(), *end_headers, "END_HEADERS"), false)
        }
        Detail::PushPromise {
            promised_stream_id, ..
        } => (format!("promised stream {promised_stream_id}"), false),
        Detail::Priority | Detail::Unknown => (String::new(), frame.ty == FrameType::Priority),
    }
}

fn with_flag(mut text: String, set: bool, flag: &str) -> String {
    if set {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(flag);
    }
    text
}

/// `POST /tt.v1.Store/Save grpc-timeout=380000u`, `:status=200`,
/// `trailers grpc-status=0`, `trailers-only grpc-status=14 grpc-message="…"`.
fn block_text(block: &HeaderBlock) -> String {
    let mut text = String::with_capacity(64);
    // Writing to a String cannot fail.
    let _ = match block.kind {
        BlockKind::Request => write!(
            text,
            "{} {}",
            block.get(":method").unwrap_or("?"),
            block.get(":path").unwrap_or("?")
        ),
        BlockKind::Response => write!(text, ":status={}", block.get(":status").unwrap_or("?")),
        BlockKind::Trailers => write!(text, "trailers"),
        BlockKind::TrailersOnly => write!(text, "trailers-only"),
    };
    for (name, value) in block.all() {
        if !SHOWN.contains(&name.as_str()) {
            continue;
        }
        let _ = if name == "grpc-message" {
            write!(text, " {name}={value:?}")
        } else {
            write!(text, " {name}={value}")
        };
    }
    text
}
