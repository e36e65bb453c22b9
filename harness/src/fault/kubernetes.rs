//! A Kubernetes pod termination, composed from the harness's own faults:
//! the endpoint removal (a replica leaving its set), SIGTERM (a graceful
//! shutdown) and SIGKILL (the shutdown's grace running out).
//!
//! The order is Kubernetes' "Termination of Pods" (kubernetes.io,
//! `docs/concepts/workloads/pods/pod-lifecycle.md`, read, not measured):
//! when a pod is deleted, the kubelet runs its `preStop` hook and only then
//! sends SIGTERM, while, at the same time, the control plane marks the
//! pod's endpoints terminating and not ready, and each client stops
//! sending it new calls once that update reaches it (EndpointSlice
//! controller, then kube-proxy, DNS or the client's own resolver: the
//! *endpoint lag*, which no Kubernetes default fixes). SIGKILL comes
//! `terminationGracePeriodSeconds` (default 30 s) after the deletion,
//! preStop included; a preStop still running then gets one 2 s extension
//! before SIGTERM, and SIGKILL 2 s after it.

use std::time::Duration;

use super::host::{HostAction, HostFault, PodTiming};
use super::{Fault, FaultKind};

/// Kubernetes' default `terminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE: Duration = Duration::from_secs(30);

/// The kubelet's one-off extension for a preStop hook still running when
/// the grace period ends (`pod-lifecycle.md`: "a small, one-off grace
/// period extension of 2 seconds").
pub const PRE_STOP_EXTENSION: Duration = Duration::from_secs(2);

/// A [`Fault::pod_termination`] waiting for its time; set its preStop and
/// grace period, finish it with [`PodTermination::at`].
#[derive(Debug, Clone)]
#[must_use = "call .at(time) to get a Fault"]
pub struct PodTermination {
    replica: String,
    timing: PodTiming,
}

impl PodTermination {
    pub(super) fn new(replica: String, endpoint_lag: Duration) -> Self {
        Self {
            replica,
            timing: PodTiming {
                pre_stop: Duration::ZERO,
                endpoint_lag,
                grace: DEFAULT_TERMINATION_GRACE,
            },
        }
    }

    /// How long the pod's `preStop` hook runs before SIGTERM, *simulated*
    /// time (a `sleep` hook, the usual cover for the endpoint lag). The
    /// server keeps serving meanwhile. Default: none, SIGTERM at once.
    pub fn pre_stop(mut self, pre_stop: Duration) -> Self {
        self.timing.pre_stop = pre_stop;
        self
    }

    /// The pod's `terminationGracePeriodSeconds`: from the deletion to
    /// SIGKILL, preStop included, *simulated* time. Default 30 s
    /// ([`DEFAULT_TERMINATION_GRACE`]). A SIGKILL after the end of the run
    /// is an error from [`Sim::run`](crate::Sim::run) (raise
    /// `SimBuilder::duration` or shorten the grace period).
    pub fn termination_grace_period(mut self, grace: Duration) -> Self {
        self.timing.grace = grace;
        self
    }

    /// Deletes the pod at `at`, *simulated* time since the start of the run.
    pub fn at(self, at: Duration) -> Fault {
        Fault(FaultKind::Host(HostFault {
            at,
            action: HostAction::PodTermination(self.replica, self.timing),
        }))
    }
}

impl Fault {
    /// The faults this one is made of, added after it by
    /// [`Sim::fault`](crate::Sim::fault): a pod termination's parts; none
    /// for any other fault.
    pub(crate) fn parts(&self) -> Vec<Fault> {
        match &self.0 {
            FaultKind::Host(HostFault {
                at,
                action: HostAction::PodTermination(replica, timing),
            }) => parts(replica, timing, *at)
                .into_iter()
                .map(|f| Fault(FaultKind::Host(f)))
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl PodTiming {
    /// SIGTERM's time after the deletion and the grace left for the
    /// drain until SIGKILL.
    pub(crate) fn sigterm(&self) -> (Duration, Duration) {
        if self.pre_stop < self.grace {
            (self.pre_stop, self.grace - self.pre_stop)
        } else {
            (self.grace, PRE_STOP_EXTENSION)
        }
    }
}

/// The faults a pod termination at `at` is made of, after its own marker:
/// the replica leaves its set once the endpoint lag has passed, and its
/// graceful shutdown starts at SIGTERM with the grace left until SIGKILL.
fn parts(replica: &str, timing: &PodTiming, at: Duration) -> [HostFault; 2] {
    let (sigterm, grace) = timing.sigterm();
    [
        HostFault {
            at: at.saturating_add(timing.endpoint_lag),
            action: HostAction::Leave(replica.to_owned()),
        },
        HostFault {
            at: at.saturating_add(sigterm),
            action: HostAction::Shutdown(replica.to_owned(), Some(grace)),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(pre_stop: u64, grace: u64) -> PodTiming {
        PodTiming {
            pre_stop: Duration::from_secs(pre_stop),
            endpoint_lag: Duration::from_secs(2),
            grace: Duration::from_secs(grace),
        }
    }

    #[test]
    fn sigterm_follows_the_pre_stop_and_sigkill_the_grace_period() {
        let s = Duration::from_secs;
        assert_eq!(timing(0, 30).sigterm(), (s(0), s(30)));
        assert_eq!(timing(5, 30).sigterm(), (s(5), s(25)));
        // A preStop that outlasts the grace period: SIGTERM at its end,
        // SIGKILL after the kubelet's 2 s extension.
        assert_eq!(timing(30, 30).sigterm(), (s(30), s(2)));
        assert_eq!(timing(40, 30).sigterm(), (s(30), s(2)));
    }

    #[test]
    fn parts_are_the_leave_after_the_lag_and_the_shutdown_at_sigterm() {
        let at = Duration::from_secs(10);
        let [leave, shutdown] = parts("store-1", &timing(5, 30), at);
        assert_eq!(leave.at, Duration::from_secs(12));
        assert!(matches!(leave.action, HostAction::Leave(ref h) if h == "store-1"));
        assert_eq!(shutdown.at, Duration::from_secs(15));
        assert!(matches!(
            shutdown.action,
            HostAction::Shutdown(ref h, Some(g)) if h == "store-1" && g == Duration::from_secs(25)
        ));
    }
}
