//! The typed fields of frame and keepalive events: what the wire tap saw, as
//! data. Queries match on these; the words a render prints for them are made
//! in one place, [`crate::trace`]'s row builder (its `words` module, which
//! also gives these types their `Display`).
//!
//! Kept small on purpose: one is stored per recorded frame. Everything but a
//! HEADERS block's fields, a SETTINGS list and a GOAWAY is `Copy` and
//! inline; a block is shared ([`HeaderFields`]), the other two are boxed
//! behind one thin pointer each ([`SettingValues`], [`GoAway`]), and an
//! empty SETTINGS list does not allocate.

use std::borrow::Cow;
use std::time::Duration;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

pub use super::header_fields::HeaderFields;
use crate::wire::{ErrorCode, SettingId};

/// The flags of a recorded frame that a trace needs (RFC 9113 §6): `END_STREAM`
/// (DATA, HEADERS), `END_HEADERS` (HEADERS, PUSH_PROMISE, CONTINUATION) and
/// `ACK` (SETTINGS, PING). Each is set only on the frame types that define
/// it, so `ACK` and `END_STREAM` (both bit 0x01 on the wire) never mix up.
/// `PADDED` and `PRIORITY` are not kept.
///
/// In JSON: a list of the RFC names of the flags set, `["END_STREAM"]`, `[]`
/// when none is.
///
/// ```
/// use grpc_chaos::recorder::event::FrameFlags;
/// let flags = FrameFlags::END_STREAM | FrameFlags::END_HEADERS;
/// assert!(flags.end_stream() && flags.end_headers() && !flags.ack());
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FrameFlags(u8);

/// `FrameFlags(END_STREAM | END_HEADERS)`, `FrameFlags(NONE)`.
impl std::fmt::Debug for FrameFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrameFlags(")?;
        let mut set = Self::NAMES.iter().filter(|(flag, _)| self.contains(*flag));
        match set.next() {
            None => f.write_str("NONE")?,
            Some((_, first)) => {
                f.write_str(first)?;
                for (_, name) in set {
                    write!(f, " | {name}")?;
                }
            }
        }
        f.write_str(")")
    }
}

impl FrameFlags {
    /// No flag set.
    pub const NONE: Self = Self(0);
    /// `END_STREAM` (RFC 9113 §6.1, §6.2): the sender's half of the stream
    /// is closed.
    pub const END_STREAM: Self = Self(1);
    /// `END_HEADERS` (RFC 9113 §6.2, §6.10): the field block ends in this
    /// frame.
    pub const END_HEADERS: Self = Self(2);
    /// `ACK` (RFC 9113 §6.5, §6.7): acknowledges a SETTINGS or answers a PING.
    pub const ACK: Self = Self(4);

