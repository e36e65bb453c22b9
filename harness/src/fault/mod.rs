//! Faults: what a scenario breaks, and when.
//!
//! | family | acts on | built with |
//! |---|---|---|
//! | host | turmoil and the wiring: crash, restart, partition (heals like TCP), black hole (turmoil's partition), repair, pause, resume, link latency; the server's graceful shutdown | [`Fault::crash`], [`Fault::restart`], [`Fault::partition`], [`Fault::black_hole`], [`Fault::repair`], [`Fault::pause`], [`Fault::resume`], [`Fault::link_latency`], [`Fault::shutdown`] |
//! | membership | a replica set's service discovery: a replica leaves or joins | [`Fault::leave`], [`Fault::join`] |
//! | Kubernetes | a pod's termination: its endpoint removed after a lag, SIGTERM after preStop, SIGKILL at the grace period | [`Fault::pod_termination`] |
//! | health | a server's `grpc.health.v1` status (tonic-health): NOT_SERVING and back | [`Fault::health`] |
//! | frame | HTTP/2 frames leaving a host (the wire tap): drop, delay, hold (until a time or a named release), a rule of the test's own ([`FrameRule`]: replace the octets, or any verdict), inject (at a time or after a frame) | [`Fault::frames`], [`FrameFault::rule`], [`Fault::inject`], [`Fault::release`] |
//! | handler | the service stack (a tower layer on every sim server) | [`Fault::handler`] |
//!
//! Every fault is recorded in the trace when it fires. Times are *simulated*
//! time since the start of the run.

mod builtin;
mod frame;
mod handler_rule;
mod host;
mod kubernetes;
mod links;
mod plan;
mod rule;
pub(crate) mod value;

use std::time::Duration;

use tonic::Code;

pub(crate) use frame::{check_release, FrameInfo, Injection, RuleEntry};
pub use frame::{FrameFault, Inject, InjectAt};
pub(crate) use handler_rule::{Action, HandlerRule, Reply};
pub(crate) use host::{HostAction, HostFault};
pub use kubernetes::{PodTermination, DEFAULT_TERMINATION_GRACE, PRE_STOP_EXTENSION};
pub(crate) use links::{LinkState, Links, SYN_GIVE_UP};
pub(crate) use plan::FramePlan;
pub(crate) use rule::{check_nth, check_window, LONGEST_WAIT};
pub use rule::{FrameRule, FrameView, RunCheck, Verdict};

pub(crate) use value::Fault;

#[derive(Debug, Clone)]
pub(crate) enum FaultKind {
    Host(HostFault),
    Handler(HandlerRule),
    Frame(RuleEntry),
    Inject(Injection),
}

/// What [`Sim::fault`](crate::Sim::fault) takes: a finished [`Fault`].
///
/// Only `Fault` is one. A builder not finished yet (a host fault without
/// `.at(time)`, a handler or frame fault without its action) is refused at
/// compile time with a message that says what it lacks, not with a bare
/// type mismatch:
///
/// ```compile_fail,E0277
/// use grpc_chaos::{Fault, Sim};
/// let mut sim = Sim::builder().build();
/// sim.fault(Fault::crash("store")); // no `.at(time)`
/// ```
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::{Fault, Sim};
/// let mut sim = Sim::builder().build();
/// sim.fault(Fault::crash("store").at(Duration::from_millis(200)));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a finished `Fault`",
    label = "not a `Fault` yet",
    note = "a host fault (crash, restart, shutdown, partition, pause, …) needs `.at(time)`; \
            a handler fault needs an action (`.delay(..)`, `.abort(..)`, `.hang()`, `.fail_first(..)`, \
            `.concurrency_limit(..)`); a frame fault needs an action (`.drop()`, `.delay(..)`, \
            `.hold_until(..)`, `.hold(..)`, `.rule(..)`); an injection needs its frame (`.goaway(..)`, \
            `.rst_stream(..)`, `.ping(..)`, …) and `.at(time)` or `.after(..)`"
)]
pub trait IntoFault: into_fault::Sealed {
    /// The fault.
    fn into_fault(self) -> Fault;
}

impl IntoFault for Fault {
    fn into_fault(self) -> Fault {
        self
    }
}

mod into_fault {
    /// Only the harness's `Fault` is one.
    pub trait Sealed {}
    impl Sealed for super::Fault {}
}

