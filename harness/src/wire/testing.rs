//! Test vocabulary: build one direction of a connection frame by frame, the
//! way h2's `tests/h2-support` does, then decode it.
//!
//! ```text
//! let bytes = Wire::client()
//!     .headers(headers(1).request("POST", "/tt.v1.Store/Save").field("grpc-timeout", "500m"))
//!     .data(1, 5, true)
//!     .into_bytes();
//! ```

use super::encode;
use super::frame::{flags, ErrorCode, Frame, FrameType, SettingId, PREFACE};
use super::{Decoder, Direction, Event};

/// One direction's octets, with the HPACK encoder state that goes with them.
pub(crate) struct Wire {
    enc: loona_hpack::Encoder<'static>,
    bytes: Vec<u8>,
}

impl Wire {
    /// Nothing written yet: no preface, no SETTINGS.
    pub(crate) fn bare() -> Self {
        Self {
            enc: loona_hpack::Encoder::new(),
            bytes: Vec::new(),
        }
    }

    /// Client side: preface and an empty SETTINGS, as every client starts.
    pub(crate) fn client() -> Self {
        Self::bare().raw(PREFACE).settings(&[])
    }

    /// Server side: an empty SETTINGS (the server preface, RFC 9113 §3.4).
    pub(crate) fn server() -> Self {
        Self::bare().settings(&[])
    }

    pub(crate) fn raw(mut self, bytes: &[u8]) -> Self {
        self.bytes.extend_from_slice(bytes);
        self
    }

    pub(crate) fn frame(self, ty: FrameType, flags: u8, stream: u32, payload: &[u8]) -> Self {
        self.raw(&encode::frame(ty, flags, stream, payload))
    }

    pub(crate) fn settings(self, values: &[(SettingId, u32)]) -> Self {
        self.raw(&encode::settings(values))
    }

    pub(crate) fn settings_ack(self) -> Self {
        self.raw(&encode::settings_ack())
    }

    pub(crate) fn ping(self, ack: bool, opaque: [u8; 8]) -> Self {
        self.raw(&encode::ping(ack, opaque))
    }

    pub(crate) fn window_update(self, stream: u32, increment: u32) -> Self {
        self.raw(&encode::window_update(stream, increment))
    }

    pub(crate) fn rst(self, stream: u32, code: ErrorCode) -> Self {
        self.raw(&encode::rst_stream(stream, code))
    }

    pub(crate) fn goaway(self, last: u32, code: ErrorCode, debug: &[u8]) -> Self {
        self.raw(&encode::goaway(last, code, debug))
    }

    /// DATA with `len` octets of `0xAB`.
    pub(crate) fn data(self, stream: u32, len: usize, eos: bool) -> Self {
        let flags = if eos { flags::END_STREAM } else { 0 };
        self.frame(FrameType::Data, flags, stream, &vec![0xAB; len])
    }

    /// DATA with `len` data octets and `pad` octets of padding.
    pub(crate) fn padded_data(self, stream: u32, len: usize, pad: u8, eos: bool) -> Self {
        let mut payload = vec![pad];
        payload.extend(std::iter::repeat_n(0xAB, len));
        payload.extend(std::iter::repeat_n(0, usize::from(pad)));
        let flags = flags::PADDED | if eos { flags::END_STREAM } else { 0 };
        self.frame(FrameType::Data, flags, stream, &payload)
    }

    /// HEADERS (and CONTINUATIONs, if the builder splits the block).
    pub(crate) fn headers(mut self, h: Headers) -> Self {
        let block = match h.raw_block {
            Some(raw) => raw,
            None => self
                .enc
                .encode(h.fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()))),
        };
        let chunk = h.split.unwrap_or(usize::MAX).max(1);
        let mut pieces = block.chunks(chunk).collect::<Vec<_>>();
        if pieces.is_empty() {
            pieces.push(&[]);
        }
        let last = pieces.len() - 1;
        for (i, piece) in pieces.into_iter().enumerate() {
            let end_headers = if i == last { flags::END_HEADERS } else { 0 };
            if i > 0 {
                self = self.frame(FrameType::Continuation, end_headers, h.stream, piece);
                continue;
            }
            let mut payload = Vec::new();
            let mut fl = end_headers;
            if h.eos {
                fl |= flags::END_STREAM;
            }
            if let Some(pad) = h.pad {
                fl |= flags::PADDED;
                payload.push(pad);
            }
            if h.priority {
                fl |= flags::PRIORITY;
                payload.extend_from_slice(&[0x80, 0, 0, 3, 15]);
            }
            payload.extend_from_slice(piece);
            payload.extend(std::iter::repeat_n(0, usize::from(h.pad.unwrap_or(0))));
            self = self.frame(FrameType::Headers, fl, h.stream, &payload);
        }
        self
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

/// A HEADERS frame under construction.
pub(crate) struct Headers {
    stream: u32,
    fields: Vec<(String, String)>,
    eos: bool,
    pad: Option<u8>,
    priority: bool,
    split: Option<usize>,
    raw_block: Option<Vec<u8>>,
}

