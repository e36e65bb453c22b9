//! The state of the links between hosts that the harness emulates itself,
//! on top of turmoil's: TCP-like partitions and paused hosts, whose bytes
//! wait at their sender (as in TCP's retransmission queue) and leave, in
//! order, when the link is repaired or the host resumes; and turmoil's own
//! black holes, whose bytes are lost, which the wire tap must know about
//! to say so in the trace.
//!
//! The driver changes the table between simulation steps
//! ([`Links::partition`], [`Links::repair`], [`Links::pause`],
//! [`Links::resume`]); the writer tasks and the connector ask it, for the
//! two hosts of a connection, whether their bytes may leave
//! ([`Links::state`]). A run without any such fault never locks it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::futures::{Notified, OwnedNotified};
use tokio::sync::Notify;

/// How long a connect to an unreachable host waits when neither the
/// partition's [`reset_after`](crate::fault::PartitionBuilder::reset_after)
/// nor the caller's connect timeout ends it first: Linux gives up after
/// `tcp_syn_retries` = 6 retransmissions of the SYN, 1 + 2 + 4 + 8 + 16 +
/// 32 + 64 = 127 s (`Documentation/networking/ip-sysctl.rst`; read, not
/// measured). *Simulated* time.
pub(crate) const SYN_GIVE_UP: Duration = Duration::from_secs(127);

/// What the link between two hosts does with bytes right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkState {
    /// Bytes leave as written.
    Open,
    /// Bytes wait at their sender until the link is repaired
    /// ([`Fault::partition`](crate::Fault::partition)); after
    /// `reset_after` (if set) of waiting, the connection is reset.
    Partitioned {
        /// The partition's limit, *simulated* time.
        reset_after: Option<Duration>,
    },
    /// Bytes wait at their sender until the paused host resumes
    /// ([`Fault::pause`](crate::Fault::pause)); no reset.
    Paused,
    /// Bytes sent now are lost (turmoil's partition,
    /// [`Fault::black_hole`](crate::Fault::black_hole)).
    BlackHole,
}

impl LinkState {
    /// Whether bytes written now wait at their sender.
    pub(crate) fn holds(self) -> bool {
        matches!(self, Self::Partitioned { .. } | Self::Paused)
    }
}

/// A TCP-like partition between two hosts.
#[derive(Debug, Clone)]
struct Cut {
    a: Arc<str>,
    b: Arc<str>,
    reset_after: Option<Duration>,
}

impl Cut {
    fn joins(&self, x: &str, y: &str) -> bool {
        (*self.a == *x && *self.b == *y) || (*self.a == *y && *self.b == *x)
    }
}

#[derive(Debug, Default)]
struct Table {
    partitions: Vec<Cut>,
    black_holes: Vec<(Arc<str>, Arc<str>)>,
    paused: Vec<Arc<str>>,
}

/// The links table of one run.
#[derive(Debug, Default)]
pub(crate) struct Links {
    /// Whether the run has any partition, black hole or pause fault.
    active: bool,
    table: Mutex<Table>,
    /// Wakes writer tasks and connects waiting on a link when one opens.
    opened: Arc<Notify>,
}

impl Links {
    /// The table of a run; `active` says whether any fault of the run
    /// changes it (otherwise every query answers [`LinkState::Open`] at
    /// once).
    pub(crate) fn new(active: bool) -> Self {
        Self {
            active,
            ..Self::default()
        }
    }

    /// Whether any fault of the run changes a link: the wire tap then
    /// checks each frame, and connections go through the writer task even
    /// with the tap off.
    pub(crate) fn active(&self) -> bool {
        self.active
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the link between `from` and `to` does with bytes now. A pause
    /// wins over a partition (no reset while a host is paused: its kernel
    /// still acknowledges what arrives); a black hole wins over both.
    pub(crate) fn state(&self, from: &str, to: &str) -> LinkState {
        if !self.active {
            return LinkState::Open;
        }
        let t = self.table();
        if t.black_holes
            .iter()
            .any(|(a, b)| (**a == *from && **b == *to) || (**a == *to && **b == *from))
        {
            return LinkState::BlackHole;
        }
        if t.paused.iter().any(|h| **h == *from || **h == *to) {
            return LinkState::Paused;
        }
        match t.partitions.iter().find(|c| c.joins(from, to)) {
            Some(c) => LinkState::Partitioned {
                reset_after: c.reset_after,
            },
            None => LinkState::Open,
        }
    }

    /// Resolves when a link opens (a repair or a resume). Create it before
    /// checking [`Links::state`]: an opening in between still wakes it.
    pub(crate) fn next_opening(&self) -> Notified<'_> {
        self.opened.notified()
    }

    /// [`Links::next_opening`] that a poll fn can keep (a TLS handshake's
    /// writes, `tls/writev.rs`).
    pub(crate) fn next_opening_owned(&self) -> OwnedNotified {
        self.opened.clone().notified_owned()
    }

    /// A TCP-like partition between `a` and `b` starts.
    pub(crate) fn partition(&self, a: &str, b: &str, reset_after: Option<Duration>) {
        let mut t = self.table();
        t.partitions.retain(|c| !c.joins(a, b));
        t.partitions.push(Cut {
            a: a.into(),
            b: b.into(),
            reset_after,
        });
    }

    /// turmoil's partition between `a` and `b` starts.
    pub(crate) fn black_hole(&self, a: &str, b: &str) {
        self.table().black_holes.push((a.into(), b.into()));
    }

    /// Ends the partition and the black hole between `a` and `b`, if any;
    /// returns whether a black hole ended and whether a TCP-like partition
    /// did.
    pub(crate) fn repair(&self, a: &str, b: &str) -> (bool, bool) {
        let mut t = self.table();
        let holes = t.black_holes.len();
        t.black_holes
            .retain(|(x, y)| !((**x == *a && **y == *b) || (**x == *b && **y == *a)));
        let parts = t.partitions.len();
        t.partitions.retain(|c| !c.joins(a, b));
        let ended = (t.black_holes.len() != holes, t.partitions.len() != parts);
        drop(t);
        self.opened.notify_waiters();
        ended
    }

    /// Host `host` is paused.
    pub(crate) fn pause(&self, host: &str) {
        self.table().paused.push(host.into());
    }

    /// Host `host` resumes.
    pub(crate) fn resume(&self, host: &str) {
        self.table().paused.retain(|h| **h != *host);
        self.opened.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inactive_table_is_always_open() {
        let links = Links::new(false);
        links.partition("a", "b", None);
        assert_eq!(links.state("a", "b"), LinkState::Open);
    }

    #[test]
    fn partitions_pauses_and_black_holes_combine() {
        let links = Links::new(true);
        let limit = Some(Duration::from_secs(3));
        links.partition("a", "b", limit);
        assert_eq!(
            links.state("b", "a"),
            LinkState::Partitioned { reset_after: limit }
        );
        assert_eq!(links.state("a", "c"), LinkState::Open);
        links.pause("b");
        assert_eq!(links.state("a", "b"), LinkState::Paused, "a pause wins");
        assert_eq!(links.state("c", "b"), LinkState::Paused);
        links.resume("b");
        assert_eq!(links.state("c", "b"), LinkState::Open);
        links.black_hole("a", "b");
        assert_eq!(links.state("a", "b"), LinkState::BlackHole);
        assert_eq!(links.repair("b", "a"), (true, true));
        assert_eq!(links.state("a", "b"), LinkState::Open);
        assert_eq!(links.repair("a", "b"), (false, false));
    }
}
