//! The layer that puts [`HandlerService`] on a sim server.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tower::Layer;

use super::HandlerEnv;
use super::HandlerService;
use crate::recorder::event::HostName;

/// The harness's recording and handler-fault layer, the first (outermost)
/// layer of every sim server's builder
/// ([`server::Builder`](crate::server::Builder)).
///
/// It records each request that reaches the server's service stack (a
/// handler run `hN`: start, queueing, finish with a status, or drop) and
/// applies the [`Fault::handler`](crate::Fault::handler) faults of its host
/// before the request reaches the layers the server's own builder adds.
/// Only the harness makes one; it is named here so that the builder's type
/// can be written down.
#[derive(Clone)]
pub struct HandlerLayer {
    host: HostName,
    env: Arc<HandlerEnv>,
    layered: Arc<AtomicBool>,
    /// Set once a server put the layer around its service (tonic's builder
    /// does so when it starts serving, before its first connection): how a
    /// serve fn's host ([`Sim::server_fn`](crate::Sim::server_fn)) tells
    /// whether the user added it.
    applied: Arc<AtomicBool>,
}

impl std::fmt::Debug for HandlerLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerLayer")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

impl HandlerLayer {
    pub(crate) fn new(host: HostName, env: Arc<HandlerEnv>) -> Self {
        Self {
            host,
            env,
            layered: Arc::default(),
            applied: Arc::default(),
        }
    }

    /// Whether a server applied this layer (or a clone of it).
    pub(crate) fn applied(&self) -> bool {
        self.applied.load(Ordering::Relaxed)
    }

    /// The host, the run's handle and the layered flag, for the layer
    /// inside the server's own layers.
    pub(crate) fn parts(&self) -> (HostName, Arc<HandlerEnv>, Arc<AtomicBool>) {
        (self.host, self.env.clone(), self.layered.clone())
    }

    /// Notes that the server's builder added layers of its own: the trace
    /// then says on which side of them each handler fault acted.
    pub(crate) fn set_layered(&self, layered: bool) {
        self.layered.store(layered, Ordering::Relaxed);
    }
}

impl<S> Layer<S> for HandlerLayer {
    type Service = HandlerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        self.applied.store(true, Ordering::Relaxed);
        HandlerService {
            inner,
            host: self.host,
            env: self.env.clone(),
            layered: self.layered.clone(),
        }
    }
}