    const NAMES: [(Self, &'static str); 3] = [
        (Self::END_STREAM, "END_STREAM"),
        (Self::END_HEADERS, "END_HEADERS"),
        (Self::ACK, "ACK"),
    ];

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// `self` with `flag` set when `on` is true.
    pub fn with(self, flag: Self, on: bool) -> Self {
        if on {
            self | flag
        } else {
            self
        }
    }

    /// `END_STREAM` is set.
    pub fn end_stream(self) -> bool {
        self.contains(Self::END_STREAM)
    }

    /// `END_HEADERS` is set.
    pub fn end_headers(self) -> bool {
        self.contains(Self::END_HEADERS)
    }

    /// `ACK` is set.
    pub fn ack(self) -> bool {
        self.contains(Self::ACK)
    }
}

impl std::ops::BitOr for FrameFlags {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl Serialize for FrameFlags {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let set = Self::NAMES.iter().filter(|(f, _)| self.contains(*f));
        let mut seq = s.serialize_seq(Some(set.clone().count()))?;
        for (_, name) in set {
            seq.serialize_element(name)?;
        }
        seq.end()
    }
}

/// What a recorded frame's payload says, by frame type (RFC 9113 §6). The
/// frame type itself is beside it in the event
/// ([`EventKind::Frame`](super::EventKind::Frame)`::frame`).
///
/// In JSON: an object whose keys depend on the type, listed on each variant;
/// `{}` for [`FrameDetail::Empty`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameDetail {
    /// DATA (§6.1). JSON: `{"len": 18, "compressed_flag": 0}`, the flag
    /// `null` in a frame that starts no gRPC message.
    Data {
        /// Octets of application data, padding excluded.
        len: u32,
        /// The Compressed-Flag octet (gRPC `PROTOCOL-HTTP2.md`,
        /// Length-Prefixed-Message: 0 identity, 1 compressed with the
        /// stream's `grpc-encoding`, anything else breaks the spec) of the
        /// first message whose 5-octet prefix begins in this frame; `None`
        /// when none does (the frame carries the rest of a message).
        compressed_flag: Option<u8>,
    },
    /// HEADERS (§6.2), with the fields of its whole block (its
    /// CONTINUATIONs included). JSON: `{"block": "request", "fields":
    /// [[":method", "POST"], …]}` (see [`HeaderFields`]).
    Headers(HeaderFields),
    /// RST_STREAM (§6.4). JSON: `{"error_code": "CANCEL"}`.
    RstStream {
        /// Why the stream was reset.
        code: ErrorCode,
    },
    /// SETTINGS (§6.5): the parameters in wire order, duplicates kept;
    /// empty for an ACK. JSON: `{"settings": [{"id": "INITIAL_WINDOW_SIZE",
    /// "value": 1048576}, …]}` (ids by their RFC name without `SETTINGS_`).
    Settings {
        /// `(identifier, value)` pairs (one thin pointer, none for an
        /// empty list; it derefs to `[(SettingId, u32)]`).
        values: SettingValues,
    },
    /// PING (§6.7); whether it is the ACK is in the flags. JSON:
    /// `{"payload": "0000000000000001"}` (hex).
    Ping {
        /// The 8 opaque octets.
        payload: [u8; 8],
    },
    /// GOAWAY (§6.8), its fields boxed ([`GoAway`]: a connection sends one
    /// or two, and inline they would make every frame's detail larger).
    /// JSON: `{"last_stream_id": 1, "error_code": "ENHANCE_YOUR_CALM",
    /// "debug": "too_many_pings"}` (`debug` as UTF-8, invalid sequences
    /// replaced by U+FFFD).
    GoAway(Box<GoAway>),
    /// WINDOW_UPDATE (§6.9). JSON: `{"increment": 65535}`.
    WindowUpdate {
        /// Window size increment, octets.
        increment: u32,
    },
    /// PUSH_PROMISE (§6.6; gRPC never uses it). JSON: `{"promised_stream":
    /// 2}`.
    PushPromise {
        /// The stream the sender reserves.
        promised_stream: u32,
    },
    /// CONTINUATION (§6.10: its fields are on the HEADERS before it),
    /// PRIORITY (§6.3) or a type RFC 9113 does not define: nothing beyond
    /// the type and the flags. JSON: `{}`.
    Empty,
}

impl Serialize for FrameDetail {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match self {
            Self::Data {
                len,
                compressed_flag,
            } => {
                map.serialize_entry("len", len)?;
                map.serialize_entry("compressed_flag", compressed_flag)?;
            }
            Self::Headers(block) => {
                map.serialize_entry("block", &block.kind().to_string())?;
                map.serialize_entry("fields", &block.serialize_fields())?;
            }
            Self::RstStream { code } => map.serialize_entry("error_code", &code.to_string())?,
            Self::Settings { values } => map.serialize_entry("settings", &Settings(values))?,
            Self::Ping { payload } => map.serialize_entry("payload", &hex(payload))?,
            Self::GoAway(goaway) => {
                map.serialize_entry("last_stream_id", &goaway.last_stream_id)?;
                map.serialize_entry("error_code", &goaway.code.to_string())?;
                map.serialize_entry("debug", &String::from_utf8_lossy(&goaway.debug))?;
            }
            Self::WindowUpdate { increment } => map.serialize_entry("increment", increment)?,
            Self::PushPromise { promised_stream } => {
                map.serialize_entry("promised_stream", promised_stream)?
            }
            Self::Empty => {}
        }
        map.end()
    }
}

