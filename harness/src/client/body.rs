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
    }
}

impl RecordedBody {
    pub(crate) fn new(inner: Body, guard: CallGuard) -> Self {
        Self {
            inner,
            guard: Some(guard),
        }
    }

    pub(crate) fn finished(inner: Body) -> Self {
        Self { inner, guard: None }
    }
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
                        let status =
                            tonic::Status::from_header_map(trailers).unwrap_or_else(|| {
                                tonic::Status::unknown("trailers without grpc-status")
                            });
                        guard.finish(&status);
                    }
                }
                Some(Err(status)) => guard.finish(status),
                // tonic's decoder reports a stream that ends without
                // trailers as this status.
                None => guard.finish(&tonic::Status::internal("missing trailers")),
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
