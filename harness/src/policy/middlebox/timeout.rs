//! A middlebox's upstream response timeout ([`UpstreamTimeout`]): when it
//! runs out the box ends the client's stream itself, with the response the
//! real box synthesizes, and optionally resets the stream upstream; the
//! backend's later frames for that stream are kept from the client in a
//! way that leaves HPACK and flow control in step.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;

use super::BoxConn;
use crate::policy::connection::{Effects, FrameView};
use crate::policy::react::{http_headers, status_headers};
use crate::recorder::event::{PolicyAction, UpstreamReply, UpstreamSince};
use crate::wire::frame::flags;
use crate::wire::{encode, BlockKind, Direction, ErrorCode, FrameType};

/// An upstream response timeout: how long the box waits for the server,
/// from when, and what it does when the wait is over.
///
/// Envoy's route `timeout` ([`UpstreamTimeout::envoy_route`]) and nginx's
/// `grpc_read_timeout` ([`UpstreamTimeout::nginx_read`]) are presets; every
/// field is public. All times are *simulated*.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct UpstreamTimeout {
    /// How long, *simulated* time. Must not be zero.
    pub after: Duration,
    /// When the wait starts and what restarts it.
    pub starts: TimeoutStart,
    /// What the client gets when the server has not sent its response
    /// headers yet.
    pub before_headers: LocalReply,
    /// The RST_STREAM code the client gets when the response headers
    /// already went out (a box cannot send a second response).
    pub after_headers: ErrorCode,
    /// Whether the box also resets the stream upstream
    /// (RST_STREAM(`upstream_code`) to the server, which drops the
    /// handler). When `false` the backend handler keeps running; whatever
    /// it still writes on the stream is kept from the client.
    pub reset_upstream: bool,
    /// The code of that RST_STREAM to the server. [`UpstreamTimeout::new`]
    /// sets CANCEL.
    pub upstream_code: ErrorCode,
}

/// When an [`UpstreamTimeout`] starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutStart {
    /// When the client's request is complete (its END_STREAM), until the
    /// server's response is complete (Envoy's route timeout: "spans between
    /// the point at which the entire downstream request (i.e.
    /// end-of-stream) has been processed and when the upstream response has
    /// been completely processed"). A stream whose client never ends its
    /// request is not timed.
    RequestEnd,
    /// Between two reads from the server (nginx's `grpc_read_timeout`:
    /// "between two successive read operations" from the gRPC server), as
    /// nginx 1.22.1 runs it (measured, `calibration/`): armed when the
    /// client's request is complete (its END_STREAM) or when the server's
    /// response headers arrive, whichever is first, and restarted by every
    /// HEADERS or DATA the server writes on the stream and by every PING
    /// it writes on the connection. What the client writes does not
    /// restart it, and a client-streaming request that has not ended
    /// before any response headers is not timed (nginx's
    /// `client_body_timeout` governs it there, which the box does not
    /// model).
    EachRead,
}

/// A response the box synthesizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalReply {
    /// A gRPC trailers-only response: one HEADERS with `:status: 200`,
    /// `content-type: application/grpc`, `grpc-status` and (when not empty)
    /// `grpc-message`, with END_STREAM (gRPC `PROTOCOL-HTTP2.md`).
    Grpc {
        /// The `grpc-status` code (14: UNAVAILABLE).
        status: u32,
        /// The `grpc-message`, percent-encoded on the wire.
        message: String,
    },
    /// A plain HTTP response: HEADERS with `:status` and `content-type`,
    /// then `body` as one DATA frame with END_STREAM (END_STREAM on the
    /// HEADERS when `body` is empty). A gRPC client reads the body as
    /// gRPC messages; what tonic makes of it is in the trace.
    Http {
        /// The `:status` code (504).
        status: u16,
        /// The `content-type`.
        content_type: String,
        /// The body, at most 16,384 octets (one DATA frame).
        body: String,
    },
}

