//! HTTP/2 frame vocabulary (RFC 9113 §4, §6, §7): frame types, error codes,
//! setting identifiers, and the decoded [`Frame`] record.
//!
//! Names render exactly as RFC 9113 spells them (`RST_STREAM`,
//! `ENHANCE_YOUR_CALM`), because rendered traces are snapshot-tested and must
//! read like the RFC.

use std::fmt;

use super::block::HeaderBlock;
use std::sync::Arc;

/// Length of the fixed frame header, in octets (RFC 9113 §4.1).
pub const FRAME_HEADER_LEN: usize = 9;

/// Largest payload length the 24-bit length field can carry, in octets:
/// 16,777,215 = 2^24 - 1, the upper bound of `SETTINGS_MAX_FRAME_SIZE`
/// (RFC 9113 §4.2, §6.5.2).
pub const MAX_FRAME_SIZE_LIMIT: u32 = (1 << 24) - 1;

/// The `SETTINGS_MAX_FRAME_SIZE` every peer starts with and must accept,
/// in octets: 16,384 (RFC 9113 §4.2, §6.5.2).
pub const DEFAULT_MAX_FRAME_SIZE: u32 = 1 << 14;

/// The connection preface a client sends before its first frame
/// (RFC 9113 §3.4): 24 octets.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame flag bits (RFC 9113 §6). Each bit means something only on the frame
/// types listed beside it.
pub mod flags {
    /// `END_STREAM` (0x01) on DATA and HEADERS (RFC 9113 §6.1, §6.2).
    pub const END_STREAM: u8 = 0x01;
    /// `ACK` (0x01) on SETTINGS and PING (RFC 9113 §6.5, §6.7).
    pub const ACK: u8 = 0x01;
    /// `END_HEADERS` (0x04) on HEADERS, PUSH_PROMISE and CONTINUATION
    /// (RFC 9113 §6.2, §6.6, §6.10).
    pub const END_HEADERS: u8 = 0x04;
    /// `PADDED` (0x08) on DATA, HEADERS and PUSH_PROMISE (RFC 9113 §6.1).
    pub const PADDED: u8 = 0x08;
    /// `PRIORITY` (0x20) on HEADERS (RFC 9113 §6.2; deprecated by §5.3.2
    /// but still parsed, because it changes where the field block starts).
    pub const PRIORITY: u8 = 0x20;
}

