//! The single wiring point: every simulated connection between hosts is
//! opened or accepted here, and every byte a host writes passes through the
//! wire tap ([`tap`]) on its way out.

mod conn;
mod dial;
mod secure;
mod socket;
mod tap;

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use futures_util::{Stream, StreamExt};
use hyper_util::rt::TokioIo;
use tonic::transport::{Endpoint, Uri};

pub(crate) use crate::fault::{LinkState, Links};
use conn::End;
pub use conn::{PeerInfo, SimConn};
use dial::Dial;
use socket::Socket;
#[cfg(fuzzing)]
pub(crate) use tap::fuzzing;
pub(crate) use tap::{lock_conn, Policies, Registry, TapEnv, Waiting};

use crate::policy::{ConnInfo, PolicyPlan};
use crate::tls::TlsEnd;
use crate::wire::Direction;

/// What the wiring needs of the run, and no more: the tap's handle, the
/// registry that gives both ends of a connection one id and state, and the
/// policies to put on each new connection. A clone shares all it holds.
#[derive(Clone)]
pub(crate) struct Wiring {
    pub(crate) tap: TapEnv,
    pub(crate) conns: Arc<Registry>,
    pub(crate) policies: Arc<PolicyPlan>,
}

impl Wiring {
    /// The policies of the connection `info` describes, in chain order
    /// from the client: its server host's connection policies in the order
    /// added, then keepalive enforcement (the server's own); `None` when it
    /// has none.
    fn policies(&self, info: &ConnInfo<'_>) -> Option<Policies> {
        let list = self.policies.for_conn(info);
        (!list.is_empty()).then(|| Policies::new(list))
    }
}

/// The port every sim server host listens on (gRPC's customary 50051).
pub(crate) const PORT: u16 = 50051;

/// The connections a server host accepts, as tonic's
/// `serve_with_incoming` takes them.
pub(crate) type Accepted = std::pin::Pin<Box<dyn Stream<Item = io::Result<SimConn>> + Send>>;

/// How many TLS handshakes a server host runs at once: a client that
/// stalls its handshake holds one of them, not the listener (tonic runs
/// its handshakes concurrently too, `transport/server/incoming.rs`).
const HANDSHAKES_AT_ONCE: usize = 1024;

/// Accepts connections on `host`'s listener, forever; under `tls`, each
/// one's TLS handshake runs first (below the tap), and a connection whose
/// handshake fails is dropped, never handed to tonic.
pub(crate) async fn incoming(
    wiring: Wiring,
    host: Arc<str>,
    tls: Option<TlsEnd>,
) -> io::Result<Accepted> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    let accepts = futures_util::stream::unfold(listener, |listener| async move {
        let accepted = listener.accept().await.map(|(stream, addr)| {
            let peer = turmoil::reverse_lookup(addr.ip()).unwrap_or_else(|| addr.ip().to_string());
            (stream, peer)
        });
        Some((accepted, listener))
    });
    let end = move |peer: String| End {
        wiring: wiring.clone(),
        me: host.clone(),
        peer: peer.into(),
        direction: Direction::ServerToClient,
    };
    let Some(tls) = tls else {
        return Ok(Box::pin(accepts.map(move |accepted| {
            let (stream, peer) = accepted?;
            SimConn::new(stream, end(peer)).map(|(conn, _)| conn)
        })));
    };
    let handshakes = accepts.map(move |accepted| {
        let opened =
            accepted.and_then(|(stream, peer)| Ok((SimConn::open(&stream, end(peer))?, stream)));
        let tls = tls.clone();
        async move {
            let (opened, stream) = match opened {
                Ok(o) => o,
                Err(e) => return Some(Err(e)),
            };
            secure::handshake(opened, stream, &tls).await.ok().map(Ok)
        }
    });
    Ok(Box::pin(
        handshakes
            .buffer_unordered(HANDSHAKES_AT_ONCE)
            .filter_map(std::future::ready),
    ))
}

/// How long a client's h2 remembers a stream it reset, so that it ignores
/// the peer's frames still in flight for it. h2 measures it on
/// `std::time::Instant` (h2 0.4 `proto/streams/recv.rs`,
/// `clear_expired_reset_streams`; 1 s by default): *wall* time, which a
/// loaded machine stretches. A year never expires in a run, so only h2's
/// count of remembered streams decides (at most 50; one reset beyond
/// that is not remembered at all), as it
/// does at any speed. Set before the user's `Endpoint` options, which may
/// set it back (and bring the wall clock back with it).
const RESET_STREAM_DURATION: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