/// The fields of a recorded GOAWAY (RFC 9113 §6.8), boxed in
/// [`FrameDetail::GoAway`].
///
/// ```
/// use grpc_chaos::recorder::event::{FrameDetail, GoAway};
/// use grpc_chaos::wire::ErrorCode;
/// let detail = FrameDetail::GoAway(Box::new(GoAway {
///     last_stream_id: 1,
///     code: ErrorCode::EnhanceYourCalm,
///     debug: b"too_many_pings".into(),
/// }));
/// assert!(matches!(&detail, FrameDetail::GoAway(g) if *g.debug == *b"too_many_pings"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoAway {
    /// Highest peer-initiated stream the sender may have processed.
    pub last_stream_id: u32,
    /// Why the connection is going away.
    pub code: ErrorCode,
    /// Additional debug data (`too_many_pings`); may be empty.
    pub debug: DebugData,
}

/// A SETTINGS frame's parameters (RFC 9113 §6.5) in wire order, duplicates
/// kept: it derefs to `[(SettingId, u32)]`. Boxed behind one thin pointer
/// (8 bytes, where a `Box<[_]>` takes 16): the space is paid by every
/// frame's [`FrameDetail`], and SETTINGS are a few frames a connection.
/// An empty list (an ACK) does not allocate.
///
/// ```
/// use grpc_chaos::recorder::event::SettingValues;
/// use grpc_chaos::wire::SettingId;
/// let values = SettingValues::from(vec![(SettingId::InitialWindowSize, 65_535)]);
/// assert_eq!(values[0], (SettingId::InitialWindowSize, 65_535));
/// assert!(SettingValues::default().is_empty());
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct SettingValues(Option<Box<Box<[Setting]>>>);

/// One SETTINGS parameter: its identifier and value.
type Setting = (SettingId, u32);

impl std::ops::Deref for SettingValues {
    type Target = [(SettingId, u32)];

    fn deref(&self) -> &[(SettingId, u32)] {
        self.0.as_deref().map_or(&[], |b| b)
    }
}

impl std::fmt::Debug for SettingValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl From<&[(SettingId, u32)]> for SettingValues {
    fn from(values: &[(SettingId, u32)]) -> Self {
        Self((!values.is_empty()).then(|| Box::new(values.into())))
    }
}

impl From<Vec<(SettingId, u32)>> for SettingValues {
    fn from(values: Vec<(SettingId, u32)>) -> Self {
        Self((!values.is_empty()).then(|| Box::new(values.into_boxed_slice())))
    }
}

impl<const N: usize> From<[(SettingId, u32); N]> for SettingValues {
    fn from(values: [(SettingId, u32); N]) -> Self {
        Self::from(&values[..])
    }
}

impl PartialEq<[(SettingId, u32)]> for SettingValues {
    fn eq(&self, other: &[(SettingId, u32)]) -> bool {
        **self == *other
    }
}

/// A GOAWAY's debug data (RFC 9113 §6.8), as octets: it derefs to `[u8]`.
/// Boxed behind one thin pointer (8 bytes, where a `Box<[u8]>` takes 16;
/// it sits in the boxed [`GoAway`], so the size is the box's, not every
/// frame's). Empty data does not allocate.
///
/// ```
/// use grpc_chaos::recorder::event::DebugData;
/// let debug = DebugData::from(&b"too_many_pings"[..]);
/// assert_eq!(&*debug, b"too_many_pings");
/// assert!(DebugData::default().is_empty());
/// ```
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct DebugData(Option<Box<Box<[u8]>>>);

impl std::ops::Deref for DebugData {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.as_deref().map_or(&[], |b| b)
    }
}

