//! State every host of a run shares with the harness: the recorder, the
//! host list, the handler fault rules, and problems found while running.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Kind, Problems};
use crate::fault::{FramePlan, HandlerRule, Injection, RuleEntry};
use crate::net::{Links, Registry, TapEnv, Wiring};
use crate::policy::{KeepalivePolicy, PolicyPlan};
use crate::recorder::event::EventKind;
use crate::recorder::{Recorder, SlowPolls};

/// The faults that act inside hosts, as added to the sim.
#[derive(Default)]
pub(crate) struct Rules {
    pub(crate) handler: Vec<HandlerRule>,
    pub(crate) frame: Vec<RuleEntry>,
    pub(crate) inject: Vec<Injection>,
    /// Keepalive enforcement per server host ([`Sim::keepalive_policy`]).
    ///
    /// [`Sim::keepalive_policy`]: super::Sim::keepalive_policy
    pub(crate) keepalive: Vec<(String, KeepalivePolicy)>,
    /// Connection policies per server host ([`Sim::connection_policy`]),
    /// in the order added.
    ///
    /// [`Sim::connection_policy`]: super::Sim::connection_policy
    pub(crate) policies: Vec<(String, super::PolicyFactory)>,
}

pub(crate) struct Shared {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) seed: u64,
    servers: Vec<String>,
    clients: Vec<String>,
    /// Handler faults, in the order added.
    handler: Arc<[HandlerRule]>,
    /// Frame faults and injections, and the holds released so far.
    frames: Arc<FramePlan>,
    /// Keepalive enforcement and connection policies per server host.
    policies: Arc<PolicyPlan>,
    conns: Arc<Registry>,
    /// Whether connections go through the wire tap.
    wire_tap: bool,
    /// [`SimBuilder::show_credentials`](super::SimBuilder::show_credentials).
    show_credentials: bool,
    problems: Arc<Problems>,
    finished: Mutex<BTreeSet<String>>,
    /// The retry layers hosts made, and what their configs matched.
    pub(crate) retry_uses: super::retry_use::RetryUses,
    /// Replica sets and their members now ([`super::Sim::servers`]).
    pub(crate) replicas: Arc<crate::balance::Replicas>,
    /// Graceful shutdowns of server hosts ([`crate::Fault::shutdown`]).
    pub(crate) shutdowns: super::shutdown::Shutdowns,
    /// The hosts serving tonic-health and their reporters ([`super::Sim::health`]).
    pub(crate) health: super::health::HealthServers,
    /// Partitions, black holes and pauses in force.
    links: Arc<Links>,
    /// Handler polls that held their thread too long (*wall* time).
    pub(crate) slow_polls: Arc<SlowPolls>,
}

impl Shared {
    pub(crate) fn new(seed: u64, servers: Vec<String>, clients: Vec<String>, rules: Rules) -> Self {
        Self {
            recorder: Arc::default(),
            seed,
            servers,
            clients,
            handler: rules.handler.into(),
            frames: Arc::new(FramePlan::new(rules.frame, rules.inject)),
            policies: Arc::new(PolicyPlan::new(rules.keepalive, rules.policies)),
            conns: Arc::default(),
            wire_tap: true,
            show_credentials: false,
            problems: Arc::default(),
            finished: Mutex::default(),
            retry_uses: super::retry_use::RetryUses::default(),
            replicas: Arc::default(),
            shutdowns: super::shutdown::Shutdowns::default(),
            health: super::health::HealthServers::default(),
            links: Arc::default(),
            slow_polls: Arc::default(),
        }
    }

    /// Times handler polls against `threshold` (*wall* time; `None`: not
    /// at all).
    pub(crate) fn with_slow_poll_threshold(mut self, threshold: Option<Duration>) -> Self {
        self.slow_polls = Arc::new(SlowPolls::new(threshold));
        self
    }

    /// Adds the run's replica sets, every replica a member.
    pub(crate) fn with_replica_sets(mut self, sets: &[super::ReplicaSet]) -> Self {
        self.replicas = Arc::new(crate::balance::Replicas::new(sets));
        self
    }

    /// Adds the hosts that serve tonic-health ([`super::Sim::health`]).
    pub(crate) fn with_health(mut self, hosts: std::collections::BTreeSet<String>) -> Self {
        self.health = super::health::HealthServers::new(hosts);
        self
    }

