//! Replica sets ([`Sim::servers`](crate::Sim::servers)): which server hosts
//! stand behind one name, and which of them are members of the set right
//! now. Membership is what service discovery would say (a DNS answer, an
//! endpoints list); [`Fault::leave`](crate::Fault::leave) and
//! [`Fault::join`](crate::Fault::join) change it during a run, and every
//! balanced channel to the set sees the change the next time its balancer
//! polls for one (`balance/discover.rs`).

use std::sync::{Arc, Mutex};
use std::task::Waker;

/// A set of server hosts `<name>-0 … <name>-<count-1>` serving the same
/// setup closure.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaSet {
    pub(crate) name: String,
    pub(crate) count: usize,
}

impl ReplicaSet {
    /// The host name of replica `index`: `store-0`.
    pub(crate) fn replica(&self, index: usize) -> String {
        format!("{}-{index}", self.name)
    }

    /// Every replica's host name, in index order.
    pub(crate) fn replicas(&self) -> Vec<String> {
        (0..self.count).map(|i| self.replica(i)).collect()
    }

    /// The index of replica host `host` in this set, if it is one.
    pub(crate) fn index_of(&self, host: &str) -> Option<usize> {
        let index = host.strip_prefix(&self.name)?.strip_prefix('-')?;
        // `store-01` is not `store-1`: compare the canonical spelling.
        let n: usize = index.parse().ok()?;
        (n < self.count && self.replica(n) == host).then_some(n)
    }
}

/// One set's membership while the run goes on.
struct Members {
    set: ReplicaSet,
    /// `present[i]`: replica `i` is a member now.
    present: Vec<bool>,
    /// Bumped on every change, so a watcher knows it has seen the latest.
    version: u64,
    /// Discovery streams waiting for a change, by stream id.
    waiting: Vec<(u64, Waker)>,
    /// The DNS gives no answer for the set's name
    /// ([`Fault::dns_outage`](crate::Fault::dns_outage)).
    dns_out: bool,
}

/// Every replica set of a run and its current members. Changed by the
/// driver between steps (leave/join faults), read by the discovery streams
/// of balanced channels inside hosts.
#[derive(Default)]
pub(crate) struct Replicas {
    sets: Vec<Arc<Mutex<Members>>>,
    next_watcher: std::sync::atomic::AtomicU64,
}

/// A set's membership as one watcher last saw it.
pub(crate) struct Snapshot {
    pub(crate) version: u64,
    pub(crate) present: Vec<bool>,
}

impl Replicas {
    /// The sets of a run, every replica a member at the start.
    pub(crate) fn new(sets: &[ReplicaSet]) -> Self {
        let sets = sets
            .iter()
            .map(|set| {
                Arc::new(Mutex::new(Members {
                    set: set.clone(),
                    present: vec![true; set.count],
                    version: 0,
                    waiting: Vec::new(),
                    dns_out: false,
                }))
            })
            .collect();
        Self {
            sets,
            next_watcher: Default::default(),
        }
    }

    fn find(&self, pred: impl Fn(&ReplicaSet) -> bool) -> Option<&Arc<Mutex<Members>>> {
        self.sets.iter().find(|m| pred(&lock(m).set))
    }

    /// The set named `name`.
    pub(crate) fn set(&self, name: &str) -> Option<ReplicaSet> {
        self.find(|s| s.name == name).map(|m| lock(m).set.clone())
    }

    /// Every set's name, in the order they were added.
    pub(crate) fn names(&self) -> Vec<String> {
        self.sets.iter().map(|m| lock(m).set.name.clone()).collect()
    }

    /// The set replica host `host` belongs to, if any.
    pub(crate) fn set_of(&self, host: &str) -> Option<ReplicaSet> {
        self.find(|s| s.index_of(host).is_some())
            .map(|m| lock(m).set.clone())
    }

