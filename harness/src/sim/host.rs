//! What a host's code gets from the harness: channels to other hosts, and
//! (for servers) a place to register tonic services.

use std::any::TypeId;
use std::convert::Infallible;
use std::ops::Deref;
use std::sync::Arc;

use tonic::body::Body;
use tonic::server::NamedService;
use tonic::service::Routes;
use tonic::transport::Endpoint;
use tower::layer::util::{Identity, Stack};

use super::serve_host::UserServe;
use super::Shared;
use crate::balance::BalanceConfig;
use crate::client::{CallSite, Channel};
use crate::recorder::event::HostName;
use crate::retry::{ConfigError, Retry, RetryConfig, RetryLayer};
use crate::server::handler::InsideService;
use crate::server::{default_serve, serve_fn, Builder, HandlerLayer, Routed, ServeFn};

/// A host in the simulation, as its own code sees it. Client bodies get one;
/// server closures get a [`ServerHost`], which derefs to it.
#[derive(Clone)]
pub struct Host {
    pub(super) name: Arc<str>,
    pub(super) shared: Arc<Shared>,
}

impl Host {
    pub(crate) fn new(name: Arc<str>, shared: Arc<Shared>) -> Self {
        Self { name, shared }
    }

    /// This host's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A recorded channel to server host `to` (see [`Channel`]). It
    /// connects lazily, on the first call, and reconnects by itself as
    /// tonic's channel does.
    ///
    /// An unknown `to` does not panic: every call through the channel fails
    /// with UNAVAILABLE and [`Sim::run`](crate::Sim::run) returns an error
    /// listing the known hosts.
    pub fn channel(&self, to: &str) -> Channel {
        self.channel_with(to, |e| e)
    }

    /// Like [`Host::channel`], with tonic's `Endpoint` options
    /// (`http2_keep_alive_interval`, `connect_timeout`, window sizes …) set
    /// by `configure`. Timeouts are *simulated* time.
    pub fn channel_with(&self, to: &str, configure: impl FnOnce(Endpoint) -> Endpoint) -> Channel {
        self.recorded(to, self.plain_channel(to, false, None, configure))
    }

    /// Like [`Host::channel`], over TLS ([`crate::tls`]): every connection
    /// of the channel runs a TLS 1.3 handshake with `tls` (the CAs it
    /// trusts, the name it expects, its own identity for mTLS) before
    /// tonic gets it, below the wire tap, so the trace still shows the
    /// HTTP/2 frames, and the handshake as `TLS handshake …` rows. `to`
    /// must serve TLS ([`ServerHost::tls`]).
    ///
    /// A handshake that fails fails the dial: tonic reports it for the
    /// call that waited, as for a connect error (what it says for each
    /// failure is in the tests, `tests/tests/server/tls/`). A `tls` rustls
    /// refuses (a name that is not a DNS name, a CA that does not parse, a
    /// key that does not fit its certificate) fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)) with
    /// rustls's reason, and every call of the channel fails.
    pub fn channel_tls(&self, to: &str, tls: crate::tls::ClientTls) -> Channel {
        self.channel_tls_with(to, tls, |e| e)
    }

    /// [`Host::channel_tls`] with tonic's `Endpoint` options set by
    /// `configure`, as [`Host::channel_with`]. Leave tonic's own
    /// `Endpoint::tls_config` out: the harness's endpoints are `http://`,
    /// for which tonic's connector does no TLS (tonic 0.14.9
    /// `transport/channel/service/connector.rs`, TLS only for `https`).
    pub fn channel_tls_with(
        &self,
        to: &str,
        tls: crate::tls::ClientTls,
        configure: impl FnOnce(Endpoint) -> Endpoint,
    ) -> Channel {
        let clock = crate::tls::clock::SimClock(self.shared.recorder.clone());
        let end = match tls.end(&clock, to, self.shared.seed) {
            Ok(end) => end,
            Err(why) => {
                self.shared.misconfigured(format!(
                    "Host::channel_tls(\"{to}\") on host `{}`: {why}",
                    self.name
                ));
                return self.recorded(to, crate::net::unusable_channel(to));
            }
        };
        self.recorded(to, self.plain_channel(to, false, Some(end), configure))
    }

    /// `channel`, its calls recorded as this host's calls to `to`.
    fn recorded(&self, to: &str, channel: tonic::transport::Channel) -> Channel {
        Channel::new(
            channel,
            CallSite {
                recorder: self.shared.recorder.clone(),
                from: HostName::new(&self.name),
                target: HostName::new(to),
            },
        )
    }

