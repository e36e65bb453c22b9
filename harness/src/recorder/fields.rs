//! The typed fields of frame and keepalive events: what the wire tap saw, as
//! data. Queries match on these; the words a render prints for them are made
//! in one place, [`crate::trace`]'s row builder (its `words` module, which
//! also gives these types their `Display`).
//!
//! Kept small on purpose: one is stored per recorded frame. Everything but a
//! HEADERS block's shown fields, a SETTINGS list and GOAWAY debug data is
//! `Copy` and inline; those three are boxed slices, and empty ones do not
//! allocate.

use std::time::Duration;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::wire::{BlockKind, ErrorCode, SettingId};

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
    /// DATA (§6.1). JSON: `{"len": 16384}`.
    Data {
        /// Octets of application data, padding excluded.
        len: u32,
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
        /// `(identifier, value)` pairs.
        values: Box<[(SettingId, u32)]>,
    },
    /// PING (§6.7); whether it is the ACK is in the flags. JSON:
    /// `{"payload": "0000000000000001"}` (hex).
    Ping {
        /// The 8 opaque octets.
        payload: [u8; 8],
    },
    /// GOAWAY (§6.8). JSON: `{"last_stream_id": 1, "error_code":
    /// "ENHANCE_YOUR_CALM", "debug": "too_many_pings"}` (`debug` as UTF-8,
    /// invalid sequences replaced by U+FFFD).
    GoAway {
        /// Highest peer-initiated stream the sender may have processed.
        last_stream_id: u32,
        /// Why the connection is going away.
        code: ErrorCode,
        /// Additional debug data (`too_many_pings`); may be empty.
        debug: Box<[u8]>,
    },
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
            Self::Data { len } => map.serialize_entry("len", len)?,
            Self::Headers(block) => {
                map.serialize_entry("block", &block.kind.to_string())?;
                map.serialize_entry("fields", &Fields(&block.fields))?;
            }
            Self::RstStream { code } => map.serialize_entry("error_code", &code.to_string())?,
            Self::Settings { values } => map.serialize_entry("settings", &Settings(values))?,
            Self::Ping { payload } => map.serialize_entry("payload", &hex(payload))?,
            Self::GoAway {
                last_stream_id,
                code,
                debug,
            } => {
                map.serialize_entry("last_stream_id", last_stream_id)?;
                map.serialize_entry("error_code", &code.to_string())?;
                map.serialize_entry("debug", &String::from_utf8_lossy(debug))?;
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

struct Fields<'a>(&'a [(ShownHeader, Box<str>)]);

impl Serialize for Fields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(name, value)| (name.name(), &**value)))
    }
}

/// A header field a trace keeps from a field block: the pseudo-headers that
/// say what a block is (RFC 9113 §8.3) and the gRPC fields of
/// `PROTOCOL-HTTP2.md` and gRFC A6. The rest (content-type, user-agent, the
/// harness's own call-id header …) is not kept.
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
}

impl ShownHeader {
    const ALL: [Self; 8] = [
        Self::Method,
        Self::Path,
        Self::Status,
        Self::GrpcTimeout,
        Self::GrpcStatus,
        Self::GrpcMessage,
        Self::GrpcRetryPushbackMs,
        Self::GrpcPreviousRpcAttempts,
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
        }
    }

    /// The kept field named `name` (compared as sent: HTTP/2 names are lower
    /// case), if it is one.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|h| h.name() == name)
    }

    /// Whether it is a pseudo-header (`:method`, `:path`, `:status`).
    pub fn is_pseudo(self) -> bool {
        matches!(self, Self::Method | Self::Path | Self::Status)
    }
}

/// The kept fields of one field block ([`ShownHeader`]), every occurrence
/// in wire order, values as sent (`date` never among them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderFields {
    kind: BlockKind,
    fields: Box<[(ShownHeader, Box<str>)]>,
}

impl HeaderFields {
    /// A block of `kind` with `fields` in wire order.
    ///
    /// ```
    /// use grpc_chaos::recorder::event::{HeaderFields, ShownHeader};
    /// use grpc_chaos::wire::BlockKind;
    /// let block = HeaderFields::new(
    ///     BlockKind::Request,
    ///     [(ShownHeader::Method, "POST"), (ShownHeader::Path, "/tt.v1.Store/Save")],
    /// );
    /// assert_eq!(block.get(ShownHeader::Path), Some("/tt.v1.Store/Save"));
    /// ```
    pub fn new<V: Into<Box<str>>>(
        kind: BlockKind,
        fields: impl IntoIterator<Item = (ShownHeader, V)>,
    ) -> Self {
        Self {
            kind,
            fields: fields.into_iter().map(|(h, v)| (h, v.into())).collect(),
        }
    }

    /// Request, response, trailers or trailers-only.
    pub fn kind(&self) -> BlockKind {
        self.kind
    }

    /// Changes what the block counts as (an injected block decoded on its
    /// own cannot know it follows response headers).
    pub(crate) fn set_kind(&mut self, kind: BlockKind) {
        self.kind = kind;
    }

    /// The first value of `field`, as sent.
    pub fn get(&self, field: ShownHeader) -> Option<&str> {
        self.iter().find(|(h, _)| *h == field).map(|(_, v)| v)
    }

    /// Every kept field in wire order.
    pub fn iter(&self) -> impl Iterator<Item = (ShownHeader, &str)> + '_ {
        self.fields.iter().map(|(h, v)| (*h, &**v))
    }

    /// The `:path` of a request block; `None` for responses and trailers.
    pub fn request_path(&self) -> Option<&str> {
        match self.kind {
            BlockKind::Request => self.get(ShownHeader::Path),
            _ => None,
        }
    }
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

    #[test]
    fn details_serialize_as_typed_fields() {
        let json = |d: &FrameDetail| serde_json::to_string(d).unwrap_or_default();
        assert_eq!(json(&FrameDetail::Data { len: 5 }), r#"{"len":5}"#);
        assert_eq!(json(&FrameDetail::Empty), "{}");
        assert_eq!(
            json(&FrameDetail::GoAway {
                last_stream_id: 3,
                code: ErrorCode::EnhanceYourCalm,
                debug: b"too_many_pings".to_vec().into(),
            }),
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

    /// One is stored per recorded frame: the detail stays within four
    /// words, the flags one byte.
    #[test]
    fn frame_fields_stay_small() {
        assert!(std::mem::size_of::<FrameDetail>() <= 32);
        assert_eq!(std::mem::size_of::<FrameFlags>(), 1);
    }

    #[test]
    fn every_shown_header_is_found_by_its_name() {
        for h in ShownHeader::ALL {
            assert_eq!(ShownHeader::from_name(h.name()), Some(h));
        }
        assert_eq!(ShownHeader::from_name("content-type"), None);
        assert_eq!(ShownHeader::from_name("Grpc-Status"), None, "names as sent");
    }
}
