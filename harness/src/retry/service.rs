//! [`Retry`]: the service a [`RetryLayer`](super::RetryLayer) wraps a
//! channel in.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use http_body::Body;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tonic::codegen::{Bytes, StdError};
use tower::Service;

use super::backoff::Jitter;
use super::config::RetryConfig;
use super::event::{AttemptEvent, Observer};
use super::future::RetryFuture;
use super::layer::{CallHook, RetryLayer};
use super::throttle::Throttler;

/// What all clones of one [`Retry`] share: the target's token bucket, the
/// seeded generator, and the settings.
pub(crate) struct Shared {
    pub(crate) config: Arc<RetryConfig>,
    pub(crate) throttler: Option<Throttler>,
    pub(crate) rng: Mutex<SmallRng>,
    pub(crate) jitter: Jitter,
    pub(crate) observer: Option<Observer>,
    pub(crate) buffer_limit: u64,
    on_call: Option<CallHook>,
    /// Calls started so far (numbers [`AttemptEvent::call`]).
    calls: AtomicU64,
}

impl Shared {
    pub(crate) fn new(layer: &RetryLayer) -> Self {
        Shared {
            config: layer.config.clone(),
            throttler: layer.config.throttling().map(Throttler::new),
            rng: Mutex::new(SmallRng::seed_from_u64(layer.seed)),
            jitter: layer.jitter,
            observer: layer.observer.clone(),
            buffer_limit: layer.buffer_limit,
            on_call: layer.on_call.clone(),
            calls: AtomicU64::new(0),
        }
    }

    /// Numbers a new call (1-based).
    pub(crate) fn next_call(&self) -> u64 {
        self.calls.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub(crate) fn emit(&self, event: AttemptEvent) {
        if let Some(observer) = &self.observer {
            observer(&event);
        }
    }
}

/// A tonic client service with gRFC A6 retries (see the [module docs](super)).
///
/// Made by [`RetryLayer`](super::RetryLayer). Requests are
/// `http::Request<tonic::body::Body>`, as a tonic channel takes them;
/// responses come back as `http::Response<tonic::body::Body>`, errors as
/// tonic's boxed error (`tonic::codegen::StdError`), so a generated client
/// accepts a `Retry<Channel>` in place of the channel.
pub struct Retry<S> {
    inner: S,
    pub(crate) shared: Arc<Shared>,
}

impl<S> Retry<S> {
    pub(crate) fn new(inner: S, shared: Arc<Shared>) -> Self {
        Retry { inner, shared }
    }

    /// The target's token bucket, when the config has `retryThrottling`.
    pub fn throttler(&self) -> Option<&Throttler> {
        self.shared.throttler.as_ref()
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// Unwraps the inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Clone> Clone for Retry<S> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S: fmt::Debug> fmt::Debug for Retry<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("inner", &self.inner)
            .field("throttler", &self.shared.throttler)
            .finish_non_exhaustive()
    }
}

impl<S, B> Service<http::Request<tonic::body::Body>> for Retry<S>
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<StdError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = StdError;
    type Future = RetryFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<tonic::body::Body>) -> Self::Future {
        if let Some(hook) = &self.shared.on_call {
            hook(req.uri().path());
        }
        // The ready service makes the first attempt; the clone stays behind
        // for the next call (tower's usual swap).
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        RetryFuture::new(inner, self.shared.clone(), req)
    }
}
