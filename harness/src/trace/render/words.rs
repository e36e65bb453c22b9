//! The trace's words for the typed fields of frame and keepalive events: the
//! one place they are made. The row builder ([`super::rows`]) puts them in
//! the timeline the text and HTML renders share; queries never read them,
//! so rewording a line here cannot change what a query finds.
//!
//! Fixed vocabulary, RFC 9113 names, no wall clock: renders stay
//! byte-stable.

use std::fmt::{self, Write as _};

use super::{MaskMetadata, RenderOptions};
use crate::recorder::event::{
    binary_len, is_custom_metadata, FrameDetail, FrameFlags, GoAway, HeaderFields,
    KeepaliveVerdict, LinkHold, Outcome, PanicSite, ShownHeader, UndeliveredCause, WaitingFor,
};
use crate::recorder::fields::hex;
use crate::units::fmt_duration;
use crate::wire::{BlockKind, FrameType};

/// The most octets of one peer-controlled string (a header value, a
/// `grpc-message`, a GOAWAY's debug data, a status message) a render
/// prints: the rest is cut at a character boundary and counted, `…
/// 1843 bytes more`. A hostile peer's 2 MB `grpc-message` stays one short
/// row in the text and the HTML page; the JSON ([`Trace::to_json`]) and
/// the typed events keep every byte.
///
/// [`Trace::to_json`]: crate::Trace::to_json
pub const PEER_STRING_LIMIT: usize = 256;

/// The finding for a call whose status breaks a spec rule: `tonic
/// reported UNKNOWN "transport error" where the spec requires UNAVAILABLE
/// (rule)`; `None` when tonic's code is the spec's. The one wording the
/// summary, the page and the catalog's reports share.
pub fn finding(o: &Outcome) -> Option<String> {
    (o.code != o.spec_code).then(|| {
        format!(
            "tonic reported {} {:?} where the spec requires {} ({})",
            o.code,
            o.message,
            o.spec_code,
            o.rule.unwrap_or("")
        )
    })
}

/// `s` cut to [`PEER_STRING_LIMIT`] octets, with what was cut counted.
pub(crate) fn capped(s: &str) -> std::borrow::Cow<'_, str> {
    match split_at_limit(s) {
        (_, 0) => std::borrow::Cow::Borrowed(s),
        (head, more) => std::borrow::Cow::Owned(format!("{head}… {more} bytes more")),
    }
}

/// `s` quoted (Rust's `{:?}`, as the trace quotes messages), cut to
/// [`PEER_STRING_LIMIT`] octets first: `"aaaa"… 1843 bytes more`.
pub(crate) fn quoted(s: &str) -> String {
    match split_at_limit(s) {
        (head, 0) => format!("{head:?}"),
        (head, more) => format!("{head:?}… {more} bytes more"),
    }
}

/// The first [`PEER_STRING_LIMIT`] octets of `s` (fewer, to end on a
/// character boundary), and how many octets follow.
fn split_at_limit(s: &str) -> (&str, usize) {
    if s.len() <= PEER_STRING_LIMIT {
        return (s, 0);
    }
    let mut cut = PEER_STRING_LIMIT;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    (&s[..cut], s.len() - cut)
}

/// A frame's text after its type in the timeline: the payload, the flags
/// the type shows, and the rule an injected frame breaks. `16384 bytes
/// END_STREAM`, `ack 0000000000000001`, `POST /tt.v1.Store/Save
/// grpc-timeout=380000u`, `CANCEL, invalid: …`; empty for a PRIORITY.
pub(crate) fn frame_text(
    frame: FrameType,
    flags: FrameFlags,
    detail: &FrameDetail,
    invalid: Option<&str>,
    how: &HeaderWords,
) -> String {
    let mut text = match detail {
        FrameDetail::Headers(block) => header_text(block, how),
        FrameDetail::Settings { .. } if flags.ack() => "ack".to_owned(),
        FrameDetail::Ping { .. } if flags.ack() => format!("ack {detail}"),
        _ => detail.to_string(),
    };
    let flag = match detail {
        FrameDetail::Data { .. } | FrameDetail::Headers(_) if flags.end_stream() => {
            Some("END_STREAM")
        }
        _ if frame == FrameType::Continuation && flags.end_headers() => Some("END_HEADERS"),
        _ => None,
    };
    if let Some(flag) = flag {
        if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(flag);
    }
    match invalid {
        Some(rule) if text.is_empty() => format!("invalid: {rule}"),
        Some(rule) => format!("{text}, invalid: {rule}"),
        None => text,
    }
}

