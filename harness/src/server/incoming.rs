//! What a serve fn ([`Sim::server_fn`](crate::Sim::server_fn)) gets to
//! serve with: the host's simulated connections as a stream tonic accepts,
//! and the future a [`Fault::shutdown`](crate::Fault::shutdown) resolves.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::Stream;

use crate::net::SimConn;

/// The connections a serve fn's host accepts on port 50051, as tonic's
/// `serve_with_incoming` / `serve_with_incoming_shutdown` take them (a
/// `Stream` of `io::Result<`[`SimConn`]`>`; `Send`, `Unpin`). It never
/// ends by itself: the host's listener lives as long as its software (a
/// crash or a restart drops it).
pub struct Incoming(Pin<Box<dyn Stream<Item = io::Result<SimConn>> + Send>>);

impl Incoming {
    pub(crate) fn new(stream: impl Stream<Item = io::Result<SimConn>> + Send + 'static) -> Self {
        Self(Box::pin(stream))
    }

    /// A stream that never yields, for a second `incoming()` call (the
    /// run then fails with a misconfiguration error).
    pub(crate) fn never() -> Self {
        Self::new(futures_util::stream::pending())
    }
}

impl Stream for Incoming {
    type Item = io::Result<SimConn>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0.as_mut().poll_next(cx)
    }
}

impl std::fmt::Debug for Incoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming").finish_non_exhaustive()
    }
}

/// Completes when [`Fault::shutdown`](crate::Fault::shutdown) starts the
/// host's graceful shutdown, the `signal` of tonic's
/// `serve_with_incoming_shutdown` (`Send`, `Unpin`). Without such a fault,
/// or after a crash or restart of the host, it never completes.
pub struct Shutdown(Pin<Box<dyn Future<Output = ()> + Send>>);

impl Shutdown {
    pub(crate) fn new(signal: impl Future<Output = ()> + Send + 'static) -> Self {
        Self(Box::pin(signal))
    }
}

impl Future for Shutdown {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl std::fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shutdown").finish_non_exhaustive()
    }
}
