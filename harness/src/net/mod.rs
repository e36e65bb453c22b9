//! The single wiring point: every simulated connection between hosts is
//! opened or accepted here, and every byte a host writes passes through the
//! wire tap ([`tap`]) on its way out.

mod conn;
mod tap;

use std::io;
use std::sync::Arc;

use futures_util::Stream;
use hyper_util::rt::TokioIo;
use tonic::transport::{Endpoint, Uri};

use conn::End;
pub(crate) use conn::{PeerInfo, SimConn};
pub(crate) use tap::{KeepaliveConn, TapPair};

use crate::sim::Shared;
use crate::wire::Direction;

/// The port every sim server host listens on (gRPC's customary 50051).
pub(crate) const PORT: u16 = 50051;

/// Accepts connections on `host`'s listener, forever.
pub(crate) async fn incoming(
    shared: Arc<Shared>,
    host: Arc<str>,
) -> io::Result<impl Stream<Item = io::Result<SimConn>>> {
    let listener = turmoil::net::TcpListener::bind(("0.0.0.0", PORT)).await?;
    Ok(futures_util::stream::unfold(
        (listener, shared, host),
        |(listener, shared, host)| async move {
            let accepted = listener.accept().await.and_then(|(stream, addr)| {
                let peer =
                    turmoil::reverse_lookup(addr.ip()).unwrap_or_else(|| addr.ip().to_string());
                let end = End {
                    shared: shared.clone(),
                    me: host.clone(),
                    peer: peer.into(),
                    direction: Direction::ServerToClient,
                };
                SimConn::new(stream, end)
            });
            Some((accepted, (listener, shared, host)))
        },
    ))
}

/// A lazily connecting tonic channel from `from` to `to`.
///
/// `configure` sees a fresh `Endpoint` for `http://<to>:50051` and may set
/// any tonic option (keepalive, timeouts, windows). An unknown `to` is
/// recorded as a configuration error (the run fails with the list of known
/// hosts) and every connection attempt fails with `NotFound`.
pub(crate) fn channel(
    shared: &Arc<Shared>,
    from: &str,
    to: &str,
    configure: impl FnOnce(Endpoint) -> Endpoint,
) -> tonic::transport::Channel {
    let known = shared.check_host(to, &format!("channel() on host `{from}`"));
    let endpoint = configure(
        Endpoint::from_shared(format!("http://{to}:{PORT}"))
            .unwrap_or_else(|_| Endpoint::from_static("http://invalid-host-name:50051")),
    );
    let target: Arc<str> = to.into();
    let me: Arc<str> = from.into();
    let shared = shared.clone();
    endpoint.connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
        let end = End {
            shared: shared.clone(),
            me: me.clone(),
            peer: target.clone(),
            direction: Direction::ClientToServer,
        };
        async move {
            if !known {
                let msg = format!("unknown host `{}`", end.peer);
                return Err(io::Error::new(io::ErrorKind::NotFound, msg));
            }
            let stream = turmoil::net::TcpStream::connect((&*end.peer, PORT)).await?;
            Ok::<_, io::Error>(TokioIo::new(SimConn::new(stream, end)?))
        }
    }))
}