/// The payload in the trace's words, without the flags (those depend on
/// the frame type; see the timeline): `16384 bytes`, `+65535`, `CANCEL`,
/// `INITIAL_WINDOW_SIZE=1048576 MAX_FRAME_SIZE=16384`,
/// `ENHANCE_YOUR_CALM last-stream-id=1 "too_many_pings"`, the PING payload
/// in hex, a HEADERS block as [`HeaderFields`] shows it; empty for
/// [`FrameDetail::Empty`].
impl fmt::Display for FrameDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Data {
                len,
                compressed_flag,
            } => {
                write!(f, "{len} bytes")?;
                match compressed_flag {
                    Some(0) | None => Ok(()),
                    Some(1) => f.write_str(" compressed"),
                    Some(flag) => write!(f, " Compressed-Flag={flag}"),
                }
            }
            Self::Headers(block) => block.fmt(f),
            Self::RstStream { code } => code.fmt(f),
            Self::Settings { values } => {
                for (i, (id, value)) in values.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    write!(f, "{sep}{id}={value}")?;
                }
                Ok(())
            }
            Self::Ping { payload } => f.write_str(&hex(payload)),
            Self::GoAway(goaway) => {
                let GoAway {
                    last_stream_id,
                    code,
                    debug,
                } = &**goaway;
                write!(f, "{code} last-stream-id={last_stream_id}")?;
                if !debug.is_empty() {
                    write!(f, " {}", quoted(&String::from_utf8_lossy(debug)))?;
                }
                Ok(())
            }
            Self::WindowUpdate { increment } => write!(f, "+{increment}"),
            Self::PushPromise { promised_stream } => write!(f, "promised stream {promised_stream}"),
            Self::Empty => Ok(()),
        }
    }
}

/// How HEADERS rows print their fields ([`RenderOptions::all_headers`],
/// [`RenderOptions::mask_metadata`]); the default shows the fields that
/// matter, metadata values unmasked.
#[derive(Debug, Clone, Default)]
pub(crate) struct HeaderWords {
    all: bool,
    mask: MaskMetadata,
}

impl HeaderWords {
    pub(crate) fn of(options: &RenderOptions) -> Self {
        Self {
            all: options.all_headers,
            mask: options.mask_metadata.clone(),
        }
    }
}

/// The `content-type` every gRPC stack sends (`PROTOCOL-HTTP2.md`); a row
/// shows any other.
const GRPC_CONTENT_TYPE: &str = "application/grpc";

/// `POST /tt.v1.Store/Save grpc-timeout=380000u`, `:status=200`,
/// `trailers grpc-status=0`, `trailers-only grpc-status=14 grpc-message="…"`,
/// `POST /a.B/C grpc-encoding=gzip tenant=blue trace-bin=<16 bytes>`: what
/// the block is (`?` for a missing pseudo-header), then in wire order the
/// fields `how` shows (see [`RenderOptions`]), each value capped.
pub(crate) fn header_text(block: &HeaderFields, how: &HeaderWords) -> String {
    let pseudo = |h| capped(block.get(h).unwrap_or("?"));
    let head = match block.kind() {
        BlockKind::Request => HEAD_REQUEST,
        BlockKind::Response => HEAD_RESPONSE,
        BlockKind::Trailers | BlockKind::TrailersOnly => &[],
    };
    let mut out = match block.kind() {
        BlockKind::Request => format!(
            "{} {}",
            pseudo(ShownHeader::Method),
            pseudo(ShownHeader::Path)
        ),
        BlockKind::Response => format!(":status={}", pseudo(ShownHeader::Status)),
        BlockKind::Trailers => "trailers".to_owned(),
        BlockKind::TrailersOnly => "trailers-only".to_owned(),
    };
    for (name, value) in block.all().filter(|(n, _)| !head.contains(n)) {
        let metadata = is_custom_metadata(name);
        let shown = match ShownHeader::from_name(name) {
            _ if how.all || metadata => true,
            Some(ShownHeader::ContentType) => value != GRPC_CONTENT_TYPE,
            Some(h) => !h.is_pseudo(),
            None => false,
        };
        if !shown {
            continue;
        }
        let name = capped(name);
        let _ = if metadata && how.mask.masks(&name) {
            write!(out, " {name}=<masked>")
        } else if metadata && name.ends_with("-bin") {
            match binary_len(value) {
                Some(n) => write!(out, " {name}=<{n} bytes>"),
                None => write!(out, " {name}=<{} octets, not base64>", value.len()),
            }
        } else if name == ShownHeader::GrpcMessage.name() {
            write!(out, " {name}={}", quoted(value))
        } else {
            write!(out, " {name}={}", capped(value))
        };
    }
    out
}

