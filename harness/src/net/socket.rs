//! The socket under a connection: turmoil's TCP stream, plain or inside
//! TLS ([`crate::tls`]). The wire tap sits above it, so it reads HTTP/2
//! frames either way; under TLS, the bytes on turmoil's link are TLS
//! records (RFC 8446 §5) that the trace never shows.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use turmoil::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use turmoil::net::TcpStream;

use crate::tls::TlsStream;

/// A connected socket, before it is split into its halves.
pub(crate) enum Socket {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

impl Socket {
    pub(crate) fn split(self) -> (ReadSide, WriteSide) {
        match self {
            Self::Plain(s) => {
                let (r, w) = s.into_split();
                (ReadSide::Plain(r), WriteSide::Plain(w))
            }
            Self::Tls(s) => {
                let (r, w) = tokio::io::split(*s);
                (ReadSide::Tls(r), WriteSide::Tls(w))
            }
        }
    }
}

/// What a connection reads from.
pub(crate) enum ReadSide {
    Plain(OwnedReadHalf),
    Tls(tokio::io::ReadHalf<TlsStream>),
}

impl ReadSide {
    /// Whether a byte from the peer waits unread (turmoil's test for a
    /// close that resets, RFC 9293 §3.10.4). Under TLS the plaintext
    /// cannot be peeked without reading it: `false`.
    pub(crate) fn has_unread(&mut self) -> bool {
        let Self::Plain(read) = self else {
            return false;
        };
        let mut cx = Context::from_waker(futures_util::task::noop_waker_ref());
        let mut byte = [0u8; 1];
        let mut buf = ReadBuf::new(&mut byte);
        matches!(Pin::new(read).poll_peek(&mut cx, &mut buf), Poll::Ready(Ok(n)) if n > 0)
    }
}

impl AsyncRead for ReadSide {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(r) => Pin::new(r).poll_read(cx, buf),
            Self::Tls(r) => Pin::new(r).poll_read(cx, buf),
        }
    }
}

/// What a connection writes to.
pub(crate) enum WriteSide {
    Plain(OwnedWriteHalf),
    Tls(tokio::io::WriteHalf<TlsStream>),
}

impl AsyncWrite for WriteSide {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(w) => Pin::new(w).poll_write(cx, buf),
            Self::Tls(w) => Pin::new(w).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(w) => Pin::new(w).poll_flush(cx),
            Self::Tls(w) => Pin::new(w).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(w) => Pin::new(w).poll_shutdown(cx),
            Self::Tls(w) => Pin::new(w).poll_shutdown(cx),
        }
    }
}