    /// A recorded channel to replica set `set` ([`Sim::servers`](crate::Sim::servers))
    /// that balances calls over its members as tonic's
    /// `Channel::balance_list` does: tower's power-of-two-choices balancer
    /// over one lazily connecting connection per replica, all of them
    /// dialled on the first call, each recorded by the wire tap. tonic's
    /// connections report no load, so the balancer picks uniformly among
    /// the replicas whose connection is up, from random numbers drawn from
    /// the run's seed (the same seed picks the same replicas in every
    /// process). A replica whose connection closed is noticed when it is
    /// next picked, and the call goes elsewhere while it redials; a failed
    /// connect leaves it picked like a ready one, and the next call sent
    /// there fails UNAVAILABLE (tonic's lazy reconnect). Membership changes
    /// ([`Fault::leave`](crate::Fault::leave), [`Fault::join`](crate::Fault::join))
    /// reach the balancer as `tower::discover` changes when it next routes
    /// a call. The details, and where this differs from tonic, are in the
    /// guide's [replicas](crate::guide::replicas) page.
    ///
    /// Each call is recorded with the set as its target, then
    /// `rN balanced to <replica>` when the balancer hands it to a
    /// replica's connection ([`Call::replica`](crate::trace::Call::replica));
    /// the balancer's view of each replica (connecting, ready, closed,
    /// connect failed, added, removed) is recorded as `balancer: …`.
    ///
    /// A `set` that is not a replica set does not panic: every call fails
    /// with UNAVAILABLE and [`Sim::run`](crate::Sim::run) returns an error
    /// that names the replica sets.
    pub fn balanced_channel(&self, set: &str) -> Channel {
        self.balanced_channel_with(set, |e| e)
    }

    /// Like [`Host::balanced_channel`], with tonic's `Endpoint` options set
    /// by `configure` on each replica's endpoint (`http://store-1:50051`),
    /// as each `Endpoint` of `balance_list` carries its own: keepalive,
    /// `timeout`, `connect_timeout` … (timeouts are *simulated* time).
    /// `configure` runs again for every new connection.
    pub fn balanced_channel_with(
        &self,
        set: &str,
        configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
    ) -> Channel {
        self.balanced_channel_config(set, BalanceConfig::new().endpoint(configure))
    }

    /// Like [`Host::balanced_channel_with`], over TLS ([`crate::tls`]):
    /// every replica connection runs a TLS 1.3 handshake with `tls`, as
    /// [`Host::channel_tls`] does, with one rustls config (and session
    /// cache) for the whole channel. The name it expects in each
    /// replica's certificate is the set's (`store`: issue
    /// `ca.leaf("store")` to every replica, or give
    /// [`ClientTls::domain_name`](crate::tls::ClientTls::domain_name)); a
    /// failed handshake is a failed connect of that replica (`balancer:
    /// store-1 connect failed: …`). A `tls` rustls refuses fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)), and
    /// every call of the channel fails. With health checking, outlier
    /// detection or DNS too: [`BalanceConfig::tls`](crate::balance::BalanceConfig::tls).
    pub fn balanced_channel_tls(
        &self,
        set: &str,
        tls: crate::tls::ClientTls,
        configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
    ) -> Channel {
        self.balanced_channel_config(set, BalanceConfig::new().endpoint(configure).tls(tls))
    }

