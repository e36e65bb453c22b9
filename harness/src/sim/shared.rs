//! State every host of a run shares with the harness: the recorder, the
//! host list, the handler fault rules, and problems found while running.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use crate::error::{Error, Kind};
use crate::fault::{FrameInfo, FrameView, HandlerRule, Injection, RuleEntry, Verdict};
use crate::net::Policies;
use crate::policy::{ConnInfo, ConnectionPolicy, KeepaliveEnforcement, KeepalivePolicy};
use crate::recorder::event::EventKind;
use crate::recorder::Recorder;

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
    rules: Rules,
    conns: super::conns::Registry,
    /// Whether connections go through the wire tap.
    wire_tap: bool,
    problems: Mutex<Vec<Error>>,
    finished: Mutex<BTreeSet<String>>,
    /// Names released so far ([`FrameFault::hold`](crate::fault::FrameFault::hold)).
    released: Mutex<BTreeSet<String>>,
    /// Wakes every writer task waiting on a named hold when one is released.
    release_notify: Notify,
    /// The retry layers hosts made, and what their configs matched.
    pub(crate) retry_uses: super::retry_use::RetryUses,
    /// Replica sets and their members now ([`super::Sim::servers`]).
    pub(crate) replicas: super::replicas::Replicas,
    /// Graceful shutdowns of server hosts ([`crate::Fault::shutdown`]).
    pub(crate) shutdowns: super::shutdown::Shutdowns,
    /// Partitions, black holes and pauses in force.
    links: crate::net::Links,
}

impl Shared {
    pub(crate) fn new(seed: u64, servers: Vec<String>, clients: Vec<String>, rules: Rules) -> Self {
        Self {
            recorder: Arc::default(),
            seed,
            servers,
            clients,
            rules,
            conns: super::conns::Registry::default(),
            wire_tap: true,
            problems: Mutex::default(),
            finished: Mutex::default(),
            released: Mutex::default(),
            release_notify: Notify::new(),
            retry_uses: super::retry_use::RetryUses::default(),
            replicas: super::replicas::Replicas::default(),
            shutdowns: super::shutdown::Shutdowns::default(),
            links: crate::net::Links::default(),
        }
    }

    /// Adds the run's replica sets, every replica a member.
    pub(crate) fn with_replica_sets(mut self, sets: &[super::ReplicaSet]) -> Self {
        self.replicas = super::replicas::Replicas::new(sets);
        self
    }

    /// Makes the links table active: the run has partition, black hole or
    /// pause faults.
    pub(crate) fn with_link_faults(mut self, active: bool) -> Self {
        self.links = crate::net::Links::new(active);
        self
    }

    /// The links table (partitions, black holes, pauses in force).
    pub(crate) fn links(&self) -> &crate::net::Links {
        &self.links
    }

    fn known(&self) -> Vec<String> {
        let mut all: Vec<String> = self.servers.iter().chain(&self.clients).cloned().collect();
        all.sort();
        all
    }

    pub(crate) fn problem(&self, e: Error) {
        self.problems
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }

