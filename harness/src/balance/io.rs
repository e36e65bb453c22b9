//! A replica connection's socket and connector. The balancer must learn
//! when a replica's connection is gone, as tonic's reconnect learns it from
//! hyper's `SendRequest::poll_ready` failing; behind the tonic channel the
//! harness uses per replica, that signal is hidden, so the socket itself
//! reports it: hyper drops it when its connection task ends (closed by the
//! peer, reset, a keepalive timeout, a GOAWAY with no stream left).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::Uri;

use crate::net::{SimConn, Wiring};

/// Whether a replica connection's sockets are still held by hyper: how
/// many are open (a redial by the channel's own reconnect can overlap the
/// old connection's last moments).
#[derive(Debug, Default)]
pub(super) struct Liveness {
    open: AtomicUsize,
}

impl Liveness {
    /// No socket of this replica connection is open any more.
    pub(super) fn is_closed(&self) -> bool {
        self.open.load(Ordering::Relaxed) == 0
    }
}

/// A [`SimConn`] that counts itself open in its [`Liveness`] until dropped.
pub(super) struct Watched {
    inner: SimConn,
    alive: Arc<Liveness>,
}

impl Watched {
    fn new(inner: SimConn, alive: Arc<Liveness>) -> Self {
        alive.open.fetch_add(1, Ordering::Relaxed);
        Self { inner, alive }
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.alive.open.fetch_sub(1, Ordering::Relaxed);
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

/// The connector of one replica connection. The balancer makes a new
/// channel (and connector) when it sees the connection closed; a call
/// routed to the replica while its connection goes away (after a GOAWAY,
/// before hyper drops the socket) makes the channel's own reconnect dial
/// again, as tonic's balancer does through its per-endpoint reconnect
/// (`transport/channel/service/reconnect.rs`); both dials are recorded,
/// numbered by `dials`.
///
/// `connect_timeout` (`Endpoint::connect_timeout`) is applied here, inside
/// tonic's connector wrapper, as hyper-util's `HttpConnector` applies it in
/// tonic's own balancer (`Endpoint::http_connector`): a timed-out connect is
/// then a `ConnectError`, which tonic reports as UNAVAILABLE. (tonic's
/// `connect_with_connector` also starts a timer of the same length around
/// the connector; this one is polled first and ends the attempt.)
pub(super) fn connector(
    wiring: Wiring,
    from: Arc<str>,
    replica: Arc<str>,
    alive: Arc<Liveness>,
    connect_timeout: Option<Duration>,
    dials: Arc<AtomicU32>,
) -> impl tower::Service<
    Uri,
    Response = TokioIo<Watched>,
    Error = io::Error,
    Future = impl Send + 'static,
> + Send
       + 'static {
    tower::service_fn(move |_: Uri| {
        let attempt = dials.fetch_add(1, Ordering::Relaxed) + 1;
        let dial = crate::net::dial(wiring.clone(), from.clone(), replica.clone(), attempt);
        let (replica, alive) = (replica.clone(), alive.clone());
        async move {
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
                            crate::units::fmt_duration(t)
                        ),
                    )
                })??,
            };
            Ok(TokioIo::new(Watched::new(conn, alive)))
        }
    })
}