    /// Makes the links table active: the run has partition, black hole or
    /// pause faults.
    pub(crate) fn with_link_faults(mut self, active: bool) -> Self {
        self.links = Arc::new(Links::new(active));
        self
    }

    /// The links table (partitions, black holes, pauses in force).
    pub(crate) fn links(&self) -> &Links {
        &self.links
    }

    fn known(&self) -> Vec<String> {
        let mut all: Vec<String> = self.servers.iter().chain(&self.clients).cloned().collect();
        all.sort();
        all
    }

    pub(crate) fn problem(&self, e: Error) {
        self.problems.push(e);
    }

    /// Notes a misconfiguration found while the hosts run: the run fails
    /// with it ([`Error::is_misconfigured`]).
    pub(crate) fn misconfigured(&self, why: String) {
        self.problems.misconfigured(why);
    }

    /// Whether `host` is a server host one can connect to; records an
    /// unknown-host problem if not.
    pub(crate) fn check_host(&self, host: &str, context: &str) -> bool {
        let ok = self.servers.iter().any(|s| s == host);
        if let (false, Some(set)) = (ok, self.replicas.set(host)) {
            self.problem(Error::new(Kind::ReplicaSetNamed {
                set: host.to_owned(),
                replicas: set.replicas(),
                context: context.to_owned(),
                balanced: true,
            }));
        } else if !ok && self.clients.iter().any(|c| c == host) {
            self.problem(Error::new(Kind::Misconfigured(format!(
                "{context}: `{host}` is a client host (Sim::client), which serves nothing; \
                 connect to a server host: {}",
                self.servers.join(", ")
            ))));
        } else if !ok {
            self.problem(Error::new(Kind::UnknownHost {
                host: host.to_owned(),
                context: context.to_owned(),
                known: self.servers.clone(),
            }));
        }
        ok
    }

    /// The replica set `name`, for a balanced channel on host `from`; records
    /// a problem that says what to use instead when there is none.
    pub(crate) fn replica_set(&self, name: &str, from: &str) -> Option<super::ReplicaSet> {
        let set = self.replicas.set(name);
        if set.is_none() {
            let context = format!("balanced_channel({name:?}) on host `{from}`");
            let sets = self.replicas.names();
            self.problem(Error::new(if self.servers.iter().any(|s| s == name) {
                Kind::Misconfigured(format!(
                    "{context}: `{name}` is one host, not a replica set; use channel({name:?}) for it, \
                     or Sim::servers to make it a set; replica sets: {}",
                    if sets.is_empty() { "(none)".to_owned() } else { sets.join(", ") }
                ))
            } else {
                Kind::UnknownReplicaSet {
                    name: name.to_owned(),
                    context,
                    sets,
                }
            }));
        }
        set
    }