impl UpstreamTimeout {
    /// A timeout of `after` from `starts`, answering `before_headers` (or
    /// RST_STREAM(`after_headers`)), resetting upstream with
    /// RST_STREAM(CANCEL) when `reset_upstream`.
    pub fn new(
        after: Duration,
        starts: TimeoutStart,
        before_headers: LocalReply,
        after_headers: ErrorCode,
        reset_upstream: bool,
    ) -> Self {
        Self {
            after,
            starts,
            before_headers,
            after_headers,
            reset_upstream,
            upstream_code: ErrorCode::Cancel,
        }
    }

    /// Envoy's route `timeout` with its default of 15 s.
    ///
    /// | field | value | source |
    /// |---|---|---|
    /// | `after` | 15 s | `RouteAction.timeout`: "If not specified, the default is 15s" (envoyproxy.io, `config/route/v3/route_components.proto`; read) |
    /// | `starts` | [`TimeoutStart::RequestEnd`] | same field's docs (quoted on [`TimeoutStart::RequestEnd`]); the timeouts FAQ adds that it "is not compatible with streaming responses" and must be disabled (`0s`) for them (read) |
    /// | `before_headers` | trailers-only, `grpc-status: 14` (UNAVAILABLE), `grpc-message: upstream request timeout` | router `onResponseTimeout` → `onUpstreamTimeoutAbort`: code 504 and body "upstream request timeout"; `Utility::sendLocalReply` turns a local reply to a gRPC request into a trailers-only response with `:status 200` and `grpc-status` = `Grpc::Utility::httpToGrpcStatus(504)` = Unavailable, `grpc-message` = the body (`source/common/http/utility.cc`, `source/common/grpc/status.cc`; read, and measured with Envoy 1.40.0: `route_timeout_before_headers.json`, which also carries `server: envoy`) |
    /// | `after_headers` | INTERNAL_ERROR | measured with Envoy 1.40.0 (`calibration/fixtures/envoy/run*/route_timeout_after_headers.json`: RST_STREAM(INTERNAL_ERROR) at the 2 s route timeout, after `:status 200`). `sendLocalReply` after response headers went out resets the stream ("All we can do at this point is reset the stream", `filter_manager.cc`); the code was read as NO_ERROR from `codec_impl.cc` and the wire says INTERNAL_ERROR |
    /// | `reset_upstream` | `true` | `onResponseTimeout` resets every upstream request in flight (`router.cc`; read) |
    /// | `upstream_code` | INTERNAL_ERROR | measured: the backend reads RST_STREAM(INTERNAL_ERROR) at the timeout, before and after response headers (`calibration/fixtures/envoy/run*/route_timeout_*.json`), on a pooled connection that stays open |
    ///
    /// Envoy also adds its own headers to a local reply (`date`, `server:
    /// envoy`); the box does not. `max_stream_duration` and
    /// `grpc_timeout_header_max`, which change the route timeout for gRPC,
    /// are not modelled.
    pub fn envoy_route() -> Self {
        let t = Self::new(
            Duration::from_secs(15),
            TimeoutStart::RequestEnd,
            LocalReply::Grpc {
                status: 14,
                message: "upstream request timeout".to_owned(),
            },
            ErrorCode::InternalError,
            true,
        );
        Self {
            upstream_code: ErrorCode::InternalError,
            ..t
        }
    }