impl AsRef<[u8]> for DebugData {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::fmt::Debug for DebugData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl From<&[u8]> for DebugData {
    fn from(octets: &[u8]) -> Self {
        Self((!octets.is_empty()).then(|| Box::new(octets.into())))
    }
}

impl From<Vec<u8>> for DebugData {
    fn from(octets: Vec<u8>) -> Self {
        Self((!octets.is_empty()).then(|| Box::new(octets.into_boxed_slice())))
    }
}

impl<const N: usize> From<&[u8; N]> for DebugData {
    fn from(octets: &[u8; N]) -> Self {
        Self::from(&octets[..])
    }
}

impl PartialEq<[u8]> for DebugData {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<&[u8]> for DebugData {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for DebugData {
    fn eq(&self, other: &&[u8; N]) -> bool {
        **self == other[..]
    }
}

/// The 8 octets of a PING as 16 lower-case hex digits.
pub(crate) fn hex(payload: &[u8; 8]) -> String {
    payload.iter().map(|b| format!("{b:02x}")).collect()
}

struct Settings<'a>(&'a [(SettingId, u32)]);

impl Serialize for Settings<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct One {
            id: String,
            value: u32,
        }
        s.collect_seq(self.0.iter().map(|(id, value)| One {
            id: id.to_string(),
            value: *value,
        }))
    }
}

/// A field's name as decoded; the names every gRPC stack sends are kept as
/// `&'static str`, so a recorded block allocates only for its values and
/// for names of the user's own.
pub(super) type FieldName = Cow<'static, str>;

/// A header field the trace's rows know by name: the pseudo-headers that
/// say what a block is (RFC 9113 §8.3) and the gRPC fields of
/// `PROTOCOL-HTTP2.md` and gRFC A6. A [`HeaderFields`] keeps every field
/// of its block; these are the ones it can be asked for by name, and
/// (with the user's custom metadata, [`is_custom_metadata`]) the ones a
/// HEADERS row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShownHeader {
    /// `:method`.
    Method,
    /// `:path`.
    Path,
    /// `:status`.
    Status,
    /// `grpc-timeout`, as sent (`500000u`).
    GrpcTimeout,
    /// `grpc-status`, as sent (`14`).
    GrpcStatus,
    /// `grpc-message`, as sent (percent-encoded).
    GrpcMessage,
    /// `grpc-retry-pushback-ms` (gRFC A6).
    GrpcRetryPushbackMs,
    /// `grpc-previous-rpc-attempts` (gRFC A6).
    GrpcPreviousRpcAttempts,
    /// `grpc-encoding` (`PROTOCOL-HTTP2.md` Message-Encoding): how the
    /// sender compresses the messages it flags as compressed (`gzip`).
    GrpcEncoding,
    /// `grpc-accept-encoding` (`PROTOCOL-HTTP2.md`
    /// Message-Accept-Encoding): the encodings the sender accepts
    /// (`gzip,identity`). tonic sends it only with compression enabled.
    GrpcAcceptEncoding,
    /// `content-type` (`application/grpc`, `application/grpc+proto` …).
    ContentType,
}

impl AsRef<str> for ShownHeader {
    fn as_ref(&self) -> &str {
        self.name()
    }
}

impl ShownHeader {
    const ALL: [Self; 11] = [
        Self::Method,
        Self::Path,
        Self::Status,
        Self::GrpcTimeout,
        Self::GrpcStatus,
        Self::GrpcMessage,
        Self::GrpcRetryPushbackMs,
        Self::GrpcPreviousRpcAttempts,
        Self::GrpcEncoding,
        Self::GrpcAcceptEncoding,
        Self::ContentType,
    ];

    /// The field's name on the wire (lower case, RFC 9113 §8.2.1).
    pub fn name(self) -> &'static str {
        match self {
            Self::Method => ":method",
            Self::Path => ":path",
            Self::Status => ":status",
            Self::GrpcTimeout => "grpc-timeout",
            Self::GrpcStatus => "grpc-status",
            Self::GrpcMessage => "grpc-message",
            Self::GrpcRetryPushbackMs => "grpc-retry-pushback-ms",
            Self::GrpcPreviousRpcAttempts => "grpc-previous-rpc-attempts",
            Self::GrpcEncoding => "grpc-encoding",
            Self::GrpcAcceptEncoding => "grpc-accept-encoding",
            Self::ContentType => "content-type",
        }
    }

    /// The field named `name` (compared as sent: HTTP/2 names are lower
    /// case), if it is one of these.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == name)
    }

    /// Whether it is a pseudo-header (`:method`, `:path`, `:status`).
    pub fn is_pseudo(self) -> bool {
        matches!(self, Self::Method | Self::Path | Self::Status)
    }
}

