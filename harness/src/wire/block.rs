//! Decoded field blocks (RFC 9113 §4.3, §8.3) and the gRPC fields a trace
//! cares about (grpc `doc/PROTOCOL-HTTP2.md`, gRFC A6).

use std::time::Duration;

/// Value that replaces the `date` field everywhere in a [`HeaderBlock`].
///
/// hyper's server stamps responses with the wall-clock date, which would make
/// rendered traces differ between runs; the mask keeps them byte-stable.
pub const DATE_MASK: &str = "<masked>";

/// What a field block is, from its position on its stream and its direction
/// (RFC 9113 §8.1; gRPC `PROTOCOL-HTTP2.md` "Responses").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Client to server, first block on the stream: `:method`, `:path`,
    /// `grpc-timeout` …
    Request,
    /// Server to client, first block on the stream: `:status`, `content-type` …
    Response,
    /// A later block on a stream that already carried one (normally with
    /// `END_STREAM`): `grpc-status`, `grpc-message` …
    Trailers,
    /// Server to client, the only block of a stream: carries `grpc-status`
    /// and `END_STREAM` with no response headers before it (gRPC
    /// "Trailers-Only" response, used for immediate errors).
    TrailersOnly,
}

impl std::fmt::Display for BlockKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Request => "request",
            Self::Response => "response",
            Self::Trailers => "trailers",
            Self::TrailersOnly => "trailers-only",
        })
    }
}

/// One decoded field block: the fields gRPC traces need, and every field.
///
/// Names are as on the wire (lower case in HTTP/2, §8.2.1). Values are
/// decoded from octets as UTF-8, invalid sequences replaced by U+FFFD, so that
/// any peer input renders deterministically. When a field appears more than
/// once, the named accessors hold the first occurrence; [`HeaderBlock::all`]
/// holds them all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderBlock {
    /// Request, response, trailers or trailers-only.
    pub kind: BlockKind,
    /// `:method` pseudo-header (requests), e.g. `POST`.
    pub method: Option<String>,
    /// `:path` pseudo-header (requests), e.g. `/tt.v1.Store/Save`.
    pub path: Option<String>,
    /// `:status` pseudo-header (responses), e.g. `200`.
    pub status: Option<String>,
    /// `grpc-timeout` as sent, e.g. `500000u` (see
    /// [`HeaderBlock::grpc_timeout_duration`]).
    pub grpc_timeout: Option<String>,
    /// `grpc-status` as sent, e.g. `4` (see [`HeaderBlock::grpc_status_code`]).
    pub grpc_status: Option<String>,
    /// `grpc-message`, percent-decoded as `PROTOCOL-HTTP2.md` requires
    /// (broken `%` escapes are kept as they were sent).
    pub grpc_message: Option<String>,
    /// `grpc-retry-pushback-ms` as sent (gRFC A6), e.g. `-1`.
    pub grpc_retry_pushback_ms: Option<String>,
    /// `grpc-previous-rpc-attempts` as sent (gRFC A6), e.g. `2`.
    pub grpc_previous_rpc_attempts: Option<String>,
    /// Every field in wire order, `date` masked with [`DATE_MASK`].
    fields: Vec<(String, String)>,
    /// Whether [`HeaderBlock::all`] stopped early because the decoded block
    /// exceeded the decoder's header-list limit.
    truncated: bool,
}

impl HeaderBlock {
    /// An empty block of the given kind; the decoder fills it with
    /// [`HeaderBlock::push`].
    pub(crate) fn new(kind: BlockKind) -> Self {
        Self {
            kind,
            method: None,
            path: None,
            status: None,
            grpc_timeout: None,
            grpc_status: None,
            grpc_message: None,
            grpc_retry_pushback_ms: None,
            grpc_previous_rpc_attempts: None,
            fields: Vec::new(),
            truncated: false,
        }
    }

    /// Every field in wire order as `(name, value)`, `date` masked with
    /// [`DATE_MASK`], `grpc-message` as sent (not percent-decoded).
    pub fn all(&self) -> &[(String, String)] {
        &self.fields
    }

