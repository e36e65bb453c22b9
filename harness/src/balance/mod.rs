//! Balanced channels: one recorded channel to a replica set
//! ([`Sim::servers`](crate::Sim::servers)) that spreads calls over its
//! members the way tonic's `Channel::balance_list` / `balance_channel` do
//! (tonic 0.14.9 `transport/channel/mod.rs`, `Channel::balance`): tower's
//! power-of-two-choices balancer (`tower::balance::p2c::Balance`) over one
//! lazily connecting connection per replica, fed by a
//! `tower::discover::Change` stream, behind a buffer of 1,024 requests.
//!
//! tonic's own balanced channel connects with its HTTP connector (real
//! sockets); this one is the same assembly over the harness's simulated
//! connector, so every replica connection goes through the wire tap.
//! Parts: `discover` (membership → changes), `replica` (one replica's
//! connection and its reconnect), `health` (its gRFC A17 health Watch,
//! when the channel checks health), `ejection` and `detector` (outlier
//! detection, gRFC A50, when the channel has it), `resolver` (DNS name
//! resolution, when the channel has it), `io` (its socket and
//! connector), `rng` (the balancer's seeded random numbers).
//!
//! Public here: [`BalanceConfig`], the parts of a channel for
//! [`Host::balanced_channel_config`](crate::Host::balanced_channel_config):
//! [`Dns`], and [`OutlierDetection`] with its two algorithms' settings.

mod config;
mod detector;
mod discover;
mod ejection;
mod health;
mod io;
mod outlier;
mod replica;
mod replicas;
mod resolver;
mod rng;

pub use config::{BalanceConfig, Dns};
pub use outlier::{FailurePercentageEjection, OutlierDetection, SuccessRateEjection};

use crate::recorder::event;
use std::sync::Arc;

use tonic::body::Body;
use tonic::transport::Endpoint;
use tower::balance::p2c::Balance;
use tower::buffer::Buffer;
use tower::util::BoxService;

use crate::recorder::event::{BalancerChange, EventKind};
pub(crate) use replicas::{ReplicaSet, Replicas};

use crate::net::Wiring;

/// tower's and tonic's boxed error.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub(crate) type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// tonic's `DEFAULT_BUFFER_SIZE` (`transport/channel/mod.rs`), the bound
/// of the buffer in front of its balancer.
const BUFFER_SIZE: usize = 1024;

/// How a user sets up each replica's `Endpoint`.
pub(crate) type Configure = Arc<dyn Fn(Endpoint) -> Endpoint + Send + Sync>;

/// The transport of a balanced channel: tonic's shape, a buffer in front of
/// a boxed balancer.
pub(crate) type Balanced =
    Buffer<http::Request<Body>, BoxFuture<Result<http::Response<Body>, BoxError>>>;

/// What every replica connection of one balanced channel shares.
pub(crate) struct Site {
    wiring: Wiring,
    /// The run's replica sets and their members now.
    replicas: Arc<Replicas>,
    /// The calling host.
    from: Arc<str>,
    set: ReplicaSet,
    configure: Configure,
    /// The run's seed (the health Watch's backoff jitter).
    seed: u64,
    /// gRFC A17's `healthCheckConfig.serviceName`, when health checking
    /// is on.
    health: Option<Arc<str>>,
    /// Outlier detection (gRFC A50), when the channel has it.
    outlier: Option<Arc<ejection::Ejector>>,
    /// The resolver's answers, when the channel resolves the set's name
    /// through DNS.
    dns: Option<Arc<resolver::Answers>>,
    /// The number of the DNS answer the balancer's addresses came from
    /// (0 before the first), for the picks' events.
    applied_answer: std::sync::atomic::AtomicU32,
    /// TLS on every replica connection ([`crate::tls`]), one config (and
    /// session cache) for the whole channel.
    tls: Option<crate::tls::TlsEnd>,
}

impl Site {
    fn record(&self, replica: &str, change: BalancerChange) {
        self.wiring.tap.recorder.push(
            &self.from,
            EventKind::Balancer(Box::new(event::Balancer {
                set: self.set.name.clone(),
                replica: replica.into(),
                change,
            })),
        );
    }
}

/// A balanced channel from `from` to replica set `set`; its worker task is
/// spawned on the current (host's) runtime, as tonic spawns its own. The
/// balancer's random numbers come from the run's seed and both names
/// ([`crate::retry::channel_seed`]'s mix), so the same seed picks the same
/// replicas in every process; two balanced channels from one host to one
/// set draw the same sequence. With outlier detection, its sweeps run in a
/// task of their own on the same runtime, for as long as the channel
/// lives; so does the resolver, with DNS. `config` is valid
/// ([`BalanceConfig::validate`]).
pub(crate) fn channel(
    wiring: Wiring,
    replicas: Arc<Replicas>,
    run_seed: u64,
    from: &str,
    set: ReplicaSet,
    config: BalanceConfig,
    tls: Option<crate::tls::TlsEnd>,
) -> Balanced {
    let seed = crate::retry::channel_seed(run_seed, from, &set.name);
    // Its own stream, so that ejection draws do not move the picks.
    let outlier = config
        .outlier
        .map(|od| Arc::new(ejection::Ejector::new(od, set.count, !seed)));
    let dns = config
        .dns
        .map(|dns| (dns, Arc::new(resolver::Answers::default())));
    let site = Arc::new(Site {
        wiring,
        replicas,
        from: from.into(),
        set,
        configure: config.endpoint.unwrap_or_else(|| Arc::new(|e| e)),
        seed: run_seed,
        health: config.health,
        outlier,
        dns: dns.as_ref().map(|(_, answers)| answers.clone()),
        applied_answer: Default::default(),
        tls,
    });
    if site.outlier.is_some() {
        tokio::spawn(ejection::Ejector::run(Arc::downgrade(&site)));
    }
    if let Some((dns, answers)) = dns {
        tokio::spawn(resolver::run(Arc::downgrade(&site), dns, answers));
    }
    let balance = Balance::from_rng(discover::Discover::new(site), rng::SplitMix64::new(seed));
    let (buffer, worker) = Buffer::pair(BoxService::new(balance), BUFFER_SIZE);
    tokio::spawn(worker);
    buffer
}
