//! The policy a strict server enforces on client PINGs.

mod enforce;
mod enforcer;
mod plan;
mod presets;

pub(crate) use enforce::KeepaliveEnforcement;
pub use enforcer::{Enforcer, PingVerdict, ServerFrame};
pub use plan::{reaction, Action, OpenStream, TOO_MANY_PINGS, UNAVAILABLE};

use std::time::Duration;

use serde::Serialize;

use crate::wire::ErrorCode;

/// How a strict gRPC server polices the PINGs a client sends.
///
/// A plain struct so a test can write a custom policy as a literal, usually
/// starting from a preset: `KeepalivePolicy { min_time: Duration::from_secs(60),
/// ..KeepalivePolicy::grpc_go() }`.
///
/// The presets ([`KeepalivePolicy::grpc_go`], [`KeepalivePolicy::c_core`],
/// [`KeepalivePolicy::grpc_java_netty`], [`KeepalivePolicy::etcd`]) name their
/// sources. The meaning of each field is in the [module docs](super).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct KeepalivePolicy {
    /// Minimum gap, in simulated time, between PINGs while the server has an
    /// open call (or always, when `permit_without_calls` is set). grpc-go
    /// `EnforcementPolicy.MinTime`; C-core
    /// `grpc.http2.min_ping_interval_without_data_ms`; grpc-java
    /// `permitKeepAliveTime`. 5 min by default in all three.
    pub min_time: Duration,
    /// Whether `min_time` also applies when the server has no open call.
    /// grpc-go `EnforcementPolicy.PermitWithoutStream`; C-core
    /// `grpc.keepalive_permit_without_calls`; grpc-java
    /// `permitKeepAliveWithoutCalls`. `false` by default in all three.
    pub permit_without_calls: bool,
    /// Minimum gap, in simulated time, between PINGs when the server has no
    /// open call and `permit_without_calls` is `false`. Hard-coded 2 h in
    /// grpc-go (`defaultPingTimeout`), C-core and grpc-java
    /// (`IMPLICIT_PERMIT_TIME_NANOS`).
    pub idle_min_time: Duration,
    /// How many strikes are tolerated before the GOAWAY. 2 in grpc-go
    /// (`maxPingStrikes`), C-core (`grpc.http2.max_ping_strikes`) and
    /// grpc-java (`MAX_PING_STRIKES`). To copy a C-core server's channel
    /// argument, write [`MaxStrikes::c_core`]`(value)`: its 0 means "no
    /// limit" there and here.
    pub max_strikes: MaxStrikes,
    /// Which frames *sent by the server* reset the strike count and the
    /// reference point.
    pub reset_on: ResetOn,
    /// What a PING's gap is measured from.
    pub gap_from: GapFrom,
    /// What the server does to its open calls after the GOAWAY.
    pub on_too_many_pings: OnTooManyPings,
}

impl KeepalivePolicy {
    /// The minimum gap, in simulated time, that applies to a PING arriving
    /// while the server has `active_calls` open calls.
    pub fn allowed_gap(&self, active_calls: usize) -> Duration {
        if active_calls == 0 && !self.permit_without_calls {
            self.idle_min_time
        } else {
            self.min_time
        }
    }
}

/// Which frames sent by the server reset the strike count (and the reference
/// point the next PING's gap is measured from).
///
/// HEADERS includes trailers (HEADERS with END_STREAM) in every modelled
/// server: grpc-go's trailer frame carries the same `setResetPingStrikes`
/// hook, C-core resets in `FlushTrailingMetadata`, grpc-java's frame writer
/// hook sees every `writeHeaders`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ResetOn {
    /// A HEADERS frame (response headers, trailers or trailers-only).
    pub headers: bool,
    /// A DATA frame.
    pub data: bool,
    /// A WINDOW_UPDATE frame (stream or connection level).
    pub window_update: bool,
    /// The WINDOW_UPDATEs a C-core server writes after it consumes client
    /// DATA, which the emulated server (h2) does not write: client DATA
    /// without END_STREAM, with payload, on a stream neither side reset
    /// resets strikes once the server has read it (at once, or after the
    /// PINGs in flight ahead of it), and again at the server's next write
    /// (see [`KeepalivePolicy::c_core`] for the source). The trace shows
    /// each reset that clears strikes (`ping strikes reset (1 cleared): the
    /// server's WINDOW_UPDATE for player's DATA on s1, as C-core writes it
    /// (not on the wire)`).
    pub client_data: bool,
}

impl ResetOn {
    /// HEADERS or DATA: grpc-go and grpc-java.
    pub const HEADERS_OR_DATA: ResetOn = ResetOn {
        headers: true,
        data: true,
        window_update: false,
        client_data: false,
    };
    /// HEADERS, DATA or WINDOW_UPDATE written by the server, without the
    /// WINDOW_UPDATEs C-core writes for client DATA ([`ResetOn::C_CORE`]
    /// has them).
    pub const HEADERS_DATA_OR_WINDOW_UPDATE: ResetOn = ResetOn {
        headers: true,
        data: true,
        window_update: true,
        client_data: false,
    };
    /// C-core: HEADERS, DATA or WINDOW_UPDATE written by the server
    /// (`grpc_chttp2_reset_ping_clock` is called when flushing each of
    /// them), and the WINDOW_UPDATEs it writes for client DATA
    /// ([`ResetOn::client_data`]).
    pub const C_CORE: ResetOn = ResetOn {
        headers: true,
        data: true,
        window_update: true,
        client_data: true,
    };
    /// Nothing resets: every early PING counts until the GOAWAY.
    pub const NEVER: ResetOn = ResetOn {
        headers: false,
        data: false,
        window_update: false,
        client_data: false,
    };