/// Fields that are neither the user's metadata nor among [`ShownHeader`]:
/// the rest of gRPC's Call-Definition (`PROTOCOL-HTTP2.md`: `te`,
/// `user-agent`), what HTTP stacks add on their own (hyper's `date`,
/// `content-length`, `server`), the connection-specific fields RFC 9113
/// §8.2.2 forbids, and the harness's own call-id header. Also the names
/// [`HeaderFields`] keeps without allocating.
const RESERVED: [&str; 14] = [
    ":scheme",
    ":authority",
    "te",
    "user-agent",
    "date",
    "content-length",
    "server",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
    crate::recorder::CALL_ID_HEADER,
];

/// The fields that carry credentials: `authorization` and
/// `proxy-authorization` (RFC 9110 §11.6.2, §11.7.2: a bearer token, what
/// gRPC's call credentials send), `cookie` and `set-cookie` (RFC 6265
/// §5.4, §4.1), and `x-api-key` (the API key header of AWS API Gateway and
/// Google Cloud Endpoints). The trace records their values as
/// [`CREDENTIAL_MASK`] unless the run shows them
/// ([`SimBuilder::show_credentials`](crate::SimBuilder::show_credentials)),
/// so a failure artifact written in CI holds none of these headers' values
/// (a secret your code logs or puts in a message is not masked).
pub const CREDENTIALS: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
];

/// What the trace records in place of a credential's value ([`CREDENTIALS`]).
pub const CREDENTIAL_MASK: &str = "<masked>";

/// Whether a field named `name` is one of the [`CREDENTIALS`], in any
/// case (HTTP/2 requires lower case, RFC 9113 §8.2.1, but a raw peer may
/// send `Authorization`).
///
/// ```
/// use grpc_chaos::recorder::event::is_credential;
/// assert!(is_credential("authorization"));
/// assert!(is_credential("Authorization"));
/// assert!(!is_credential("tenant"));
/// ```
pub fn is_credential(name: &str) -> bool {
    CREDENTIALS.iter().any(|c| c.eq_ignore_ascii_case(name))
}

/// Whether a field named `name` is the application's own metadata: gRPC's
/// Custom-Metadata (`PROTOCOL-HTTP2.md`: "an arbitrary set of key-value
/// pairs defined by the application layer"). Everything is, except
/// pseudo-headers (`:path` …), names starting with `grpc-` (reserved for
/// gRPC), `content-type`, and the fields gRPC stacks, HTTP stacks and the
/// harness add on their own (`te`, `user-agent`, hyper's `date`, the
/// harness's `x-grpc-chaos-call` …). A name ending in `-bin` is a binary
/// field (its value base64, [`binary_len`]).
///
/// ```
/// use grpc_chaos::recorder::event::is_custom_metadata;
/// assert!(is_custom_metadata("authorization"));
/// assert!(is_custom_metadata("trace-bin"));
/// assert!(!is_custom_metadata("grpc-timeout"));
/// assert!(!is_custom_metadata("user-agent"));
/// assert!(!is_custom_metadata(":path"));
/// ```
pub fn is_custom_metadata(name: &str) -> bool {
    !(name.starts_with(':')
        || name.starts_with("grpc-")
        || name == "content-type"
        || RESERVED.contains(&name))
}