    /// Like [`Host::balanced_channel`], with client-side health checking
    /// (gRFC A17) for `service`, A17's `healthCheckConfig.serviceName`
    /// (`""` asks for the whole server's health): on each replica's
    /// connection, as soon as it is up, the channel opens a
    /// `grpc.health.v1.Health/Watch` stream for `service`, and the replica
    /// is picked only while the last answer was SERVING. The rules, each
    /// from A17 and grpc-go's `health/client.go`:
    ///
    /// - a new connection is not picked until the first answer;
    /// - NOT_SERVING, UNKNOWN or SERVICE_UNKNOWN take the replica out of
    ///   rotation until the next SERVING;
    /// - a Watch that fails with UNIMPLEMENTED (the replica serves no
    ///   health service) turns health checking off for that replica: it
    ///   counts as healthy, and the trace says so;
    /// - a Watch that fails otherwise, or ends, takes the replica out and
    ///   is retried after grpc's connection backoff (1 s, ×1.6 per failure,
    ///   ±20 % jitter drawn from the run's seed, capped at 120 s; *simulated*
    ///   time), reset by any answer received;
    /// - a GOAWAY from the replica cancels its Watch (A17) and its
    ///   connection is replaced: out of rotation until the new one answers
    ///   SERVING (without this, the never-ending Watch would keep a
    ///   draining server's connection open until its grace ran out).
    ///
    /// The trace shows, at the caller, `balancer: connected to store-1;
    /// health Watch started …`, each status change the channel sees
    /// (`balancer: store-1 health NOT_SERVING: out of rotation …`), each
    /// failed Watch with its retry time, and each pick (`rN balanced to
    /// store-0`). The Watch is a stream on the replica's connection: its
    /// frames, its handler run on the server and a call derived from the
    /// wire (`/grpc.health.v1.Health/Watch`, in
    /// [`Trace::calls_from`](crate::Trace::calls_from) too, dropped by the
    /// caller when the run ends) are in the trace, and it counts against
    /// the server's `max_concurrent_streams`. Where tower's
    /// balancer differs from grpc's round_robin: with no replica in
    /// rotation a call waits for one instead of failing UNAVAILABLE.
    ///
    /// The servers serve health with [`Sim::health`](crate::Sim::health);
    /// [`Fault::health`](crate::Fault::health) flips a status.
    ///
    /// ```
    /// # fn body(player: grpc_chaos::Host) {
    /// let store = player.balanced_channel_health("store", "tt.v1.Store", |e| e);
    /// # let _ = store;
    /// # }
    /// ```
    pub fn balanced_channel_health(
        &self,
        set: &str,
        service: &str,
        configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
    ) -> Channel {
        let config = BalanceConfig::new().endpoint(configure);
        self.balanced_channel_config(set, config.health_check(service))
    }

    /// Like [`Host::balanced_channel_with`], with outlier detection (gRFC
    /// A50; the settings and their defaults are on [`OutlierDetection`]):
    /// every `interval` of *simulated* time the channel judges each
    /// replica's calls in the interval just ended, and a replica it ejects
    /// is not picked until its ejection time has passed. A call counts as
    /// a failure when it ends with any status but OK, as the channel saw
    /// it. The draws of `enforcement_percentage` come from the run's seed.
    ///
    /// The trace shows, at the caller, each ejection with its numbers
    /// (`balancer: store-1 ejected: success rate 50.0 % of 102 calls,
    /// below the line of 52.0 % (mean 90.0 %); out of rotation for 30s …`)
    /// and each return (`balancer: store-1 back in rotation after 30s
    /// ejected`); the events are
    /// [`BalancerChange::Ejected`](crate::recorder::event::BalancerChange::Ejected)
    /// and [`BalancerChange::Unejected`](crate::recorder::event::BalancerChange::Unejected).
    ///
    /// An invalid `detection` ([`OutlierDetection::validate`]) is an error
    /// from [`Sim::run`](crate::Sim::run); the channel is then unusable.
    ///
    /// ```
    /// # fn body(player: grpc_chaos::Host) {
    /// use grpc_chaos::balance::OutlierDetection;
    /// let store = player.balanced_channel_outlier_detection(
    ///     "store",
    ///     OutlierDetection::default(),
    ///     |e| e,
    /// );
    /// # let _ = store;
    /// # }
    /// ```
    ///
    /// [`OutlierDetection`]: crate::balance::OutlierDetection
    /// [`OutlierDetection::validate`]: crate::balance::OutlierDetection::validate
    pub fn balanced_channel_outlier_detection(
        &self,
        set: &str,
        detection: crate::balance::OutlierDetection,
        configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
    ) -> Channel {
        let config = BalanceConfig::new().endpoint(configure);
        self.balanced_channel_config(set, config.outlier_detection(detection))
    }

