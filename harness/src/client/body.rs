//! The response body of a recorded call: sees the trailers (the status of a
//! normal response) or the stream error that ends the call.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::body::Body;

use super::CallGuard;
use crate::wire::grpc_frame::{Framing, MessageHeader, MessagePart};

/// Octets kept as the `Bytes` they came in (no copy), without a heap
/// allocation for the usual one piece.
#[derive(Default)]
enum Pieces {
    #[default]
    None,
    One(Bytes),
    Many(Vec<Bytes>),
}

impl Pieces {
    fn push(&mut self, piece: Bytes) {
        *self = match std::mem::take(self) {
            Self::None => Self::One(piece),
            Self::One(first) => Self::Many(vec![first, piece]),
            Self::Many(mut all) => {
                all.push(piece);
                Self::Many(all)
            }
        };
    }

    /// The octets, in one slice.
    fn joined(&self) -> std::borrow::Cow<'_, [u8]> {
        match self {
            Self::None => std::borrow::Cow::Borrowed(&[]),
            Self::One(one) => std::borrow::Cow::Borrowed(one),
            Self::Many(all) => std::borrow::Cow::Owned(all.concat()),
        }
    }
}

/// What a drop right after a DATA frame needs to check (see
/// `PinnedDrop`): the body so far of the response message in progress,
/// and the first message the last DATA frame made whole.
#[derive(Default)]
struct Bodies {
    current: Pieces,
    first_whole: Option<(MessageHeader, Pieces)>,
}

impl Bodies {
    /// Follows `data`, the next DATA payload, through `framing`.
    fn feed(&mut self, framing: &mut Framing, data: &Bytes) {
        framing.feed_bodies(data, |part| match part {
            MessagePart::Body(range) => self.current.push(data.slice(range)),
            MessagePart::Whole(header) => {
                let body = std::mem::take(&mut self.current);
                if self.first_whole.is_none() {
                    self.first_whole = Some((header, body));
                }
            }
        });
    }

    /// The first message the last DATA frame made whole, when it is not
    /// protobuf at all (see [`crate::wire::protobuf`]); a compressed one
    /// is not checked.
    fn undecodable(&self) -> Option<MessageHeader> {
        let (header, body) = self.first_whole.as_ref()?;
        (header.flag == 0 && !crate::wire::protobuf::parses(&body.joined())).then_some(*header)
    }
}

pin_project! {
    /// A tonic response body that records how the call ended.
    pub struct RecordedBody {
        #[pin]
        inner: Body,
        guard: Option<CallGuard>,
        // The response's HTTP status: what tonic maps to a gRPC code when
        // no `grpc-status` comes.
        http: http::StatusCode,
        // The gRPC framing of the DATA passed on, the message octets a
        // drop checks, and whether the last poll passed DATA on (rather
        // than waiting): see `PinnedDrop`.
        framing: Framing,
        bodies: Bodies,
        last_was_data: bool,
    }

    impl PinnedDrop for RecordedBody {
        /// Dropped without its status right after a DATA frame:
        ///
        /// - that made a message whole which is not protobuf at all: the
        ///   caller's decoder refused it (tonic polls the body only when it
        ///   holds no whole message, and decodes the first one as soon as
        ///   it is whole, `codec/decode.rs`; see
        ///   [`EventKind::CallUndecodable`](crate::recorder::event::EventKind::CallUndecodable));
        /// - that left tonic's decoder inside a message whose header it had
        ///   read: the decoder stopped at that header. tonic's `Streaming`
        ///   reads on until a message is whole (it polls the body again, or
        ///   waits), and hands no partial message to the caller, so only
        ///   its header checks stop there: the size limit
        ///   (`max_decoding_message_size`) and the Compressed-Flag.
        ///
        /// A caller dropping the call later (a timeout while it waits) is
        /// not "right after": the body was left waiting first.
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            if !*this.last_was_data {
                return;
            }
            let Some(guard) = this.guard.as_mut() else {
                return;
            };
            if let Some(header) = this.bodies.undecodable() {
                guard.undecodable(header.len);
            } else if let Some((header, received)) = this.framing.inside() {
                guard.stopped_reading(header.len, received, header.flag);
            }
        }
    }
}

impl RecordedBody {
    pub(crate) fn new(inner: Body, guard: CallGuard, http: http::StatusCode) -> Self {
        Self {
            inner,
            guard: Some(guard),
            http,
            framing: Framing::default(),
            bodies: Bodies::default(),
            last_was_data: false,
        }
    }

    pub(crate) fn finished(inner: Body) -> Self {
        Self {
            inner,
            guard: None,
            http: http::StatusCode::OK,
            framing: Framing::default(),
            bodies: Bodies::default(),
            last_was_data: false,
        }
    }
}

/// The status tonic reports for a response that ends with `trailers` (or
/// none) after HTTP status `http`: the `grpc-status` the trailers carry,
/// else a code mapped from the HTTP status (tonic 0.14 `infer_grpc_status`,
/// after gRPC's `http-grpc-status-mapping.md`).
pub(crate) fn inferred_status(
    trailers: Option<&http::HeaderMap>,
    http: http::StatusCode,
) -> tonic::Status {
    use http::StatusCode as H;
    use tonic::Code;
    if let Some(status) = trailers.and_then(crate::spec::trailer_status) {
        return status;
    }
    let code = match http {
        H::OK => {
            return tonic::Status::unknown(
                "protocol error: missing grpc-status trailer, stream was terminated without a final status (possible truncation by a proxy or load balancer)",
            )
        }
        H::BAD_REQUEST => Code::Internal,
        H::UNAUTHORIZED => Code::Unauthenticated,
        H::FORBIDDEN => Code::PermissionDenied,
        H::NOT_FOUND => Code::Unimplemented,
        H::TOO_MANY_REQUESTS | H::BAD_GATEWAY | H::SERVICE_UNAVAILABLE | H::GATEWAY_TIMEOUT => {
            Code::Unavailable
        }
        _ => Code::Unknown,
    };
    tonic::Status::new(
        code,
        format!(
            "grpc-status header missing, mapped from HTTP status code {}",
            http.as_u16()
        ),
    )
}

impl HttpBody for RecordedBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.project();
        *this.last_was_data = false;
        // Only a drop right after a DATA frame checks it: not kept longer.
        this.bodies.first_whole = None;
        let frame = ready!(this.inner.poll_frame(cx));
        if let Some(guard) = this.guard.as_mut() {
            match &frame {
                Some(Ok(f)) => {
                    if let Some(trailers) = f.trailers_ref() {
                        let status = inferred_status(Some(trailers), *this.http);
                        if trailers.contains_key("grpc-status") {
                            guard.finish(&status);
                        } else {
                            guard.finish_inferred(&status, *this.http);
                        }
                    } else if let Some(data) = f.data_ref() {
                        guard.progressed();
                        this.bodies.feed(this.framing, data);
                        *this.last_was_data = true;
                    }
                }
                Some(Err(status)) => guard.finish(status),
                // tonic's decoder fails a body cut inside a message first
                // (tonic 0.14.9 `codec/decode.rs`), before it looks for
                // trailers.
                None if this.framing.ends_inside() => {
                    guard.finish(&tonic::Status::internal("Unexpected EOF decoding stream."));
                }
                None => guard.finish_inferred(&inferred_status(None, *this.http), *this.http),
            }
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
