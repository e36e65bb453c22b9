//! The handler faults that act inside the server's own layers
//! ([`HandlerFault::inside_layers`](crate::fault::HandlerFault::inside_layers)):
//! a layer right in front of the routes, after every layer the server's
//! builder adds (an auth interceptor, a rate limit). It records no run of
//! its own: its faults are recorded against the run the outer layer
//! ([`super::HandlerService`]) started, and what it answers goes back out
//! through the server's layers, where the outer layer records the status.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::sync::OwnedSemaphorePermit;
use tonic::body::Body;

use super::run::{after_headers, with_pushback};
use super::HandlerEnv;
use super::{apply, Acting, BoxFuture, RunTag};
use crate::recorder::event::{EventKind, HostName, LayerSide, RunId};

/// Applies a host's inside-layers faults, then calls the routes.
#[derive(Clone)]
pub(crate) struct InsideService<S> {
    inner: S,
    host: HostName,
    env: Arc<HandlerEnv>,
    /// Whether the host's builder has layers of its own (see
    /// [`super::HandlerLayer`]).
    layered: Arc<AtomicBool>,
}

impl<S> InsideService<S> {
    pub(crate) fn new(inner: S, layer: &super::HandlerLayer) -> Self {
        let (host, env, layered) = layer.parts();
        Self {
            inner,
            host,
            env,
            layered,
        }
    }
}

impl<S> tower::Service<http::Request<Body>> for InsideService<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        // A request without the outer layer's tag did not come through it
        // (a layer of the server's own dropped the extensions): no run to
        // act on, so no fault either; an unused fault is reported as such.
        let Some(RunTag(run)) = req.extensions().get::<RunTag>().copied() else {
            return Box::pin(inner.call(req));
        };
        let path = req.uri().path().to_owned();
        let rules = self.env.handler_rules(&self.host, &path, true);
        if rules.is_empty() {
            return Box::pin(inner.call(req));
        }
        let mut acting = Inside {
            env: self.env.clone(),
            host: self.host,
            run,
            path,
            side: self
                .layered
                .load(Ordering::Relaxed)
                .then_some(LayerSide::InsideLayers),
            permit: None,
        };
        Box::pin(async move {
            // As outside the layers: in the order added, until one answers.
            for rule in &rules {
                rule.mark_fired();
                if let Some((status, reply)) = apply(rule, &mut acting).await {
                    let status = with_pushback(status, reply);
                    return Ok(if reply.after_headers {
                        after_headers(status)
                    } else {
                        status.into_http::<Body>()
                    });
                }
            }
            let response = inner.call(req).await?;
            Ok(match acting.permit.take() {
                Some(permit) => response.map(|inner| {
                    Body::new(Permitted {
                        inner,
                        _permit: permit,
                    })
                }),
                None => response,
            })
        })
    }
}

/// The run an inside fault acts on.
struct Inside {
    env: Arc<HandlerEnv>,
    host: HostName,
    run: RunId,
    path: String,
    side: Option<LayerSide>,
    /// A concurrency-limit slot, held until the response body ends.
    permit: Option<OwnedSemaphorePermit>,
}

impl Acting for Inside {
    fn record(&self, kind: EventKind) {
        self.env.recorder.push(self.host, kind);
    }

    fn run_path(&self) -> (RunId, &str) {
        (self.run, &self.path)
    }

    fn side(&self) -> Option<LayerSide> {
        self.side
    }

    fn now(&self) -> Duration {
        self.env.recorder.now()
    }

    fn keep_permit(&mut self, permit: OwnedSemaphorePermit) {
        self.permit = Some(permit);
    }

    fn timer_at(&self, at: Duration) {
        self.env.recorder.timer_at(at);
    }
}

pin_project! {
    /// A response body that holds a concurrency-limit slot until it ends
    /// (or is dropped).
    struct Permitted {
        #[pin]
        inner: Body,
        _permit: OwnedSemaphorePermit,
    }
}

impl HttpBody for Permitted {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        self.project().inner.poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