/// A host fault waiting for its time; finish it with [`HostFaultBuilder::at`].
#[derive(Debug, Clone)]
#[must_use = "call .at(time) to get a Fault"]
pub struct HostFaultBuilder {
    action: HostAction,
}

impl HostFaultBuilder {
    /// Fires at `at`, *simulated* time since the start of the run. A time
    /// after the end of the run is an error from [`Sim::run`](crate::Sim::run).
    pub fn at(self, at: Duration) -> Fault {
        Fault(FaultKind::Host(HostFault {
            at,
            action: self.action,
        }))
    }
}

/// A graceful shutdown waiting for its time; give it a grace with
/// [`ShutdownFault::grace`], finish it with [`ShutdownFault::at`].
#[derive(Debug, Clone)]
#[must_use = "call .at(time) to get a Fault"]
pub struct ShutdownFault {
    host: String,
    grace: Option<Duration>,
}

impl ShutdownFault {
    /// Crashes the host (as [`Fault::crash`]) when it is still draining
    /// `grace` after the shutdown started (*simulated* time), as a process
    /// manager's SIGKILL after its SIGTERM does. Default: no grace, the
    /// server drains for as long as its connections stay open. A grace
    /// that ends after the run is an error from [`Sim::run`](crate::Sim::run).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// Starts the shutdown at `at`, *simulated* time since the start of the
    /// run. A time after the end of the run is an error from
    /// [`Sim::run`](crate::Sim::run).
    pub fn at(self, at: Duration) -> Fault {
        Fault(FaultKind::Host(HostFault {
            at,
            action: HostAction::Shutdown(self.host, self.grace),
        }))
    }
}

/// A [`Fault::partition`] waiting for its time; finish it with
/// [`PartitionBuilder::at`].
#[derive(Debug, Clone)]
#[must_use = "call .at(time) to get a Fault"]
pub struct PartitionBuilder {
    a: String,
    b: String,
    reset_after: Option<Duration>,
}

impl PartitionBuilder {
    /// Resets a connection whose oldest byte waiting to cross the
    /// partition has waited `limit` (*simulated* time): both ends' reads
    /// and writes then fail with `ConnectionReset`, and what waited never
    /// leaves; a connection attempt waiting that long fails with
    /// `TimedOut`. This is TCP giving up on retransmissions: Linux does so
    /// after `tcp_retries2` = 15 backed-off retransmissions, about 924.6 s
    /// with its 200 ms minimum RTO (`Documentation/networking/ip-sysctl.rst`),
    /// or after `TCP_USER_TIMEOUT` when an application sets it (RFC 9293
    /// §3.8.3 "USER TIMEOUT"; RFC 5482); read, not measured. Default: no
    /// limit. A zero `limit` is an error from [`Sim::run`](crate::Sim::run).
    ///
    /// How it differs from real TCP: the real timeout ends only the end
    /// whose bytes went unacknowledged; the other end learns of it when it
    /// next sends after the repair (and gets a RST) or by its own timers.
    /// Here both ends are reset at the same instant.
    pub fn reset_after(mut self, limit: Duration) -> Self {
        self.reset_after = Some(limit);
        self
    }

    /// Fires at `at`, *simulated* time since the start of the run. A time
    /// after the end of the run is an error from [`Sim::run`](crate::Sim::run).
    pub fn at(self, at: Duration) -> Fault {
        Fault(FaultKind::Host(HostFault {
            at,
            action: HostAction::Partition(self.a, self.b, self.reset_after),
        }))
    }
}

impl Fault {
    /// Shuts server host `host`'s tonic server down gracefully, as its
    /// `main` does on SIGTERM: the shutdown signal of tonic's
    /// `serve_with_incoming_shutdown` fires. tonic then stops accepting
    /// (the listener is dropped: new connections are refused) and asks
    /// every connection to shut down gracefully; hyper/h2 send GOAWAY
    /// (NO_ERROR, last-stream-id 2³¹−1), a PING, and on its ACK a second
    /// GOAWAY with the last stream they took (h2 `proto/connection.rs`
    /// `go_away_gracefully`); calls in flight finish, new calls on those
    /// connections are refused; serve returns once every connection has
    /// closed (tonic `transport/server/mod.rs` `serve_internal`).
    ///
    /// The trace shows `graceful shutdown started`, the frames, each
    /// handler finishing or being dropped, and `serve returned` — or, with
    /// [`ShutdownFault::grace`], the crash when the grace ran out, or at
    /// the end of the run `shutdown still draining` with the connections
    /// and handler runs it waits on. The host stays up with nothing
    /// listening after serve returned; [`Fault::restart`] starts its server
    /// again. A shutdown of a host that is not running (crashed, already
    /// shut down) is reported as a fault that never fired. `host` must be
    /// a server host. A shutdown on the very tick a request arrives is
    /// ordered against it by tonic's `select!`, at random (see
    /// [`crate::server`], "Determinism").
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// let drain = Fault::shutdown("store").grace(Duration::from_secs(5)).at(Duration::from_secs(1));
    /// # let _ = drain;
    /// ```
    pub fn shutdown(host: impl Into<String>) -> ShutdownFault {
        ShutdownFault {
            host: host.into(),
            grace: None,
        }
    }