/// The pseudo-headers a request's and a response's head already shows.
const HEAD_REQUEST: &[&str] = &[":method", ":path"];
const HEAD_RESPONSE: &[&str] = &[":status"];

/// The row's words for the block with the default [`RenderOptions`]:
/// the fields that matter, metadata values unmasked.
impl fmt::Display for HeaderFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&header_text(self, &HeaderWords::default()))
    }
}

/// What a call whose decoder stopped at a message header ended with:
/// `stopped by its decoder at a 20000-byte response message (16379 bytes
/// in): over tonic's max_decoding_message_size, tonic says OUT_OF_RANGE,
/// spec RESOURCE_EXHAUSTED`; for a Compressed-Flag other than 0 and 1,
/// tonic's INTERNAL (which the spec agrees with).
pub(crate) fn stopped_reading(message_len: u32, received: u64, flag: u8) -> String {
    let at = format!(
        "stopped by its decoder at a {message_len}-byte response message ({received} bytes in)"
    );
    if flag > 1 {
        format!("{at}: Compressed-Flag {flag}, tonic says INTERNAL")
    } else {
        format!(
            "{at}: over tonic's max_decoding_message_size, tonic says OUT_OF_RANGE, spec RESOURCE_EXHAUSTED"
        )
    }
}

/// What a caller's decoder made of a whole response message that is not
/// protobuf: `its decoder could not parse the 2-byte response message as
/// protobuf (tonic-prost: "failed to decode Protobuf message: …")`. The
/// rest of tonic-prost's words name the caller's message type and field,
/// which the harness does not know.
pub(crate) fn undecodable(message_len: u32) -> String {
    format!(
        "its decoder could not parse the {message_len}-byte response message as protobuf (tonic-prost: \"failed to decode Protobuf message: …\")"
    )
}

/// `held until 900ms`, `held until release "window"`, `held by the
/// partition, never repaired`.
impl fmt::Display for WaitingFor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Time { until } => write!(f, "held until {}", fmt_duration(*until)),
            Self::Release { hold } => write!(f, "held until release {hold:?}"),
            Self::Link {
                link,
                lost_with_sender,
            } => {
                let (what, never) = match link {
                    LinkHold::Partition => ("partition", "repaired"),
                    LinkHold::Pause => ("pause", "resumed"),
                };
                if *lost_with_sender {
                    write!(
                        f,
                        "held by the {what}, then lost with its sender's connection"
                    )
                } else {
                    write!(f, "held by the {what}, never {never}")
                }
            }
        }
    }
}

/// Where a handler panicked, after `panicked`: nothing for its future,
/// ` in its response body` for its body.
pub(crate) fn panic_site(site: PanicSite) -> &'static str {
    match site {
        PanicSite::Handler => "",
        PanicSite::Body | PanicSite::BodyHeadersUnsent => " in its response body",
    }
}

/// What became of a panicked handler's stream, and how that compares with
/// tonic's server in production (measured; see [`PanicSite`]).
pub(crate) fn panic_reset(site: PanicSite) -> &'static str {
    match site {
        PanicSite::Handler | PanicSite::Body => {
            "stream reset (RST_STREAM CANCEL), as tonic's server does"
        }
        PanicSite::BodyHeadersUnsent => {
            "stream reset (RST_STREAM CANCEL) without the response headers h2 still held; \
             tonic's server sends them first"
        }
    }
}

/// `c2 reset: store closed it with 120 bytes from mallory unread (RST, RFC
/// 9293 §3.10.4; 57 read)`; for a raw peer, whose writes are not counted,
/// `… with bytes from mallory unread …`.
pub(crate) fn reset_sent(
    conn: u32,
    host: &str,
    to: &str,
    read: u64,
    unread: Option<u64>,
) -> String {
    let unread = match unread {
        Some(1) => "1 byte".to_owned(),
        Some(n) => format!("{n} bytes"),
        None => "bytes".to_owned(),
    };
    format!(
        "c{conn} reset: {host} closed it with {unread} from {to} unread (RST, RFC 9293 §3.10.4; \
         {read} read)"
    )
}