    /// Whether the server sending `frame` resets the count.
    pub fn resets(&self, frame: ServerFrame) -> bool {
        match frame {
            ServerFrame::Headers => self.headers,
            ServerFrame::Data => self.data,
            ServerFrame::WindowUpdate => self.window_update,
        }
    }
}

/// How many ping strikes a server tolerates before its GOAWAY
/// (GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings") comes with the strike after
/// the last one tolerated).
///
/// Servers spell this differently; copy the server's own setting with the
/// constructor named after it, so that the number means what it means
/// there:
///
/// | server | setting | here |
/// |---|---|---|
/// | grpc-go | `maxPingStrikes` = 2, a constant | [`MaxStrikes::GRPC_GO`] |
/// | C-core | `grpc.http2.max_ping_strikes` (default 2; **0 = no limit**) | [`MaxStrikes::c_core`]`(value)` |
/// | grpc-java | `MAX_PING_STRIKES` = 2, a constant | [`MaxStrikes::GRPC_JAVA`] |
///
/// ```
/// use grpc_chaos::policy::MaxStrikes;
/// assert_eq!(MaxStrikes::c_core(0), MaxStrikes::NoLimit);
/// assert_eq!(MaxStrikes::c_core(2), MaxStrikes::Tolerate(2));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MaxStrikes {
    /// `n` strikes are tolerated; the GOAWAY comes with strike `n + 1`
    /// (`Tolerate(0)`: with the first strike).
    Tolerate(u32),
    /// Strikes are counted (`strike 5, no limit` in the trace) and never
    /// lead to a GOAWAY.
    NoLimit,
}

impl MaxStrikes {
    /// grpc-go: `maxPingStrikes = 2` (`internal/transport/http2_server.go`;
    /// not configurable).
    pub const GRPC_GO: MaxStrikes = MaxStrikes::Tolerate(2);
    /// grpc-java: `KeepAliveEnforcer.MAX_PING_STRIKES = 2` (not
    /// configurable).
    pub const GRPC_JAVA: MaxStrikes = MaxStrikes::Tolerate(2);

    /// A C-core server's `grpc.http2.max_ping_strikes` channel argument,
    /// read as C-core reads it (grpc `src/core/ext/transport/chttp2/transport/ping_abuse_policy.cc`:
    /// the value is clamped to at least 0, and `ReceivedOnePing` returns
    /// `ping_strikes_ > max_ping_strikes_ && max_ping_strikes_ != 0`): 0 —
    /// or a negative value — means no limit ([`MaxStrikes::NoLimit`]),
    /// `n` means `n` tolerated. Read in the code, and measured with grpcio
    /// 1.85 for 0 (FACTS.md).
    pub const fn c_core(value: i32) -> MaxStrikes {
        if value <= 0 {
            MaxStrikes::NoLimit
        } else {
            MaxStrikes::Tolerate(value.unsigned_abs())
        }
    }
}

/// What a PING's gap is measured from. See the [module docs](super).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum GapFrom {
    /// The previous PING received, strike or not; none for the first PING
    /// and none right after a reset, so such a PING never strikes.
    /// grpc-go (`lastPingAt`), C-core (`last_ping_recv_time_`).
    PreviousPing,
    /// The last PING that did not strike; initially, and after a reset, the
    /// moment the connection opened. grpc-java (`lastValidPingTime`, reset to
    /// `epoch`).
    LastAcceptedPing,
}

/// What the server does to its open calls after sending
/// GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings"). See [`reaction`](super::reaction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum OnTooManyPings {
    /// Close the connection right after the GOAWAY; nothing is sent per call
    /// (grpc-go `handlePing` queues the GOAWAY with `closeConn`).
    CloseAfterGoAway,
    /// For each open call, a trailers-only response (or trailers, when the
    /// call's response headers were already sent) with this `grpc-status`
    /// and `grpc-message`, then RST_STREAM(NO_ERROR); then close. C-core,
    /// measured with grpcio 1.85: status 14 (UNAVAILABLE), "Too many pings".
    TrailersOnlyThenReset {
        /// `grpc-status` code (14 = UNAVAILABLE in C-core).
        status: u32,
        /// `grpc-message` text ("Too many pings" in C-core).
        message: &'static str,
    },
    /// For each open call, RST_STREAM with this error code; then close.
    /// grpc-java Netty `forcefulClose` resets each stream with CANCEL (8);
    /// the RESOURCE_EXHAUSTED "Too many pings from client" status it builds
    /// stays on the server side.
    ResetStreamsThenClose {
        /// RST_STREAM error code (RFC 9113 §7; CANCEL in grpc-java).
        code: ErrorCode,
    },
}