    /// Notes a misconfiguration found while the hosts run: the run fails
    /// with it ([`Error::is_misconfigured`]).
    pub(crate) fn misconfigured(&self, why: String) {
        self.problem(Error::new(Kind::Misconfigured(why)));
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
        for rule in self.rules.handler.iter().filter(|r| r.host == host) {
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
        self.rules
            .handler
            .iter()
            .filter(|r| r.host == host)
            .map(HandlerRule::describe)
            .collect()
    }

    /// The handler faults matching a request for `path` on `host` now:
    /// those acting before the server's own layers, or (`inside`) those
    /// acting inside them; in the order they were added (the order they
    /// act in). A rule counts as fired when it acts, not here: one behind
    /// a fault that answers the request never reaches it.
    pub(crate) fn handler_rules(&self, host: &str, path: &str, inside: bool) -> Vec<HandlerRule> {
        let now = self.recorder.now();
        self.rules
            .handler
            .iter()
            .filter(|r| r.inside == inside && r.matches(host, path, now))
            .cloned()
            .collect()
    }

    /// Every fault that never acted in this run, described: a typo in a
    /// method path, a window no request fell in, a frame that never
    /// passed, an injection with no connection to go on.
    pub(crate) fn unused_faults(&self, ended: Duration) -> Vec<(String, String)> {
        let handler = self
            .rules
            .handler
            .iter()
            .filter(|r| !r.fired())
            .map(|r| (r.host.clone(), r.describe()));
        let frame = self
            .rules
            .frame
            .iter()
            .filter(|r| !r.fired())
            .map(|r| (r.filter.from.clone().unwrap_or_default(), r.describe()));
        let inject = self
            .rules
            .inject
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

    /// What the frame faults do with a frame: the verdict of the first
    /// whose filter matches and whose rule acts, if any.
    pub(crate) fn frame_verdict(
        &self,
        info: &FrameInfo<'_>,
        view: &FrameView<'_>,
    ) -> Option<Verdict> {
        self.rules.frame.iter().find_map(|r| r.verdict(info, view))
    }

    /// Whether any frame fault exists (the tap then cuts the byte stream at
    /// frame boundaries; otherwise it only watches).
    pub(crate) fn has_frame_rules(&self) -> bool {
        !self.rules.frame.is_empty() || !self.rules.inject.is_empty()
    }

    /// `.at` injections into the direction `from` → `to` still due at or
    /// after `now`, soonest first.
    pub(crate) fn injections(&self, from: &str, to: &str, now: Duration) -> Vec<Injection> {
        let mut due: Vec<Injection> = self
            .rules
            .inject
            .iter()
            .filter(|i| i.from == from && i.to == to && i.at().is_some_and(|at| at >= now))
            .cloned()
            .collect();
        due.sort_by_key(Injection::at);
        due
    }

    /// `.after` injections whose frame goes on a connection between `a`
    /// and `b` (either way), with their index among the run's injections.
    pub(crate) fn triggers_between(&self, a: &str, b: &str) -> Vec<(usize, Injection)> {
        self.rules
            .inject
            .iter()
            .enumerate()
            .filter(|(_, i)| i.trigger().is_some())
            .filter(|(_, i)| (i.from == a && i.to == b) || (i.from == b && i.to == a))
            .map(|(n, i)| (n, i.clone()))
            .collect()
    }

    /// Releases the frames held under `name` ([`Verdict::Hold`]) and
    /// wakes every writer task waiting on one. `by` names the host whose
    /// code asked (`None`: a timed [`Fault::release`](crate::Fault::release));
    /// a name no hold uses is recorded as a misconfiguration.
    pub(crate) fn release(&self, name: &str, by: Option<&str>) {
        let who = by.map_or_else(String::new, |h| format!(" on `{h}`"));
        let what = format!("release({name:?}){who}");
        if let Err(e) = crate::fault::check_release(&what, name, &self.rules.frame) {
            self.problem(e);
            return;
        }
        self.released
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned());
        // A timed release has no host of its own: it is shown at the host
        // whose frames the hold keeps back, or else at the one they go to,
        // when the hold names one.
        let holder = self
            .rules
            .frame
            .iter()
            .filter(|r| r.hold_name() == Some(name))
            .find_map(|r| r.filter.from.as_deref().or(r.filter.to.as_deref()));
        self.recorder.push(
            by.or(holder).unwrap_or_default(),
            EventKind::HoldReleased {
                name: name.to_owned(),
                timed: by.is_none(),
            },
        );
        self.release_notify.notify_waiters();
    }

    /// Whether the hold `name` was released.
    pub(crate) fn is_released(&self, name: &str) -> bool {
        self.released
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name)
    }

    /// Resolves at the next release. Create it before checking
    /// [`Shared::is_released`]: a release in between still wakes it.
    pub(crate) fn next_release(&self) -> Notified<'_> {
        self.release_notify.notified()
    }

    /// The policies of the connection `info` describes: keepalive
    /// enforcement first, then the connection policies of its server host
    /// in the order added; `None` when it has none.
    pub(crate) fn connection_policies(&self, info: &ConnInfo<'_>) -> Option<Policies> {
        let server = info.server();
        let keepalive = self
            .rules
            .keepalive
            .iter()
            .filter(|(h, _)| h == server)
            .map(|(_, p)| {
                Box::new(KeepaliveEnforcement::new(*p, info)) as Box<dyn ConnectionPolicy>
            });
        let others = self
            .rules
            .policies
            .iter()
            .filter(|(h, _)| h == server)
            .map(|(_, make)| make(info));
        let list: Vec<Box<dyn ConnectionPolicy>> = keepalive.chain(others).collect();
        (!list.is_empty()).then(|| Policies::new(list))
    }

    /// The connection registry (ids shared by both ends).
    /// Turns the wire tap off ([`SimBuilder::wire_tap`](super::SimBuilder::wire_tap)).
    pub(crate) fn without_wire_tap(mut self) -> Self {
        self.wire_tap = false;
        self
    }

    /// Whether connections go through the wire tap.
    pub(crate) fn wire_tap(&self) -> bool {
        self.wire_tap
    }

    pub(crate) fn conns(&self) -> &super::conns::Registry {
        &self.conns
    }

    pub(crate) fn note_panic(&self, host: &str, path: &str, message: &str) {
        self.problem(Error::new(Kind::HandlerPanicked {
            host: host.to_owned(),
            path: path.to_owned(),
            message: message.to_owned(),
        }));
    }

    pub(crate) fn server_failed(&self, host: &str, message: String) {
        self.problem(Error::new(Kind::ServerFailed {
            host: host.to_owned(),
            message,
        }));
    }

    /// Notes that a task of the harness's own (`task`, e.g. `the wire tap
    /// from a to b`) panicked: the run fails with it.
    pub(crate) fn harness_panicked(&self, task: String, message: String) {
        self.problem(Error::new(Kind::HarnessPanicked { task, message }));
    }

    /// Notes that a client body returned, with its error if it failed.
    pub(crate) fn client_finished(&self, host: &str, error: Option<String>) {
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
        let mut problems = self.problems.lock().unwrap_or_else(|p| p.into_inner());
        (!problems.is_empty()).then(|| problems.remove(0))
    }

    pub(crate) fn known_hosts(&self) -> Vec<String> {
        self.known()
    }
}
