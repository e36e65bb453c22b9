//! Host faults: turmoil's own levers (crash, restart, black hole, link
//! latency) and the links the harness emulates (TCP-like partitions,
//! pauses; `net/links.rs`), applied between simulation steps; and timed
//! releases of held frames, which fire the same way.

use std::time::Duration;

use crate::recorder::event::HealthStatus;

/// A pod termination's timing, *simulated* time from the deletion
/// (`fault/kubernetes.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PodTiming {
    /// The preStop hook's run, before SIGTERM.
    pub(crate) pre_stop: Duration,
    /// Until every client has seen the endpoint removed.
    pub(crate) endpoint_lag: Duration,
    /// `terminationGracePeriodSeconds`: until SIGKILL.
    pub(crate) grace: Duration,
}

/// A host fault and its time.
#[derive(Debug, Clone)]
pub(crate) struct HostFault {
    pub(crate) at: Duration,
    pub(crate) action: HostAction,
}

#[derive(Debug, Clone)]
pub(crate) enum HostAction {
    Crash(String),
    Restart(String),
    /// A TCP-like partition, with its `reset_after`.
    Partition(String, String, Option<Duration>),
    BlackHole(String, String),
    Repair(String, String),
    Pause(String),
    Resume(String),
    Latency(String, String, Duration),
    /// Releases the frames held under this name ([`super::FrameFault::hold`]).
    Release(String),
    /// Takes a replica out of its set's membership ([`super::Fault::leave`]).
    Leave(String),
    /// Puts a replica back into its set's membership ([`super::Fault::join`]).
    Join(String),
    /// The DNS stops answering for a replica set's name
    /// ([`super::Fault::dns_outage`]).
    DnsOutage(String),
    /// The DNS answers for the set's name again ([`super::Fault::dns_restore`]).
    DnsRestore(String),
    /// Sets a service's `grpc.health.v1` status on a host that serves
    /// tonic-health ([`super::Fault::health`]): host, service, status.
    Health(String, String, HealthStatus),
    /// Starts the host's graceful shutdown, with an optional grace after
    /// which it is crashed ([`super::Fault::shutdown`]).
    Shutdown(String, Option<Duration>),
    /// A Kubernetes pod termination ([`super::Fault::pod_termination`]):
    /// recorded when it fires; the run schedules its parts
    /// ([`super::kubernetes::parts`]) from it.
    PodTermination(String, PodTiming),
    /// The grace of the shutdown that started at the given time is over:
    /// a host still draining it is crashed. Made by the run from a
    /// `Shutdown` with a grace, never by users.
    GraceEnded(String, Duration),
}

impl HostAction {
    /// The action in the trace's words, for errors: `crash of store`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Self::Crash(h) => format!("crash of {h}"),
            Self::Restart(h) => format!("restart of {h}"),
            Self::Partition(a, b, _) => format!("partition between {a} and {b}"),
            Self::BlackHole(a, b) => format!("black hole between {a} and {b}"),
            Self::Pause(h) => format!("pause of {h}"),
            Self::Resume(h) => format!("resume of {h}"),
            Self::Repair(a, b) => format!("repair between {a} and {b}"),
            Self::Latency(a, b, d) => format!(
                "latency {} between {a} and {b}",
                crate::units::fmt_duration(*d)
            ),
            Self::Release(name) => format!("release {name:?}"),
            Self::Leave(h) => format!("leave of {h}"),
            Self::Join(h) => format!("join of {h}"),
            Self::DnsOutage(set) => format!("DNS outage of {set}"),
            Self::DnsRestore(set) => format!("DNS restore of {set}"),
            Self::Health(h, service, status) => {
                format!(
                    "health of {service:?} on {h} set to {}",
                    status.proto_name()
                )
            }
            Self::Shutdown(h, None) => format!("graceful shutdown of {h}"),
            Self::Shutdown(h, Some(grace)) => format!(
                "graceful shutdown of {h} with grace {}",
                crate::units::fmt_duration(*grace)
            ),
            Self::GraceEnded(h, _) => format!("end of the shutdown grace of {h}"),
            Self::PodTermination(h, _) => format!("pod termination of {h}"),
        }
    }

    /// Whether the action changes a link the wiring must know about
    /// (`net/links.rs`).
    pub(crate) fn is_link_fault(&self) -> bool {
        matches!(
            self,
            Self::Partition(..) | Self::BlackHole(..) | Self::Pause(_) | Self::Resume(_)
        )
    }

    /// Every host the action names.
    pub(crate) fn hosts(&self) -> Vec<&str> {
        match self {
            Self::Crash(h)
            | Self::Restart(h)
            | Self::Leave(h)
            | Self::Join(h)
            | Self::Health(h, ..)
            | Self::Shutdown(h, _)
            | Self::GraceEnded(h, _)
            | Self::PodTermination(h, _)
            | Self::Pause(h)
            | Self::Resume(h) => vec![h],
            Self::Partition(a, b, _)
            | Self::BlackHole(a, b)
            | Self::Repair(a, b)
            | Self::Latency(a, b, _) => vec![a, b],
            // A set's name, not a host: checked with the replica sets.
            Self::Release(_) | Self::DnsOutage(_) | Self::DnsRestore(_) => vec![],
        }
    }

    /// Hosts whose software the action stops or starts: they must be
    /// server hosts (turmoil cannot restart a client body).
    pub(crate) fn restarted_host(&self) -> Option<&str> {
        match self {
            Self::Crash(h)
            | Self::Restart(h)
            | Self::Shutdown(h, _)
            | Self::GraceEnded(h, _)
            | Self::PodTermination(h, _) => Some(h),
            _ => None,
        }
    }

    /// For a membership change: the replica and whether it joins.
    pub(crate) fn membership(&self) -> Option<(&str, bool)> {
        match self {
            Self::Leave(h) => Some((h, false)),
            Self::Join(h) => Some((h, true)),
            _ => None,
        }
    }
}
