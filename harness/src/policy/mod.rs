//! Connection policies ([`ConnectionPolicy`]: a trait for code that sits on
//! a connection in the wire tap, reacts to frames and timers, and closes or
//! injects), and their first implementation: emulation of a strict gRPC
//! server's keepalive enforcement (pure logic, no I/O), with
//! [`check_keepalive`](crate::check::check_keepalive), which runs it against a real tonic client.
//!
//! No Rust server polices client PINGs (h2 acks every one), but grpc-go,
//! gRPC C-core, grpc-java and etcd servers do. This module is the state
//! machine a wire tap drives to make a tonic server behave like one of them:
//! it watches the PINGs the server *receives* and the frames the server
//! *sends*, counts "ping strikes", and says when patience runs out. What to
//! put on the wire then is planned by [`reaction`]; encoding frames is
//! another module's job.
//!
//! All times are [`Duration`](std::time::Duration)s of **simulated** time
//! since the start of the simulation; nothing here reads a clock.
//!
//! # In a simulation
//!
//! [`Sim::keepalive_policy`](crate::Sim::keepalive_policy) attaches a policy
//! to a server host; the harness's wire tap then drives one [`Enforcer`] per
//! connection to that host, against the real tonic/hyper client and server:
//!
//! - **When a PING counts as received**: when the server's HTTP/2 stack
//!   acks it. h2 acks a PING as soon as it reads it, so this is the PING's
//!   arrival at the server (send time + link latency, rounded to the sim
//!   tick), in the server's own order of frames. Gaps are measured between
//!   those times. An ACK that a frame fault then drops still counts; a PING a
//!   frame fault drops on the way never does.
//! - **Open calls**: streams the client opened before the PING (client
//!   HEADERS), not reset by either side (RST_STREAM) and not ended in both
//!   directions (END_STREAM) by the time the server read the PING. With none,
//!   "no active calls" applies (the 2 h gap unless permitted without calls).
//! - **Resets**: the HEADERS, DATA (and, for C-core, WINDOW_UPDATE) frames
//!   the *server* writes, whatever a frame fault then does with them. Frames
//!   the client sends reset nothing. A reset that clears strikes shows in
//!   the trace (`DATA resets ping strikes (2 cleared)`).
//! - **Order on too many pings**: the PING ACK as the server wrote it; then,
//!   injected by the tap, GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings",
//!   last-stream-id = the highest stream the client had opened before that
//!   PING); then per open call, in stream order, trailers-only (or trailers)
//!   and RST_STREAM (C-core) or RST_STREAM alone (grpc-java); then the tap
//!   closes the connection: nothing more the server writes leaves, the client
//!   reads the end of the stream, and the server's reads end, so its HTTP/2
//!   connection and handlers go away.
//! - **Trace**: every judged PING (`c1 PING from player: strike 2/2 (gap
//!   30.01s < 5min, 1 call open)`), the frames it sends (`[sent by the
//!   keepalive policy]`) and
//!   `connection closed by the keepalive policy (too_many_pings)`.
//!
//! # Driving it from a tap
//!
//! One [`Enforcer`] per connection, created when the connection opens
//! ([`Enforcer::opened_at`]).
//!
//! - client → server PING without the ACK flag: [`Enforcer::on_ping_received`]
//!   with the number of calls the server still has open. PING ACKs are not
//!   reported (servers ignore them for enforcement).
//! - server → client frame: [`ServerFrame::from_type`] on the frame-type byte,
//!   and if it is `Some`, [`Enforcer::on_server_frame`].
//! - on [`PingVerdict::TooManyPings`]: let the real server's ACK of that PING
//!   reach the client first, then perform [`reaction`]`(..)` in order and
//!   drop everything else the real server writes on this connection.
//!
//! # Semantics (sources: grpc-go `internal/transport/http2_server.go`
//! `handlePing`; C-core `chttp2/transport/ping_abuse_policy.cc` and
//! `writing.cc`; grpc-java `netty/KeepAliveEnforcer.java` and
//! `NettyServerHandler.java`; measured C-core behaviour in `FACTS.md`)
//!
//! **Allowed gap.** While the server has at least one open call, or when
//! [`KeepalivePolicy::permit_without_calls`] is set, a PING must come at least
//! [`KeepalivePolicy::min_time`] after the reference point (below). With no
//! open call and pings not permitted without calls, the gap is
//! [`KeepalivePolicy::idle_min_time`] (2 h in all three stacks; C-core cites
//! RFC 1122's TCP keepalive). "Open calls" is what the server counts at the
//! moment the PING arrives: streams the client opened that are not yet closed
//! in both directions.
//!
//! **Equal is allowed.** A gap exactly equal to the allowed gap is not a
//! strike: grpc-go strikes when `lastPingAt + MinTime` is *after* now, C-core
//! when `next_allowed_ping > now`, grpc-java when `lastValid + minTime > now`.
//!
//! **Reference point** ([`GapFrom`]).
//! - [`GapFrom::PreviousPing`] (grpc-go, C-core, etcd): the previous PING
//!   received, whether it struck or not. There is none for the first PING of
//!   a connection, so the first PING never strikes.
//! - [`GapFrom::LastAcceptedPing`] (grpc-java): the last PING that did *not*
//!   strike, and initially the moment the connection opened, so a PING sooner
//!   than `min_time` after connect already strikes.
//!
//! **Resets** ([`ResetOn`]). When the server sends a frame of a kind listed in
//! the policy's `reset_on`, the strike count goes back to 0 and the reference
//! point is forgotten:
//! - grpc-go (HEADERS, trailers included, and DATA): the next PING is exempt
//!   from the check and restarts the count (`resetPingStrikes` flag). Only
//!   the *timing* of the count's reset differs from C-core (grpc-go clears it
//!   when that next PING arrives); nothing on the wire differs.
//! - C-core (HEADERS, DATA and WINDOW_UPDATE, and the WINDOW_UPDATEs it
//!   writes for client DATA, [`ResetOn::client_data`]): `ResetPingStrikes`
//!   sets the last ping time to the infinite past, so the next PING cannot
//!   strike.
//! - grpc-java (HEADERS and DATA): `resetCounters` sets the reference back to
//!   the connection's open time, so the next PING is checked against it.
//!
//! **Strikes.** Each PING sooner than the allowed gap is one strike. While
//! the count is at most the number [`KeepalivePolicy::max_strikes`]
//! tolerates the PING is only counted ([`PingVerdict::Strike`]); the strike
//! that exceeds it gives [`PingVerdict::TooManyPings`]; with
//! [`MaxStrikes::NoLimit`] (C-core's `grpc.http2.max_ping_strikes = 0`)
//! none does ([`PingVerdict::StrikeWithoutLimit`]). With the default of 2 that is the 3rd strike,
//! i.e. the 4th PING of a steady too-fast client under grpc-go and C-core
//! (the first never strikes) and the 3rd under grpc-java.
//!
//! **Reaction, in order** ([`reaction`]):
//! 1. the offending PING is ACKed like every other (grpc-go queues the ACK
//!    before checking; Netty auto-acks before grpc-java's listener runs;
//!    C-core measured);
//! 2. GOAWAY(ENHANCE_YOUR_CALM, debug data `too_many_pings`,
//!    last-stream-id = the highest stream the server accepted);
//! 3. per open call, as [`KeepalivePolicy::on_too_many_pings`] says;
//! 4. the connection is closed.
//!
//! **After the GOAWAY** the enforcer is terminal: later PINGs (already in
//! flight on the closing connection) give [`PingVerdict::AlreadyGoingAway`]
//! and no second reaction; server frames change nothing.

mod connection;
mod hosts;
mod keepalive;
mod middlebox;
mod react;

#[cfg(test)]
mod drive;
#[cfg(test)]
mod tests;

pub(crate) use connection::{Close, PolicyReset, TimerChange};
pub use connection::{ConnInfo, ConnectionPolicy, Effects};
pub(crate) use hosts::{PolicyFactory, PolicyPlan};
pub(crate) use keepalive::KeepaliveEnforcement;
pub use keepalive::{
    reaction, Action, Enforcer, GapFrom, KeepalivePolicy, MaxStrikes, OnTooManyPings, OpenStream,
    PingVerdict, ResetOn, ServerFrame, TOO_MANY_PINGS, UNAVAILABLE,
};
pub(crate) use middlebox::BoxConn;
pub use middlebox::{
    Activity, ConnectionLifetime, Expiry, IdleTimeout, Middlebox, Pings, StreamLifetime, Writers,
};
pub use middlebox::{Drain, LocalReply, TimeoutStart, UpstreamTimeout};