    /// The first value of the named field (names are compared as sent; HTTP/2
    /// requires lower case, §8.2.1).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether the block was larger than the decoder's header-list limit
    /// (`Limits::max_header_list`), in
    /// which case [`HeaderBlock::all`] and the named fields hold only the
    /// fields before the limit was reached.
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// `:status` as a number, if present and numeric.
    pub fn status_code(&self) -> Option<u16> {
        self.status.as_deref()?.parse().ok()
    }

    /// `grpc-status` as a number (0 = OK, 4 = DEADLINE_EXCEEDED …), if
    /// present and numeric.
    pub fn grpc_status_code(&self) -> Option<u32> {
        self.grpc_status.as_deref()?.parse().ok()
    }

    /// `grpc-timeout` as a duration (`PROTOCOL-HTTP2.md`: at most 8 ASCII
    /// digits, then one of `H M S m u n`); `None` if absent or malformed.
    pub fn grpc_timeout_duration(&self) -> Option<Duration> {
        crate::deadline::parse_grpc_timeout(self.grpc_timeout.as_deref()?)
    }

    /// `grpc-retry-pushback-ms` in milliseconds; negative means "do not
    /// retry" (gRFC A6). `None` if absent or not an integer.
    pub fn retry_pushback_ms(&self) -> Option<i64> {
        self.grpc_retry_pushback_ms.as_deref()?.parse().ok()
    }

    /// `grpc-previous-rpc-attempts` as a number (gRFC A6), if present and
    /// numeric.
    pub fn previous_rpc_attempts(&self) -> Option<u32> {
        self.grpc_previous_rpc_attempts.as_deref()?.parse().ok()
    }

    /// Adds one decoded field. Called by the decoder in wire order; takes
    /// the decoder's buffers so that valid UTF-8 (nearly every field) is
    /// kept without a copy.
    pub(crate) fn push(&mut self, name: Vec<u8>, value: Vec<u8>) {
        let name = utf8_lossy(name);
        // HTTP/2 field names are lower case (§8.2.1), but a peer that breaks
        // that rule must not leak the wall clock into a trace either.
        let value = if name.eq_ignore_ascii_case("date") {
            DATE_MASK.to_owned()
        } else {
            utf8_lossy(value)
        };
        let slot = match name.as_str() {
            ":method" => Some(&mut self.method),
            ":path" => Some(&mut self.path),
            ":status" => Some(&mut self.status),
            "grpc-timeout" => Some(&mut self.grpc_timeout),
            "grpc-status" => Some(&mut self.grpc_status),
            "grpc-message" => Some(&mut self.grpc_message),
            "grpc-retry-pushback-ms" => Some(&mut self.grpc_retry_pushback_ms),
            "grpc-previous-rpc-attempts" => Some(&mut self.grpc_previous_rpc_attempts),
            _ => None,
        };
        if let Some(slot @ None) = slot {
            *slot = Some(if name == "grpc-message" {
                percent_decode(value.as_bytes())
            } else {
                value.clone()
            });
        }
        self.fields.push((name, value));
    }

    /// Marks the block as cut short by the header-list limit.
    pub(crate) fn set_truncated(&mut self) {
        self.truncated = true;
    }
}

/// `bytes` as a string, invalid UTF-8 replaced.
fn utf8_lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Decodes `%XX` escapes as `PROTOCOL-HTTP2.md` specifies for `grpc-message`:
/// an escape that is not two hex digits is kept verbatim ("implementations
/// MUST NOT error"), and the result is read as UTF-8 with invalid sequences
/// replaced.
#[cfg_attr(not(feature = "unstable-codec"), allow(unreachable_pub))]
pub fn percent_decode(raw: &[u8]) -> String {
    // The crate tonic decodes `grpc-message` with (`spec::trailer_status`
    // uses it strictly, as tonic does); it too keeps a broken escape.
    percent_encoding::percent_decode(raw)
        .decode_utf8_lossy()
        .into_owned()
}
