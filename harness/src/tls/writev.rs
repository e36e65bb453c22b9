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

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::sync::futures::OwnedNotified;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use turmoil::net::TcpStream;

use super::watch::Watch;
use crate::fault::Links;

/// A turmoil TCP stream whose vectored writes write every buffer that
/// fits, in order, as one `writev` would; during the handshake, its
/// octets in both directions go to a [`Watch`] too (set to `None` once
/// the handshake has ended).
pub(crate) struct Writev {
    tcp: TcpStream,
    pub(crate) watch: Option<Box<Watch>>,
    /// During the handshake: the link its writes wait for.
    pub(crate) gate: Option<Gate>,
}

impl Writev {
    pub(crate) fn new(tcp: TcpStream, watch: Watch, gate: Gate) -> Self {
        Self {
            tcp,
            watch: Some(Box::new(watch)),
            gate: Some(gate),
        }
    }

    /// Ready once the handshake's writes may leave.
    fn poll_gate(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.gate {
            Some(gate) => gate.poll_open(cx),
            None => Poll::Ready(()),
        }
    }

    fn wrote(&mut self, bytes: &[u8]) {
        #[cfg(test)]
        WRITTEN.with(|w| w.borrow_mut().extend_from_slice(bytes));
        if let Some(watch) = &mut self.watch {
            watch.wrote(bytes);
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Every octet written to turmoil's TCP by a TLS end on this thread,
    /// in order: the ciphertext below rustls, for the determinism test.
    static WRITTEN: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The octets written since the last call (see `WRITTEN`).
#[cfg(test)]
pub(crate) fn take_written() -> Vec<u8> {
    WRITTEN.with(|w| std::mem::take(&mut *w.borrow_mut()))
}

/// The link between a handshake's two hosts. The handshake's octets do not
/// cross the wire tap, whose writer task holds frames while a partition or
/// a pause holds the link (`net/tap/writer.rs`): a handshake write waits
/// here instead, at its sender, and leaves when the link opens, as TCP
/// retransmits until the repair. A partition's `reset_after` does not act
/// here: the connect timeout of the caller, or the end of the run, ends a
/// handshake that waits for ever.
pub(crate) struct Gate {
    links: Arc<Links>,
    me: Arc<str>,
    peer: Arc<str>,
    /// Taken before the state is read, so an opening in between wakes it.
    opening: Option<Pin<Box<OwnedNotified>>>,
}

impl Gate {
    pub(crate) fn new(links: Arc<Links>, me: Arc<str>, peer: Arc<str>) -> Self {
        Self {
            links,
            me,
            peer,
            opening: None,
        }
    }

    fn poll_open(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if !self.links.active() {
            return Poll::Ready(());
        }
        loop {
            let links = &self.links;
            let opening = self
                .opening
                .get_or_insert_with(|| Box::pin(links.next_opening_owned()));
            if !links.state(&self.me, &self.peer).holds() {
                self.opening = None;
                return Poll::Ready(());
            }
            ready!(opening.as_mut().poll(cx));
            self.opening = None;
        }
    }
}

impl std::fmt::Debug for Writev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Writev").field(&self.tcp).finish()
    }
}

impl AsyncRead for Writev {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let (before, room) = (buf.filled().len(), buf.remaining());
        let polled = Pin::new(&mut self.tcp).poll_read(cx, buf);
        if let Some(watch) = &mut self.watch {
            match &polled {
                // An empty read with room in the buffer is the end.
                Poll::Ready(Ok(())) if room > 0 => watch.read(&buf.filled()[before..]),
                Poll::Ready(Err(_)) => watch.read_failed(),
                _ => {}
            }
        }
        polled
    }
}

impl AsyncWrite for Writev {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_gate(cx));
        let polled = Pin::new(&mut self.tcp).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.wrote(&buf[..n]);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        ready!(self.poll_gate(cx));
        let mut written = 0;
        for buf in bufs.iter().filter(|b| !b.is_empty()) {
            match Pin::new(&mut self.tcp).poll_write(cx, buf) {
                Poll::Ready(Ok(n)) => {
                    self.wrote(&buf[..n]);
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
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
