//! [`RetryLayer`]: the tower layer that puts a [`Retry`] in front of a
//! tonic channel.

use std::fmt;
use std::sync::Arc;

use tower::Layer;

use super::backoff::Jitter;
use super::config::RetryConfig;
use super::decide::DEFAULT_BUFFER_LIMIT;
use super::event::Observer;
use super::service::{Retry, Shared};

/// Gives a tonic client channel gRFC A6 retries, configured by a
/// [`RetryConfig`].
///
/// Defaults: [`Jitter::GrpcGo`]; a retry buffer of
/// [`DEFAULT_BUFFER_LIMIT`] (256 KiB) per call; no observer.
///
/// Each [`Layer::layer`] call makes a service with its own token bucket and
/// its own random generator seeded with `seed`: apply the layer once per
/// target (per channel). Clones of that service share both, so the bucket is
/// per target and delays depend only on the seed and the order of calls.
///
/// See the [module docs](super) for an example.
#[derive(Clone)]
pub struct RetryLayer {
    pub(crate) config: Arc<RetryConfig>,
    pub(crate) seed: u64,
    pub(crate) jitter: Jitter,
    pub(crate) observer: Option<Observer>,
    pub(crate) buffer_limit: u64,
    /// Told the path of every call through the layer, before its policy is
    /// looked up: how the harness learns which retry policies matched.
    pub(crate) on_call: Option<CallHook>,
}

/// See [`RetryLayer::on_call`].
pub(crate) type CallHook = Arc<dyn Fn(&str) + Send + Sync>;

impl RetryLayer {
    /// A layer applying `policy`, with all jitter drawn from a generator
    /// seeded by `seed`.
    pub fn new(policy: RetryConfig, seed: u64) -> Self {
        RetryLayer {
            config: Arc::new(policy),
            seed,
            jitter: Jitter::default(),
            observer: None,
            buffer_limit: DEFAULT_BUFFER_LIMIT,
            on_call: None,
        }
    }

    /// Chooses the jitter. Defaults to [`Jitter::GrpcGo`].
    pub fn jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Calls `observer` for every attempt start, end and decision.
    pub fn observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The retry buffer per call, in bytes of gRPC-framed request data; a
    /// call that sends more is committed: a retried call makes no further
    /// attempt, a hedged one goes on with the attempt that sent past the
    /// limit and cancels the others (gRFC A6 "Memory Management
    /// (Buffering)"). Defaults to 256 KiB (grpc-go's
    /// `defaultMaxRetryRPCBufferSize`).
    pub fn buffer_limit(mut self, bytes: u64) -> Self {
        self.buffer_limit = bytes;
        self
    }

    /// The config this layer applies.
    pub fn config(&self) -> &RetryConfig {
        &self.config
    }
}

impl fmt::Debug for RetryLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryLayer")
            .field("config", &self.config)
            .field("seed", &self.seed)
            .field("jitter", &self.jitter)
            .field("observer", &self.observer.is_some())
            .field("buffer_limit", &self.buffer_limit)
            .finish()
    }
}

impl<S> Layer<S> for RetryLayer {
    type Service = Retry<S>;

    fn layer(&self, inner: S) -> Retry<S> {
        Retry::new(inner, Arc::new(Shared::new(self)))
    }
}