/// The octets a binary field's value stands for: gRPC sends `-bin` values
/// base64-encoded (`PROTOCOL-HTTP2.md`, RFC 4648 §4, padded or not); `None`
/// when `value` is not base64.
///
/// ```
/// use grpc_chaos::recorder::event::binary_len;
/// assert_eq!(binary_len("AAEC"), Some(3));
/// assert_eq!(binary_len("AAE"), Some(2));
/// assert_eq!(binary_len("AA=="), Some(1));
/// assert_eq!(binary_len("A"), None);
/// assert_eq!(binary_len("a b"), None);
/// ```
pub fn binary_len(value: &str) -> Option<usize> {
    let body = value.trim_end_matches('=');
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let padding = value.len() - body.len();
    let valid = body.bytes().all(alphabet)
        && body.len() % 4 != 1
        && padding <= 2
        && (padding == 0 || value.len().is_multiple_of(4));
    valid.then_some(body.len() * 3 / 4)
}

/// `name` without an allocation when it is a name every stack sends.
pub(super) fn intern(name: &str) -> FieldName {
    ShownHeader::from_name(name)
        .map(ShownHeader::name)
        .or_else(|| RESERVED.iter().copied().find(|n| *n == name))
        .map_or_else(|| Cow::Owned(name.to_owned()), Cow::Borrowed)
}

/// What a kept-back frame still waited for when the run ended
/// ([`EventKind::FrameNeverLeft`](super::EventKind::FrameNeverLeft)).
///
/// In JSON: `{"until_us": 900000}`, `{"hold": "window"}` or
/// `{"link": "partition", "lost_with_sender": false}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum WaitingFor {
    /// A time the run did not reach, *simulated* time since its start (its
    /// own delay, or a frame's ahead of it).
    Time {
        /// When it was due.
        #[serde(rename = "until_us", serialize_with = "super::event::micros")]
        until: Duration,
    },
    /// The release of a named hold that never came (its own, or one ahead
    /// of it).
    Release {
        /// The hold's name.
        hold: String,
    },
    /// A link that holds bytes ([`Fault::partition`](crate::Fault::partition),
    /// [`Fault::pause`](crate::Fault::pause)): its repair or resume never
    /// came, or the sender's connection died with the frame still waiting
    /// (a crash stops the writer task that held it).
    Link {
        /// What held the link.
        link: LinkHold,
        /// Whether the frame was lost with its sender's connection while
        /// the link still held it, rather than waiting to the end.
        lost_with_sender: bool,
    },
}

/// What holds a link's bytes ([`WaitingFor::Link`]).
///
/// In JSON: `"partition"` or `"pause"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LinkHold {
    /// A partition, until its repair.
    Partition,
    /// A paused host, until its resume.
    Pause,
}

