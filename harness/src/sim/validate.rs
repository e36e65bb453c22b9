//! Checks a scenario before it runs, so a typo is a clear error, not a
//! silent no-op or a hang.

use std::collections::BTreeSet;

use super::Sim;
use crate::error::{Error, Kind};
use crate::fault::{
    check_nth, check_window, Action, FaultKind, HostAction, HostFault, Injection, RunCheck,
    LONGEST_WAIT,
};
use crate::recorder::event::HealthStatus;

impl Sim {
    /// Every check that does not need the run itself.
    pub(crate) fn validate(&self) -> Result<(), Error> {
        if let Some(problem) = &self.problem {
            return Err(Error::new(Kind::Misconfigured(problem.clone())));
        }
        if self.clients.is_empty() {
            return Err(Error::new(Kind::Misconfigured(
                "the sim has no client host: a run lasts as long as its clients' bodies, so nothing would happen; \
                 add one with Sim::client that makes the calls".to_owned(),
            )));
        }
        self.check_times()?;
        self.check_host_names()?;
        self.check_replica_sets()?;
        self.check_fault_codes()?;
        let mut names = BTreeSet::new();
        let all = self
            .servers
            .iter()
            .map(|(n, _)| n)
            .chain(self.clients.iter().map(|(n, _)| n));
        for name in all {
            if !names.insert(name.as_str()) {
                return Err(Error::new(Kind::DuplicateHost(name.clone())));
            }
        }
        let known: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        let unknown = |host: &str, context: String| match self.replica_set(host) {
            Some(set) => Error::new(Kind::ReplicaSetNamed {
                set: host.to_owned(),
                replicas: set.replicas(),
                context,
                balanced: false,
            }),
            None => Error::new(Kind::UnknownHost {
                host: host.to_owned(),
                context,
                known: known.clone(),
            }),
        };
        let run = RunCheck {
            duration: self.config.duration,
            hosts: &names,
            unknown: &unknown,
        };
        for fault in &self.faults {
            match &fault.0 {
                FaultKind::Host(h) => self.check_host_fault(h, &names, &unknown)?,
                FaultKind::Frame(rule) => rule.check(&run)?,
                FaultKind::Inject(i) => self.check_injection(i, &names, &unknown)?,
                FaultKind::Handler(rule) => {
                    if !self.servers.iter().any(|(n, _)| *n == rule.host) {
                        if self.clients.iter().any(|(n, _)| *n == rule.host) {
                            return Err(Error::new(Kind::NotAServer {
                                host: rule.host.clone(),
                                fault: "Fault::handler".to_owned(),
                            }));
                        }
                        return Err(unknown(&rule.host, "a handler fault".to_owned()));
                    }
                    if !rule.method_is_well_formed() {
                        return Err(Error::new(Kind::BadMethodPath {
                            host: rule.host.clone(),
                            path: rule.method.clone().unwrap_or_default(),
                        }));
                    }
                    if rule.inside && self.serve_fns.contains(&rule.host) {
                        return Err(Error::new(Kind::Misconfigured(format!(
                            "a handler fault on `{}` is marked inside_layers, but `{}` runs a serve fn \
                             (Sim::server_fn), whose routes the harness does not wrap; drop \
                             .inside_layers() (with `.layer(host.handler_layer())` in the serve fn, \
                             the fault acts there)",
                            rule.host, rule.host
                        ))));
                    }
                    self.check_window("handler fault", rule.window)?;
                    if matches!(rule.action, Action::FailFirst(0, ..)) {
                        return Err(Error::new(Kind::Misconfigured(format!(
                            "fail_first(0, ..) on `{}` would never fail a call; give it at least 1",
                            rule.host
                        ))));
                    }
                    if matches!(rule.action, Action::ConcurrencyLimit(0)) {
                        return Err(Error::new(Kind::Misconfigured(format!(
                            "concurrency_limit(0) on `{}` would never run a handler; use hang() for that",
                            rule.host
                        ))));
                    }
                }
            }
        }
        self.check_keepalive(&unknown)?;
        self.check_middleboxes(&unknown, &known)?;
        self.check_connection_policies(&unknown)?;
        self.check_membership()?;
        self.check_health()?;
        self.check_host_schedule()?;
        self.check_wire_tap()
    }

