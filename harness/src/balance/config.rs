//! How a balanced channel is built ([`BalanceConfig`], for
//! [`Host::balanced_channel_config`](crate::Host::balanced_channel_config)),
//! and its DNS name resolution ([`Dns`]). Health checking, outlier
//! detection and DNS combine freely on one channel.

use std::sync::Arc;
use std::time::Duration;

use tonic::transport::Endpoint;

use super::{Configure, OutlierDetection};
use crate::error::{Error, Kind};

/// A balanced channel's parts, each off unless set: the replicas' tonic
/// `Endpoint` options, client-side health checking (gRFC A17), outlier
/// detection (gRFC A50), DNS name resolution ([`Dns`]) and TLS
/// ([`crate::tls`]). Without
/// [`BalanceConfig::dns`] the channel watches the set's membership itself
/// and sees a change at its next pick, as an endpoints watch does
/// (Kubernetes' EndpointSlice watch, xDS EDS).
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::balance::{BalanceConfig, Dns, OutlierDetection};
///
/// let config = BalanceConfig::new()
///     .endpoint(|e| e.timeout(Duration::from_millis(500)))
///     .health_check("tt.v1.Store")
///     .outlier_detection(OutlierDetection::default())
///     .dns(Dns::new().refresh(Duration::from_secs(5)).ttl(Duration::from_secs(30)));
/// # fn body(player: grpc_chaos::Host, config: BalanceConfig) {
/// let store = player.balanced_channel_config("store", config);
/// # let _ = store;
/// # }
/// # let _ = config;
/// ```
#[derive(Clone, Default)]
pub struct BalanceConfig {
    pub(crate) endpoint: Option<Configure>,
    pub(crate) health: Option<Arc<str>>,
    pub(crate) outlier: Option<OutlierDetection>,
    pub(crate) dns: Option<Dns>,
    pub(crate) tls: Option<crate::tls::ClientTls>,
}

impl std::fmt::Debug for BalanceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BalanceConfig")
            .field(
                "endpoint",
                &self.endpoint.as_ref().map(|_| "Fn(Endpoint) -> Endpoint"),
            )
            .field("health", &self.health)
            .field("outlier", &self.outlier)
            .field("dns", &self.dns)
            .field("tls", &self.tls)
            .finish()
    }
}

impl BalanceConfig {
    /// A config with every part off: [`Host::balanced_channel`](crate::Host::balanced_channel)'s channel.
    pub fn new() -> Self {
        Self::default()
    }

    /// tonic's `Endpoint` options for each replica's endpoint
    /// (`http://store-1:50051`): keepalive, `timeout`, `connect_timeout` …
    /// (timeouts are *simulated* time). Runs again for every new
    /// connection. Defaults to none (tonic's defaults).
    pub fn endpoint(
        mut self,
        configure: impl Fn(Endpoint) -> Endpoint + Send + Sync + 'static,
    ) -> Self {
        self.endpoint = Some(Arc::new(configure));
        self
    }

    /// Client-side health checking (gRFC A17) of `service` (`""`: the
    /// whole server), with the rules of
    /// [`Host::balanced_channel_health`](crate::Host::balanced_channel_health).
    /// Defaults to off.
    pub fn health_check(mut self, service: &str) -> Self {
        self.health = Some(service.into());
        self
    }

    /// Outlier detection (gRFC A50), as
    /// [`Host::balanced_channel_outlier_detection`](crate::Host::balanced_channel_outlier_detection)
    /// has it. Defaults to off.
    pub fn outlier_detection(mut self, detection: OutlierDetection) -> Self {
        self.outlier = Some(detection);
        self
    }

    /// Resolves the set's name through DNS, as [`Dns`] says, instead of
    /// watching the membership. Defaults to off.
    pub fn dns(mut self, dns: Dns) -> Self {
        self.dns = Some(dns);
        self
    }