    /// A balanced channel to replica set `set` with the parts `config`
    /// turns on, in any combination: the replicas' `Endpoint` options,
    /// client-side health checking (as [`Host::balanced_channel_health`]),
    /// outlier detection (as [`Host::balanced_channel_outlier_detection`]),
    /// DNS name resolution ([`Dns`]) and TLS (as
    /// [`Host::balanced_channel_tls`]). With health checking and
    /// outlier detection both on, a replica is picked only while its
    /// Watch last answered SERVING and it is not ejected.
    ///
    /// An invalid `config` ([`BalanceConfig::validate`]) is an error from
    /// [`Sim::run`](crate::Sim::run); the channel is then unusable.
    ///
    /// ```
    /// # fn body(player: grpc_chaos::Host) {
    /// use std::time::Duration;
    /// use grpc_chaos::balance::{BalanceConfig, Dns};
    /// let dns = Dns::new().refresh(Duration::from_secs(5)).ttl(Duration::from_secs(30));
    /// let store = player.balanced_channel_config("store", BalanceConfig::new().dns(dns));
    /// # let _ = store;
    /// # }
    /// ```
    ///
    /// [`Dns`]: crate::balance::Dns
    /// [`BalanceConfig::validate`]: crate::balance::BalanceConfig::validate
    pub fn balanced_channel_config(&self, set: &str, config: BalanceConfig) -> Channel {
        let site = CallSite {
            recorder: self.shared.recorder.clone(),
            from: HostName::new(&self.name),
            target: HostName::new(set),
        };
        if let Err(e) = config.validate() {
            self.shared.problem(e);
            return Channel::new(crate::net::unusable_channel(set), site);
        }
        let tls = match &config.tls {
            None => None,
            Some(tls) => {
                let clock = crate::tls::clock::SimClock(self.shared.recorder.clone());
                match tls.end(&clock, set, self.shared.seed) {
                    Ok(end) => Some(end),
                    Err(why) => {
                        self.shared.misconfigured(format!(
                            "the TLS of balanced channel \"{set}\" on host `{}`: {why}",
                            self.name
                        ));
                        return Channel::new(crate::net::unusable_channel(set), site);
                    }
                }
            }
        };
        match self.shared.replica_set(set, &self.name) {
            Some(replicas) => Channel::balanced(
                crate::balance::channel(
                    self.shared.wiring(),
                    self.shared.replicas.clone(),
                    self.shared.seed,
                    &self.name,
                    replicas,
                    config,
                    tls,
                ),
                site,
            ),
            None => Channel::new(crate::net::unusable_channel(set), site),
        }
    }

    /// A recorded channel to `to` behind a gRFC A6 retry layer configured by
    /// `service_config` (A6 service-config JSON: `methodConfig` →
    /// `retryPolicy` or `hedgingPolicy`, optional `retryThrottling`; see
    /// [`crate::retry`]). A hedged call's attempts run side by side; each is
    /// recorded as below, with `Hedge` events for its end, the losers'
    /// cancellation and refused hedges instead of `RetryDecision`.
    ///
    /// Every attempt is a recorded call (`rN`) of its own and reaches a
    /// handler run (`hN`) on the server; the layer's steps are recorded too:
    /// `RetryAttempt` right before each attempt's call, `RetryDecision`
    /// after it (why it retried, after how long, or which rule stopped it),
    /// with one group id (`g1`, …) per logical call. The jitter comes from
    /// the run's seed mixed with both host names.
    ///
    /// ```
    /// # fn f(host: grpc_chaos::Host) -> Result<(), grpc_chaos::retry::ConfigError> {
    /// let channel = host.retry_channel("store", r#"{"methodConfig": [{
    ///     "name": [{"service": "tt.v1.Store"}],
    ///     "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
    ///                     "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#)?;
    /// # let _ = channel; Ok(()) }
    /// ```
    ///
    /// # Errors
    /// A [`ConfigError`] when `service_config` is not a valid A6 config.
    pub fn retry_channel(
        &self,
        to: &str,
        service_config: &str,
    ) -> Result<Retry<Channel>, ConfigError> {
        let config: RetryConfig = service_config.parse()?;
        Ok(tower::Layer::layer(
            &self.retry_layer(to, config),
            self.channel(to),
        ))
    }

    /// [`Host::retry_channel`] over TLS: the retry layer around a
    /// [`Host::channel_tls`] channel. A handshake that fails fails the
    /// attempt as tonic reports it (UNAVAILABLE for a refused
    /// certificate, so a policy that retries UNAVAILABLE redials, and
    /// each redial runs a new handshake; UNKNOWN "transport error" for a
    /// client certificate the server refuses, see [`crate::tls`]).
    ///
    /// # Errors
    /// A [`ConfigError`] when `service_config` is not a valid A6 config.
    pub fn retry_channel_tls(
        &self,
        to: &str,
        tls: crate::tls::ClientTls,
        service_config: &str,
    ) -> Result<Retry<Channel>, ConfigError> {
        let config: RetryConfig = service_config.parse()?;
        Ok(tower::Layer::layer(
            &self.retry_layer(to, config),
            self.channel_tls(to, tls),
        ))
    }

    /// The retry layer [`Host::retry_channel`] uses, for a channel to `to`
    /// made another way (e.g. [`Host::channel_with`]); change its jitter or
    /// buffer limit before applying it. Setting another observer on it
    /// stops the recording of its attempts and decisions.
    ///
    /// At the end of the run, a retry policy of `config` that matched no
    /// call through the layer is reported in the trace (`fault never fired:
    /// retry policy for … matched no call`), as is a `config` with no
    /// `retryPolicy` at all; a `methodConfig` naming a service `to` does
    /// not serve fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)).
    pub fn retry_layer(&self, to: &str, config: RetryConfig) -> RetryLayer {
        let seed = crate::retry::channel_seed(self.shared.seed, &self.name, to);
        let mut layer = RetryLayer::new(config, seed).observer(crate::retry::recording_observer(
            self.shared.recorder.clone(),
            self.name.clone(),
            to.into(),
        ));
        layer.on_call = Some(self.shared.retry_uses.register(
            self.name.clone(),
            to.into(),
            layer.config.clone(),
        ));
        layer
    }

