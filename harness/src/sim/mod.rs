//! The simulated world: a turmoil simulation whose hosts run real tonic
//! servers and client bodies, wired through the harness.

mod builder;
mod canary;
mod health;
mod host;
mod limits;
mod retry_use;
mod run;
mod serve_host;
mod shared;
mod shutdown;
#[cfg(test)]
mod tls_tests;
mod validate;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use crate::balance::ReplicaSet;
pub use builder::{defaults, SimBuilder};
pub use canary::CANARY_ENV;
pub(crate) use canary::{first_difference, Record};
pub use host::{Host, ServerHost};
pub(crate) use run::run_failed;
pub use serve_host::ServeFnHost;
pub(crate) use shared::{Rules, Shared};

use crate::fault::Fault;
use crate::policy::{ConnInfo, ConnectionPolicy, KeepalivePolicy, PolicyFactory};

use crate::client::ClientResult;

type ServerSetup = Arc<dyn Fn(ServerHost) -> ServerHost>;
type ClientBody = Box<dyn FnOnce(Host) -> Pin<Box<dyn Future<Output = ClientResult>>>>;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Config {
    pub(crate) seed: u64,
    pub(crate) duration: Duration,
    pub(crate) tick: Duration,
    pub(crate) latency: Duration,
    pub(crate) jitter: Duration,
    /// `CHAOS_JITTER_US` when the jitter came from it, to replay the run.
    pub(crate) jitter_env: Option<u64>,
    pub(crate) settle: Duration,
    pub(crate) wire_tap: bool,
    pub(crate) show_credentials: bool,
    pub(crate) max_steps: u64,
    /// [`SimBuilder::no_progress_limit`], when set.
    pub(crate) no_progress_limit: Option<Duration>,
    /// Handler polls held their thread too long past this, *wall* time;
    /// `None`: not timed.
    pub(crate) slow_poll: Option<Duration>,
}

impl Config {
    /// When the run stops at the latest: its duration, or `max_steps`
    /// ticks when that comes first (a `Duration::MAX` run; finite ones
    /// longer than that are refused before the run).
    pub(crate) fn end(&self) -> Duration {
        let ns = self
            .tick
            .as_nanos()
            .saturating_mul(u128::from(self.max_steps));
        self.duration
            .min(Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX)))
    }

    /// The no-progress limit in force, *simulated* time: an unbounded
    /// run's ([`SimBuilder::no_progress_limit`], else
    /// [`defaults::NO_PROGRESS_LIMIT`]); none for a finite duration, which
    /// runs to its end, nor for `Duration::MAX` as the limit (off).
    pub(crate) fn no_progress_limit(&self) -> Option<Duration> {
        let limit = self
            .no_progress_limit
            .unwrap_or(defaults::NO_PROGRESS_LIMIT);
        (self.duration == Duration::MAX && limit != Duration::MAX).then_some(limit)
    }

    /// Whether the run stops at its step ceiling before its duration.
    pub(crate) fn capped_by_steps(&self) -> bool {
        self.end() < self.duration
    }
}

/// A simulated network of tonic servers and clients, the faults to inject
/// into it, and the recorder that watches it.
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::{Fault, Sim};
///
/// let mut sim = Sim::builder().seed(7).build();
/// sim.server("store", |s| s); // add_service(StoreServer::new(..)) here
/// sim.client("player", |_player| async move {
///     tokio::time::sleep(Duration::from_millis(10)).await;
///     Ok(())
/// });
/// sim.fault(Fault::crash("store").at(Duration::from_millis(5)));
/// let trace = sim.run().expect("run");
/// assert!(trace.render().contains("store                host crashed"));
/// ```
pub struct Sim {
    config: Config,
    /// A problem found while building (a bad environment variable),
    /// reported by `run`.
    problem: Option<String>,
    servers: Vec<(String, ServerSetup)>,
    clients: Vec<(String, ClientBody)>,
    faults: Vec<Fault>,
    keepalive: Vec<(String, KeepalivePolicy)>,
    /// Connection policies per server host ([`Sim::connection_policy`]).
    policies: Vec<(String, PolicyFactory)>,
    /// Middleboxes per server host ([`Sim::middlebox`]), for the checks;
    /// each is in `policies` too.
    middleboxes: Vec<(String, crate::policy::Middlebox)>,
    /// Replica sets added with [`Sim::servers`]; their replicas are in
    /// `servers` too.
    replica_sets: Vec<ReplicaSet>,
    /// Server hosts added with [`Sim::server_fn`]; they are in `servers`
    /// too.
    serve_fns: Vec<String>,
    /// Hosts and replica sets that serve tonic-health ([`Sim::health`]).
    health: Vec<String>,
}

