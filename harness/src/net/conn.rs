//! One simulated TCP connection, as tonic sees it.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

/// What a server handler learns about its connection (available as a request
/// extension, like tonic's `TcpConnectInfo`).
#[derive(Debug, Clone)]
pub(crate) struct PeerInfo {
    /// The host at the other end.
    pub(crate) peer: Arc<str>,
}

/// A turmoil TCP stream wrapped at the wiring point.
pub(crate) struct SimConn {
    stream: turmoil::net::TcpStream,
    info: PeerInfo,
}

impl SimConn {
    pub(crate) fn new(stream: turmoil::net::TcpStream, info: PeerInfo) -> Self {
        Self { stream, info }
    }
}

impl Connected for SimConn {
    type ConnectInfo = PeerInfo;

    fn connect_info(&self) -> PeerInfo {
        self.info.clone()
    }
}

impl AsyncRead for SimConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for SimConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