    /// Checks the host's handler faults against the services it serves
    /// (known only once its server closure has run).
    pub(crate) fn check_services(&self, host: &str, served: &[&'static str]) {
        self.retry_uses.served(host, served);
        for rule in self.handler.iter().filter(|r| r.host == host) {
            if let Some(service) = rule.service() {
                if !served.contains(&service) {
                    self.problem(Error::new(Kind::UnknownService {
                        host: host.to_owned(),
                        path: rule.method.clone().unwrap_or_default(),
                        served: served.iter().map(|s| (*s).to_owned()).collect(),
                    }));
                }
            }
        }
    }

    /// The handler faults naming `host`, described.
    pub(crate) fn handler_faults_on(&self, host: &str) -> Vec<String> {
        self.handler
            .iter()
            .filter(|r| r.host == host)
            .map(HandlerRule::describe)
            .collect()
    }

    /// Every fault that never acted in this run, described: a typo in a
    /// method path, a window no request fell in, a frame that never
    /// passed, an injection with no connection to go on.
    pub(crate) fn unused_faults(&self, ended: Duration) -> Vec<(String, String)> {
        let handler = self
            .handler
            .iter()
            .filter(|r| !r.fired())
            .map(|r| (r.host.clone(), r.describe()));
        let frame = self
            .frames
            .rules()
            .iter()
            .filter(|r| !r.fired())
            .map(|r| (r.filter.from.clone().unwrap_or_default(), r.describe()));
        let inject = self
            .frames
            .injections_all()
            .iter()
            .filter(|i| !i.fired())
            .map(|i| (i.from.clone(), i.describe(ended)));
        handler.chain(frame).chain(inject).collect()
    }

    /// Every retry policy that matched no call in this run, described (see
    /// [`RetryUses::check`](super::retry_use::RetryUses::check)); a
    /// service config naming a service its target does not serve is
    /// recorded as a problem.
    pub(crate) fn unused_retry_policies(&self) -> Vec<(String, String)> {
        let (unused, errors) = self.retry_uses.check();
        for e in errors {
            self.problem(e);
        }
        unused
    }

    /// Releases the frames held under `name` ([`Verdict::Hold`]) and
    /// wakes every writer task waiting on one. `by` names the host whose
    /// code asked (`None`: a timed [`Fault::release`](crate::Fault::release));
    /// a name no hold uses is recorded as a misconfiguration.
    pub(crate) fn release(&self, name: &str, by: Option<&str>) {
        let who = by.map_or_else(String::new, |h| format!(" on `{h}`"));
        let what = format!("release({name:?}){who}");
        // A timed release has no host of its own: it is shown at the host
        // whose frames the hold keeps back, or else at the one they go to,
        // when the hold names one.
        let holder = match self.frames.release(&what, name) {
            Ok(holder) => holder,
            Err(e) => {
                self.problem(e);
                return;
            }
        };
        self.recorder.push(
            by.or(holder).unwrap_or_default(),
            EventKind::HoldReleased {
                name: name.to_owned(),
                timed: by.is_none(),
            },
        );
        self.frames.wake_released();
    }

    /// What the tap needs of the run ([`TapEnv`]).
    pub(crate) fn tap_env(&self) -> TapEnv {
        TapEnv {
            recorder: self.recorder.clone(),
            frames: self.frames.clone(),
            links: self.links.clone(),
            problems: self.problems.clone(),
            wire_tap: self.wire_tap,
            show_credentials: self.show_credentials,
        }
    }

    /// What the wiring needs of the run ([`Wiring`]).
    pub(crate) fn wiring(&self) -> Wiring {
        Wiring {
            tap: self.tap_env(),
            conns: self.conns.clone(),
            policies: self.policies.clone(),
        }
    }

    /// What the handler layer needs of the run.
    pub(crate) fn handler_env(&self) -> crate::server::handler::HandlerEnv {
        crate::server::handler::HandlerEnv {
            recorder: self.recorder.clone(),
            rules: self.handler.clone(),
            problems: self.problems.clone(),
            seed: self.seed,
            slow: self.slow_polls.clone(),
        }
    }

    /// The connection registry (ids shared by both ends).
    /// Records credentials as sent
    /// ([`SimBuilder::show_credentials`](super::SimBuilder::show_credentials)).
    pub(crate) fn showing_credentials(mut self, shown: bool) -> Self {
        self.show_credentials = shown;
        self
    }

    /// Turns the wire tap off ([`SimBuilder::wire_tap`](super::SimBuilder::wire_tap)).
    pub(crate) fn without_wire_tap(mut self) -> Self {
        self.wire_tap = false;
        self
    }

    pub(crate) fn conns(&self) -> &Registry {
        &self.conns
    }

    pub(crate) fn server_failed(&self, host: &str, message: String) {
        self.problem(Error::new(Kind::ServerFailed {
            host: host.to_owned(),
            message,
        }));
    }

    /// Notes that a client body returned, with its error if it failed.
    pub(crate) fn client_finished(&self, host: &str, error: Option<String>) {
        // What the others wait for may be this one's end.
        self.recorder.progressed();
        if let Some(message) = error {
            self.problem(Error::new(Kind::ClientFailed {
                host: host.to_owned(),
                message,
            }));
        }
        self.finished
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(host.to_owned());
    }

    /// Client hosts whose body has not returned yet.
    pub(crate) fn pending_clients(&self) -> Vec<String> {
        let finished = self.finished.lock().unwrap_or_else(|p| p.into_inner());
        self.clients
            .iter()
            .filter(|c| !finished.contains(*c))
            .cloned()
            .collect()
    }

    /// The first problem found while running, if any.
    pub(crate) fn take_problem(&self) -> Option<Error> {
        self.problems.take_first()
    }

    pub(crate) fn known_hosts(&self) -> Vec<String> {
        self.known()
    }
}