/// A lazily connecting tonic channel from `from` to `to`.
///
/// `configure` sees a fresh `Endpoint` for `http://<to>:50051` and may set
/// any tonic option (keepalive, timeouts, windows). `known` is false for
/// an unknown `to` (the caller records that as a configuration error, and
/// the run fails with the list of known hosts): every connection attempt
/// then fails with `NotFound`. Every attempt is recorded (`net/dial.rs`);
/// one across a partition waits for the repair. `unrecorded`: no recorded
/// channel wraps it ([`Host::tonic_channel`](crate::Host::tonic_channel)),
/// so a failed dial is recorded as the failure of the call that waited for
/// it ([`EventKind::CallFailedConnecting`](crate::recorder::event::EventKind::CallFailedConnecting)).
pub(crate) fn channel(
    wiring: &Wiring,
    known: bool,
    from: &str,
    to: &str,
    unrecorded: bool,
    tls: Option<TlsEnd>,
    configure: impl FnOnce(Endpoint) -> Endpoint,
) -> tonic::transport::Channel {
    let endpoint = configure(endpoint(to));
    let target: Arc<str> = to.into();
    let me: Arc<str> = from.into();
    let wiring = wiring.clone();
    // Dials of this channel, counted so that a redial says so.
    let attempts = Arc::new(AtomicU32::new(0));
    // Lives as long as the connector (see `dial::Witness`).
    let connector = Arc::new(());
    endpoint.connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
        let attempt = attempts.fetch_add(1, Ordering::Relaxed) + 1;
        let peer = target.clone();
        let witness = unrecorded.then(|| dial::Witness {
            connector: Arc::downgrade(&connector),
        });
        let dial = dial_witnessed(
            wiring.clone(),
            me.clone(),
            peer.clone(),
            attempt,
            witness,
            tls.clone(),
        );
        async move {
            if !known {
                let msg = format!("unknown host `{peer}`");
                return Err(io::Error::new(io::ErrorKind::NotFound, msg));
            }
            Ok::<_, io::Error>(TokioIo::new(dial.await?))
        }
    }))
}

/// A channel whose every connection attempt fails with `NotFound`, for a
/// channel to a name the run has no host or set for (the run then fails
/// with the problem recorded when the channel was asked for).
pub(crate) fn unusable_channel(name: &str) -> tonic::transport::Channel {
    let msg = format!("no host or replica set `{name}`");
    Endpoint::from_static("http://invalid-host-name:50051").connect_with_connector_lazy(
        tower::service_fn(move |_: Uri| {
            let e = io::Error::new(io::ErrorKind::NotFound, msg.clone());
            async move { Err::<TokioIo<SimConn>, _>(e) }
        }),
    )
}

/// Opens one simulated connection from `from` to server host `to`, port
/// [`PORT`], through the wire tap: what every client connector of the
/// harness does (a plain channel's, and each replica connection of a
/// balanced channel, `balance/`). The attempt (`attempt`: 1 for the first
/// dial of that channel or replica connection, more for a redial) is
/// recorded (`net/dial.rs`); across a partition it waits for the repair.
pub(crate) fn dial(
    wiring: Wiring,
    from: Arc<str>,
    to: Arc<str>,
    attempt: u32,
    tls: Option<TlsEnd>,
) -> impl std::future::Future<Output = io::Result<SimConn>> + Send {
    dial_witnessed(wiring, from, to, attempt, None, tls)
}

/// [`dial`], its failure recorded as a call's when `witness` is given,
/// inside TLS when `tls` is given (the TCP connect is recorded as the
/// dial's success, then the handshake as its own event).
fn dial_witnessed(
    wiring: Wiring,
    from: Arc<str>,
    to: Arc<str>,
    attempt: u32,
    witness: Option<dial::Witness>,
    tls: Option<TlsEnd>,
) -> impl std::future::Future<Output = io::Result<SimConn>> + Send {
    let end = End {
        wiring,
        me: from,
        peer: to,
        direction: Direction::ClientToServer,
    };
    async move {
        let mut dial = Dial::start(
            end.wiring.clone(),
            end.me.clone(),
            end.peer.clone(),
            attempt,
        )
        .witnessed(witness);
        let peer = end.peer.clone();
        let connected = async {
            dial.wait_for_link().await?;
            // turmoil's error names the peer's address (`192.168.0.1:50051`),
            // which tonic puts in the status message; the trace names hosts.
            let stream = turmoil::net::TcpStream::connect((&*end.peer, PORT))
                .await
                .map_err(|e| {
                    io::Error::new(e.kind(), format!("connect to {peer}: {}", e.kind()))
                })?;
            Ok::<_, io::Error>((SimConn::open(&stream, end)?, stream))
        }
        .await;
        let (opened, stream) = match connected {
            Ok(opened) => opened,
            Err(e) => {
                dial.failed(&e);
                return Err(e);
            }
        };
        dial.connected(opened.conn());
        match tls {
            None => Ok(opened.finish(Socket::Plain(stream))),
            Some(tls) => secure::handshake(opened, stream, &tls).await,
        }
    }
}

/// A fresh `Endpoint` for `http://<to>:50051`, with what every channel the
/// harness makes sets before the user's options (see
/// [`RESET_STREAM_DURATION`]).
pub(crate) fn endpoint(to: &str) -> Endpoint {
    Endpoint::from_shared(format!("http://{to}:{PORT}"))
        .unwrap_or_else(|_| Endpoint::from_static("http://invalid-host-name:50051"))
        .http2_reset_stream_duration(RESET_STREAM_DURATION)
}