/// How a server's keepalive policy judged a PING
/// ([`EventKind::KeepalivePing`](super::EventKind::KeepalivePing)); see
/// [`crate::policy::PingVerdict`] for the rule behind each.
///
/// In JSON, beside the event's other fields: `"verdict": "ok"`,
/// `"verdict": "strike", "n": 1, "of": 2`, `"verdict": "too_many_pings"`,
/// `"verdict": "going_away"` or `"verdict": "strike_without_limit", "n": 5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
#[non_exhaustive]
pub enum KeepaliveVerdict {
    /// Within policy.
    Ok,
    /// Too soon: strike `n` of the `of` tolerated.
    Strike {
        /// This strike's number, 1-based.
        n: u32,
        /// Strikes tolerated.
        of: u32,
    },
    /// One strike too many: GOAWAY(ENHANCE_YOUR_CALM, `too_many_pings`)
    /// follows.
    TooManyPings,
    /// A PING after the GOAWAY was decided.
    GoingAway,
    /// Too soon: strike `n`, under a policy that tolerates any number
    /// ([`MaxStrikes::NoLimit`](crate::policy::MaxStrikes::NoLimit)).
    StrikeWithoutLimit {
        /// This strike's number, 1-based.
        n: u32,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::BlockKind;

    #[test]
    fn details_serialize_as_typed_fields() {
        let json = |d: &FrameDetail| serde_json::to_string(d).unwrap_or_default();
        assert_eq!(
            json(&FrameDetail::Data {
                len: 5,
                compressed_flag: Some(1)
            }),
            r#"{"len":5,"compressed_flag":1}"#
        );
        assert_eq!(
            json(&FrameDetail::Data {
                len: 5,
                compressed_flag: None
            }),
            r#"{"len":5,"compressed_flag":null}"#
        );
        assert_eq!(json(&FrameDetail::Empty), "{}");
        assert_eq!(
            json(&FrameDetail::GoAway(Box::new(GoAway {
                last_stream_id: 3,
                code: ErrorCode::EnhanceYourCalm,
                debug: b"too_many_pings".to_vec().into(),
            }))),
            r#"{"last_stream_id":3,"error_code":"ENHANCE_YOUR_CALM","debug":"too_many_pings"}"#
        );
        assert_eq!(
            json(&FrameDetail::Settings {
                values: vec![(SettingId::InitialWindowSize, 7)].into(),
            }),
            r#"{"settings":[{"id":"INITIAL_WINDOW_SIZE","value":7}]}"#
        );
        assert_eq!(
            json(&FrameDetail::Ping {
                payload: [0, 0, 0, 0, 0, 0, 1, 0xff],
            }),
            r#"{"payload":"00000000000001ff"}"#
        );
        let block = HeaderFields::new(
            BlockKind::TrailersOnly,
            [
                (ShownHeader::GrpcStatus, "14"),
                (ShownHeader::GrpcMessage, "a"),
            ],
        );
        assert_eq!(
            json(&FrameDetail::Headers(block)),
            r#"{"block":"trailers-only","fields":[["grpc-status","14"],["grpc-message","a"]]}"#
        );
        let flags = FrameFlags::END_STREAM | FrameFlags::ACK;
        assert_eq!(
            serde_json::to_string(&flags).unwrap_or_default(),
            r#"["END_STREAM","ACK"]"#
        );
        assert_eq!(format!("{flags:?}"), "FrameFlags(END_STREAM | ACK)");
        let waiting = |w: &WaitingFor| serde_json::to_string(w).unwrap_or_default();
        assert_eq!(
            waiting(&WaitingFor::Time {
                until: Duration::from_millis(900)
            }),
            r#"{"until_us":900000}"#
        );
        assert_eq!(
            waiting(&WaitingFor::Release {
                hold: "window".into()
            }),
            r#"{"hold":"window"}"#
        );
        assert_eq!(format!("{:?}", FrameFlags::NONE), "FrameFlags(NONE)");
    }

    /// One is stored per recorded frame: the detail stays within two
    /// words (a header block is one shared pointer, a SETTINGS list and a
    /// GOAWAY a thin one each; a PING's 8 octets and a tag), the flags one
    /// byte.
    #[test]
    fn frame_fields_stay_small() {
        assert_eq!(std::mem::size_of::<FrameDetail>(), 16);
        assert_eq!(std::mem::size_of::<HeaderFields>(), 8);
        assert_eq!(std::mem::size_of::<SettingValues>(), 8);
        assert_eq!(std::mem::size_of::<DebugData>(), 8);
        assert_eq!(std::mem::size_of::<FrameFlags>(), 1);
    }

    /// An ACK's empty list allocates nothing; a list reads back in wire
    /// order with its duplicates.
    #[test]
    fn setting_values_keep_wire_order_and_an_empty_list_is_null() {
        assert!(SettingValues::from(Vec::new()).0.is_none());
        assert!(SettingValues::from(&[][..]).0.is_none());
        let values = [
            (SettingId::MaxConcurrentStreams, 0),
            (SettingId::InitialWindowSize, 7),
            (SettingId::MaxConcurrentStreams, 1),
        ];
        let kept = SettingValues::from(values);
        assert_eq!(&*kept, &values[..]);
        assert_eq!(format!("{kept:?}"), format!("{:?}", &values[..]));
    }

    #[test]
    fn every_shown_header_is_found_by_its_name() {
        for h in ShownHeader::ALL {
            assert_eq!(ShownHeader::from_name(h.name()), Some(h));
        }
        assert_eq!(ShownHeader::from_name("user-agent"), None);
        assert_eq!(ShownHeader::from_name("Grpc-Status"), None, "names as sent");
    }
}