    /// Sets the `grpc.health.v1` status of `service` on server host `host`
    /// to `status` at the instant given to `.at(..)`, as the server's own
    /// code does through tonic-health's `HealthReporter::set_service_status`
    /// (tonic-health 0.14.9 `server.rs`): every open
    /// `grpc.health.v1.Health/Watch` stream for that service gets the new
    /// status at once, `Check` answers it from then on. The host stays up
    /// and keeps serving calls that reach it: only health-checking
    /// clients ([`Host::balanced_channel_health`](crate::Host::balanced_channel_health),
    /// gRFC A17) stop sending it calls. `service` is a fully qualified
    /// service name (`"tt.v1.Store"`), or `""` for the whole server.
    ///
    /// The host must serve tonic-health: add it with
    /// [`Sim::health`](crate::Sim::health) (for the host, or for its
    /// replica set). A health fault on a host without it is an error from
    /// [`Sim::run`](crate::Sim::run)
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)) that
    /// says so. A restart of the host starts a new server whose services
    /// are all SERVING again, as a restarted process's are.
    ///
    /// The trace shows `health: "tt.v1.Store" set to NOT_SERVING` at the
    /// host.
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// use grpc_chaos::recorder::event::HealthStatus;
    /// let down = Fault::health("store-1", "tt.v1.Store", HealthStatus::NotServing)
    ///     .at(Duration::from_secs(1));
    /// let up = Fault::health("store-1", "tt.v1.Store", HealthStatus::Serving)
    ///     .at(Duration::from_secs(2));
    /// # let _ = (down, up);
    /// ```
    pub fn health(
        host: impl Into<String>,
        service: impl Into<String>,
        status: crate::recorder::event::HealthStatus,
    ) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Health(host.into(), service.into(), status),
        }
    }

    /// Stops the software of server host `host` (turmoil `crash`): its
    /// connections stop answering and its handlers are dropped. Peers
    /// dialling it wait (a crashed host does not refuse connections).
    pub fn crash(host: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Crash(host.into()),
        }
    }

    /// Starts server host `host` again (turmoil `bounce`): the server
    /// closure given to [`Sim::server`](crate::Sim::server) runs again. On a
    /// running host this is a crash and a restart at the same instant.
    pub fn restart(host: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Restart(host.into()),
        }
    }

    /// Partitions `a` from `b`, both ways, the way TCP lives through it:
    /// every byte either writes to the other waits at its sender (as in
    /// TCP's retransmission queue, RFC 9293 §3.8.1) and leaves, in order,
    /// at [`Fault::repair`]; a connection attempt between them waits too
    /// (a real SYN is retransmitted) and completes at the repair, unless
    /// the caller's `Endpoint::connect_timeout` gives up first. Streams in
    /// flight resume on the same connection. The trace shows each frame
    /// that waited (`[held: partitioned until repair]`) and when it left
    /// (`released after …`). A host that crashes during the partition
    /// loses what it kept back (`never left: …, then lost with its
    /// sender's connection` at the end of the run), and the resets its
    /// crash sends wait for the repair too.
    ///
    /// With [`PartitionBuilder::reset_after`], a connection whose oldest
    /// waiting byte has waited that long is reset, as TCP gives up after
    /// its retransmission timeouts. Without it a connection waits as long
    /// as the partition lasts; a connection attempt gives up after 127 s
    /// (Linux's `tcp_syn_retries` = 6).
    ///
    /// How it differs from real TCP (read, not measured): a real sender
    /// retransmits on its retransmission timer (RFC 6298: at least 1 s,
    /// Linux 200 ms, doubling after each loss), so after a repair the
    /// bytes arrive at the next retransmission, up to one backed-off timeout
    /// later; here they leave at the repair. The sender's back pressure is
    /// the wire tap's 64 KiB send buffer, not a window. Bytes already on
    /// the wire when the partition starts (written less than one link
    /// latency before) still arrive. With [`SimBuilder::wire_tap`]`(false)`
    /// the bytes wait the same way, but no frame is recorded.
    ///
    /// turmoil's own partition, which loses what is sent, is
    /// [`Fault::black_hole`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// let cut = Fault::partition("player", "store")
    ///     .reset_after(Duration::from_secs(15))
    ///     .at(Duration::from_millis(100));
    /// let heal = Fault::repair("player", "store").at(Duration::from_secs(2));
    /// # let _ = (cut, heal);
    /// ```
    ///
    /// [`SimBuilder::wire_tap`]: crate::SimBuilder::wire_tap
    pub fn partition(a: impl Into<String>, b: impl Into<String>) -> PartitionBuilder {
        PartitionBuilder {
            a: a.into(),
            b: b.into(),
            reset_after: None,
        }
    }

    /// Black-holes the links between `a` and `b` in both directions
    /// (turmoil `partition`): every message sent across is dropped, and
    /// turmoil's TCP never retransmits, so a connection that lost a segment
    /// stays silent in that direction for good, even after
    /// [`Fault::repair`] (it delivers segments strictly in sequence). A
    /// connection attempt across fails at once (`ConnectionRefused`), where
    /// a real SYN would wait. The trace marks each frame written into the
    /// black hole `[lost in the black hole]` and each later one on the
    /// same direction `[lost behind a frame the black hole dropped]`;
    /// frames already on the wire when it starts are lost too, and are
    /// shown as passed (the tap saw them leave).
    ///
    /// Use it for a link that loses data for good (a middlebox that
    /// dropped its state); for a network that heals, use
    /// [`Fault::partition`].
    pub fn black_hole(a: impl Into<String>, b: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::BlackHole(a.into(), b.into()),
        }
    }

    /// Pauses host `host` (a GC pause, SIGSTOP, a VM migration) until
    /// [`Fault::resume`]: its connections stay open; every byte to or from
    /// it waits at its sender and leaves at the resume, in order; a
    /// connection attempt to it waits too. Peers' deadlines and keepalive
    /// timers run on, and fire if the pause is long enough.
    ///
    /// turmoil cannot stop one host's clock, so this is an emulation on
    /// the links, and it differs from a real pause (read, not measured):
    /// the paused host's own code keeps running — its timers fire on time,
    /// its handlers go on, what it writes is recorded when written and
    /// waits — where a stopped process does nothing and fires its overdue
    /// timers at the resume; a real kernel still acknowledges and buffers
    /// bytes sent to a paused process (so peers' TCP does not retransmit
    /// and no partition-like timeout applies) and completes new
    /// handshakes into the listen backlog, where here a connection attempt
    /// waits for the resume. No connection is reset by a pause.
    ///
    /// A resume without an earlier pause of the same host, or a second
    /// pause before the resume, is an error from [`Sim::run`](crate::Sim::run).
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// let stop = Fault::pause("store").at(Duration::from_millis(100));
    /// let go = Fault::resume("store").at(Duration::from_secs(3));
    /// # let _ = (stop, go);
    /// ```
    pub fn pause(host: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Pause(host.into()),
        }
    }

    /// Resumes a host [`Fault::pause`] paused: what waited leaves now.
    pub fn resume(host: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Resume(host.into()),
        }
    }

    /// Restores the links between `a` and `b`: ends a [`Fault::partition`]
    /// (the bytes that waited leave now) or a [`Fault::black_hole`]
    /// (turmoil `repair`; what it lost stays lost).
    pub fn repair(a: impl Into<String>, b: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Repair(a.into(), b.into()),
        }
    }

    /// Sets the one-way latency of the links between `a` and `b` (turmoil
    /// `set_link_latency`), *simulated* time. A latency longer than the run's
    /// duration is an error from [`Sim::run`](crate::Sim::run): use
    /// [`Fault::partition`] or [`Fault::black_hole`] to cut a link.
    pub fn link_latency(
        a: impl Into<String>,
        b: impl Into<String>,
        latency: Duration,
    ) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Latency(a.into(), b.into(), latency),
        }
    }

    /// Takes replica host `replica` (of a [`Sim::servers`](crate::Sim::servers)
    /// set) out of its set's membership, as a service-discovery update
    /// would (an endpoint removed from a Kubernetes `Endpoints` list, or
    /// from DNS). Each balanced channel to the set that watches the
    /// membership sees a `tower::discover::Change::Remove` the next time
    /// its balancer polls for changes (when it next routes a call) and
    /// sends the replica no new calls; a channel with
    /// [`Dns`](crate::balance::Dns) sees it in its first answer made after
    /// it. Calls already on the replica's connection run on, and the
    /// host itself keeps running. Recorded as `left replica set …` at the
    /// replica, and `balancer: … removed` at each caller when its balancer
    /// applies it.
    ///
    /// With [`Fault::join`], [`Fault::restart`] and enough time in
    /// between for calls in flight to finish, this tells a rolling deploy
    /// that drains each replica before restarting it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// let s = Duration::from_secs;
    /// let deploy = [
    ///     Fault::leave("store-0").at(s(1)),
    ///     Fault::restart("store-0").at(s(2)),
    ///     Fault::join("store-0").at(s(3)),
    /// ];
    /// # let _ = deploy;
    /// ```
    ///
    /// A host that is not a replica, or a replica that is not a member at
    /// that time (it left already), is an error from
    /// [`Sim::run`](crate::Sim::run).
    pub fn leave(replica: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Leave(replica.into()),
        }
    }

    /// Puts replica host `replica` back into its set's membership (a
    /// `tower::discover::Change::Insert` for every balanced channel to the
    /// set): each balancer makes a new connection to it, and routes calls
    /// to it once that connection is ready. To start a run with a replica
    /// outside the set (a scale-out later in the run), make it
    /// [`Fault::leave`] at zero. A host that is not a replica, or a replica
    /// that is a member at that time, is an error from
    /// [`Sim::run`](crate::Sim::run).
    pub fn join(replica: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Join(replica.into()),
        }
    }

    /// Makes the DNS give no answer for replica set `set`'s name (SERVFAIL,
    /// or a lookup that times out) until a [`Fault::dns_restore`]: every
    /// resolution of a balanced channel with [`Dns`](crate::balance::Dns)
    /// fails meanwhile, and the channel keeps the addresses it has (grpc's
    /// resolvers keep the last good answer; a channel with no answer yet
    /// makes its calls wait). Channels that watch the membership (no
    /// `Dns`) do not resolve, so it changes nothing for them. Recorded as
    /// `DNS outage` at the set's name, and `dns: resolving … failed` at
    /// each caller when it resolves.
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// let s = Duration::from_secs;
    /// let outage = [Fault::dns_outage("store").at(s(10)), Fault::dns_restore("store").at(s(40))];
    /// # let _ = outage;
    /// ```
    ///
    /// A name that is not a replica set's, or an outage while one is on,
    /// is an error from [`Sim::run`](crate::Sim::run).
    pub fn dns_outage(set: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::DnsOutage(set.into()),
        }
    }

    /// Ends a [`Fault::dns_outage`] of replica set `set`'s name: the next
    /// resolution of each channel gets an answer. A restore with no outage
    /// on is an error from [`Sim::run`](crate::Sim::run).
    pub fn dns_restore(set: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::DnsRestore(set.into()),
        }
    }

    /// Deletes the Kubernetes pod that runs replica host `replica`, as
    /// `kubectl delete pod` or a rolling deploy does: at the time given to
    /// [`PodTermination::at`] (call it *t*) the pod is terminating; the
    /// replica leaves its set at *t* + `endpoint_lag` (the time until every
    /// client has seen its endpoint removed: a [`Fault::leave`]); SIGTERM
    /// starts its graceful shutdown at *t* + preStop ([`Fault::shutdown`];
    /// [`PodTermination::pre_stop`], default none); SIGKILL crashes it at
    /// *t* + `terminationGracePeriodSeconds` if it is still draining
    /// ([`PodTermination::termination_grace_period`], default 30 s). A
    /// preStop that reaches the grace period gets the kubelet's one 2 s
    /// extension ([`PRE_STOP_EXTENSION`]): SIGTERM then, SIGKILL 2 s later.
    /// The order and the defaults are Kubernetes' "Termination of Pods"
    /// (`pod-lifecycle.md`, read).
    ///
    /// The trace shows `pod termination started` with the three times,
    /// then each part as it fires. When the preStop is shorter than the
    /// endpoint lag, SIGTERM comes while clients still send the pod new
    /// calls: the drop in a rolling deploy that a preStop `sleep` covers.
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// let s = Duration::from_secs;
    /// let delete = Fault::pod_termination("store-1", s(2)).pre_stop(s(5)).at(s(10));
    /// # let _ = delete;
    /// ```
    ///
    /// A host that is not a replica of a set ([`Sim::servers`](crate::Sim::servers)),
    /// a replica that has left its set by then, or a SIGKILL after the end
    /// of the run is an error from [`Sim::run`](crate::Sim::run).
    pub fn pod_termination(replica: impl Into<String>, endpoint_lag: Duration) -> PodTermination {
        PodTermination::new(replica.into(), endpoint_lag)
    }

    /// A frame fault: narrow it with [`FrameFault::from`], [`FrameFault::to`],
    /// [`FrameFault::kind`], [`FrameFault::ack`], [`FrameFault::stream`],
    /// [`FrameFault::nth`], [`FrameFault::during`], then pick what it does.
    ///
    /// ```
    /// use grpc_chaos::Fault;
    /// use grpc_chaos::wire::FrameType;
    /// // The store never answers a PING: a dead peer for keepalive.
    /// let fault = Fault::frames().from("store").kind(FrameType::Ping).ack(true).drop();
    /// # let _ = fault;
    /// ```
    pub fn frames() -> FrameFault {
        FrameFault::default()
    }

    /// Writes a frame into every connection from `from` to `to` at a time
    /// ([`InjectAt::at`]) or after a frame ([`InjectAt::after`]), as if
    /// `from` had sent it. It goes onto the connection past its connection
    /// policies: a [`Middlebox`](crate::policy::Middlebox) or a policy of
    /// your own is not shown it (its `on_frame` is not called), so a box
    /// cannot answer or rewrite an injected frame (`net/tap/inject.rs`).
    pub fn inject(from: impl Into<String>, to: impl Into<String>) -> Inject {
        Inject::new(from.into(), to.into())
    }

    /// Releases the frames [`FrameFault::hold`]`(name)` keeps back, at the
    /// time given to [`HostFaultBuilder::at`] (*simulated* time since the
    /// start of the run), as [`Host::release`](crate::Host::release) does
    /// from a host's code. A `name` no hold uses, or a time after the end
    /// of the run, is an error from [`Sim::run`](crate::Sim::run).
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// use grpc_chaos::wire::FrameType;
    /// let hold = Fault::frames().from("player").kind(FrameType::WindowUpdate).hold("window");
    /// let release = Fault::release("window").at(Duration::from_secs(10));
    /// # let _ = (hold, release);
    /// ```
    pub fn release(name: impl Into<String>) -> HostFaultBuilder {
        HostFaultBuilder {
            action: HostAction::Release(name.into()),
        }
    }

    /// A fault in the handlers of server host `host`: narrow it with
    /// [`HandlerFault::method`] and [`HandlerFault::during`], then pick what
    /// it does.
    ///
    /// Several handler faults matching one request act in the order they
    /// were added: delays and concurrency limits add up, and the first one
    /// that answers the request (`abort`, a `fail_first` within its first
    /// N, `hang`) ends it; the faults after it do not act on that request
    /// (a `fail_first` behind it does not count it). Each fault that acted
    /// is a `fault` line of its own in the trace, so the trace says which
    /// did; one that never acted in the whole run is reported at its end
    /// as `fault never fired`.
    pub fn handler(host: impl Into<String>) -> HandlerFault {
        HandlerFault {
            host: host.into(),
            method: None,
            window: None,
            reply: Reply::default(),
            inside: false,
        }
    }
}