/// `c2 s0 GOAWAY never delivered: store had reset the connection`, or for
/// several `c2 never delivered: s0 GOAWAY, s1 RST_STREAM and 3 more frames:
/// …`.
pub(crate) fn undelivered(
    conn: u32,
    host: &str,
    to: &str,
    frames: &[(u32, FrameType)],
    more: u32,
    cause: UndeliveredCause,
) -> String {
    let why = match cause {
        UndeliveredCause::OwnReset => {
            format!("{host} had reset the connection (closed with unread bytes)")
        }
        UndeliveredCause::PeerReset => format!("{to} had reset the connection"),
        UndeliveredCause::SocketGone => {
            format!("the socket was gone (reset by {to}, as far as the socket says)")
        }
    };
    let named: Vec<String> = frames.iter().map(|(s, f)| format!("s{s} {f}")).collect();
    match (named.as_slice(), more) {
        ([one], 0) => format!("c{conn} {one} never delivered: {why}"),
        (_, 0) => format!("c{conn} never delivered: {}: {why}", named.join(", ")),
        (_, 1) => format!(
            "c{conn} never delivered: {} and 1 more frame: {why}",
            named.join(", ")
        ),
        (_, n) => format!(
            "c{conn} never delivered: {} and {n} more frames: {why}",
            named.join(", ")
        ),
    }
}

/// `grpc-timeout "5x" is invalid (1-8 digits and a unit H M S m u n,
/// PROTOCOL-HTTP2); tonic's server ignores it: no deadline`, or `…; tonic's
/// server reads it as 5ms`.
pub(crate) fn invalid_timeout(raw: &str, tonic_reads: Option<std::time::Duration>) -> String {
    let tonic = match tonic_reads {
        None => "tonic's server ignores it: no deadline".to_owned(),
        Some(d) => format!("tonic's server reads it as {}", fmt_duration(d)),
    };
    format!(
        "grpc-timeout {:?} is invalid (1-8 digits and a unit H M S m u n, PROTOCOL-HTTP2); {tonic}",
        capped(raw)
    )
}

/// `ok`, `strike 1/2` (the 1st strike of the 2 tolerated), `too_many_pings`,
/// `going_away`.
impl fmt::Display for KeepaliveVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ok => f.write_str("ok"),
            Self::Strike { n, of } => write!(f, "strike {n}/{of}"),
            Self::TooManyPings => f.write_str("too_many_pings"),
            Self::GoingAway => f.write_str("going_away"),
            Self::StrikeWithoutLimit { n } => write!(f, "strike {n}, no limit"),
        }
    }
}

/// `ok (gap 30.01s >= 5s, 1 call open)`, `strike 2/2 (gap 30.01s < 5min,
/// 1 call open)`, `strike 3, over the 2 allowed (…) → too_many_pings`,
/// `ok (first PING)`.
pub(crate) fn ping_verdict(
    verdict: KeepaliveVerdict,
    strikes: u32,
    gap: Option<std::time::Duration>,
    allowed: std::time::Duration,
    open_calls: usize,
    after_reset: bool,
) -> String {
    let calls = match open_calls {
        0 => "no call open".to_owned(),
        1 => "1 call open".to_owned(),
        n => format!("{n} calls open"),
    };
    let why = match gap {
        Some(gap) if gap < allowed => {
            format!("gap {} < {}, {calls}", fmt_gap(gap), fmt_gap(allowed))
        }
        Some(gap) => format!("gap {} >= {}, {calls}", fmt_gap(gap), fmt_gap(allowed)),
        None if after_reset => format!("first PING since strikes were reset, {calls}"),
        None => format!("first PING, {calls}"),
    };
    let mut text = String::new();
    // Writing to a String cannot fail.
    let _ = match verdict {
        // One strike more than tolerated (`PingVerdict::TooManyPings`).
        KeepaliveVerdict::TooManyPings => write!(
            text,
            "strike {strikes}, over the {} allowed ({why}) → too_many_pings",
            strikes.saturating_sub(1)
        ),
        KeepaliveVerdict::GoingAway => write!(text, "after the GOAWAY ({why})"),
        other => write!(text, "{other} ({why})"),
    };
    text
}