    /// A plain `tonic::transport::Channel` to server host `to`, for code
    /// that needs that concrete type. Calls through it are not recorded by
    /// the harness's client; the wire tap derives each from its frames
    /// instead (its request HEADERS, then the server's trailers or an
    /// RST_STREAM), so [`Trace::calls`](crate::Trace::calls) and the
    /// findings include it, marked
    /// [`Call::seen_on_wire`](crate::trace::Call::seen_on_wire) (what the
    /// wire cannot tell, such as when the caller made the call or a
    /// deadline it did not send, is listed there). A call that fails before
    /// its connection is up writes no frame: it is recorded where its
    /// channel's connection attempt failed or timed out, with the status
    /// tonic gave it ([`EventKind::CallFailedConnecting`](crate::recorder::event::EventKind::CallFailedConnecting);
    /// not for the tonic channel of [`Channel::into_inner`](crate::Channel::into_inner),
    /// whose dials the recorded channel shares). The handler layer still
    /// records its run on the server;
    /// [`Trace::assert_deadline_propagated`](crate::Trace::assert_deadline_propagated)
    /// checks such a hop against the request HEADERS on the wire.
    pub fn tonic_channel(&self, to: &str) -> tonic::transport::Channel {
        self.tonic_channel_with(to, |e| e)
    }