    /// TLS on every replica connection, with the rules of
    /// [`Host::balanced_channel_tls`](crate::Host::balanced_channel_tls).
    /// Defaults to off (plaintext).
    pub fn tls(mut self, tls: crate::tls::ClientTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Checks every part that has bad values: the outlier detection's
    /// ranges ([`OutlierDetection::validate`]) and the DNS timers
    /// ([`Dns::validate`]). [`Sim::run`](crate::Sim::run) returns the same
    /// error ([`Error::is_misconfigured`]).
    pub fn validate(&self) -> Result<(), Error> {
        if let Some(od) = &self.outlier {
            od.validate()?;
        }
        if let Some(dns) = &self.dns {
            dns.validate()?;
        }
        Ok(())
    }
}

/// DNS name resolution for a balanced channel: the channel learns the
/// set's addresses by resolving its name, every
/// [`refresh`](Dns::refresh), and the answer may be up to
/// [`ttl`](Dns::ttl) old. This is the resolver a tonic user writes for
/// `Channel::balance_channel` (tonic has none of its own: a task that
/// looks the name up every so often and sends the balancer
/// `Change::Insert` / `Change::Remove` for the difference), in front of a
/// DNS that caches.
///
/// Each resolution asks the DNS. The DNS answers with the set's members
/// (the replicas that have not left: [`Fault::leave`](crate::Fault::leave),
/// [`Fault::join`](crate::Fault::join), a pod termination's endpoint
/// removal) as they were when its cached answer was made: an answer is
/// reused until it is `ttl` old, then made afresh. A cache of 30 s is
/// CoreDNS's `cache 30` of a Kubernetes cluster's default Corefile, or a
/// runtime's own (the JVM's `networkaddress.cache.ttl` is 30 s by
/// default) (read, not measured). While the DNS fails
/// ([`Fault::dns_outage`](crate::Fault::dns_outage)) a resolution gets no
/// answer and the channel keeps the addresses it has, as grpc's resolvers
/// do (grpc-go `resolver/dns`: the balancer keeps its last good state on
/// `ReportError`), and tries again at the next refresh.
///
/// Durations are *simulated* time. Defaults: `refresh` 30 s (grpc-go's
/// `MinResolutionInterval`, `internal/resolver/dns/dns_resolver.go`,
/// read), `ttl` zero (no cache: every resolution sees the membership of
/// that instant).
///
/// Where this differs from grpc-go's own DNS resolver: grpc-go resolves
/// again only when its balancer asks (a connection lost), at most once
/// per 30 s, and after a failure retries with connection backoff (1 s,
/// ×1.6); this one resolves on a timer, the tonic user's loop.
///
/// The trace shows, at the caller, each answer that tells something new
/// (a new list, or a change in what it gets wrong against the membership
/// of that instant: `dns: store answer 1 (made 10000ms ago): store-0,
/// store-1, store-2; stale: store-2 is no longer a member`), each failed
/// resolution, and each pick with the answer it came from (`r9 balanced
/// to store-2 (dns answer 1)`). Each channel has its own cache, made at
/// its first resolution; a DNS server's shared cache would expire for all
/// channels at once.
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::balance::Dns;
///
/// let dns = Dns::new().refresh(Duration::from_secs(5)).ttl(Duration::from_secs(30));
/// assert!(dns.validate().is_ok());
/// assert!(Dns::new().refresh(Duration::ZERO).validate().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dns {
    pub(super) refresh: Duration,
    pub(super) ttl: Duration,
}

impl Default for Dns {
    fn default() -> Self {
        Self {
            refresh: Duration::from_secs(30),
            ttl: Duration::ZERO,
        }
    }
}

impl Dns {
    /// [`Dns::default`]: refresh every 30 s, no cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How often the channel resolves the name again (*simulated* time).
    /// Defaults to 30 s. Must not be zero.
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// How long the DNS reuses an answer before it makes a new one from
    /// the membership (*simulated* time). Defaults to zero: no cache.
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Checks the timers: a zero `refresh` would resolve again without
    /// simulated time passing. The error says what to give instead
    /// ([`Error::is_misconfigured`]).
    pub fn validate(&self) -> Result<(), Error> {
        if self.refresh.is_zero() {
            return Err(Error::new(Kind::Misconfigured(
                "Dns: refresh is zero; give a positive refresh (grpc's minimum between resolutions is 30 s)"
                    .into(),
            )));
        }
        Ok(())
    }
}
