//! The layer that puts [`HandlerService`] on a sim server's routes.

use std::sync::Arc;

use tower::Layer;

use super::HandlerService;
use crate::sim::Shared;

/// Installs the handler layer (recording + handler faults) of one host.
#[derive(Clone)]
pub(crate) struct HandlerLayer {
    host: Arc<str>,
    shared: Arc<Shared>,
}

impl HandlerLayer {
    pub(crate) fn new(host: Arc<str>, shared: Arc<Shared>) -> Self {
        Self { host, shared }
    }
}

impl<S> Layer<S> for HandlerLayer {
    type Service = HandlerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        HandlerService {
            inner,
            host: self.host.clone(),
            shared: self.shared.clone(),
        }
    }
}