/// A handler fault being built: which requests it matches.
#[derive(Debug, Clone)]
#[must_use = "pick an action (delay, abort, hang, fail_first, concurrency_limit) to get a Fault"]
pub struct HandlerFault {
    host: String,
    method: Option<String>,
    window: Option<(Duration, Duration)>,
    reply: Reply,
    inside: bool,
}

impl HandlerFault {
    /// For [`HandlerFault::abort`] and [`HandlerFault::fail_first`]: sends
    /// `grpc-retry-pushback-ms: <ms>` with the failure (gRFC A6
    /// "Pushback"): a value ≥ 0 asks a retrying client to wait exactly that
    /// many milliseconds (*simulated* time) before the next attempt; a
    /// negative one asks it not to retry. Default: no pushback.
    pub fn pushback_ms(mut self, ms: i64) -> Self {
        self.reply.pushback_ms = Some(ms);
        self
    }

    /// For [`HandlerFault::abort`] and [`HandlerFault::fail_first`]: sends
    /// response headers first and the status in trailers, instead of a
    /// trailers-only response. The client has then seen the server answer:
    /// the call is *committed* and grpc-go does not retry it (seed 000 §5).
    /// Default: trailers-only.
    pub fn after_headers(mut self) -> Self {
        self.reply.after_headers = true;
        self
    }

