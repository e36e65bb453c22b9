//! What the server's tonic stack read of a request body, and what that says
//! about a status it answered with: whether the user's handler ever got the
//! request.
//!
//! tonic's generated server decodes a unary (or server-streaming) request
//! before it calls the user's method: `Grpc::unary` reads the message and
//! then the body to its end (`server/grpc.rs`, `map_request_unary`). An
//! unknown service (the router's fallback, `service/router.rs`) or method
//! (the generated server's `_` arm) is answered without reading the body
//! at all. So a status that is one of tonic's own pre-handler answers, with
//! the body left unread or read short of its end, was made before the
//! handler; the harness records it as
//! [`EventKind::HandlerRejected`](crate::recorder::event::EventKind::HandlerRejected).
//!
//! Not told apart (documented on the event): a client-streaming or bidi
//! handler, which tonic calls before reading anything, that passes on the
//! same error from its request stream at once.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::body::Body;
use tonic::{Code, Status};

use crate::wire::grpc_frame::Framing;

/// How far the request body was read, shared with the run's guard.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    polled: bool,
    ended: bool,
    failed: bool,
    framing: Framing,
    /// Message-Length of each message header read, in order.
    lengths: Vec<u32>,
}

pub(crate) type SeenRequest = Arc<Mutex<Seen>>;

pin_project! {
    /// The request body, passed on unchanged, watched.
    pub(crate) struct WatchedBody {
        #[pin]
        inner: Body,
        seen: SeenRequest,
    }
}

impl WatchedBody {
    pub(crate) fn new(inner: Body, seen: SeenRequest) -> Self {
        Self { inner, seen }
    }
}

impl HttpBody for WatchedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        let mut seen = this.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.polled = true;
        match &frame {
            Some(Ok(f)) => match f.data_ref() {
                Some(data) => {
                    let found = seen.framing.feed(data);
                    seen.lengths.extend(found.iter().map(|(_, h)| h.len));
                }
                None => seen.ended = true, // trailers end the body
            },
            Some(Err(_)) => seen.failed = true,
            None => seen.ended = true,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Why tonic answered before the handler, in the trace's words, when
/// `status` is one of its pre-handler answers and the body was read as
/// that answer needs; `None`: the handler (or a layer) answered.
pub(crate) fn rejected_because(status: &Status, seen: &Seen) -> Option<&'static str> {
    let message = status.message();
    let short = !seen.ended;
    match status.code() {
        Code::Unimplemented if !seen.polled && message.is_empty() => {
            Some("no such service or method on this server (tonic's router fallback or the generated server's unknown method)")
        }
        Code::Unimplemented if !seen.polled && message.starts_with("Content is compressed with") => {
            Some("its grpc-encoding is not supported by the server")
        }
        Code::OutOfRange if short && over_limit(message, &seen.lengths) => {
            Some("its message is over the server's max_decoding_message_size")
        }
        Code::Internal if short && message.starts_with("failed to decode Protobuf message") => {
            Some("its message could not be decoded")
        }
        Code::Internal if short && message.starts_with("protocol error: received message with") => {
            Some("its message has a bad Compressed-Flag")
        }
        Code::Internal
            if seen.ended && seen.lengths.is_empty() && message == crate::spec::MISSING_REQUEST_WORDS =>
        {
            Some("the unary request carried no message")
        }
        Code::Internal | Code::Unknown | Code::Cancelled
            if short && seen.failed && message.starts_with("h2 protocol error") =>
        {
            Some("reading its body failed (the client reset the stream)")
        }
        _ => None,
    }
}

/// tonic's decode-limit words naming the length of a message header the
/// body carried: `… found 6 bytes, the limit is: 2 bytes`.
fn over_limit(message: &str, lengths: &[u32]) -> bool {
    let Some(rest) = message.strip_prefix(crate::spec::DECODE_LIMIT_WORDS) else {
        return false;
    };
    let found = rest.split(' ').next().and_then(|n| n.parse::<u32>().ok());
    found.is_some_and(|n| lengths.contains(&n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(polled: bool, ended: bool, lengths: &[u32]) -> Seen {
        Seen {
            polled,
            ended,
            lengths: lengths.to_vec(),
            ..Seen::default()
        }
    }

    #[test]
    fn only_tonics_pre_handler_answers_on_an_unfinished_body_are_rejections() {
        let limit = Status::out_of_range(
            "Error, decoded message length too large: found 6 bytes, the limit is: 2 bytes",
        );
        assert!(rejected_because(&limit, &seen(true, false, &[6])).is_some());
        // Another message's length: a downstream's status passed on.
        assert!(rejected_because(&limit, &seen(true, false, &[9])).is_none());
        // The body was read to its end: the handler got the request.
        assert!(rejected_because(&limit, &seen(true, true, &[6])).is_none());
        let fallback = Status::unimplemented("");
        assert!(rejected_because(&fallback, &seen(false, false, &[])).is_some());
        assert!(rejected_because(&fallback, &seen(true, true, &[2])).is_none());
        let missing = Status::internal("Missing request message.");
        assert!(rejected_because(&missing, &seen(true, true, &[])).is_some());
        assert!(rejected_because(&Status::ok(""), &seen(false, false, &[])).is_none());
    }
}
