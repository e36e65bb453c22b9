//! Presets: the enforcement policies of real gRPC servers, with sources.

use std::time::Duration;

use super::plan::UNAVAILABLE;
use super::{GapFrom, KeepalivePolicy, MaxStrikes, OnTooManyPings, ResetOn};
use crate::wire::ErrorCode;

/// 5 min: the default minimum PING gap of grpc-go
/// (`defaultKeepalivePolicyMinTime`), C-core
/// (`g_default_min_recv_ping_interval_without_data`) and grpc-java
/// (`NettyServerBuilder.permitKeepAliveTimeInNanos`).
const FIVE_MINUTES: Duration = Duration::from_secs(5 * 60);

/// 2 h: the gap required with no open call unless pings are permitted
/// without calls (grpc-go `defaultPingTimeout`, C-core
/// `RecvPingIntervalWithoutData`, grpc-java `IMPLICIT_PERMIT_TIME_NANOS`).
const TWO_HOURS: Duration = Duration::from_secs(2 * 60 * 60);

impl KeepalivePolicy {
    /// A grpc-go server with the default `keepalive.EnforcementPolicy`.
    ///
    /// Source: grpc-go `keepalive/keepalive.go`, `internal/transport/defaults.go`
    /// and `http2_server.go` `handlePing` (read in the code, not measured):
    ///
    /// | field | value |
    /// |---|---|
    /// | `min_time` | 5 min (`MinTime`; 0 there means this default) |
    /// | `permit_without_calls` | `false` (`PermitWithoutStream`) |
    /// | `idle_min_time` | 2 h (`defaultPingTimeout`) |
    /// | `max_strikes` | 2 (`maxPingStrikes`, not configurable) |
    /// | `reset_on` | HEADERS (trailers too) or DATA written by the server |
    /// | `gap_from` | previous PING (`lastPingAt`, updated on every PING) |
    /// | `on_too_many_pings` | close right after the GOAWAY |
    ///
    /// The GOAWAY's last-stream-id is `maxStreamID`, the highest stream id
    /// the server has seen.
    pub fn grpc_go() -> Self {
        KeepalivePolicy {
            min_time: FIVE_MINUTES,
            permit_without_calls: false,
            idle_min_time: TWO_HOURS,
            max_strikes: MaxStrikes::GRPC_GO,
            reset_on: ResetOn::HEADERS_OR_DATA,
            gap_from: GapFrom::PreviousPing,
            on_too_many_pings: OnTooManyPings::CloseAfterGoAway,
        }
    }

    /// A gRPC C-core server (C++, Python `grpcio`, Ruby, …) with default
    /// channel arguments.
    ///
    /// Sources: measured against grpcio 1.85 (`FACTS.md`, "Keepalive"), and
    /// C-core `chttp2/transport/ping_abuse_policy.cc`, `writing.cc`,
    /// `chttp2_transport.cc` (`grpc_chttp2_exceeded_ping_strikes`):
    ///
    /// | field | value |
    /// |---|---|
    /// | `min_time` | 5 min (`grpc.http2.min_ping_interval_without_data_ms`; measured: a misspelt key is silently ignored) |
    /// | `permit_without_calls` | `false` (`grpc.keepalive_permit_without_calls`) |
    /// | `idle_min_time` | 2 h (measured) |
    /// | `max_strikes` | `MaxStrikes::c_core(2)` (`grpc.http2.max_ping_strikes`; measured: 4th PING → GOAWAY; 0 = no limit, measured) |
    /// | `reset_on` | [`ResetOn::C_CORE`]: HEADERS, DATA or WINDOW_UPDATE written by the server (code), and the WINDOW_UPDATEs it writes for client DATA (measured, code) |
    /// | `gap_from` | previous PING (`last_ping_recv_time_`; measured: the first PING never counts) |
    /// | `on_too_many_pings` | per open call trailers-only `grpc-status: 14`, `grpc-message: Too many pings`, then RST_STREAM(NO_ERROR); then close (measured) |
    ///
    /// The GOAWAY's last-stream-id is the last stream the server accepted
    /// (measured). To copy a server whose `grpc.http2.max_ping_strikes` is
    /// set, write `max_strikes: MaxStrikes::c_core(value)` (0 there means
    /// "never GOAWAY", and so it does here).
    ///
    /// **Client DATA resets strikes.** C-core resets its ping strikes
    /// (`grpc_chttp2_reset_ping_clock` → `Chttp2PingAbusePolicy::ResetPingStrikes`)
    /// whenever it *writes* HEADERS, DATA or a WINDOW_UPDATE (grpc
    /// `src/core/ext/transport/chttp2/transport/writing.cc`:
    /// `FlushInitialMetadata`, `FlushWindowUpdates` of the stream and of
    /// the transport, `FlushData`, `FlushTrailingMetadata`; read in the
    /// code), and after it consumes a client message it writes a stream
    /// and a connection WINDOW_UPDATE (+9 for a 4-octet message), then +5
    /// for the next message header with its next write, which can be a PING
    /// ACK (measured, grpcio 1.85, FACTS.md). h2 writes no such small
    /// updates, so [`ResetOn::client_data`] models them: a client-streaming
    /// call whose client sends every 15 s under a 10 s keepalive is never
    /// cut, and a silent upload is cut after its 5th PING, not its 4th, as
    /// measured. DATA with END_STREAM closes the stream's read side, and
    /// C-core then writes no stream update (`if (s_->read_closed) return;`),
    /// so a unary call's DATA resets nothing (measured: with a unary call
    /// open, the 4th PING gets the GOAWAY).
    pub fn c_core() -> Self {
        KeepalivePolicy {
            min_time: FIVE_MINUTES,
            permit_without_calls: false,
            idle_min_time: TWO_HOURS,
            max_strikes: MaxStrikes::c_core(2),
            reset_on: ResetOn::C_CORE,
            gap_from: GapFrom::PreviousPing,
            on_too_many_pings: OnTooManyPings::TrailersOnlyThenReset {
                status: UNAVAILABLE,
                message: "Too many pings",
            },
        }
    }

