//! Wire octets for the keepalive policy's reaction ([`crate::policy::Action`]):
//! GOAWAY, a trailers-only response or trailers, RST_STREAM.
//!
//! The HEADERS blocks are HPACK-encoded (RFC 7541) with representations that
//! leave the peer's dynamic table alone — an indexed field from the *static*
//! table (§6.1) and literals *without indexing* (§6.2.2), no Huffman coding
//! (§5.2) — so the client's HPACK decoder stays in step with the real
//! server's encoder, whose blocks it keeps decoding up to the GOAWAY.

use crate::policy::Action;
use crate::wire::frame::flags;
use crate::wire::{encode, FrameType};

/// Longest `grpc-message` put on the wire, in octets after percent-encoding;
/// keeps every injected HEADERS frame far below the 16,384-octet
/// `SETTINGS_MAX_FRAME_SIZE` every peer accepts (RFC 9113 §4.2).
const MAX_MESSAGE: usize = 1024;

/// The frame an action puts on the wire; `None` for
/// [`Action::CloseConnection`], which is not a frame.
pub(crate) fn encode_action(action: &Action) -> Option<Vec<u8>> {
    match action {
        Action::SendGoAway {
            last_stream_id,
            code,
            debug,
        } => Some(encode::goaway(*last_stream_id, *code, debug)),
        Action::SendTrailersOnly {
            stream_id,
            grpc_status,
            message,
        } => Some(status_headers(*stream_id, true, *grpc_status, message)),
        Action::SendTrailers {
            stream_id,
            grpc_status,
            message,
        } => Some(status_headers(*stream_id, false, *grpc_status, message)),
        Action::SendRstStream { stream_id, code } => Some(encode::rst_stream(*stream_id, *code)),
        Action::CloseConnection => None,
    }
}

/// One HEADERS frame with END_STREAM and END_HEADERS carrying a gRPC status
/// (gRPC `PROTOCOL-HTTP2.md`): a trailers-only response (`:status: 200`,
/// `content-type: application/grpc`, then the status) when `response` is
/// true, plain trailers otherwise.
pub(crate) fn status_headers(
    stream_id: u32,
    response: bool,
    status: u32,
    message: &str,
) -> Vec<u8> {
    let mut block = Vec::new();
    if response {
        // `:status: 200` is entry 8 of the static table (RFC 7541 Appendix A).
        indexed(&mut block, 8);
        // `content-type` is the name of static entry 31.
        literal_indexed_name(&mut block, 31, b"application/grpc");
    }
    literal_new_name(&mut block, b"grpc-status", status.to_string().as_bytes());
    if !message.is_empty() {
        let encoded = percent_encode(message);
        literal_new_name(&mut block, b"grpc-message", encoded.as_bytes());
    }
    encode::frame(
        FrameType::Headers,
        flags::END_STREAM | flags::END_HEADERS,
        stream_id,
        &block,
    )
}

/// One HEADERS frame with END_HEADERS carrying a plain HTTP response's
/// headers, as a proxy's own error page starts: `:status` (a literal with
/// the static table's name 8, RFC 7541 Appendix A, so any code encodes)
/// and `content-type`; END_STREAM when `end_stream` (no body follows).
/// Same representations as [`status_headers`]: the peer's dynamic table is
/// left alone.
pub(crate) fn http_headers(
    stream_id: u32,
    status: u16,
    content_type: &str,
    end_stream: bool,
) -> Vec<u8> {
    let mut block = Vec::new();
    literal_indexed_name(&mut block, 8, status.to_string().as_bytes());
    literal_indexed_name(&mut block, 31, content_type.as_bytes());
    let end = if end_stream { flags::END_STREAM } else { 0 };
    encode::frame(
        FrameType::Headers,
        end | flags::END_HEADERS,
        stream_id,
        &block,
    )
}

/// Indexed Header Field Representation (RFC 7541 §6.1): `1xxxxxxx`.
fn indexed(out: &mut Vec<u8>, index: usize) {
    integer(out, 7, 0x80, index);
}

/// Literal Header Field without Indexing, indexed name (RFC 7541 §6.2.2):
/// `0000xxxx` with a 4-bit prefix index, then the value string.
fn literal_indexed_name(out: &mut Vec<u8>, name_index: usize, value: &[u8]) {
    integer(out, 4, 0x00, name_index);
    string(out, value);
}

/// Literal Header Field without Indexing, new name (RFC 7541 §6.2.2): the
/// octet `0x00`, then the name and value strings.
fn literal_new_name(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0x00);
    string(out, name);
    string(out, value);
}

/// String Literal (RFC 7541 §5.2), not Huffman-coded: `H = 0`, 7-bit prefix
/// length, then the octets.
fn string(out: &mut Vec<u8>, s: &[u8]) {
    integer(out, 7, 0x00, s.len());
    out.extend_from_slice(s);
}

/// Integer Representation (RFC 7541 §5.1) with an `n`-bit prefix; `high`
/// holds the bits above the prefix in the first octet.
fn integer(out: &mut Vec<u8>, n: u8, high: u8, value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        // Lossless: value < 2^n <= 128.
        out.push(high | value as u8);
        return;
    }
    out.push(high | max as u8);
    let mut rest = value - max;
    while rest >= 128 {
        out.push((rest % 128) as u8 | 0x80);
        rest /= 128;
    }
    out.push(rest as u8);
}