/// Defines a `u8`/`u16`/`u32`-coded registry enum with RFC names, an
/// `Unknown` catch-all, lossless conversion both ways and `Display`.
macro_rules! registry {
    (
        $(#[$meta:meta])*
        $name:ident($repr:ty), unknown = $unknown_fmt:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $text:literal, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A code this version does not know; the raw value is kept so
            /// that it renders and round-trips unchanged.
            Unknown($repr),
        }

        impl $name {
            /// The numeric code carried on the wire.
            pub fn code(self) -> $repr {
                match self {
                    $( Self::$variant => $code, )*
                    Self::Unknown(code) => code,
                }
            }
        }

        impl From<$repr> for $name {
            fn from(code: $repr) -> Self {
                match code {
                    $( $code => Self::$variant, )*
                    other => Self::Unknown(other),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $( Self::$variant => f.write_str($text), )*
                    Self::Unknown(code) => write!(f, $unknown_fmt, code),
                }
            }
        }

        /// Serialized as its `Display` name (`"ENHANCE_YOUR_CALM"`).
        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

registry! {
    /// Frame type (RFC 9113 §6, registry in §11.2). `Display` gives the RFC
    /// name, e.g. `RST_STREAM`; unknown types render as `UNKNOWN(0xNN)`.
    FrameType(u8), unknown = "UNKNOWN({:#04x})" {
        /// `DATA` (0x00, §6.1).
        Data = 0x0 => "DATA",
        /// `HEADERS` (0x01, §6.2).
        Headers = 0x1 => "HEADERS",
        /// `PRIORITY` (0x02, §6.3).
        Priority = 0x2 => "PRIORITY",
        /// `RST_STREAM` (0x03, §6.4).
        RstStream = 0x3 => "RST_STREAM",
        /// `SETTINGS` (0x04, §6.5).
        Settings = 0x4 => "SETTINGS",
        /// `PUSH_PROMISE` (0x05, §6.6).
        PushPromise = 0x5 => "PUSH_PROMISE",
        /// `PING` (0x06, §6.7).
        Ping = 0x6 => "PING",
        /// `GOAWAY` (0x07, §6.8).
        GoAway = 0x7 => "GOAWAY",
        /// `WINDOW_UPDATE` (0x08, §6.9).
        WindowUpdate = 0x8 => "WINDOW_UPDATE",
        /// `CONTINUATION` (0x09, §6.10).
        Continuation = 0x9 => "CONTINUATION",
    }
}

registry! {
    /// Error code of RST_STREAM and GOAWAY (RFC 9113 §7). `Display` gives the
    /// RFC name, e.g. `ENHANCE_YOUR_CALM`; unknown codes render as
    /// `UNKNOWN(0xNN)` (§7: they carry no special meaning).
    ErrorCode(u32), unknown = "UNKNOWN({:#04x})" {
        /// `NO_ERROR` (0x00): graceful shutdown.
        NoError = 0x0 => "NO_ERROR",
        /// `PROTOCOL_ERROR` (0x01).
        ProtocolError = 0x1 => "PROTOCOL_ERROR",
        /// `INTERNAL_ERROR` (0x02).
        InternalError = 0x2 => "INTERNAL_ERROR",
        /// `FLOW_CONTROL_ERROR` (0x03).
        FlowControlError = 0x3 => "FLOW_CONTROL_ERROR",
        /// `SETTINGS_TIMEOUT` (0x04).
        SettingsTimeout = 0x4 => "SETTINGS_TIMEOUT",
        /// `STREAM_CLOSED` (0x05).
        StreamClosed = 0x5 => "STREAM_CLOSED",
        /// `FRAME_SIZE_ERROR` (0x06).
        FrameSizeError = 0x6 => "FRAME_SIZE_ERROR",
        /// `REFUSED_STREAM` (0x07): the stream was not processed.
        RefusedStream = 0x7 => "REFUSED_STREAM",
        /// `CANCEL` (0x08): the stream is no longer needed.
        Cancel = 0x8 => "CANCEL",
        /// `COMPRESSION_ERROR` (0x09): the HPACK context is broken.
        CompressionError = 0x9 => "COMPRESSION_ERROR",
        /// `CONNECT_ERROR` (0x0a).
        ConnectError = 0xa => "CONNECT_ERROR",
        /// `ENHANCE_YOUR_CALM` (0x0b): the peer is generating excessive load
        /// (grpc-go and C-core send it with debug data `too_many_pings`).
        EnhanceYourCalm = 0xb => "ENHANCE_YOUR_CALM",
        /// `INADEQUATE_SECURITY` (0x0c).
        InadequateSecurity = 0xc => "INADEQUATE_SECURITY",
        /// `HTTP_1_1_REQUIRED` (0x0d).
        Http11Required = 0xd => "HTTP_1_1_REQUIRED",
    }
}

registry! {
    /// SETTINGS parameter identifier (RFC 9113 §6.5.2; RFC 8441 §3 for
    /// `ENABLE_CONNECT_PROTOCOL`). `Display` gives the RFC name without the
    /// `SETTINGS_` prefix, e.g. `MAX_CONCURRENT_STREAMS`; unknown ids render as
    /// `UNKNOWN(0xNN)` (§6.5.2: they must be ignored).
    SettingId(u16), unknown = "UNKNOWN({:#04x})" {
        /// `SETTINGS_HEADER_TABLE_SIZE` (0x01): HPACK dynamic table limit, octets.
        HeaderTableSize = 0x1 => "HEADER_TABLE_SIZE",
        /// `SETTINGS_ENABLE_PUSH` (0x02): 0 or 1.
        EnablePush = 0x2 => "ENABLE_PUSH",
        /// `SETTINGS_MAX_CONCURRENT_STREAMS` (0x03): streams.
        MaxConcurrentStreams = 0x3 => "MAX_CONCURRENT_STREAMS",
        /// `SETTINGS_INITIAL_WINDOW_SIZE` (0x04): stream flow-control window, octets.
        InitialWindowSize = 0x4 => "INITIAL_WINDOW_SIZE",
        /// `SETTINGS_MAX_FRAME_SIZE` (0x05): largest payload accepted, octets.
        MaxFrameSize = 0x5 => "MAX_FRAME_SIZE",
        /// `SETTINGS_MAX_HEADER_LIST_SIZE` (0x06): advisory, octets.
        MaxHeaderListSize = 0x6 => "MAX_HEADER_LIST_SIZE",
        /// `SETTINGS_ENABLE_CONNECT_PROTOCOL` (0x08, RFC 8441): 0 or 1.
        EnableConnectProtocol = 0x8 => "ENABLE_CONNECT_PROTOCOL",
    }
}

/// One complete HTTP/2 frame as seen on one direction of a connection.
///
/// A `Frame` is produced only once its last octet has been fed to the
/// decoder, so the bytes `offset .. offset + wire_len()` of that direction are
/// exactly this frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Byte offset of the frame's first header octet in this direction's
    /// stream, counted from the first octet ever fed (the client preface, if
    /// any, occupies offsets 0..24).
    pub offset: u64,
    /// Payload length from the frame header, in octets (RFC 9113 §4.1),
    /// excluding the 9-octet frame header.
    pub len: u32,
    /// Frame type.
    pub ty: FrameType,
    /// Raw flag bits (see [`flags`]); [`Detail`] decodes the ones that matter.
    pub flags: u8,
    /// Stream identifier with the reserved bit cleared (RFC 9113 §4.1: the
    /// R bit is ignored on receipt). 0 means the connection.
    pub stream_id: u32,
    /// What the payload says.
    pub detail: Detail,
}

impl Frame {
    /// Octets this frame occupies on the wire: the 9-octet header plus
    /// [`Frame::len`].
    pub fn wire_len(&self) -> u64 {
        FRAME_HEADER_LEN as u64 + u64::from(self.len)
    }

    /// Whether the given flag bit (see [`flags`]) is set.
    pub fn has_flag(&self, flag: u8) -> bool {
        self.flags & flag == flag
    }
}

/// The decoded payload of a frame, one variant per frame type.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Detail {
    /// DATA (RFC 9113 §6.1). The payload itself is not kept.
    Data {
        /// `END_STREAM` flag: the sender's half of the stream is closed.
        end_stream: bool,
        /// Value of the Pad Length field when `PADDED` is set: octets of
        /// padding after the data (the 1-octet Pad Length field itself not
        /// included). `None` when the frame is not padded.
        padded_len: Option<u8>,
        /// Octets of application data: the frame's payload length minus the
        /// Pad Length field and the padding. Flow control counts the whole
        /// payload length (§6.9.1).
        data_len: u32,
        /// The Compressed-Flag octet (gRPC `PROTOCOL-HTTP2.md`,
        /// Length-Prefixed-Message: 0 identity, 1 compressed with the
        /// stream's `grpc-encoding`) of the first message whose 5-octet
        /// prefix begins in this frame; `None` when none does (the frame
        /// carries the rest of a message, or nothing). Followed per stream
        /// by the wire decoder (`Decoder`, public with the `unstable-codec`
        /// feature), across frames.
        compressed_flag: Option<u8>,
    },
    /// HEADERS (RFC 9113 §6.2), reported once the field block is complete:
    /// with `END_HEADERS` set, or after the last CONTINUATION (§6.10), in
    /// which case the CONTINUATION frames are reported right after it.
    Headers {
        /// `END_STREAM` flag (on the HEADERS frame itself, §6.2).
        end_stream: bool,
        /// `END_HEADERS` flag of this HEADERS frame; `false` means
        /// CONTINUATION frames follow.
        end_headers: bool,
        /// Value of the Pad Length field when `PADDED` is set, octets.
        padded_len: Option<u8>,
        /// The decoded field block (HEADERS plus its CONTINUATIONs), behind
        /// a pointer because it is by far the largest detail, shared
        /// because a block that repeats is decoded once (the same block
        /// for the same octets while the HPACK table stays as it was).
        block: Arc<HeaderBlock>,
    },
    /// PRIORITY (RFC 9113 §6.3; deprecated, §5.3.2). Not interpreted.
    Priority,
    /// RST_STREAM (RFC 9113 §6.4).
    RstStream {
        /// Why the stream was reset.
        code: ErrorCode,
    },
    /// SETTINGS (RFC 9113 §6.5).
    Settings {
        /// `ACK` flag: acknowledges the peer's SETTINGS; carries no values.
        ack: bool,
        /// Parameters in wire order, duplicates kept (§6.5.3: the last one
        /// wins). Values are not range-checked here.
        values: Vec<(SettingId, u32)>,
    },
    /// PUSH_PROMISE (RFC 9113 §6.6). gRPC never uses server push; the field
    /// block is decoded anyway because it changes the HPACK state.
    PushPromise {
        /// Stream the server reserves, reserved bit cleared.
        promised_stream_id: u32,
        /// `END_HEADERS` flag of this frame.
        end_headers: bool,
        /// The promised request's field block (kind
        /// [`BlockKind::Request`](super::BlockKind::Request)).
        block: Arc<HeaderBlock>,
    },
    /// PING (RFC 9113 §6.7).
    Ping {
        /// `ACK` flag: this is the response to a PING.
        ack: bool,
        /// The 8 opaque octets, echoed unchanged by the ACK.
        opaque: [u8; 8],
    },
    /// GOAWAY (RFC 9113 §6.8).
    GoAway {
        /// Highest peer-initiated stream the sender may have processed,
        /// reserved bit cleared.
        last_stream_id: u32,
        /// Why the connection is going away.
        code: ErrorCode,
        /// Additional debug data, e.g. `too_many_pings`; may be empty.
        debug: Vec<u8>,
    },
    /// WINDOW_UPDATE (RFC 9113 §6.9).
    WindowUpdate {
        /// Window size increment in octets, reserved bit cleared
        /// (1..=2^31-1; 0 is a protocol error that is reported as is).
        increment: u32,
    },
    /// CONTINUATION (RFC 9113 §6.10); its fragment is part of the
    /// preceding HEADERS or PUSH_PROMISE block.
    Continuation {
        /// `END_HEADERS` flag: this frame ends the field block.
        end_headers: bool,
    },
    /// A frame type this decoder does not know; ignored as RFC 9113 §4.1
    /// and §5.5 require. The payload is not kept.
    Unknown,
}
