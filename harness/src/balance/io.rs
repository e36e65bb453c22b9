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
/// old connection's last moments); and whether the server sent a GOAWAY
/// on one of them, which a health Watch must hear of (gRFC A17: "when the
/// backend sends a GOAWAY, the client will cancel the Watch() call"),
/// where hyper and tonic say nothing until the connection is gone.
#[derive(Debug)]
pub(super) struct Liveness {
    open: AtomicUsize,
    goaway: tokio::sync::watch::Sender<bool>,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            open: AtomicUsize::new(0),
            goaway: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl Liveness {
    /// No socket of this replica connection is open any more.
    pub(super) fn is_closed(&self) -> bool {
        self.open.load(Ordering::Relaxed) == 0
    }

    /// Resolves once the server has sent a GOAWAY on this connection.
    pub(super) async fn goaway(&self) {
        let mut seen = self.goaway.subscribe();
        // The sender lives as long as `self`: this cannot fail.
        let _ = seen.wait_for(|g| *g).await;
    }
}

/// Finds GOAWAY frames in what the server sends, by frame headers alone
/// (RFC 9113 §4.1: a 24-bit length, then the type; §3.4: the server's
/// side of a connection is frames from its first byte): the payloads are
/// skipped unread.
#[derive(Debug, Default)]
struct GoawayScan {
    head: [u8; 9],
    have: usize,
    skip: usize,
}

/// RFC 9113 §6.8.
const GOAWAY: u8 = 0x7;

impl GoawayScan {
    /// Reads `bytes`, the next ones the server sent; true when a GOAWAY
    /// frame header was among them.
    fn feed(&mut self, mut bytes: &[u8]) -> bool {
        let mut seen = false;
        while !bytes.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            let n = (9 - self.have).min(bytes.len());
            self.head[self.have..self.have + n].copy_from_slice(&bytes[..n]);
            self.have += n;
            bytes = &bytes[n..];
            if self.have == 9 {
                let [a, b, c, kind, ..] = self.head;
                self.skip = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
                seen |= kind == GOAWAY;
                self.have = 0;
            }
        }
        seen
    }
}

/// A [`SimConn`] that counts itself open in its [`Liveness`] until dropped,
/// and, on a health-checked channel, tells it of the server's GOAWAY.
pub(super) struct Watched {
    inner: SimConn,
    alive: Arc<Liveness>,
    /// Only a health Watch listens for the GOAWAY: without one, the bytes
    /// are not scanned at all.
    scan: Option<GoawayScan>,
}

impl Watched {
    fn new(inner: SimConn, alive: Arc<Liveness>, scan_goaway: bool) -> Self {
        alive.open.fetch_add(1, Ordering::Relaxed);
        Self {
            inner,
            alive,
            scan: scan_goaway.then(GoawayScan::default),
        }
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
        let before = buf.filled().len();
        let this = &mut *self;
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Some(scan) = &mut this.scan {
            if scan.feed(&buf.filled()[before..]) {
                this.alive.goaway.send_replace(true);
            }
        }
        read
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

/// How one replica connection is made, beyond who dials whom.
pub(super) struct DialOptions {
    /// `Endpoint::connect_timeout`.
    pub(super) connect_timeout: Option<Duration>,
    /// On a health-checked channel: its Watch is cancelled on a GOAWAY.
    pub(super) scan_goaway: bool,
    /// TLS on the connection ([`crate::tls`]).
    pub(super) tls: Option<crate::tls::TlsEnd>,
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
    dials: Arc<AtomicU32>,
    options: DialOptions,
) -> impl tower::Service<
    Uri,
    Response = TokioIo<Watched>,
    Error = io::Error,
    Future = impl Send + 'static,
> + Send
       + 'static {
    let DialOptions {
        connect_timeout,
        scan_goaway,
        tls,
    } = options;
    tower::service_fn(move |_: Uri| {
        let attempt = dials.fetch_add(1, Ordering::Relaxed) + 1;
        let dial = crate::net::dial(
            wiring.clone(),
            from.clone(),
            replica.clone(),
            attempt,
            tls.clone(),
        );
        let (replica, alive) = (replica.clone(), alive.clone());
        async move {
            // turmoil's errors name the peer's address; the trace names
            // hosts. A failed TLS handshake's (rustls's reason, or the end
            // of the stream mid-handshake) names none: kept, as a plain
            // channel's connector keeps it.
            let dial = async {
                dial.await.map_err(|e| match e.kind() {
                    io::ErrorKind::InvalidData | io::ErrorKind::UnexpectedEof => {
                        io::Error::new(e.kind(), format!("connect to {replica}: {e}"))
                    }
                    kind => io::Error::new(kind, format!("connect to {replica}: {kind}")),
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
            Ok(TokioIo::new(Watched::new(conn, alive, scan_goaway)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::GoawayScan;

    fn frame(kind: u8, len: usize) -> Vec<u8> {
        let mut f = vec![
            (len >> 16) as u8,
            (len >> 8) as u8,
            len as u8,
            kind,
            0,
            0,
            0,
            0,
            0,
        ];
        f.extend(std::iter::repeat_n(0x7, len)); // payload bytes that look like GOAWAY
        f
    }

    #[test]
    fn a_goaway_is_found_by_its_header_across_any_split() {
        let mut wire = frame(0x4, 6); // SETTINGS
        wire.extend(frame(0x0, 300)); // DATA full of 0x07 octets
        let at = wire.len();
        wire.extend(frame(0x7, 8)); // GOAWAY
        for split in 1..wire.len() {
            let mut scan = GoawayScan::default();
            let (a, b) = wire.split_at(split);
            let seen = (scan.feed(a), scan.feed(b));
            // Seen once its whole 9-octet header has arrived.
            let in_first = split >= at + 9;
            assert_eq!(seen, (in_first, !in_first), "split at {split}");
        }
        let mut scan = GoawayScan::default();
        assert!(!scan.feed(&wire[..at]), "no GOAWAY before it");
    }
}