pub(crate) fn headers(stream: u32) -> Headers {
    Headers {
        stream,
        fields: Vec::new(),
        eos: false,
        pad: None,
        priority: false,
        split: None,
        raw_block: None,
    }
}

impl Headers {
    pub(crate) fn field(mut self, name: &str, value: &str) -> Self {
        self.fields.push((name.to_owned(), value.to_owned()));
        self
    }

    /// A gRPC request as tonic sends it.
    pub(crate) fn request(self, method: &str, path: &str) -> Self {
        self.field(":method", method)
            .field(":scheme", "http")
            .field(":path", path)
            .field(":authority", "store:50051")
            .field("content-type", "application/grpc")
            .field("te", "trailers")
    }

    /// A gRPC response head as hyper sends it (with its wall-clock `date`).
    pub(crate) fn response(self, date: &str) -> Self {
        self.field(":status", "200")
            .field("content-type", "application/grpc")
            .field("date", date)
    }

    pub(crate) fn grpc_status(self, code: u32, message: &str) -> Self {
        let s = self.field("grpc-status", &code.to_string());
        if message.is_empty() {
            s
        } else {
            s.field("grpc-message", message)
        }
    }

    pub(crate) fn eos(mut self) -> Self {
        self.eos = true;
        self
    }

    pub(crate) fn padded(mut self, pad: u8) -> Self {
        self.pad = Some(pad);
        self
    }

    pub(crate) fn priority(mut self) -> Self {
        self.priority = true;
        self
    }

    /// Split the block into fragments of `n` octets: HEADERS + CONTINUATIONs.
    pub(crate) fn split(mut self, n: usize) -> Self {
        self.split = Some(n);
        self
    }

    /// Use these octets as the field block instead of encoding `fields`.
    pub(crate) fn raw_block(mut self, block: &[u8]) -> Self {
        self.raw_block = Some(block.to_vec());
        self
    }
}

/// Decodes `bytes` in one feed.
pub(crate) fn decode(direction: Direction, bytes: &[u8]) -> Vec<Event> {
    let mut dec = Decoder::new(direction);
    let mut out = Vec::new();
    dec.feed(bytes, &mut out);
    out
}

/// The frames among `events`.
pub(crate) fn frames(events: &[Event]) -> Vec<&Frame> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Frame(f) => Some(f),
            _ => None,
        })
        .collect()
}

/// The malformed-event reasons among `events`.
pub(crate) fn malformed(events: &[Event]) -> Vec<(u64, Option<u64>, &str)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Malformed {
                offset,
                len,
                reason,
            } => Some((*offset, *len, reason.as_str())),
            _ => None,
        })
        .collect()
}

/// One line per event, for compact assertions.
pub(crate) fn render(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Preface { offset } => format!("@{offset} PREFACE"),
            Event::Frame(f) => format!(
                "@{} {} s{} len={} {:?}",
                f.offset, f.ty, f.stream_id, f.len, f.detail
            ),
            Event::Malformed {
                offset,
                len,
                reason,
            } => format!("@{offset} MALFORMED {len:?} {reason}"),
        })
        .collect()
}

/// One short line per event, the way a trace would show it: field blocks
/// by kind and their gRPC fields, other frames by their detail.
pub(crate) fn brief(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            Event::Frame(f) => {
                let what = match &f.detail {
                    super::Detail::Headers {
                        block, end_stream, ..
                    } => {
                        let mut s = format!("{}", block.kind);
                        let named = [
                            (":method", &block.method),
                            (":path", &block.path),
                            (":status", &block.status),
                            ("grpc-timeout", &block.grpc_timeout),
                            ("grpc-status", &block.grpc_status),
                            ("grpc-message", &block.grpc_message),
                        ];
                        for (name, value) in named {
                            if let Some(v) = value {
                                s.push_str(&format!(" {name}={v}"));
                            }
                        }
                        if *end_stream {
                            s.push_str(" END_STREAM");
                        }
                        s
                    }
                    other => format!("{other:?}"),
                };
                format!("@{} s{} {} {what}", f.offset, f.stream_id, f.ty)
            }
            other => render(std::slice::from_ref(other)).concat(),
        })
        .collect()
}

/// Client→server octets of a real h2 0.4.20 exchange (three gRPC-shaped
/// calls, a PING, graceful GOAWAY), recorded by a throwaway program over an
/// in-memory pipe.
pub(crate) const H2_C2S: &str = include_str!("fixtures/h2_c2s.hex");
/// Server→client octets of the same exchange.
pub(crate) const H2_S2C: &str = include_str!("fixtures/h2_s2c.hex");

/// Parses a hex fixture (whitespace ignored).
pub(crate) fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| b.is_ascii_hexdigit()).collect();
    digits
        .chunks_exact(2)
        .map(|p| {
            let s = std::str::from_utf8(p).unwrap_or("00");
            u8::from_str_radix(s, 16).unwrap_or(0)
        })
        .collect()
}