    /// nginx's `grpc_read_timeout` with its default of 60 s.
    ///
    /// | field | value | source |
    /// |---|---|---|
    /// | `after` | 60 s | `grpc_read_timeout 60s` default; "The timeout is set only between two successive read operations, not for the transmission of the whole response" (nginx.org `ngx_http_grpc_module`; read) |
    /// | `starts` | [`TimeoutStart::EachRead`] | same; when it is armed and what restarts it measured with nginx 1.22.1 (`calibration/fixtures/nginx/`: a client stream that sends every 0.5 s and ends at 3 s gets the 504 at 5 s with a 2 s timer; one that never ends gets none; a backend's PINGs every 0.6 s keep a silent response alive; the client's messages do not) |
    /// | `before_headers` | `:status 504`, `content-type: text/html`, nginx's built-in 504 page | measured: `:status 504`, `server: nginx`, `content-type: text/html`, `content-length: 160`, then the 160-octet page in one DATA frame with END_STREAM (the box sends no `server` or `content-length`); the page is `ngx_http_error_504_page` plus `ngx_http_error_tail` in `ngx_http_special_response.c` with `server_tokens off`. It is not a gRPC response: the client maps 504 to UNAVAILABLE (gRPC `http-grpc-status-mapping.md`) if it gets that far |
    /// | `after_headers` | INTERNAL_ERROR | measured (ingress-nginx #12434 reports PROTOCOL_ERROR: that is what nginx sends at `client_body_timeout`, also measured) |
    /// | `reset_upstream` | `true` | the backend's handler is ended: real nginx closes the stream's own upstream connection (measured: the backend reads a FIN, no RST_STREAM); the sim's one connection gets RST_STREAM(CANCEL) instead |
    pub fn nginx_read() -> Self {
        Self::new(
            Duration::from_secs(60),
            TimeoutStart::EachRead,
            LocalReply::Http {
                status: 504,
                content_type: "text/html".to_owned(),
                body: NGINX_504_PAGE.to_owned(),
            },
            ErrorCode::InternalError,
            true,
        )
    }
}

/// nginx's built-in 504 page: `ngx_http_error_504_page` then
/// `ngx_http_error_tail` (`src/http/ngx_http_special_response.c`).
const NGINX_504_PAGE: &str = "<html>\r\n<head><title>504 Gateway Time-out</title></head>\r\n\
<body>\r\n<center><h1>504 Gateway Time-out</h1></center>\r\n<hr><center>nginx</center>\r\n\
</body>\r\n</html>\r\n";

/// The upstream timeout's state on one connection: the streams the box
/// ended itself.
#[derive(Debug, Default)]
pub(crate) struct Ended {
    pub(super) streams: BTreeSet<u32>,
    /// Streams whose late HEADERS the trace already explained.
    noted: BTreeSet<u32>,
}

impl BoxConn {
    /// When stream `id`'s upstream timeout runs out, if it is timed.
    pub(super) fn upstream_due(&self, id: u32) -> Option<Duration> {
        let t = self.cfg.upstream_timeout.as_ref()?;
        let s = self.streams.get(&id)?;
        if s.server_done {
            return None;
        }
        match t.starts {
            TimeoutStart::RequestEnd => s.request_end.map(|at| at + t.after),
            TimeoutStart::EachRead => each_read_due(s, t.after),
        }
    }

    /// Stream `id`'s upstream timeout ran out: the local reply (or
    /// RST_STREAM) to the client, RST_STREAM(`upstream_code`) upstream if
    /// asked.
    pub(super) fn upstream_expired(&mut self, fx: &mut Effects, id: u32) {
        let (Some(t), Some(s)) = (self.cfg.upstream_timeout.clone(), self.streams.remove(&id))
        else {
            return;
        };
        let since = match t.starts {
            TimeoutStart::RequestEnd => UpstreamSince::RequestEnd {
                at: s.request_end.unwrap_or(s.opened),
            },
            TimeoutStart::EachRead => UpstreamSince::LastRead {
                at: each_read_armed(&s).unwrap_or(s.last_read),
            },
        };
        let reply = if s.response_headers {
            fx.rst_stream(Direction::ServerToClient, id, t.after_headers);
            UpstreamReply::RstStream {
                code: t.after_headers,
            }
        } else {
            send_local_reply(fx, id, &t.before_headers)
        };
        if t.reset_upstream {
            fx.rst_stream(Direction::ClientToServer, id, t.upstream_code);
        }
        self.note(
            fx,
            PolicyAction::UpstreamTimeout {
                stream: id,
                after: t.after,
                since,
                reply,
                reset_upstream: t.reset_upstream,
                upstream_code: t.upstream_code,
            },
        );
        self.ended.streams.insert(id);
        if self.streams.is_empty() {
            self.last = fx.now();
        }
    }