    /// Releases the frames [`FrameFault::hold`](crate::fault::FrameFault::hold)`(name)`
    /// keeps back, on every connection, at this *simulated* instant (or one
    /// tick later on a host that already ran in this step: turmoil runs
    /// hosts in turn); frames the hold matches after this pass. Releasing a
    /// name twice is harmless. A `name` no hold uses does not panic: the
    /// run then fails with a misconfiguration error
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)).
    ///
    /// ```
    /// # async fn body(player: grpc_chaos::Host) {
    /// // … calls that stall while the player's WINDOW_UPDATEs are held …
    /// player.release("window");
    /// # }
    /// ```
    pub fn release(&self, name: &str) {
        self.shared.release(name, Some(&self.name));
    }

    /// Opens one simulated TCP connection to server host `to` (port
    /// 50051) and hands you the socket, for a peer that speaks HTTP/2 (or
    /// anything else) itself: a hostile or broken client, a scripted test
    /// peer. Build its bytes with `grpc_chaos::wire::encode` and read the
    /// peer's with `grpc_chaos::wire::Decoder` (the frame codec, public
    /// with the `unstable-codec` feature).
    ///
    /// It is dialled as a channel's connection is (recorded as attempt 1,
    /// waiting across a partition), and what you write passes the wire tap
    /// at the sender like any other: each frame is recorded when written,
    /// frame faults act on it, bytes that break RFC 9113 are recorded as
    /// protocol errors and passed on untouched (the server's stack decides
    /// what they mean). Reads come straight from the socket. The connection
    /// closes when the returned [`SimConn`](crate::server::SimConn) is
    /// dropped or shut down.
    ///
    /// A raw `turmoil::net::TcpStream` of your own works too, but the tap
    /// then sees its bytes only when the server reads them
    /// ([`Fate::ReadAtReceiver`](crate::recorder::event::Fate::ReadAtReceiver)),
    /// and faults do not act on them.
    ///
    /// # Errors
    ///
    /// What the dial fails with: `ConnectionRefused` when nothing listens
    /// (the host is down), `TimedOut` after a partition's `reset_after`,
    /// `NotFound` for a name that is not a server host (the run then also
    /// fails with a misconfiguration error listing the server hosts).
    ///
    /// ```
    /// # #[cfg(feature = "unstable-codec")]
    /// # fn main() -> grpc_chaos::Result {
    /// use grpc_chaos::wire::{encode, frame::PREFACE};
    /// use grpc_chaos::{trace::RenderOptions, Sim};
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// let mut sim = Sim::builder().seed(1).build();
    /// sim.server("store", |s| s);
    /// sim.client("mallory", |host| async move {
    ///     let mut conn = host.raw_connect("store").await?;
    ///     conn.write_all(PREFACE).await?;
    ///     conn.write_all(&encode::settings(&[])).await?;
    ///     conn.write_all(&encode::ping(false, *b"mallory!")).await?;
    ///     let mut buf = [0u8; 256];
    ///     let _ = conn.read(&mut buf).await?; // the server's SETTINGS …
    ///     Ok(())
    /// });
    /// let render = sim.run()?.render_with(&RenderOptions::everything());
    /// assert!(render.contains("mallory→store        c1 s0 PING 6d616c6c6f727921"), "{render}");
    /// # Ok(())
    /// # }
    /// # #[cfg(not(feature = "unstable-codec"))]
    /// # fn main() {}
    /// ```
    pub async fn raw_connect(&self, to: &str) -> std::io::Result<crate::server::SimConn> {
        let context = format!("raw_connect() on host `{}`", self.name);
        if !self.shared.check_host(to, &context) {
            let msg = format!("no server host `{to}`");
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, msg));
        }
        crate::net::dial(self.shared.wiring(), self.name.clone(), to.into(), 1, None).await
    }

    /// [`Host::raw_connect`] over TLS ([`crate::tls`]): the connection runs
    /// its TLS 1.3 handshake with `tls` first (recorded as for
    /// [`Host::channel_tls`]), and what the code writes is then HTTP/2
    /// inside TLS, still decoded by the wire tap below its plaintext side.
    /// `to` must serve TLS ([`ServerHost::tls`]).
    ///
    /// # Errors
    ///
    /// As [`Host::raw_connect`]; a handshake that fails is
    /// tokio-rustls's `io::Error` (`InvalidData` with rustls's reason:
    /// `invalid peer certificate: UnknownIssuer`); a `tls` rustls refuses
    /// (a name that is not a DNS name, a CA that does not parse) is
    /// `InvalidInput` with rustls's reason, and no connection is made.
    pub async fn raw_connect_tls(
        &self,
        to: &str,
        tls: crate::tls::ClientTls,
    ) -> std::io::Result<crate::server::SimConn> {
        let context = format!("raw_connect_tls() on host `{}`", self.name);
        if !self.shared.check_host(to, &context) {
            let msg = format!("no server host `{to}`");
            return Err(std::io::Error::new(std::io::ErrorKind::NotFound, msg));
        }
        let clock = crate::tls::clock::SimClock(self.shared.recorder.clone());
        let end = tls.end(&clock, to, self.shared.seed).map_err(|why| {
            let msg = format!("{context}: {why}");
            std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
        })?;
        crate::net::dial(
            self.shared.wiring(),
            self.name.clone(),
            to.into(),
            1,
            Some(end),
        )
        .await
    }

    /// [`Host::tonic_channel`] with `Endpoint` options.
    pub fn tonic_channel_with(
        &self,
        to: &str,
        configure: impl FnOnce(Endpoint) -> Endpoint,
    ) -> tonic::transport::Channel {
        self.plain_channel(to, true, None, configure)
    }

    /// The tonic channel to `to`; `unrecorded` when no recorded channel
    /// wraps it (its failed dials are then its calls' failures).
    fn plain_channel(
        &self,
        to: &str,
        unrecorded: bool,
        tls: Option<crate::tls::TlsEnd>,
        configure: impl FnOnce(Endpoint) -> Endpoint,
    ) -> tonic::transport::Channel {
        let known = self
            .shared
            .check_host(to, &format!("tonic_channel() on host `{}`", self.name));
        let wiring = self.shared.wiring();
        crate::net::channel(&wiring, known, &self.name, to, unrecorded, tls, configure)
    }
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("name", &self.name).finish()
    }
}

/// A server host being set up: register tonic services on it, and
/// configure its tonic server as in production.
///
/// ```
/// # use grpc_chaos::ServerHost;
/// # fn setup<S>(s: ServerHost, svc: S) -> ServerHost
/// # where S: tower::Service<http::Request<tonic::body::Body>, Response = http::Response<tonic::body::Body>, Error = std::convert::Infallible>
/// #     + tonic::server::NamedService + Clone + Send + Sync + 'static, S::Future: Send + 'static {
/// s.add_service(svc)
/// # }
/// ```
pub struct ServerHost {
    host: Host,
    /// The user's `Routes`, when [`ServerHost::add_routes`] gave one.
    base: Option<Routes>,
    /// Services added with [`ServerHost::add_service`], added to the base
    /// routes in order when the server starts.
    adds: Vec<AddService>,
    /// The names of the services added one by one; none known for a host
    /// served from a `Routes` (tonic's `Routes` does not list them).
    pub(crate) services: Vec<&'static str>,
    layer: HandlerLayer,
    serve: Option<ServeFn>,
    /// The user's own serve fn ([`Sim::server_fn`](super::Sim::server_fn)).
    user: Option<UserServe>,
    /// TLS on the host's connections ([`ServerHost::tls`]).
    tls: Option<crate::tls::ServerTls>,
}