/// A gap in the largest unit that keeps it exact: `2h`, `5min`, `30.01s`,
/// `800ms`.
fn fmt_gap(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    let whole_ms = d.subsec_nanos() % 1_000_000;
    let (hours, minutes, seconds) = (ms / 3_600_000, ms / 60_000, ms / 1000);
    if hours > 0 && hours * 3_600_000 == ms && whole_ms == 0 {
        format!("{hours}h")
    } else if minutes > 0 && minutes * 60_000 == ms && whole_ms == 0 {
        format!("{minutes}min")
    } else if seconds > 0 && whole_ms == 0 {
        let text = format!("{seconds}.{:03}", ms - seconds * 1000);
        format!("{}s", text.trim_end_matches('0').trim_end_matches('.'))
    } else {
        fmt_duration(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::event::SettingValues;
    use crate::wire::{ErrorCode, SettingId};

    fn text(frame: FrameType, flags: FrameFlags, detail: FrameDetail) -> String {
        frame_text(frame, flags, &detail, None, &HeaderWords::default())
    }

    #[test]
    fn each_frame_type_reads_as_the_trace_always_said() {
        let none = FrameFlags::NONE;
        assert_eq!(
            text(
                FrameType::Data,
                FrameFlags::END_STREAM,
                FrameDetail::Data {
                    len: 0,
                    compressed_flag: None
                }
            ),
            "0 bytes END_STREAM"
        );
        assert_eq!(
            text(
                FrameType::Settings,
                FrameFlags::ACK,
                FrameDetail::Settings {
                    values: SettingValues::default()
                }
            ),
            "ack"
        );
        assert_eq!(
            text(
                FrameType::Settings,
                none,
                FrameDetail::Settings {
                    values: vec![
                        (SettingId::EnablePush, 0),
                        (SettingId::InitialWindowSize, 1_048_576)
                    ]
                    .into()
                }
            ),
            "ENABLE_PUSH=0 INITIAL_WINDOW_SIZE=1048576"
        );
        assert_eq!(
            text(
                FrameType::Ping,
                FrameFlags::ACK,
                FrameDetail::Ping { payload: [1; 8] }
            ),
            "ack 0101010101010101"
        );
        assert_eq!(
            text(
                FrameType::GoAway,
                none,
                FrameDetail::GoAway(Box::new(GoAway {
                    last_stream_id: 1,
                    code: ErrorCode::EnhanceYourCalm,
                    debug: b"too_many_pings".to_vec().into(),
                }))
            ),
            "ENHANCE_YOUR_CALM last-stream-id=1 \"too_many_pings\""
        );
        assert_eq!(
            text(
                FrameType::Continuation,
                FrameFlags::END_HEADERS,
                FrameDetail::Empty
            ),
            "END_HEADERS"
        );
        assert_eq!(text(FrameType::Priority, none, FrameDetail::Empty), "");
        let trailers = HeaderFields::new(
            BlockKind::TrailersOnly,
            [
                (ShownHeader::GrpcStatus, "14"),
                (ShownHeader::GrpcMessage, "Too many pings"),
            ],
        );
        assert_eq!(
            text(
                FrameType::Headers,
                FrameFlags::END_STREAM | FrameFlags::END_HEADERS,
                FrameDetail::Headers(trailers)
            ),
            "trailers-only grpc-status=14 grpc-message=\"Too many pings\" END_STREAM"
        );
        let request = HeaderFields::new(BlockKind::Request, [(ShownHeader::Path, "/a.B/C")]);
        assert_eq!(request.to_string(), "? /a.B/C", "a missing :method");
        assert_eq!(
            frame_text(
                FrameType::RstStream,
                none,
                &FrameDetail::RstStream {
                    code: ErrorCode::Cancel
                },
                Some("RST_STREAM on stream 0 (RFC 9113 §6.4)"),
                &HeaderWords::default()
            ),
            "CANCEL, invalid: RST_STREAM on stream 0 (RFC 9113 §6.4)"
        );
    }

    #[test]
    fn a_peer_string_past_the_limit_is_cut_and_counted() {
        let huge = "é".repeat(1_000_000); // 2 MB, two octets a character
        let trailers = HeaderFields::new(
            BlockKind::TrailersOnly,
            [
                (ShownHeader::GrpcStatus, "13"),
                (ShownHeader::GrpcMessage, huge.as_str()),
            ],
        );
        let shown = trailers.to_string();
        let head = "é".repeat(PEER_STRING_LIMIT / 2);
        assert_eq!(
            shown,
            format!(
                "trailers-only grpc-status=13 grpc-message={head:?}… {} bytes more",
                2_000_000 - PEER_STRING_LIMIT
            )
        );
        assert!(shown.len() < 400);
        // A cut inside a character moves back to its start.
        let odd = format!("a{huge}");
        assert_eq!(
            capped(&odd),
            format!("a{}… {} bytes more", "é".repeat(127), 2_000_001 - 255)
        );
        let goaway = FrameDetail::GoAway(Box::new(GoAway {
            last_stream_id: 0,
            code: ErrorCode::NoError,
            debug: vec![b'x'; 10_000].into(),
        }));
        assert!(goaway.to_string().ends_with("… 9744 bytes more"));
        // At the limit, nothing is cut.
        let exact = "b".repeat(PEER_STRING_LIMIT);
        assert_eq!(capped(&exact), exact);
        assert_eq!(quoted(&exact), format!("{exact:?}"));
    }
}