impl std::fmt::Debug for Sim {
    // The hosts by name and how many faults: the closures say nothing.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let servers: Vec<&str> = self.servers.iter().map(|(n, _)| n.as_str()).collect();
        let clients: Vec<&str> = self.clients.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Sim")
            .field("seed", &self.config.seed)
            .field("duration", &self.config.duration)
            .field("servers", &servers)
            .field("clients", &clients)
            .field("faults", &self.faults.len())
            .finish_non_exhaustive()
    }
}

impl Sim {
    /// A builder with the fixed defaults of [`defaults`].
    pub fn builder() -> SimBuilder {
        SimBuilder::default()
    }

    pub(crate) fn new(config: Config, problem: Option<String>) -> Self {
        Self {
            config,
            problem,
            servers: Vec::new(),
            clients: Vec::new(),
            faults: Vec::new(),
            keepalive: Vec::new(),
            policies: Vec::new(),
            middleboxes: Vec::new(),
            replica_sets: Vec::new(),
            serve_fns: Vec::new(),
            health: Vec::new(),
        }
    }

    /// The seed this run uses.
    pub fn seed(&self) -> u64 {
        self.config.seed
    }

    /// The server hosts added so far (replicas included), in order.
    pub(crate) fn server_names(&self) -> Vec<String> {
        self.servers.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The client hosts added so far, in order.
    pub(crate) fn client_names(&self) -> Vec<String> {
        self.clients.iter().map(|(n, _)| n.clone()).collect()
    }

    /// When the run stops at the latest (*simulated* time).
    pub(crate) fn end(&self) -> Duration {
        self.config.end()
    }

    /// Adds a server host named `name`. `setup` registers its tonic services
    /// and runs again each time the host restarts; it gets channels to other
    /// hosts from its [`ServerHost`]. The host serves on port 50051 with
    /// tonic's own server, configured by [`ServerHost::configure`] (tonic's
    /// defaults otherwise), behind the handler layer (recording and handler
    /// faults; the layer order is in [`crate::server`]).
    pub fn server<F>(&mut self, name: impl Into<String>, setup: F) -> &mut Self
    where
        F: Fn(ServerHost) -> ServerHost + 'static,
    {
        self.servers.push((name.into(), Arc::new(setup)));
        self
    }

    /// Adds a server host named `name` that runs your own serve function,
    /// unchanged: the one your `main` calls, built on tonic's
    /// `serve_with_incoming_shutdown(incoming, shutdown)` (or
    /// `serve_with_incoming`), generic over the incoming stream as tonic's
    /// is. `serve` gets a [`ServeFnHost`] with the host's simulated
    /// connections ([`ServeFnHost::incoming`], every frame recorded by the
    /// wire tap), its shutdown signal ([`ServeFnHost::shutdown`], resolved by
    /// [`Fault::shutdown`]), channels to other hosts (it derefs to
    /// [`Host`]) and the harness's layer ([`ServeFnHost::handler_layer`]).
    /// It runs again each time the host restarts.
    ///
    /// ```
    /// use grpc_chaos::{Fault, Sim};
    /// use grpc_chaos::ServeFnHost;
    /// use std::time::Duration;
    ///
    /// // Your production serve fn, as `main` calls it with a TcpIncoming.
    /// async fn serve<I, IO, IE>(
    ///     layer: grpc_chaos::server::HandlerLayer,
    ///     incoming: I,
    ///     shutdown: impl std::future::Future<Output = ()>,
    /// ) -> Result<(), tonic::transport::Error>
    /// where
    ///     I: futures_util::Stream<Item = Result<IO, IE>>,
    ///     IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + tonic::transport::server::Connected
    ///         + Unpin + Send + 'static,
    ///     IO::ConnectInfo: Clone + Send + Sync + 'static,
    ///     IE: Into<Box<dyn std::error::Error + Send + Sync>>,
    /// {
    ///     tonic::transport::Server::builder()
    ///         .timeout(Duration::from_secs(1))
    ///         .layer(layer)
    ///         .add_routes(tonic::service::Routes::default()) // your services
    ///         .serve_with_incoming_shutdown(incoming, shutdown)
    ///         .await
    /// }
    ///
    /// let mut sim = Sim::builder().build();
    /// sim.server_fn("store", |host: ServeFnHost| async move {
    ///     serve(host.handler_layer(), host.incoming(), host.shutdown()).await
    /// });
    /// sim.fault(Fault::shutdown("store").at(Duration::from_millis(5)));
    /// sim.client("player", |_| async { Ok(()) });
    /// let trace = sim.run()?;
    /// assert!(trace.render().contains("serve returned"));
    /// # Ok::<(), grpc_chaos::Error>(())
    /// ```
    ///
    /// What the harness sees of such a host: every frame, connection and
    /// host fault, as on any host; handler runs and handler faults only when
    /// the serve fn adds [`ServeFnHost::handler_layer`] to its builder. Without
    /// it the trace says so at the first connection of each start
    /// (`serve fn without the handler layer: …`) and a
    /// [`Fault::handler`] naming the host fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)). The
    /// harness does not see the routes, so a handler fault marked
    /// [`inside_layers`](crate::fault::HandlerFault::inside_layers) on such
    /// a host is an error from [`Sim::run`], and one naming a service the
    /// host does not serve is reported as never fired.
    ///
    /// The serve future returning `Ok` after a shutdown is the trace's
    /// `serve returned`; returning without a shutdown, or with an `Err`,
    /// fails the run naming the host (as a crashed server does).
    pub fn server_fn<F, Fut, E>(&mut self, name: impl Into<String>, serve: F) -> &mut Self
    where
        F: Fn(ServeFnHost) -> Fut + 'static,
        Fut: Future<Output = Result<(), E>> + 'static,
        E: Into<Box<dyn std::error::Error>>,
    {
        self.serve_fn_host(name.into(), None, serve)
    }

    /// Like [`Sim::server_fn`], over TLS ([`crate::tls`]): every connection
    /// a peer opens runs a TLS 1.3 handshake with `tls` before the serve
    /// fn's [`ServeFnHost::incoming`] yields it, as on a
    /// [`ServerHost::tls`] host, so your `serve` stays the one that takes
    /// plaintext connections and the wire tap still reads its frames.
    pub fn server_fn_tls<F, Fut, E>(
        &mut self,
        name: impl Into<String>,
        tls: crate::tls::ServerTls,
        serve: F,
    ) -> &mut Self
    where
        F: Fn(ServeFnHost) -> Fut + 'static,
        Fut: Future<Output = Result<(), E>> + 'static,
        E: Into<Box<dyn std::error::Error>>,
    {
        self.serve_fn_host(name.into(), Some(tls), serve)
    }

    /// A serve fn host, with TLS when `tls` is given.
    fn serve_fn_host<F, Fut, E>(
        &mut self,
        name: String,
        tls: Option<crate::tls::ServerTls>,
        serve: F,
    ) -> &mut Self
    where
        F: Fn(ServeFnHost) -> Fut + 'static,
        Fut: Future<Output = Result<(), E>> + 'static,
        E: Into<Box<dyn std::error::Error>>,
    {
        let serve: serve_host::UserServe = Arc::new(move |host| {
            let fut = serve(host);
            Box::pin(async move { fut.await.map_err(Into::into) })
        });
        self.serve_fns.push(name.clone());
        self.server(name, move |s| {
            let s = s.user_serve(serve.clone());
            match &tls {
                Some(tls) => s.tls(tls.clone()),
                None => s,
            }
        })
    }

    /// Adds a replica set: `count` server hosts named `<name>-0` …
    /// `<name>-<count-1>` (`store-0`, `store-1`, `store-2`), each running
    /// `setup` as [`Sim::server`] does (again on each restart of that
    /// replica). Every replica is a member of the set from the start;
    /// [`Fault::leave`](crate::Fault::leave) and
    /// [`Fault::join`](crate::Fault::join) change that during the run.
    ///
    /// Faults, keepalive policies and plain channels name one replica
    /// (`Fault::crash("store-1")`, `host.channel("store-1")`);
    /// [`Host::balanced_channel`]`("store")` balances calls over the
    /// members the way tonic's `Channel::balance_list` does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::{Fault, Sim};
    ///
    /// let mut sim = Sim::builder().seed(7).build();
    /// sim.servers("store", 3, |s| s); // add_service(StoreServer::new(..)) here
    /// sim.fault(Fault::crash("store-1").at(Duration::from_millis(5)));
    /// sim.client("player", |player| async move {
    ///     let _store = player.balanced_channel("store");
    ///     Ok(())
    /// });
    /// sim.run()?;
    /// # Ok::<(), grpc_chaos::Error>(())
    /// ```
    ///
    /// A `count` of 0 is an error from [`Sim::run`]
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)); so is
    /// a set name used by another host or set. A fault, policy or plain
    /// channel that names the set instead of a replica is an error that
    /// lists the replicas.
    pub fn servers<F>(&mut self, name: impl Into<String>, count: usize, setup: F) -> &mut Self
    where
        F: Fn(ServerHost) -> ServerHost + 'static,
    {
        let set = ReplicaSet {
            name: name.into(),
            count,
        };
        let setup: ServerSetup = Arc::new(setup);
        for replica in set.replicas() {
            self.servers.push((replica, setup.clone()));
        }
        self.replica_sets.push(set);
        self
    }

    /// Serves the `grpc.health.v1.Health` service on server host `name`,
    /// or on every replica of replica set `name`: tonic-health's own
    /// server (tonic-health 0.14.9, `server::health_reporter`), added to
    /// the host's routes each time its server starts, as a production
    /// `main` adds it next to its services. At each start every service
    /// added with [`ServerHost::add_service`] and the whole server (`""`)
    /// are SERVING; [`Fault::health`](crate::Fault::health) changes a
    /// status during the run. (Services inside a `Routes` given to
    /// [`ServerHost::add_routes`] are not known by name, so they start
    /// unknown to the health service: name them in a `Fault::health` at
    /// the start, or health-check `""`.)
    ///
    /// ```
    /// # let mut sim = grpc_chaos::Sim::builder().build();
    /// sim.servers("store", 3, |s| s); // add_service(StoreServer::new(..)) here
    /// sim.health("store"); // store-0, store-1 and store-2 serve grpc.health.v1
    /// ```
    ///
    /// Errors from [`Sim::run`] (misconfigurations that say what to
    /// change): a `name` that is neither a server host nor a replica set;
    /// a client host; a [`Sim::server_fn`] host (its serve fn builds its
    /// own routes); a host whose setup adds a `grpc.health.v1.Health`
    /// service of its own (the harness could not reach its reporter).
    pub fn health(&mut self, name: impl Into<String>) -> &mut Self {
        self.health.push(name.into());
        self
    }

    /// Adds a client host named `name` whose `body` runs once, from the
    /// start of the run. The run ends when every client body has returned.
    pub fn client<F, Fut>(&mut self, name: impl Into<String>, body: F) -> &mut Self
    where
        F: FnOnce(Host) -> Fut + 'static,
        Fut: Future<Output = ClientResult> + 'static,
    {
        self.clients
            .push((name.into(), Box::new(move |host| Box::pin(body(host)))));
        self
    }

    /// Adds a fault. Faults are checked when the run starts: an unknown
    /// host, a bad method path or a time after the end of the run is an
    /// error from [`Sim::run`].
    ///
    /// It takes a [`Fault`]; a builder not finished yet (no `.at(time)`,
    /// no action) is refused at compile time saying what it lacks
    /// ([`IntoFault`](crate::fault::IntoFault)).
    pub fn fault(&mut self, fault: impl crate::fault::IntoFault) -> &mut Self {
        let fault = fault.into_fault();
        // A composed fault (a pod termination) brings its parts along, so
        // the checks and the run see each of them as a fault of its own.
        let parts = fault.parts();
        self.faults.push(fault);
        self.faults.extend(parts);
        self
    }

    /// Makes server host `host` enforce `policy` on the PINGs its clients
    /// send, the way a grpc-go, gRPC C-core, grpc-java or etcd server would
    /// (tonic's own server acks every PING and enforces nothing).
    ///
    /// ```
    /// use grpc_chaos::policy::KeepalivePolicy;
    /// # let mut sim = grpc_chaos::Sim::builder().build();
    /// # sim.server("store", |s| s);
    /// sim.keepalive_policy("store", KeepalivePolicy::grpc_go());
    /// ```
    ///
    /// It acts in the wire tap, on every connection to `host`: each PING the
    /// server acks is judged (`ok` or `strike n/2` in the trace, with the
    /// gap); when the policy runs out of patience the real server's ACK
    /// still goes out, then GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings",
    /// last-stream-id), then what the policy does to open calls, then the
    /// connection is closed. Times, gaps and the reference point are
    /// *simulated* time; the exact rules (when a PING counts as received,
    /// what "open calls" are, what resets strikes) are in the
    /// [`policy`](crate::policy) module docs. Presets and their sources:
    /// [`KeepalivePolicy::grpc_go`], [`KeepalivePolicy::c_core`],
    /// [`KeepalivePolicy::grpc_java_netty`], [`KeepalivePolicy::etcd`].
    ///
    /// An unknown `host`, a client host, or a second policy for the same
    /// host is an error from [`Sim::run`].
    pub fn keepalive_policy(
        &mut self,
        host: impl Into<String>,
        policy: KeepalivePolicy,
    ) -> &mut Self {
        self.keepalive.push((host.into(), policy));
        self
    }

    /// Puts a [`ConnectionPolicy`] on every connection to server host
    /// `host`: `make` builds one for each connection when it opens (with
    /// its id, its two hosts and the *simulated* time it opened), and the
    /// wire tap shows it every frame of that connection, both ways, and
    /// calls it back on the timer it asks for (see
    /// [`ConnectionPolicy`]'s docs for the exact
    /// order). Several policies (and [`Sim::middlebox`]es) on one host form
    /// a chain in the order added, the first nearest the client, with the
    /// host's [`Sim::keepalive_policy`], if any, nearest the server (see
    /// [`Sim::middlebox`] for how frames pass a chain).
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::fault::FrameView;
    /// use grpc_chaos::policy::{ConnectionPolicy, Effects};
    /// use grpc_chaos::wire::FrameType;
    ///
    /// /// Closes a connection that carries no DATA for `idle` (simulated).
    /// struct IdleTimer { idle: Duration }
    ///
    /// impl ConnectionPolicy for IdleTimer {
    ///     fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
    ///         if frame.frame_type() == FrameType::Data {
    ///             fx.timer_at(frame.now() + self.idle);
    ///         }
    ///     }
    ///     fn on_timer(&mut self, fx: &mut Effects) {
    ///         fx.close("idle");
    ///     }
    /// }
    ///
    /// # let mut sim = grpc_chaos::Sim::builder().build();
    /// # sim.server("store", |s| s);
    /// sim.connection_policy("store", |_conn| IdleTimer { idle: Duration::from_secs(1) });
    /// ```
    ///
    /// An unknown `host`, a client host, or a run with
    /// [`SimBuilder::wire_tap`]`(false)` is an error from [`Sim::run`].
    pub fn connection_policy<P, F>(&mut self, host: impl Into<String>, make: F) -> &mut Self
    where
        P: ConnectionPolicy,
        F: Fn(&ConnInfo<'_>) -> P + Send + Sync + 'static,
    {
        let make: PolicyFactory = std::sync::Arc::new(move |info: &ConnInfo<'_>| {
            Box::new(make(info)) as Box<dyn ConnectionPolicy>
        });
        self.policies.push((host.into(), make));
        self
    }
}

