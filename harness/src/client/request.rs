//! The request body of a recorded call, watched for the error tonic's
//! encoder ends it with: a message over the client's
//! `max_encoding_message_size` never reaches the wire, h2 resets the stream
//! with INTERNAL_ERROR, and the caller gets INTERNAL "h2 protocol error:
//! http2 error" without the encoder's words (measured, tonic 0.14.9). The
//! call's guard reads what was seen here to give the spec's code. Each
//! message's bytes it passes on are progress for the run's no-progress
//! rule (with the wire tap off, no frame shows them).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::body::Body;

use crate::recorder::Recorder;

/// What the request body failed with, shared with the call's guard.
pub(crate) type RequestError = Arc<Mutex<Option<tonic::Status>>>;

pin_project! {
    /// tonic's request body, passed on unchanged; its error is kept.
    pub(crate) struct WatchedRequest {
        #[pin]
        inner: Body,
        seen: RequestError,
        recorder: Arc<Recorder>,
    }
}

impl WatchedRequest {
    pub(crate) fn new(inner: Body, seen: RequestError, recorder: Arc<Recorder>) -> Self {
        Self {
            inner,
            seen,
            recorder,
        }
    }
}

impl HttpBody for WatchedRequest {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        match &frame {
            Some(Err(status)) => {
                let mut seen = this.seen.lock().unwrap_or_else(|p| p.into_inner());
                *seen = Some(status.clone());
            }
            Some(Ok(f)) if f.is_data() => this.recorder.progressed(),
            _ => {}
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
