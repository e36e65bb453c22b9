//! turmoil's TCP stream with gathering writes, as a real socket has them
//! (`writev(2)`; tokio's `TcpStream::poll_write_vectored`), for rustls.
//!
//! rustls hands its queued records to `write_vectored` in one call
//! (rustls 0.23 `vecbuf.rs`, `ChunkVecBuffer::write_to`). turmoil's stream
//! does not implement it, so tokio's default writes only the first buffer
//! (`AsyncWrite::poll_write_vectored`). That is harmless where
//! tokio-rustls loops until rustls has nothing left, but its last write
//! after a failed handshake is a single call (tokio-rustls 0.26
//! `common/mod.rs`, `read_io`: "a last-gasp write"): a server that fails
//! after its ServerHello (ALPN, a client certificate) then sent the
//! ServerHello only, and never the alert behind it, and the client read
//! the end of the stream where a real one reads the alert (measured: the
//! same configs over `tokio::io::duplex`, whose writes gather, and over
//! turmoil with the records written by hand, deliver the alert).

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use turmoil::net::TcpStream;

/// A turmoil TCP stream whose vectored writes write every buffer that
/// fits, in order, as one `writev` would.
#[derive(Debug)]
pub(crate) struct Writev(pub(crate) TcpStream);

impl AsyncRead for Writev {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Writev {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let mut written = 0;
        for buf in bufs.iter().filter(|b| !b.is_empty()) {
            match Pin::new(&mut self.0).poll_write(cx, buf) {
                Poll::Ready(Ok(n)) => {
                    written += n;
                    if n < buf.len() {
                        break;
                    }
                }
                // What was written is reported; the error or the wait
                // comes with the next call, as writev's partial write.
                Poll::Ready(Err(_)) | Poll::Pending if written > 0 => break,
                other => return other,
            }
        }
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