    /// Makes replica host `host` a member (`true`) or not (`false`), and
    /// wakes every balanced channel watching its set. Returns false when
    /// nothing changed (validation rules that out for faults).
    pub(crate) fn set_member(&self, host: &str, member: bool) -> bool {
        let Some(m) = self.find(|s| s.index_of(host).is_some()) else {
            return false;
        };
        let mut m = lock(m);
        let Some(i) = m.set.index_of(host) else {
            return false;
        };
        if m.present[i] == member {
            return false;
        }
        m.present[i] = member;
        m.version += 1;
        for (_, waker) in m.waiting.drain(..) {
            waker.wake();
        }
        true
    }

    /// Which replicas of `set` are members now (`present[i]`), if it is a
    /// set.
    pub(crate) fn members(&self, set: &str) -> Option<Vec<bool>> {
        self.find(|s| s.name == set)
            .map(|m| lock(m).present.clone())
    }

    /// Starts (`true`) or ends (`false`) a DNS outage of `set`'s name.
    /// Returns false when nothing changed (validation rules that out).
    /// Resolvers read it at their next resolution; nothing is woken.
    pub(crate) fn set_dns_out(&self, set: &str, out: bool) -> bool {
        let Some(m) = self.find(|s| s.name == set) else {
            return false;
        };
        let mut m = lock(m);
        std::mem::replace(&mut m.dns_out, out) != out
    }

    /// Whether the DNS gives no answer for `set`'s name now.
    pub(crate) fn dns_out(&self, set: &str) -> bool {
        self.find(|s| s.name == set)
            .is_some_and(|m| lock(m).dns_out)
    }

    /// A new watcher id for [`Replicas::poll_change`].
    pub(crate) fn watcher(&self) -> u64 {
        self.next_watcher
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The membership of `set` now, if it changed since `seen` (or if
    /// `seen` is `None`); otherwise `None`, and `waker` is woken at the
    /// next change.
    pub(crate) fn poll_change(
        &self,
        set: &str,
        seen: Option<u64>,
        watcher: u64,
        waker: &Waker,
    ) -> Option<Snapshot> {
        let m = self.find(|s| s.name == set)?;
        let mut m = lock(m);
        if seen != Some(m.version) {
            return Some(Snapshot {
                version: m.version,
                present: m.present.clone(),
            });
        }
        match m.waiting.iter_mut().find(|(id, _)| *id == watcher) {
            Some((_, w)) => w.clone_from(waker),
            None => m.waiting.push((watcher, waker.clone())),
        }
        None
    }
}

fn lock(m: &Mutex<Members>) -> std::sync::MutexGuard<'_, Members> {
    // A panic while holding the lock leaves a usable state.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> ReplicaSet {
        ReplicaSet {
            name: "store".into(),
            count: 3,
        }
    }

    #[test]
    fn replica_names_round_trip_and_near_misses_are_not_replicas() {
        let set = store();
        assert_eq!(set.replicas(), ["store-0", "store-1", "store-2"]);
        assert_eq!(set.index_of("store-2"), Some(2));
        for not_one in ["store", "store-3", "store-01", "store-", "store1", "stor-1"] {
            assert_eq!(set.index_of(not_one), None, "{not_one}");
        }
    }

    #[test]
    fn a_change_wakes_the_watcher_and_a_repeat_changes_nothing() {
        let replicas = Replicas::new(&[store()]);
        let watcher = replicas.watcher();
        let waker = futures_util::task::noop_waker();
        let first = replicas
            .poll_change("store", None, watcher, &waker)
            .expect("first poll sees the start");
        assert_eq!(first.present, [true, true, true]);
        assert!(replicas
            .poll_change("store", Some(first.version), watcher, &waker)
            .is_none());
        assert!(replicas.set_member("store-1", false));
        assert!(!replicas.set_member("store-1", false), "already out");
        let next = replicas
            .poll_change("store", Some(first.version), watcher, &waker)
            .expect("changed");
        assert_eq!(next.present, [true, false, true]);
        assert!(!replicas.set_member("gateway", true), "not a replica");
    }
}