    /// Only requests for this method path, `/package.Service/Method`
    /// (default: every method of the host); read it from the generated
    /// client with [`method_path`](crate::client::method_path) and a typo
    /// is a compile error. A path of another shape, or of a service the
    /// host does not serve, is an error from [`Sim::run`](crate::Sim::run).
    pub fn method(mut self, path: impl Into<String>) -> Self {
        self.method = Some(path.into());
        self
    }

    /// Acts inside the server's own layers — after every layer its builder
    /// adds ([`ServerHost::configure`](crate::ServerHost::configure)), right
    /// before its routes — instead of before them (the default). A request
    /// a layer of the server's answers itself (an auth interceptor that
    /// rejects it) never gets here: the fault does not act on it. On a host
    /// whose builder has layers, the trace says which side a fault acted on
    /// (`fault delay 2000ms on /tt.v1.Store/Save (inside the server's
    /// layers)`). A service wrapped per service (`StoreServer::with_interceptor`)
    /// is part of the routes: both sides are in front of its interceptor.
    ///
    /// ```
    /// use std::time::Duration;
    /// use grpc_chaos::Fault;
    /// // Slow only the requests the server's auth layer let through.
    /// let fault = Fault::handler("store").inside_layers().delay(Duration::from_secs(2));
    /// # let _ = fault;
    /// ```
    pub fn inside_layers(mut self) -> Self {
        self.inside = true;
        self
    }