impl std::fmt::Debug for ServerHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerHost")
            .field("host", &self.host)
            .field("services", &self.services)
            .finish_non_exhaustive()
    }
}

type AddService = Box<dyn FnOnce(Routes) -> Routes>;

/// What the host closure hands the server: routes, what they serve, and
/// how to serve them.
pub(crate) struct ServerParts {
    pub(crate) routes: Routed,
    /// The services served, when known (none for a `Routes`).
    pub(crate) services: Option<Vec<&'static str>>,
    pub(crate) serve: ServeFn,
    /// A serve fn host's function, and the layer it may add.
    pub(crate) user: Option<(UserServe, HandlerLayer)>,
    /// TLS on the host's connections.
    pub(crate) tls: Option<crate::tls::ServerTls>,
}

impl ServerHost {
    pub(crate) fn new(host: Host) -> Self {
        let layer = HandlerLayer::new(
            HostName::new(&host.name),
            Arc::new(host.shared.handler_env()),
        );
        Self {
            host,
            base: None,
            adds: Vec::new(),
            services: Vec::new(),
            layer,
            serve: None,
            user: None,
            tls: None,
        }
    }

    /// Makes this host run `serve`, the user's own serve fn, instead of
    /// the harness's server.
    pub(crate) fn user_serve(mut self, serve: UserServe) -> Self {
        self.user = Some(serve);
        self
    }

    /// Serves `svc` on this host, port 50051: anything tonic's own
    /// `Router::add_service` accepts — a generated server
    /// (`StoreServer::new(..)`), one with an interceptor
    /// (`StoreServer::with_interceptor(..)`, tonic's `InterceptedService`),
    /// or a service of your own that implements `NamedService`. The bound
    /// is tonic's, word for word (`S::Response: IntoResponse`, axum's
    /// trait, which tonic's bodies implement).
    ///
    /// A service wrapped in a tower layer (`ServiceBuilder::new().layer(l)
    /// .service(svc)`) has no `NamedService`, in tonic too, and does not
    /// compile here (E0277, `NamedService` is not implemented). Put the
    /// layer on the builder instead ([`ServerHost::configure`], `b.layer(l)`:
    /// the production way, it wraps every service), or, for one service
    /// only, a small wrapper that implements `NamedService` (the guide's
    /// [production server](crate::guide::production_server) page shows one).
    pub fn add_service<S>(mut self, svc: S) -> Self
    where
        S: tower::Service<http::Request<Body>, Error = Infallible>
            + NamedService
            + Clone
            + Send
            + Sync
            + 'static,
        S::Response: axum::response::IntoResponse,
        S::Future: Send + 'static,
    {
        self.services.push(S::NAME);
        self.adds
            .push(Box::new(move |routes| routes.add_service(svc)));
        self
    }

    /// Serves a whole `tonic::service::Routes` on this host, for a team
    /// whose production code builds its routes in one function (services
    /// added with [`ServerHost::add_service`] join them, in either order).
    ///
    /// tonic's `Routes` does not say which services it holds, so on such a
    /// host a handler fault or a retry config naming a service it does not
    /// serve is not caught before the run; such a fault is reported at the
    /// end as `fault never fired`. A second `add_routes` on one host fails
    /// the run ([`Error::is_misconfigured`](crate::Error::is_misconfigured)):
    /// two `Routes` cannot be merged (each has tonic's fallback for unknown
    /// methods); add every service to one.
    pub fn add_routes(mut self, routes: Routes) -> Self {
        if self.base.is_some() {
            self.host.shared.misconfigured(format!(
                "ServerHost::add_routes was called twice on host `{}`: tonic's Routes cannot be merged \
                 (each has a fallback for unknown methods); add every service to one Routes, or add \
                 the others with add_service",
                self.host.name
            ));
        }
        self.base = Some(routes);
        self
    }