impl Sim {
    /// Puts the [`Middlebox`](crate::policy::Middlebox) `middlebox` in
    /// front of server host `host`: every connection to `host` (from the
    /// box's [`clients`](crate::policy::Middlebox::clients), or from every
    /// host that dials `host` when none are listed) passes it, both ways,
    /// in the wire tap, as a [`ConnectionPolicy`]. Its timers run on
    /// *simulated* time. [`Sim::middlebox_between`] names both ends of the
    /// link instead.
    ///
    /// # Chains
    /// Several boxes (and [`Sim::connection_policy`]s) on the connections
    /// to one host form a chain, **the first added nearest the client**:
    /// `sim.middlebox("store", nlb); sim.middlebox("store", envoy);` is
    /// client → NLB → Envoy → store, as the path reads left to right. The
    /// server's own [`Sim::keepalive_policy`] sits behind them all, nearest
    /// the server. On that chain:
    /// - a frame the client writes passes the boxes first to last, a frame
    ///   the server writes last to first;
    /// - a frame a box swallows (a PING it answers itself, a frame after
    ///   it forgot the flow) reaches no box behind it: a PING the nearer
    ///   box answers never reaches the farther one, so a timer there that
    ///   PINGs would reset runs out;
    /// - a frame a box sends (its PING ACK, its RST_STREAM, its 504)
    ///   passes only the boxes between it and the end it is sent to;
    /// - a box's close or reset ends the whole connection (the sim draws
    ///   the chain as one connection); after it no box sees anything.
    ///
    /// Boxes on different hosts' connections do not chain: a gateway that
    /// dials the store opens a connection of its own, with the boxes of
    /// that link.
    ///
    /// ```
    /// use grpc_chaos::policy::Middlebox;
    /// # let mut sim = grpc_chaos::Sim::builder().build();
    /// # sim.server("store", |s| s);
    /// // client → AWS NLB → Envoy → store
    /// sim.middlebox("store", Middlebox::aws_nlb());
    /// sim.middlebox("store", Middlebox::envoy());
    /// ```
    ///
    /// Errors from [`Sim::run`] (misconfigurations that say what to
    /// change): an unknown `host` or a client host; a listed client that
    /// is not a host of this sim, or is `host` itself; an idle timer, a
    /// lifetime cap or an upstream timeout of zero; a stream limit of zero
    /// (`max_concurrent_streams: Some(0)`); a run with
    /// [`SimBuilder::wire_tap`]`(false)`.
    pub fn middlebox(
        &mut self,
        host: impl Into<String>,
        middlebox: crate::policy::Middlebox,
    ) -> &mut Self {
        let host = host.into();
        let cfg = std::sync::Arc::new(middlebox.clone());
        self.middleboxes.push((host.clone(), middlebox));
        self.connection_policy(host, move |info| {
            crate::policy::BoxConn::new(cfg.clone(), info)
        })
    }