    fn replica_set(&self, name: &str) -> Option<&super::ReplicaSet> {
        self.replica_sets.iter().find(|s| s.name == name)
    }

    /// Each replica set has at least one replica and a name of its own.
    fn check_replica_sets(&self) -> Result<(), Error> {
        for (n, set) in self.replica_sets.iter().enumerate() {
            let name = &set.name;
            if set.count == 0 {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "Sim::servers({name:?}, 0, ..): a replica set needs at least 1 replica; \
                     give a count of 1 or more (Sim::server adds one host of that name)"
                ))));
            }
            let host = self
                .servers
                .iter()
                .map(|(h, _)| h)
                .chain(self.clients.iter().map(|(h, _)| h))
                .any(|h| h == name);
            let twice = self.replica_sets[..n].iter().any(|s| s.name == *name);
            if host || twice {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "`{name}` names a replica set (Sim::servers) and {}; give each its own name",
                    if twice {
                        "another replica set"
                    } else {
                        "a host"
                    }
                ))));
            }
        }
        Ok(())
    }

    /// The replica sets' names for an error: `store, ledger`, or `(none)`.
    fn replica_set_names(&self) -> String {
        let sets: Vec<&str> = self.replica_sets.iter().map(|s| s.name.as_str()).collect();
        if sets.is_empty() {
            "(none)".to_owned()
        } else {
            sets.join(", ")
        }
    }

    /// A pod termination names a replica: it is the pod behind one
    /// endpoint of a Service (a replica set here). Checked before its
    /// parts, whose errors would name `Fault::leave`.
    fn check_pod_terminations(&self) -> Result<(), Error> {
        for fault in self.host_faults() {
            let HostAction::PodTermination(host, _) = &fault.action else {
                continue;
            };
            if self.replica_sets.iter().any(|s| s.index_of(host).is_some()) {
                continue;
            }
            return Err(Error::new(Kind::Misconfigured(format!(
                "Fault::pod_termination({host:?}): `{host}` is not a replica of a set; a pod \
                 termination takes the pod out of its Service's endpoints, so run the pods as a \
                 replica set (Sim::servers) and name one of its replicas; replica sets: {}",
                self.replica_set_names()
            ))));
        }
        Ok(())
    }

    /// The server hosts that serve tonic-health ([`Sim::health`]: a host,
    /// or every replica of a set); names that are neither are left out
    /// (`check_health` refuses them).
    pub(crate) fn health_hosts(&self) -> BTreeSet<String> {
        let mut hosts = BTreeSet::new();
        for name in &self.health {
            match self.replica_set(name) {
                Some(set) => hosts.extend(set.replicas()),
                None => {
                    hosts.insert(name.clone());
                }
            }
        }
        hosts
    }

    /// `Sim::health` names server hosts the harness builds the routes of
    /// (or replica sets); every `Fault::health` names one of those hosts
    /// and a status tonic-health can serve.
    fn check_health(&self) -> Result<(), Error> {
        let bad = |text: String| Err(Error::new(Kind::Misconfigured(text)));
        for name in &self.health {
            if self.replica_set(name).is_some() {
                continue;
            }
            if self.clients.iter().any(|(n, _)| n == name) {
                return bad(format!(
                    "Sim::health({name:?}): `{name}` is a client host; the health service runs on \
                     a server host (Sim::server) or a replica set (Sim::servers)"
                ));
            }
            if self.serve_fns.contains(name) {
                return bad(format!(
                    "Sim::health({name:?}): `{name}` runs a serve fn (Sim::server_fn), whose routes \
                     the harness does not build; serve it with Sim::server instead, or drop Sim::health \
                     and the health faults for it"
                ));
            }
            if !self.servers.iter().any(|(n, _)| n == name) {
                let known: Vec<&str> = self.servers.iter().map(|(n, _)| n.as_str()).collect();
                return bad(format!(
                    "Sim::health({name:?}): no server host or replica set is named `{name}`; \
                     server hosts: {}",
                    known.join(", ")
                ));
            }
        }
        let served = self.health_hosts();
        for fault in self.host_faults() {
            let HostAction::Health(host, service, status) = &fault.action else {
                continue;
            };
            let call = format!("Fault::health({host:?}, {service:?}, ..)");
            if *status == HealthStatus::ServiceUnknown {
                return bad(format!(
                    "{call} sets SERVICE_UNKNOWN, which a server never stores: Watch answers it \
                     for a service it does not know (tonic-health fails the Watch with NOT_FOUND \
                     instead); set NOT_SERVING, SERVING or UNKNOWN"
                ));
            }
            if self.clients.iter().any(|(n, _)| n == host) {
                return Err(Error::new(Kind::NotAServer {
                    host: host.clone(),
                    fault: fault.action.describe(),
                }));
            }
            if !served.contains(host) {
                let set = self
                    .replica_sets
                    .iter()
                    .find(|s| s.index_of(host).is_some())
                    .map(|s| format!(" (or sim.health({:?}) for its whole replica set)", s.name))
                    .unwrap_or_default();
                return bad(format!(
                    "{call}: `{host}` serves no grpc.health.v1.Health service, so there is no \
                     status to set; add sim.health({host:?}){set} to serve tonic-health there"
                ));
            }
        }
        Ok(())
    }

    /// Leave and join faults name replicas, and each changes the
    /// membership: a replica leaves only while a member, joins only while
    /// not (in time order; at one instant, in the order added).
    fn check_membership(&self) -> Result<(), Error> {
        self.check_pod_terminations()?;
        let mut changes: Vec<&HostFault> = self
            .host_faults()
            .filter(|h| h.action.membership().is_some())
            .collect();
        changes.sort_by_key(|f| f.at);
        let mut out: BTreeSet<&str> = BTreeSet::new();
        for fault in changes {
            let Some((host, join)) = fault.action.membership() else {
                continue;
            };
            let what = fault.action.describe();
            let Some(set) = self
                .replica_sets
                .iter()
                .find(|s| s.index_of(host).is_some())
            else {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "Fault::{}({host:?}): `{host}` is not a replica of a set (Sim::servers); \
                     leave and join change a replica set's membership; replica sets: {}",
                    if join { "join" } else { "leave" },
                    self.replica_set_names()
                ))));
            };
            let member = !out.contains(host);
            if member == join {
                let at = crate::units::fmt_duration(fault.at);
                let why = if join {
                    "it is a member of its set then (every replica is at the start); \
                     make it leave first"
                } else {
                    "it has left its set by then; make it join again first"
                };
                return Err(Error::new(Kind::Misconfigured(format!(
                    "{what} at {at} changes nothing: {why} (set `{}`)",
                    set.name
                ))));
            }
            if join {
                out.remove(host);
            } else {
                out.insert(host);
            }
        }
        Ok(())
    }

    /// The host faults' schedule, walked once in time order (faults at one
    /// instant in the order added): no host crashed and restarted at the
    /// same instant (which comes first would hang on the order they were
    /// added, which a reader cannot see); pauses and resumes of each host
    /// alternate, starting with a pause; a link is cut by one partition or
    /// black hole at a time; a repair mends a link a partition
    /// or black hole cut (one with nothing to mend is a typo, or a repair
    /// meant to end a pause, which is `Fault::resume`).
    fn check_host_schedule(&self) -> Result<(), Error> {
        let mut faults: Vec<&HostFault> = self.host_faults().collect();
        faults.sort_by_key(|f| f.at);
        let fmt = crate::units::fmt_duration;
        let bad = |text: String| Err(Error::new(Kind::Misconfigured(text)));
        let pair = |a: &str, b: &str| {
            if a <= b {
                (a.to_owned(), b.to_owned())
            } else {
                (b.to_owned(), a.to_owned())
            }
        };
        let mut paused: BTreeSet<&str> = BTreeSet::new();
        let mut dns_out: BTreeSet<&str> = BTreeSet::new();
        let mut cut = BTreeSet::new();
        for (n, f) in faults.iter().enumerate() {
            match &f.action {
                HostAction::Crash(h) | HostAction::Restart(h)
                    if faults[..n]
                        .iter()
                        .any(|o| o.at == f.at && is_crash_or_restart_of(o, h, &f.action)) =>
                {
                    return bad(format!(
                        "Fault::crash({h:?}) and Fault::restart({h:?}) are both at {}: which comes first \
                         would depend on the order they were added; restart at least a tick ({}) after the crash",
                        fmt(f.at),
                        fmt(self.config.tick)
                    ));
                }
                HostAction::Pause(h) if !paused.insert(h) => {
                    return bad(format!(
                        "pause of {h} at {}: {h} is already paused; add a Fault::resume(\"{h}\") before it",
                        fmt(f.at)
                    ));
                }
                HostAction::Resume(h) if !paused.remove(h.as_str()) => {
                    return bad(format!(
                        "resume of {h} at {}: {h} is not paused then; add a Fault::pause(\"{h}\") at an earlier time, or remove the resume",
                        fmt(f.at)
                    ));
                }
                HostAction::DnsOutage(set) if !dns_out.insert(set) => {
                    return bad(format!(
                        "DNS outage of {set} at {}: one is already on then; add a Fault::dns_restore(\"{set}\") before it",
                        fmt(f.at)
                    ));
                }
                HostAction::DnsRestore(set) if !dns_out.remove(set.as_str()) => {
                    return bad(format!(
                        "DNS restore of {set} at {}: no DNS outage of {set} is on then; add a \
                         Fault::dns_outage(\"{set}\") at an earlier time, or remove the restore",
                        fmt(f.at)
                    ));
                }
                HostAction::Partition(a, b, _) | HostAction::BlackHole(a, b)
                    if cut.contains(&pair(a, b)) =>
                {
                    return bad(format!(
                        "{} at {}: a partition or black hole already cuts that link then, and \
                         which of the two acts would depend on the order they were added; add a \
                         Fault::repair(\"{a}\", \"{b}\") before it, or remove one",
                        f.action.describe(),
                        fmt(f.at)
                    ));
                }
                HostAction::Partition(a, b, _) | HostAction::BlackHole(a, b) => {
                    cut.insert(pair(a, b));
                }
                HostAction::Repair(a, b) if !cut.remove(&pair(a, b)) => {
                    return bad(format!(
                        "repair between {a} and {b} at {}: no partition or black hole cuts that link then; \
                         add a Fault::partition(\"{a}\", \"{b}\") at an earlier time, or remove the repair \
                         (a pause ends with Fault::resume)",
                        fmt(f.at)
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Frame faults, injections and keepalive policies act in the wire tap.
    fn check_wire_tap(&self) -> Result<(), Error> {
        if self.config.wire_tap {
            return Ok(());
        }
        let needs_tap = self.faults.iter().find_map(|f| match &f.0 {
            FaultKind::Frame(_) => Some("a frame fault"),
            FaultKind::Inject(_) => Some("an injected frame"),
            _ => None,
        });
        let needs_tap = needs_tap
            .or(self.keepalive.first().map(|_| "a keepalive policy"))
            .or(self.policies.first().map(|_| "a connection policy"));
        match needs_tap {
            None => Ok(()),
            Some(what) => Err(Error::new(Kind::Misconfigured(format!(
                "{what} acts in the wire tap, which SimBuilder::wire_tap(false) turned off; \
                 remove one of the two"
            )))),
        }
    }

    /// Each middlebox fronts a server host, lists hosts of this sim other
    /// than that one as the hosts that dial it through the box, and has no
    /// timer of zero.
    fn check_middleboxes(
        &self,
        unknown: &dyn Fn(&str, String) -> Error,
        known: &[String],
    ) -> Result<(), Error> {
        for (host, mb) in &self.middleboxes {
            let name = &mb.name;
            if !self.servers.iter().any(|(n, _)| n == host) {
                if self.clients.iter().any(|(n, _)| n == host) {
                    return Err(Error::new(Kind::Misconfigured(format!(
                        "Sim::middlebox({host:?}, {name}): `{host}` is a client host; a middlebox \
                         sits in front of a server host, so name the server it fronts (and list \
                         `{host}` in Middlebox::for_clients to pick whose connections pass it)"
                    ))));
                }
                return Err(unknown(host, format!("the middlebox {name}")));
            }
            for client in &mb.clients {
                if client == host {
                    return Err(Error::new(Kind::Misconfigured(format!(
                        "the middlebox {name} sits between `{host}` and itself (`{host}` in its \
                         for_clients, or Sim::middlebox_between({host:?}, {host:?}, ..)); a box \
                         sits on a link between two hosts: name the host that dials `{host}`"
                    ))));
                }
                // A server host dials too (a gateway's channel to a store).
                let dials = known.iter().any(|n| n == client);
                if !dials {
                    return Err(Error::new(Kind::Misconfigured(format!(
                        "the middlebox {name} on `{host}` lists `{client}` in for_clients, which \
                         is not a host of this sim; list the hosts that dial `{host}` through \
                         the box (known hosts: {})",
                        known.join(", ")
                    ))));
                }
            }
            if mb.max_concurrent_streams == Some(0) {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "the middlebox {name} on `{host}` has max_concurrent_streams = Some(0), which \
                     refuses every stream with REFUSED_STREAM (a client that read the box's \
                     SETTINGS could open none); give it at least 1, or None for no limit at the box"
                ))));
            }
            let grace = mb
                .connection_lifetime
                .as_ref()
                .map(|l| ("connection_lifetime.grace", l.grace));
            let mut waits = mb.durations().into_iter().chain(grace);
            if let Some((field, value)) = waits.find(|(_, d)| *d > LONGEST_WAIT) {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "the middlebox {name} on `{host}` has {field} = {}, longer than the longest \
                     single wait a run simulates (365 days); lower it, or set the field to None \
                     to have no such timer",
                    crate::units::fmt_duration(value)
                ))));
            }
            for (field, value) in mb.durations() {
                if value.is_zero() {
                    return Err(Error::new(Kind::Misconfigured(format!(
                        "the middlebox {name} on `{host}` has {field} = 0, which would fire at \
                         once on every connection; give it at least 1ms of simulated time, or \
                         set the field to None to have no such timer"
                    ))));
                }
            }
        }
        Ok(())
    }

    /// Each connection policy names a server host.
    fn check_connection_policies(
        &self,
        unknown: &dyn Fn(&str, String) -> Error,
    ) -> Result<(), Error> {
        for (host, _) in &self.policies {
            if !self.servers.iter().any(|(n, _)| n == host) {
                if self.clients.iter().any(|(n, _)| n == host) {
                    return Err(Error::new(Kind::Misconfigured(format!(
                        "Sim::connection_policy({host:?}): `{host}` is a client host; a connection \
                         policy sits on the connections to a server host, so name the server"
                    ))));
                }
                return Err(unknown(host, "a connection policy".to_owned()));
            }
        }
        Ok(())
    }

    /// Each keepalive policy names one server host, once.
    fn check_keepalive(&self, unknown: &dyn Fn(&str, String) -> Error) -> Result<(), Error> {
        let mut seen = BTreeSet::new();
        for (host, _) in &self.keepalive {
            if !self.servers.iter().any(|(n, _)| n == host) {
                if self.clients.iter().any(|(n, _)| n == host) {
                    return Err(Error::new(Kind::PolicyOnClient { host: host.clone() }));
                }
                return Err(unknown(host, "a keepalive policy".to_owned()));
            }
            if !seen.insert(host.as_str()) {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "two keepalive policies for `{host}`; a server host enforces one"
                ))));
            }
        }
        Ok(())
    }

    fn check_host_fault(
        &self,
        fault: &HostFault,
        names: &BTreeSet<&str>,
        unknown: &dyn Fn(&str, String) -> Error,
    ) -> Result<(), Error> {
        let what = fault.action.describe();
        for host in fault.action.hosts() {
            if !names.contains(host) {
                return Err(unknown(host, format!("fault {what}")));
            }
        }
        if let HostAction::Release(name) = &fault.action {
            self.check_release(name)?;
        }
        if let HostAction::DnsOutage(set) | HostAction::DnsRestore(set) = &fault.action {
            if self.replica_set(set).is_none() {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "{what}: `{set}` is not a replica set (Sim::servers); the DNS faults act on a set's \
                     name, which balanced channels with Dns resolve; replica sets: {}",
                    self.replica_set_names()
                ))));
            }
        }
        if let HostAction::Partition(a, b, Some(limit)) = &fault.action {
            if limit.is_zero() {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "partition between {a} and {b} with reset_after(0) would reset every connection at the first byte; \
                     give it a positive limit, or leave it out to wait for the repair"
                ))));
            }
        }
        if let [a, b] = fault.action.hosts()[..] {
            if a == b {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "{what}: a link joins two different hosts; name both ends"
                ))));
            }
        }
        if let Some(host) = fault.action.restarted_host() {
            if !self.servers.iter().any(|(n, _)| n == host) {
                return Err(Error::new(Kind::NotAServer {
                    host: host.to_owned(),
                    fault: what,
                }));
            }
        }
        if fault.at > self.config.duration {
            return Err(Error::new(Kind::FaultAfterEnd {
                fault: what,
                at: fault.at,
                duration: self.config.duration,
            }));
        }
        if let HostAction::Shutdown(host, Some(grace)) = &fault.action {
            let ends = fault.at.saturating_add(*grace);
            if ends > self.config.duration {
                let fmt = crate::units::fmt_duration;
                return Err(Error::new(Kind::Misconfigured(format!(
                    "graceful shutdown of {host} at {} with grace {}: the grace ends at {}, after the end \
                     of the run ({}), so the host would never be crashed; shorten the grace, start the \
                     shutdown earlier, or raise SimBuilder::duration (no grace: it drains as long as it takes)",
                    fmt(fault.at),
                    fmt(*grace),
                    fmt(ends),
                    fmt(self.config.duration)
                ))));
            }
        }
        Ok(())
    }

    /// An injection names known hosts; `.at` is inside the run; the
    /// trigger of `.after` names only hosts of the connection it watches.
    fn check_injection(
        &self,
        i: &Injection,
        names: &BTreeSet<&str>,
        unknown: &dyn Fn(&str, String) -> Error,
    ) -> Result<(), Error> {
        for host in [&i.from, &i.to] {
            if !names.contains(host.as_str()) {
                return Err(unknown(host, "an injected frame".to_owned()));
            }
        }
        if i.from == i.to {
            return Err(Error::new(Kind::Misconfigured(format!(
                "a frame injected from {0} to {0}: a host has no connection to itself; name the two ends of a connection",
                i.from
            ))));
        }
        if let Some(at) = i.at().filter(|at| *at > self.config.duration) {
            return Err(Error::new(Kind::FaultAfterEnd {
                fault: format!("frame injected from {} to {}", i.from, i.to),
                at,
                duration: self.config.duration,
            }));
        }
        let Some(trigger) = i.trigger() else {
            return Ok(());
        };
        for host in trigger.from.iter().chain(&trigger.to) {
            if !names.contains(host.as_str()) {
                return Err(unknown(host, "the trigger of an injected frame".to_owned()));
            }
            if *host != i.from && *host != i.to {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "the frame injected from {} to {} waits for {}, which no connection between {} and {} carries; name only those two hosts in the trigger",
                    i.from, i.to, trigger.describe(), i.from, i.to
                ))));
            }
        }
        check_nth("injection trigger", trigger.nth)?;
        self.check_window("injection trigger", trigger.window)
    }

    /// A timed release frees a hold some frame fault uses.
    fn check_release(&self, name: &str) -> Result<(), Error> {
        let rules = self.faults.iter().filter_map(|f| match &f.0 {
            FaultKind::Frame(r) => Some(r),
            _ => None,
        });
        crate::fault::check_release(&format!("Fault::release({name:?})"), name, rules)
    }

    /// `what`'s `during(from, until)` window, if any, is not empty and
    /// starts within the run.
    fn check_window(
        &self,
        what: &str,
        window: Option<(std::time::Duration, std::time::Duration)>,
    ) -> Result<(), Error> {
        check_window(what, window, self.config.duration)
    }
}

/// Whether `other` is the crash (for a restart) or the restart (for a
/// crash) of `host`.
fn is_crash_or_restart_of(other: &HostFault, host: &str, this: &HostAction) -> bool {
    match (&other.action, this) {
        (HostAction::Crash(h), HostAction::Restart(_))
        | (HostAction::Restart(h), HostAction::Crash(_)) => h == host,
        _ => false,
    }
}
