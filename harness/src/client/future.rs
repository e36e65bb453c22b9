//! The response future of a recorded call.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tonic::body::Body;

use super::body::inferred_status;
use super::{CallGuard, RecordedBody};
use crate::balance::BoxError;

type Single = <tonic::transport::Channel as tower::Service<http::Request<Body>>>::Future;
type Balanced = <crate::balance::Balanced as tower::Service<http::Request<Body>>>::Future;

pin_project! {
    #[project = InnerProj]
    enum Inner {
        Single { #[pin] fut: Single },
        Balanced { #[pin] fut: Balanced },
    }
}

pin_project! {
    /// Resolves to the response headers; records the call's end when tonic
    /// will report an error from them (transport error, timeout,
    /// trailers-only status).
    pub struct ResponseFuture {
        #[pin]
        inner: Inner,
        guard: Option<CallGuard>,
    }
}

impl ResponseFuture {
    pub(crate) fn new(fut: Single, guard: CallGuard) -> Self {
        Self {
            inner: Inner::Single { fut },
            guard: Some(guard),
        }
    }

    pub(crate) fn balanced(fut: Balanced, guard: CallGuard) -> Self {
        Self {
            inner: Inner::Balanced { fut },
            guard: Some(guard),
        }
    }
}

impl Future for ResponseFuture {
    type Output = Result<http::Response<RecordedBody>, tonic::Status>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let result: Result<http::Response<Body>, BoxError> = match this.inner.project() {
            InnerProj::Single { fut } => ready!(fut.poll(cx)).map_err(|e| Box::new(e) as BoxError),
            InnerProj::Balanced { fut } => ready!(fut.poll(cx)),
        };
        let Some(mut guard) = this.guard.take() else {
            // Polled after completion: tower futures must not be, but a
            // recorder must not panic either.
            return Poll::Ready(
                result
                    .map(|r| r.map(RecordedBody::finished))
                    .map_err(tonic::Status::from_error),
            );
        };
        Poll::Ready(match result {
            Err(err) => {
                // The conversion tonic's client applies to a transport error;
                // it hands a `Status` error through unchanged, so the caller
                // sees exactly what it would without the recorder.
                let status = tonic::Status::from_error(err);
                guard.finish(&status);
                Err(status)
            }
            Ok(response) => {
                let http = response.status();
                if let Some(status) = tonic::Status::from_header_map(response.headers()) {
                    // Trailers-only response: the status is in the headers.
                    guard.finish(&status);
                } else if http_body::Body::is_end_stream(response.body()) {
                    // Headers that end the stream without a grpc-status (an
                    // HTTP error from a proxy, or from hyper itself): tonic
                    // maps the HTTP status without reading the body.
                    guard.finish_inferred(&inferred_status(None, http), http);
                }
                Ok(response.map(|body| RecordedBody::new(body, guard, http)))
            }
        })
    }
}