    /// Serves TLS on this host's connections ([`crate::tls`]): each
    /// connection a client opens runs a TLS 1.3 handshake with `tls` (the
    /// identity presented, and the client CA for mTLS) before tonic gets
    /// it, below the wire tap, so the trace still shows the HTTP/2 frames.
    /// Clients dial it with [`Host::channel_tls`]; a plaintext client's
    /// connection fails its handshake (the trace says so) and is dropped.
    /// A connection whose handshake fails never reaches tonic. Set it
    /// here, not with tonic's `Server::tls_config` in
    /// [`ServerHost::configure`]: that would put TLS above the tap (see
    /// [`crate::tls`]).
    ///
    /// A `tls` rustls refuses (a key that does not fit its certificate, a
    /// client CA that does not parse) fails the run
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)) with
    /// rustls's reason. A second call replaces the first.
    pub fn tls(mut self, tls: crate::tls::ServerTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Configures this host's tonic server with your production builder
    /// options and layers: `configure` gets tonic's own
    /// `tonic::transport::Server` builder ([`server::Builder`](crate::server::Builder):
    /// `Server::builder()` with the harness's recording layer already
    /// added) and returns it configured.
    ///
    /// ```
    /// use std::time::Duration;
    /// # let mut sim = grpc_chaos::Sim::builder().build();
    /// sim.server("store", |s| {
    ///     s.configure(|b| {
    ///         b.timeout(Duration::from_secs(1))
    ///             .max_concurrent_streams(100)
    ///             .max_connection_age(Duration::from_secs(30))
    ///             .layer(tower::limit::ConcurrencyLimitLayer::new(64))
    ///     })
    ///     // .add_service(StoreServer::new(..))
    /// });
    /// ```
    ///
    /// Every option is tonic's code running unchanged on the simulated
    /// connections: `timeout`, `concurrency_limit_per_connection`,
    /// `load_shed`, `max_concurrent_streams`, the window sizes,
    /// `http2_keepalive_interval`/`_timeout`, `max_connection_age`/`_grace`,
    /// `http2_adaptive_window`, `max_frame_size`,
    /// `http2_max_header_list_size`, `http2_max_pending_accept_reset_streams`,
    /// `http2_max_local_error_reset_streams`, `accept_http1`, `trace_fn`,
    /// `layer`. Times are *simulated* time. `tcp_nodelay` and the
    /// `tcp_keepalive*` options have no effect (see [`crate::server`]).
    ///
    /// Layers go inside the harness's recording layer, in the order you add
    /// them; [`crate::server`] shows the whole stack, and
    /// [`HandlerFault::inside_layers`](crate::fault::HandlerFault::inside_layers)
    /// puts a handler fault after them. The closure runs each time the host
    /// (re)starts, like the rest of the setup. Configuring a host twice
    /// fails the run ([`Error::is_misconfigured`](crate::Error::is_misconfigured)):
    /// put every option in one closure.
    pub fn configure<F, L, ResBody>(mut self, configure: F) -> Self
    where
        F: FnOnce(Builder) -> tonic::transport::Server<L>,
        L: tower::Layer<Routed> + 'static,
        L::Service: tower::Service<http::Request<Body>, Response = http::Response<ResBody>>
            + Clone
            + Send
            + 'static,
        <L::Service as tower::Service<http::Request<Body>>>::Future: Send,
        <L::Service as tower::Service<http::Request<Body>>>::Error: Into<BoxError> + Send + 'static,
        ResBody: http_body::Body<Data = bytes::Bytes> + Send + 'static,
        ResBody::Error: Into<BoxError>,
    {
        if self.serve.is_some() {
            self.host.shared.misconfigured(format!(
                "ServerHost::configure was called twice on host `{}`; put every builder option \
                 and layer in one closure",
                self.host.name
            ));
        }
        let server = configure(tonic::transport::Server::builder().layer(self.layer.clone()));
        // The builder's type says whether the closure added layers.
        let layered = TypeId::of::<L>() != TypeId::of::<Stack<HandlerLayer, Identity>>();
        self.layer.set_layered(layered);
        self.serve = Some(serve_fn(server));
        self
    }

    /// The routes (behind the inside-layers faults), what they serve, and
    /// the serve function.
    pub(crate) fn into_parts(self) -> ServerParts {
        // A serve fn builds its own routes: what they serve is unknown.
        let opaque = self.base.is_some() || self.user.is_some();
        let user = self.user.map(|f| (f, self.layer.clone()));
        let mut routes = self.base.unwrap_or_default();
        for add in self.adds {
            routes = add(routes);
        }
        let serve = self.serve.unwrap_or_else(|| {
            default_serve(tonic::transport::Server::builder().layer(self.layer.clone()))
        });
        ServerParts {
            routes: Routed::new(InsideService::new(routes, &self.layer)),
            services: (!opaque).then_some(self.services),
            serve,
            user,
            tls: self.tls,
        }
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl Deref for ServerHost {
    type Target = Host;

    fn deref(&self) -> &Host {
        &self.host
    }
}