/// `grpc-message` encoding (gRPC `PROTOCOL-HTTP2.md`): octets outside
/// 0x20–0x7E, and `%`, become `%XX`; the result is cut at a whole escape to
/// at most [`MAX_MESSAGE`] octets.
fn percent_encode(message: &str) -> String {
    let mut out = String::new();
    for &b in message.as_bytes() {
        let piece = if (0x20..=0x7e).contains(&b) && b != b'%' {
            char::from(b).to_string()
        } else {
            format!("%{b:02X}")
        };
        if out.len() + piece.len() > MAX_MESSAGE {
            break;
        }
        out.push_str(&piece);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Action, TOO_MANY_PINGS};
    use crate::wire::{BlockKind, Decoder, Detail, Direction, ErrorCode, Event};

    /// Decodes `frames` as the server→client direction, after the SETTINGS
    /// frame that must come first.
    fn decode(frames: &[u8]) -> Vec<crate::wire::Frame> {
        let mut d = Decoder::new(Direction::ServerToClient);
        let mut events = Vec::new();
        d.feed(&encode::settings(&[]), &mut events);
        events.clear();
        d.feed(frames, &mut events);
        events
            .into_iter()
            .map(|e| match e {
                Event::Frame(f) => f,
                other => panic!("not a frame: {other:?}"),
            })
            .collect()
    }

    #[test]
    fn integers_follow_rfc_7541_appendix_c1() {
        // C.1.1: 10 with a 5-bit prefix; C.1.2: 1337 with a 5-bit prefix.
        let mut out = Vec::new();
        integer(&mut out, 5, 0, 10);
        assert_eq!(out, [0x0a]);
        out.clear();
        integer(&mut out, 5, 0, 1337);
        assert_eq!(out, [0x1f, 0x9a, 0x0a]);
        out.clear();
        integer(&mut out, 4, 0, 31);
        assert_eq!(out, [0x0f, 0x10]);
    }

    #[test]
    fn trailers_only_decodes_with_status_and_message() {
        let bytes = encode_action(&Action::SendTrailersOnly {
            stream_id: 3,
            grpc_status: 14,
            message: "Too many pings",
        })
        .expect("a frame");
        let frames = decode(&bytes);
        let Detail::Headers {
            end_stream, block, ..
        } = &frames[0].detail
        else {
            panic!("not HEADERS: {:?}", frames[0]);
        };
        assert!(end_stream);
        assert_eq!(frames[0].stream_id, 3);
        assert_eq!(block.kind, BlockKind::TrailersOnly);
        assert_eq!(
            block.all(),
            [
                (":status".to_owned(), "200".to_owned()),
                ("content-type".to_owned(), "application/grpc".to_owned()),
                ("grpc-status".to_owned(), "14".to_owned()),
                ("grpc-message".to_owned(), "Too many pings".to_owned()),
            ]
        );
    }

    #[test]
    fn blocks_leave_the_dynamic_table_empty() {
        // A block that only references the static table and literals
        // without indexing decodes the same twice in a row, and a following
        // block that indexes dynamic entry 62 fails: nothing was added.
        let bytes = encode_action(&Action::SendTrailers {
            stream_id: 1,
            grpc_status: 14,
            message: "50% \u{e9}",
        })
        .expect("a frame");
        let mut again = bytes.clone();
        again[5..9].copy_from_slice(&5u32.to_be_bytes());
        let frames = decode(&[bytes, again].concat());
        for f in &frames {
            let Detail::Headers { block, .. } = &f.detail else {
                panic!("not HEADERS")
            };
            assert_eq!(block.get("grpc-message"), Some("50%25 %C3%A9"));
            assert_eq!(block.grpc_message.as_deref(), Some("50% \u{e9}"));
        }
        let mut d = loona_hpack::Decoder::new();
        let block = &frames_block(
            &encode_action(&Action::SendTrailers {
                stream_id: 1,
                grpc_status: 0,
                message: "",
            })
            .expect("a frame"),
        );
        d.decode(block).expect("decodes");
        assert!(d.decode(&[0x80 | 62]).is_err(), "dynamic table is empty");
    }

    fn frames_block(frame: &[u8]) -> Vec<u8> {
        frame[9..].to_vec()
    }

    #[test]
    fn an_http_reply_decodes_with_any_status() {
        let frames = decode(&http_headers(5, 504, "text/html", false));
        let Detail::Headers {
            end_stream, block, ..
        } = &frames[0].detail
        else {
            panic!("not HEADERS: {:?}", frames[0]);
        };
        assert!(!end_stream);
        assert_eq!(
            block.all(),
            [
                (":status".to_owned(), "504".to_owned()),
                ("content-type".to_owned(), "text/html".to_owned()),
            ]
        );
    }

    #[test]
    fn goaway_and_rst_stream_carry_their_codes() {
        let goaway = encode_action(&Action::SendGoAway {
            last_stream_id: 7,
            code: ErrorCode::EnhanceYourCalm,
            debug: TOO_MANY_PINGS,
        })
        .expect("a frame");
        let rst = encode_action(&Action::SendRstStream {
            stream_id: 7,
            code: ErrorCode::NoError,
        })
        .expect("a frame");
        let frames = decode(&[goaway, rst].concat());
        assert_eq!(
            frames[0].detail,
            Detail::GoAway {
                last_stream_id: 7,
                code: ErrorCode::EnhanceYourCalm,
                debug: TOO_MANY_PINGS.to_vec(),
            }
        );
        assert_eq!(
            frames[1].detail,
            Detail::RstStream {
                code: ErrorCode::NoError
            }
        );
        assert_eq!(encode_action(&Action::CloseConnection), None);
    }

    #[test]
    fn long_messages_are_cut_at_a_whole_escape() {
        let long = "\u{e9}".repeat(1000);
        let encoded = percent_encode(&long);
        assert!(encoded.len() <= MAX_MESSAGE);
        assert_eq!(encoded.len() % 3, 0);
    }
}
