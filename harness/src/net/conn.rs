//! One simulated TCP connection, as tonic sees it: reads come straight from
//! the turmoil socket; writes go through the wire tap's writer task.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::PollSender;
use tonic::transport::server::Connected;

use super::tap::{spawn_writer, DirectionTap, KeepaliveConn};
use crate::sim::{lock_conn, ConnState, Shared, SharedConn};
use crate::wire::Direction;

/// What a server handler learns about its connection (available as a request
/// extension, like tonic's `TcpConnectInfo`).
#[derive(Debug, Clone)]
pub(crate) struct PeerInfo {
    /// The host at the other end.
    pub(crate) peer: Arc<str>,
}

/// A turmoil TCP stream wrapped at the wiring point.
pub(crate) struct SimConn {
    read: turmoil::net::tcp::OwnedReadHalf,
    write: PollSender<Bytes>,
    info: PeerInfo,
    /// Server end of a connection under a keepalive policy: reads end when
    /// the policy closes the connection.
    policed: Option<SharedConn>,
}

/// Which end of a connection this is.
pub(crate) struct End {
    pub(crate) shared: Arc<Shared>,
    pub(crate) me: Arc<str>,
    pub(crate) peer: Arc<str>,
    pub(crate) direction: Direction,
}

impl SimConn {
    /// Wraps `stream` and starts the tap of the direction this end writes.
    pub(crate) fn new(stream: turmoil::net::TcpStream, end: End) -> io::Result<Self> {
        let (local, remote) = (stream.local_addr()?, stream.peer_addr()?);
        let (client, server) = match end.direction {
            Direction::ClientToServer => (local, remote),
            Direction::ServerToClient => (remote, local),
        };
        let server_host = match end.direction {
            Direction::ClientToServer => &end.peer,
            Direction::ServerToClient => &end.me,
        };
        let policy = end.shared.keepalive_policy(server_host);
        let now = end.shared.recorder.now();
        let (conn, state) = end.shared.conns().open(client, server, || ConnState {
            keepalive: policy.map(|p| KeepaliveConn::new(p, now)),
            tap: Default::default(),
        });
        let policed = match end.direction {
            Direction::ServerToClient if policy.is_some() => Some(state.clone()),
            _ => None,
        };
        let (read, write) = stream.into_split();
        let tap = DirectionTap::new(
            end.shared,
            conn,
            end.direction,
            end.me,
            end.peer.clone(),
            state,
        );
        Ok(Self {
            read,
            write: PollSender::new(spawn_writer(tap, write)),
            info: PeerInfo { peer: end.peer },
            policed,
        })
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
        if let Some(conn) = &self.policed {
            if let Some(ka) = lock_conn(conn).keepalive.as_mut() {
                if ka.is_closed() {
                    // The emulated server closed the connection: its own
                    // HTTP/2 stack reads the end of the stream.
                    return Poll::Ready(Ok(()));
                }
                ka.wake_reader_on_close(cx.waker());
            }
        }
        Pin::new(&mut self.read).poll_read(cx, buf)
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "connection closed")
}

impl AsyncWrite for SimConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        ready!(self.write.poll_reserve(cx)).map_err(|_| closed())?;
        self.write
            .send_item(Bytes::copy_from_slice(buf))
            .map_err(|_| closed())?;
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The writer task writes as soon as bytes are due.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Closing the channel lets the writer task drain, then shut down.
        self.write.close();
        Poll::Ready(Ok(()))
    }
}