    /// Puts `middlebox` on the link between host `client` and server host
    /// `server`: the connections `client` dials to `server` pass it, both
    /// ways (one box per link, for both its directions); connections from
    /// other hosts to `server` do not. `client` is a client host or a
    /// server host that dials `server` (a gateway's channel to the store).
    /// The same as [`Sim::middlebox`]`(server, middlebox.for_clients([client]))`,
    /// and it chains with the boxes already on `server` in the same order
    /// (the first added nearest the client; see [`Sim::middlebox`]).
    ///
    /// ```
    /// use grpc_chaos::policy::Middlebox;
    /// # let mut sim = grpc_chaos::Sim::builder().build();
    /// # sim.server("store", |s| s);
    /// # sim.server("gateway", |s| s);
    /// // Only the gateway's connections to the store pass an Envoy.
    /// sim.middlebox_between("gateway", "store", Middlebox::envoy());
    /// ```
    ///
    /// Errors from [`Sim::run`], besides [`Sim::middlebox`]'s: `client`
    /// not a host of this sim (the message lists the known hosts), and
    /// `client` and `server` the same host.
    pub fn middlebox_between(
        &mut self,
        client: impl Into<String>,
        server: impl Into<String>,
        middlebox: crate::policy::Middlebox,
    ) -> &mut Self {
        let client = client.into();
        self.middlebox(server, middlebox.for_clients([client]))
    }
}
