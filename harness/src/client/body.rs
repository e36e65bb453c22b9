//! The response body of a recorded call: sees the trailers (the status of a
//! normal response) or the stream error that ends the call.

use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::body::Body;

use super::CallGuard;

pin_project! {
    /// A tonic response body that records how the call ended.
    pub struct RecordedBody {
        #[pin]
        inner: Body,
        guard: Option<CallGuard>,
        // The response's HTTP status: what tonic maps to a gRPC code when
        // no `grpc-status` comes.
        http: http::StatusCode,
    }
}

impl RecordedBody {
    pub(crate) fn new(inner: Body, guard: CallGuard, http: http::StatusCode) -> Self {
        Self {
            inner,
            guard: Some(guard),
            http,
        }
    }

    pub(crate) fn finished(inner: Body) -> Self {
        Self {
            inner,
            guard: None,
            http: http::StatusCode::OK,
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
    if let Some(status) = trailers.and_then(tonic::Status::from_header_map) {
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
        let frame = ready!(this.inner.poll_frame(cx));
        if let Some(guard) = this.guard.as_mut() {
            match &frame {
                Some(Ok(f)) => {
                    if let Some(trailers) = f.trailers_ref() {
                        guard.finish(&inferred_status(Some(trailers), *this.http));
                    }
                }
                Some(Err(status)) => guard.finish(status),
                None => guard.finish(&inferred_status(None, *this.http)),
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
