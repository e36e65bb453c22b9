//! The host of a serve fn ([`Sim::server_fn`](super::Sim::server_fn)):
//! the user's own `serve(incoming, shutdown)` runs on it unchanged.

use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use tokio::sync::watch;

use super::{Host, Shared};
use crate::recorder::event::EventKind;
use crate::server::{HandlerLayer, Incoming, Shutdown};

/// What a serve fn returns, its error type erased.
pub(crate) type ServeFut = Pin<Box<dyn Future<Output = Result<(), Box<dyn std::error::Error>>>>>;

/// A serve fn, as the harness keeps it: it runs again on each restart.
pub(crate) type UserServe = Arc<dyn Fn(ServeFnHost) -> ServeFut>;

/// A server host whose code is your own serve function
/// ([`Sim::server_fn`](crate::Sim::server_fn)): it hands that function the
/// host's connections ([`ServeFnHost::incoming`]), its shutdown signal
/// ([`ServeFnHost::shutdown`]) and the harness's recording layer
/// ([`ServeFnHost::handler_layer`]); it derefs to [`Host`] for channels to
/// other hosts.
pub struct ServeFnHost {
    host: Host,
    incoming: Mutex<Option<Incoming>>,
    shutdown: watch::Receiver<bool>,
    layer: HandlerLayer,
}

impl ServeFnHost {
    /// `accepted` is the host's listener, each connection counted for
    /// its shutdown.
    pub(crate) fn serving(
        host: Host,
        accepted: impl futures_util::Stream<Item = std::io::Result<crate::net::SimConn>>
            + Send
            + 'static,
        shutdown: watch::Receiver<bool>,
        layer: HandlerLayer,
    ) -> Self {
        let (shared, name) = (host.shared.clone(), host.name.clone());
        let check = layer.clone();
        let mut checked = false;
        // tonic applies its layers before it accepts: at the first
        // connection, the layer is on the server or it never will be.
        let incoming = accepted.map(move |conn| {
            if conn.is_ok() && !std::mem::replace(&mut checked, true) && !check.applied() {
                without_layer(&shared, &name);
            }
            conn
        });
        Self {
            host,
            incoming: Mutex::new(Some(Incoming::new(incoming))),
            shutdown,
            layer,
        }
    }

    /// The host's simulated connections on port 50051, for tonic's
    /// `serve_with_incoming_shutdown(incoming, shutdown)` (or
    /// `serve_with_incoming`): every connection a peer opens to this host,
    /// its frames recorded by the wire tap. There is one listener per
    /// start of the host: a second call fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)) and
    /// returns a stream that never yields.
    pub fn incoming(&self) -> Incoming {
        let taken = self
            .incoming
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        taken.unwrap_or_else(|| {
            self.host.shared.misconfigured(format!(
                "ServeFnHost::incoming was called twice on host `{}`: the host has one listener; \
                 pass the one stream to your server",
                self.host.name
            ));
            Incoming::never()
        })
    }

    /// A future that completes when [`Fault::shutdown`](crate::Fault::shutdown)
    /// starts this host's graceful shutdown: the `signal` of tonic's
    /// `serve_with_incoming_shutdown`. Call it as often as you need (each
    /// completes at the same instant). Once the serve fn returns after it,
    /// the trace shows `serve returned`; a `.grace` that runs out first
    /// crashes the host.
    pub fn shutdown(&self) -> Shutdown {
        Shutdown::new(super::shutdown::signal(self.shutdown.clone()))
    }

    /// The harness's recording and handler-fault layer for this host
    /// ([`HandlerLayer`]), to add to your builder:
    /// `Server::builder().layer(host.handler_layer())`. With it, every
    /// request that reaches your service stack is a recorded handler run
    /// (`hN`) and [`Fault::handler`](crate::Fault::handler) faults act on
    /// it; added first, it sits where the harness's own builder puts it
    /// (outside your layers, inside tonic's own `timeout` and limits; see
    /// [`crate::server`]).
    ///
    /// Without it the harness sees this host's frames only: the trace says
    /// so at the first connection each start of the host accepts
    /// (`serve fn without the handler layer: …`), and a handler fault
    /// naming the host fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)).
    pub fn handler_layer(&self) -> HandlerLayer {
        self.layer.clone()
    }
}

/// Records that `host`'s serve fn accepted a connection without the
/// handler layer; a handler fault naming the host is a misconfiguration.
fn without_layer(shared: &Shared, host: &str) {
    shared.recorder.push(host, EventKind::ServeFnWithoutLayer);
    for fault in shared.handler_faults_on(host) {
        shared.misconfigured(format!(
            "the handler fault `{fault}` cannot act: host `{host}` runs a serve fn whose server \
             does not have the harness's handler layer, so its handler runs are not seen; add \
             `.layer(host.handler_layer())` to the builder in the serve fn (first, to act before \
             your own layers), or use a frame fault"
        ));
    }
}

impl Deref for ServeFnHost {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}

impl std::fmt::Debug for ServeFnHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeFnHost")
            .field("name", &self.host.name)
            .finish_non_exhaustive()
    }
}