    /// A frame of a stream the box ended; true when it dealt with it.
    ///
    /// - The server's HEADERS go on to the client, which must decode their
    ///   block (HPACK is per connection), with END_STREAM cleared: h2
    ///   answers HEADERS on a closed stream with a *stream* error
    ///   (RST_STREAM STREAM_CLOSED or PROTOCOL_ERROR), where trailers with
    ///   END_STREAM on a closed stream would be a connection error
    ///   (`recv_close` in an unexpected state; h2 `proto/streams/
    ///   streams.rs` `recv_headers`, `state.rs`; read).
    /// - Other frames are swallowed: the server's DATA (the box gives the
    ///   octets back to the server's flow-control windows with
    ///   WINDOW_UPDATEs, as a proxy that reads and discards them does) and
    ///   RST_STREAM, and the client's answers, so the server's handler is
    ///   not cancelled by them.
    pub(super) fn ended_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) -> bool {
        let id = frame.stream();
        if id == 0 || !self.ended.streams.contains(&id) {
            return false;
        }
        let server = frame.direction() == Direction::ServerToClient;
        match frame.frame_type() {
            FrameType::Headers if server => {
                if self.ended.noted.insert(id) {
                    self.note(fx, PolicyAction::LateHeaders { stream: id });
                }
                if frame.flags().end_stream() {
                    if let Some(bytes) = without_end_stream(frame.bytes()) {
                        fx.rewrite(bytes);
                    }
                }
            }
            FrameType::Headers | FrameType::Continuation => {}
            FrameType::Data => {
                fx.swallow();
                let n = frame.len();
                if server && n > 0 {
                    fx.send(Direction::ClientToServer, encode::window_update(0, n));
                    fx.send(Direction::ClientToServer, encode::window_update(id, n));
                }
            }
            _ => fx.swallow(),
        }
        true
    }
}

/// Sends stream `id`'s local reply `reply` to the client; what the trace
/// records of it.
pub(super) fn send_local_reply(fx: &mut Effects, id: u32, reply: &LocalReply) -> UpstreamReply {
    match reply {
        LocalReply::Grpc { status, message } => {
            let frame = status_headers(id, true, *status, message);
            fx.send_as(
                Direction::ServerToClient,
                Bytes::from(frame),
                Some(BlockKind::TrailersOnly),
            );
            UpstreamReply::TrailersOnly {
                status: *status,
                message: message.clone(),
            }
        }
        LocalReply::Http {
            status,
            content_type,
            body,
        } => {
            let frame = http_headers(id, *status, content_type, body.is_empty());
            fx.send_as(
                Direction::ServerToClient,
                Bytes::from(frame),
                Some(BlockKind::Response),
            );
            if !body.is_empty() {
                let cut = &body.as_bytes()[..body.len().min(16_384)];
                fx.send(Direction::ServerToClient, encode::data(id, cut, true));
            }
            UpstreamReply::Http {
                status: *status,
                content_type: content_type.clone(),
                body_len: body.len(),
            }
        }
    }
}

/// When a [`TimeoutStart::EachRead`] timer was last armed on `s`: at the
/// server's last read once the response headers went out; before them,
/// at the later of the request's end and the last read, and not at all
/// while the request is still coming (nginx 1.22.1, measured:
/// `calibration/fixtures/nginx/*/upload_messages_*.json`).
fn each_read_armed(s: &super::Stream) -> Option<Duration> {
    if s.response_headers {
        Some(s.last_read)
    } else {
        s.request_end.map(|end| end.max(s.last_read))
    }
}

fn each_read_due(s: &super::Stream, after: Duration) -> Option<Duration> {
    each_read_armed(s).map(|at| at + after)
}

/// A HEADERS frame's octets with END_STREAM cleared.
fn without_end_stream(frame: &[u8]) -> Option<Bytes> {
    let mut out = frame.to_vec();
    let f = out.get_mut(4)?;
    *f &= !flags::END_STREAM;
    Some(Bytes::from(out))
}
