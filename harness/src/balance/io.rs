//! A replica connection's socket and connector. The balancer must learn
//! when a replica's connection is gone, as tonic's reconnect learns it from
//! hyper's `SendRequest::poll_ready` failing; behind the tonic channel the
//! harness uses per replica, that signal is hidden, so the socket itself
//! reports it: hyper drops it when its connection task ends (closed by the
//! peer, reset, a keepalive timeout, a GOAWAY with no stream left).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::Uri;

use crate::net::SimConn;
use crate::sim::Shared;

/// Whether a replica connection's socket is still held by hyper.
#[derive(Debug, Default)]
pub(super) struct Liveness {
    closed: AtomicBool,
}

impl Liveness {
    pub(super) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// A [`SimConn`] that marks its [`Liveness`] closed when dropped.
pub(super) struct Watched {
    inner: SimConn,
    alive: Arc<Liveness>,
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.alive.closed.store(true, Ordering::Relaxed);
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The connector of one replica connection: it dials once. The tonic
/// channel it is given to never needs a second connection (the balancer
/// drops that channel and makes a new one when the first closes); should
/// it ask anyway, it gets an error instead of a connection the trace would
/// not explain.
///
/// `connect_timeout` (`Endpoint::connect_timeout`) is applied here, inside
/// tonic's connector wrapper, as hyper-util's `HttpConnector` applies it in
/// tonic's own balancer (`Endpoint::http_connector`): a timed-out connect is
/// then a `ConnectError`, which tonic reports as UNAVAILABLE. (tonic's
/// `connect_with_connector` also starts a timer of the same length around
/// the connector; this one is polled first and ends the attempt.)
pub(super) fn connector(
    shared: Arc<Shared>,
    from: Arc<str>,
    replica: Arc<str>,
    alive: Arc<Liveness>,
    connect_timeout: Option<Duration>,
    attempt: u32,
) -> impl tower::Service<
    Uri,
    Response = TokioIo<Watched>,
    Error = io::Error,
    Future = impl Send + 'static,
> + Send
       + 'static {
    let mut used = false;
    tower::service_fn(move |_: Uri| {
        let again = std::mem::replace(&mut used, true);
        let dial = crate::net::dial(shared.clone(), from.clone(), replica.clone(), attempt);
        let (replica, alive) = (replica.clone(), alive.clone());
        async move {
            if again {
                return Err(io::Error::other(format!(
                    "the balancer makes a new connection to {replica} itself"
                )));
            }
            // turmoil's errors name the peer's address; the trace names hosts.
            let dial = async {
                dial.await.map_err(|e| {
                    io::Error::new(e.kind(), format!("connect to {replica}: {}", e.kind()))
                })
            };
            let conn = match connect_timeout {
                None => dial.await?,
                Some(t) => tokio::time::timeout(t, dial).await.map_err(|_| {
                    io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!(
                            "connect to {replica} timed out after {}",
                            crate::trace::fmt_duration(t)
                        ),
                    )
                })??,
            };
            Ok(TokioIo::new(Watched { inner: conn, alive }))
        }
    })
}