    /// Only requests that arrive in `[from, until)`, *simulated* time since
    /// the start of the run (default: the whole run).
    pub fn during(mut self, from: Duration, until: Duration) -> Self {
        self.window = Some((from, until));
        self
    }

    /// Holds each matching request for `delay` (*simulated* time) before
    /// the handler runs. The caller's deadline keeps running meanwhile.
    pub fn delay(self, delay: Duration) -> Fault {
        self.action(Action::Delay(delay))
    }

    /// Answers each matching request with `code` and `message` as a
    /// trailers-only response (or as [`HandlerFault::after_headers`] and
    /// [`HandlerFault::pushback_ms`] say), without running the handler.
    /// `Code::Ok` is an error from [`Sim::run`](crate::Sim::run): it is
    /// not a failure.
    pub fn abort(self, code: Code, message: impl Into<String>) -> Fault {
        let reply = self.reply;
        self.action(Action::Abort(code, message.into(), reply))
    }

    /// Never answers matching requests: the handler is not run and the
    /// request stays open until the caller gives up or the connection dies.
    pub fn hang(self) -> Fault {
        self.action(Action::Hang)
    }

    /// Answers the first `n` matching requests with `code` (trailers-only,
    /// message `"injected failure i/n"`; or as
    /// [`HandlerFault::after_headers`] and [`HandlerFault::pushback_ms`]
    /// say); later ones run normally. `n == 0` and `Code::Ok` are errors
    /// from [`Sim::run`](crate::Sim::run).
    pub fn fail_first(self, n: u32, code: Code) -> Fault {
        let reply = self.reply;
        self.action(Action::FailFirst(n, code, reply))
    }

    /// Lets at most `n` matching requests run at once; the rest wait in
    /// arrival order (a worker pool of size `n`). The trace shows how long
    /// each one queued. `n` must be at least 1.
    pub fn concurrency_limit(self, n: usize) -> Fault {
        self.action(Action::ConcurrencyLimit(n))
    }

    fn action(self, action: Action) -> Fault {
        Fault(FaultKind::Handler(
            HandlerRule::new(self.host, self.method, self.window, action)
                .inside_layers(self.inside),
        ))
    }
}