    /// A grpc-java server on Netty with the default
    /// `permitKeepAliveTime` / `permitKeepAliveWithoutCalls`.
    ///
    /// Source: grpc-java `netty/KeepAliveEnforcer.java`,
    /// `NettyServerHandler.java` (`WriteMonitoringFrameWriter`, `onPingRead`,
    /// `forcefulClose`), `NettyServerBuilder.java` (read in the code, not
    /// measured):
    ///
    /// | field | value |
    /// |---|---|
    /// | `min_time` | 5 min (`permitKeepAliveTime`; Java caps it at 2 h) |
    /// | `permit_without_calls` | `false` |
    /// | `idle_min_time` | 2 h (`IMPLICIT_PERMIT_TIME_NANOS`) |
    /// | `max_strikes` | 2 (`MAX_PING_STRIKES`) |
    /// | `reset_on` | HEADERS or DATA written by the server (`resetCounters`) |
    /// | `gap_from` | last PING that did not strike; initially, and after a reset, the connection's open time |
    /// | `on_too_many_pings` | RST_STREAM(CANCEL) per open call, then close |
    ///
    /// Because the reference starts at the connection's open time, a client
    /// pinging sooner than 5 min after connecting strikes on its *first*
    /// PING, so a steady too-fast client gets the GOAWAY on its 3rd PING, not
    /// its 4th. Create the enforcer with [`Enforcer::opened_at`] so the open
    /// time is right.
    ///
    /// [`Enforcer::opened_at`]: super::Enforcer::opened_at
    pub fn grpc_java_netty() -> Self {
        KeepalivePolicy {
            min_time: FIVE_MINUTES,
            permit_without_calls: false,
            idle_min_time: TWO_HOURS,
            max_strikes: MaxStrikes::GRPC_JAVA,
            reset_on: ResetOn::HEADERS_OR_DATA,
            gap_from: GapFrom::LastAcceptedPing,
            on_too_many_pings: OnTooManyPings::ResetStreamsThenClose {
                code: ErrorCode::Cancel,
            },
        }
    }

    /// An etcd server with its default gRPC keepalive settings: a grpc-go
    /// server whose `MinTime` is lowered to 5 s.
    ///
    /// Source: etcd `server/embed/config.go` (`DefaultGRPCKeepAliveMinTime =
    /// 5 * time.Second`) and `server/embed/etcd.go` `serveClients`, which
    /// passes `keepalive.EnforcementPolicy{MinTime: cfg.GRPCKeepAliveMinTime,
    /// PermitWithoutStream: false}`. So etcd does **not** permit pings without
    /// calls: an idle connection (no Watch, no Lease stream) pinged every 30 s
    /// still meets the 2 h rule. kube-apiserver never notices because it
    /// always holds Watch streams open (seed 000 §6.1). Everything else is
    /// [`KeepalivePolicy::grpc_go`].
    pub fn etcd() -> Self {
        KeepalivePolicy {
            min_time: Duration::from_secs(5),
            ..Self::grpc_go()
        }
    }
}
