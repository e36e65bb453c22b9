//! One simulated TCP connection, as tonic sees it: reads come straight from
//! the turmoil socket; writes go through the wire tap's writer task, or
//! straight to the socket when the tap is off.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::PollSender;
use tonic::transport::server::Connected;

use super::socket::{ReadSide, Socket, WriteSide};
use super::tap::ends::CloseEnd;
use super::tap::{lock_conn, ConnState, SharedConn};
use super::tap::{spawn_writer, DirectionTap, RawRead, Read, Reset};
use super::Wiring;
use crate::policy::ConnInfo;
use crate::wire::Direction;

/// What a server handler learns about its connection (available as a request
/// extension, like tonic's `TcpConnectInfo`: `req.extensions().get::<PeerInfo>()`).
#[derive(Debug, Clone)]
pub struct PeerInfo {
    /// The host at the other end, interned once per connection.
    pub(crate) peer: crate::recorder::event::HostName,
}

impl PeerInfo {
    /// The host at the other end (a host name, not an IP).
    pub fn peer(&self) -> &str {
        &self.peer
    }
}

/// Where a connection's writes go.
enum Write {
    /// To the wire tap's writer task.
    Tapped(PollSender<Bytes>),
    /// To the socket ([`SimBuilder::wire_tap`](crate::SimBuilder::wire_tap)
    /// is off).
    Direct(WriteSide),
}

/// One simulated TCP connection accepted by a server host, wrapped at the
/// wiring point: what [`server::Incoming`](crate::server::Incoming) yields.
/// It is tokio's `AsyncRead` + `AsyncWrite` and tonic's `Connected`
/// (its `ConnectInfo` is [`PeerInfo`]), so tonic's
/// `serve_with_incoming(_shutdown)` serves it as it serves a `TcpStream`;
/// every byte the server writes passes the wire tap, which records its
/// frames and applies frame faults.
///
/// [`Host::raw_connect`](crate::Host::raw_connect) returns the client end
/// of one: what its owner writes passes the tap the same way.
pub struct SimConn {
    read: ReadSide,
    write: Write,
    info: PeerInfo,
    /// Server end of a connection with connection policies: reads end
    /// when a policy closes the connection.
    policed: Option<SharedConn>,
    /// Held while the connection is open, so a draining server host knows
    /// how many it still has ([`crate::Fault::shutdown`]).
    _open: Option<Arc<()>>,
    /// Under link faults or connection policies: reads and writes fail
    /// once a partition's `reset_after` or a policy
    /// ([`Effects::reset`](crate::policy::Effects::reset)) resets the
    /// connection.
    reset: Option<(Arc<Reset>, Direction)>,
    /// Server end, wire tap on: records what a raw client wrote, as read
    /// (`net/tap/raw.rs`); dropped at the first read of a dialled one.
    raw: Option<Box<RawRead>>,
    /// Wire tap on: what its close records (`net/tap/ends.rs`).
    close: Option<Box<CloseEnd>>,
    /// Bytes read from the peer, octets.
    read_bytes: u64,
}

impl std::fmt::Debug for SimConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConn")
            .field("peer", &self.info.peer)
            .field("read_bytes", &self.read_bytes)
            .finish_non_exhaustive()
    }
}

/// Which end of a connection this is.
pub(crate) struct End {
    pub(crate) wiring: Wiring,
    pub(crate) me: Arc<str>,
    pub(crate) peer: Arc<str>,
    pub(crate) direction: Direction,
}

impl SimConn {
    /// Wraps `stream` and starts the tap of the direction this end writes.
    /// Returns the connection's id too.
    pub(crate) fn new(stream: turmoil::net::TcpStream, end: End) -> io::Result<(Self, u32)> {
        let opened = Self::open(&stream, end)?;
        let conn = opened.conn;
        Ok((opened.finish(Socket::Plain(stream)), conn))
    }

    /// Gives `stream` its connection id and state (both ends of one TCP
    /// connection find the same, by its addresses), before any byte is
    /// written: what a TLS handshake needs to be recorded under the id.
    pub(crate) fn open(stream: &turmoil::net::TcpStream, end: End) -> io::Result<Opened> {
        let (local, remote) = (stream.local_addr()?, stream.peer_addr()?);
        let (client, server) = match end.direction {
            Direction::ClientToServer => (local, remote),
            Direction::ServerToClient => (remote, local),
        };
        let server_host = match end.direction {
            Direction::ClientToServer => &end.peer,
            Direction::ServerToClient => &end.me,
        };
        let client_host = match end.direction {
            Direction::ClientToServer => &end.me,
            Direction::ServerToClient => &end.peer,
        };
        let now = end.wiring.tap.recorder.now();
        let (conn, state) = end.wiring.conns.open(client, server, |conn| ConnState {
            policies: end.wiring.policies(&ConnInfo {
                conn,
                client: client_host,
                server: server_host,
                opened_at: now,
            }),
            tap: Default::default(),
            reset: Default::default(),
            dialled: false,
            reset_by: [false; 2],
            reset_note: Default::default(),
            written: Default::default(),
        });
        Ok(Opened { end, conn, state })
    }
}

/// A connection with its id and state, not yet wrapped
/// ([`SimConn::open`]).
pub(crate) struct Opened {
    end: End,
    conn: u32,
    state: SharedConn,
}

impl Opened {
    /// The connection's id (`c1` is 1).
    pub(crate) fn conn(&self) -> u32 {
        self.conn
    }

    /// Who this end is.
    pub(crate) fn end(&self) -> &End {
        &self.end
    }

