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
        // Where the DATA so far stands in gRPC's length-prefixed messages.
        messages: Messages,
    }
}

/// Where a response's DATA stands in gRPC's Length-Prefixed-Messages
/// (`PROTOCOL-HTTP2.md`: a flag octet, a 4-octet length, the message):
/// tonic's decoder reports a body that ends inside one as INTERNAL
/// "Unexpected EOF decoding stream." (tonic 0.14.9 `codec/decode.rs`),
/// before it looks for trailers, so the recorded end must say that too.
#[derive(Debug, Default)]
struct Messages {
    /// Octets of the current prefix seen (0..5), and the prefix so far.
    prefix: usize,
    len: [u8; 4],
    /// Octets of the current message still to come.
    body: u64,
}

impl Messages {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.body > 0 {
                let take = data
                    .len()
                    .min(usize::try_from(self.body).unwrap_or(usize::MAX));
                self.body -= take as u64;
                data = &data[take..];
                continue;
            }
            if self.prefix > 0 {
                self.len[self.prefix - 1] = data[0];
            }
            self.prefix += 1;
            data = &data[1..];
            if self.prefix == 5 {
                self.prefix = 0;
                self.body = u64::from(u32::from_be_bytes(self.len));
            }
        }
    }

    /// Whether the DATA ended inside a message (its prefix or its body).
    fn inside(&self) -> bool {
        self.prefix > 0 || self.body > 0
    }
}

impl RecordedBody {
    pub(crate) fn new(inner: Body, guard: CallGuard, http: http::StatusCode) -> Self {
        Self {
            inner,
            guard: Some(guard),
            http,
            messages: Messages::default(),
        }
    }

    pub(crate) fn finished(inner: Body) -> Self {
        Self {
            inner,
            guard: None,
            http: http::StatusCode::OK,
            messages: Messages::default(),
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
                    if let Some(data) = f.data_ref() {
                        this.messages.feed(data);
                    }
                    if let Some(trailers) = f.trailers_ref() {
                        guard.finish(&inferred_status(Some(trailers), *this.http));
                    }
                }
                Some(Err(status)) => guard.finish(status),
                // tonic's decoder fails a body cut inside a message first.
                None if this.messages.inside() => {
                    guard.finish(&tonic::Status::internal("Unexpected EOF decoding stream."));
                }
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

#[cfg(test)]
mod tests {
    use super::Messages;

    #[test]
    fn a_body_cut_inside_a_message_is_told_from_one_cut_between() {
        let mut m = Messages::default();
        m.feed(&[0, 0, 0, 0, 2, 8]);
        assert!(m.inside(), "one octet of two");
        m.feed(&[7]);
        assert!(!m.inside(), "whole");
        m.feed(&[0, 0]);
        assert!(m.inside(), "inside the next prefix");
        m.feed(&[0, 0, 0]);
        assert!(!m.inside(), "an empty message is whole at its prefix");
        // Split anywhere, the same answer.
        let mut split = Messages::default();
        for b in [0u8, 0, 0, 1, 0, 9, 9] {
            split.feed(&[b]);
        }
        assert!(split.inside(), "256-octet message, 2 seen");
    }
}