    /// Wraps `socket` (the stream given to [`SimConn::open`], plain or
    /// inside TLS) and starts the tap of the direction this end writes.
    pub(crate) fn finish(self, socket: Socket) -> SimConn {
        let Self { end, conn, state } = self;
        let raw = match end.direction {
            Direction::ClientToServer => {
                // Before the first write: the server end's first read
                // finds it set (`net/tap/raw.rs`).
                lock_conn(&state).dialled = true;
                None
            }
            Direction::ServerToClient if end.wiring.tap.wire_tap => Some(Box::new(RawRead::new(
                end.wiring.tap.clone(),
                conn,
                end.peer.clone(),
                end.me.clone(),
                state.clone(),
            ))),
            Direction::ServerToClient => None,
        };
        let policed = match end.direction {
            Direction::ServerToClient if lock_conn(&state).policies.is_some() => {
                Some(state.clone())
            }
            _ => None,
        };
        let close = end.wiring.tap.wire_tap.then(|| {
            Box::new(CloseEnd {
                env: end.wiring.tap.clone(),
                conn,
                peer: end.peer.clone(),
                direction: end.direction,
                state: state.clone(),
            })
        });
        let (read, write) = socket.split();
        let info = PeerInfo {
            peer: (&end.peer).into(),
        };
        let links = end.wiring.tap.links.active();
        // A partition's `reset_after` or a connection policy can reset the
        // connection: only then do reads and writes look at the flag.
        let resettable = links || lock_conn(&state).policies.is_some();
        let reset = resettable.then(|| (lock_conn(&state).reset.clone(), end.direction));
        // Under link faults the writer task keeps bytes back even with the
        // tap off (it then records nothing).
        if !end.wiring.tap.wire_tap && !links {
            return SimConn {
                read,
                write: Write::Direct(write),
                info,
                policed,
                _open: None,
                reset,
                raw,
                close,
                read_bytes: 0,
            };
        }
        let tap = DirectionTap::new(end.wiring.tap, conn, end.direction, end.me, end.peer, state);
        SimConn {
            read,
            write: Write::Tapped(PollSender::new(spawn_writer(tap, write))),
            info,
            policed,
            _open: None,
            reset,
            raw,
            close,
            read_bytes: 0,
        }
    }
}

impl SimConn {
    /// Counts the connection in `open` until it is dropped.
    pub(crate) fn counted(mut self, open: Arc<()>) -> Self {
        self._open = Some(open);
        self
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
        if let Some((reset, direction)) = &self.reset {
            if reset.is_reset() {
                return Poll::Ready(Err(reset.error()));
            }
            reset.wake_reader(*direction, cx.waker());
        }
        if let Some(conn) = &self.policed {
            if let Some(policies) = lock_conn(conn).policies.as_mut() {
                if policies.is_closed() {
                    // A policy closed the connection: the server's own
                    // HTTP/2 stack reads the end of the stream.
                    return Poll::Ready(Ok(()));
                }
                policies.wake_reader_on_close(cx.waker());
            }
        }
        let (before, room) = (buf.filled().len(), buf.remaining() > 0);
        let polled = Pin::new(&mut self.read).poll_read(cx, buf);
        self.read_bytes += (buf.filled().len() - before) as u64;
        if self.raw.is_none() {
            return polled;
        }
        let read = match &polled {
            Poll::Ready(Ok(())) if buf.filled().len() > before => {
                Some(Read::Bytes(&buf.filled()[before..]))
            }
            Poll::Ready(Ok(())) if room => Some(Read::End),
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::ConnectionReset => Some(Read::Reset),
            _ => None,
        };
        if let Some(read) = read {
            let keep = self.raw.as_mut().is_some_and(|raw| raw.on_read(read));
            if !keep {
                self.raw = None;
            }
        }
        polled
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "connection closed")
}

impl Drop for SimConn {
    /// A close with the peer's bytes unread is a reset (turmoil's
    /// `ReadHalf` drop sends RST then, RFC 9293 §3.10.4): record it. A peek
    /// that finds a byte waiting is the same test turmoil makes (its
    /// reorder buffer aside, which in-order delivery leaves empty).
    fn drop(&mut self) {
        let Some(close) = self.close.take() else {
            return;
        };
        if self.reset.as_ref().is_some_and(|(r, _)| r.is_reset()) {
            return; // a partition's reset_after or a policy's, recorded as such
        }
        if self.read.has_unread() {
            close.reset_with_unread(self.read_bytes);
        }
    }
}

impl AsyncWrite for SimConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Some((reset, _)) = self.reset.as_ref().filter(|(r, _)| r.is_reset()) {
            return Poll::Ready(Err(reset.error()));
        }
        match &mut self.write {
            Write::Tapped(tx) => {
                ready!(tx.poll_reserve(cx)).map_err(|_| closed())?;
                tx.send_item(Bytes::copy_from_slice(buf))
                    .map_err(|_| closed())?;
                Poll::Ready(Ok(buf.len()))
            }
            Write::Direct(socket) => Pin::new(socket).poll_write(cx, buf),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.write {
            // The writer task writes as soon as bytes are due.
            Write::Tapped(_) => Poll::Ready(Ok(())),
            Write::Direct(socket) => Pin::new(socket).poll_flush(cx),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match &mut self.write {
            Write::Tapped(tx) => {
                // Closing the channel lets the writer task drain, then shut
                // down.
                tx.close();
                Poll::Ready(Ok(()))
            }
            Write::Direct(socket) => Pin::new(socket).poll_shutdown(cx),
        }
    }
}
