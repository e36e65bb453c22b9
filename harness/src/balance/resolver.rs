//! DNS name resolution for one balanced channel ([`Dns`]): a task on the
//! caller's runtime resolves the set's name every `refresh` and hands each
//! new address list to the channel's discovery stream (`discover.rs`), as
//! a tonic user's resolver task feeds `Channel::balance_channel`. The DNS
//! it asks answers with the set's membership as of its cached answer
//! (`ttl`), or not at all during a [`Fault::dns_outage`](crate::Fault::dns_outage).

use std::sync::{Arc, Mutex, Weak};
use std::task::Waker;
use std::time::Duration;

use super::config::Dns;
use super::replicas::Snapshot;
use super::Site;
use crate::recorder::event::{EventKind, HostName, Resolution, ResolutionOutcome};

/// The address lists a channel's resolver got, for its discovery stream.
#[derive(Default)]
pub(super) struct Answers {
    state: Mutex<Published>,
}

#[derive(Default)]
struct Published {
    /// Bumped on every new address list.
    version: u64,
    /// The latest list, with its answer number; `None` before the first.
    latest: Option<(u32, Vec<bool>)>,
    waker: Option<Waker>,
}

impl Answers {
    fn lock(&self) -> std::sync::MutexGuard<'_, Published> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn publish(&self, answer: u32, present: Vec<bool>) {
        let mut state = self.lock();
        state.version += 1;
        state.latest = Some((answer, present));
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    /// The latest list and its answer number, if it is newer than `seen`;
    /// otherwise `None`, and `waker` is woken at the next one.
    pub(super) fn poll_change(&self, seen: Option<u64>, waker: &Waker) -> Option<(u32, Snapshot)> {
        let mut state = self.lock();
        if let Some((answer, present)) = &state.latest {
            if seen != Some(state.version) {
                let snapshot = Snapshot {
                    version: state.version,
                    present: present.clone(),
                };
                return Some((*answer, snapshot));
            }
        }
        state.waker = Some(waker.clone());
        None
    }
}

/// A channel's resolver between resolutions: the DNS's cached answer as
/// this channel meets it, and what the trace was last told.
struct Resolver {
    dns: Dns,
    /// The DNS's cached answer: when it was made, and its list.
    cache: Option<(Duration, Vec<bool>)>,
    /// The last list handed to the channel, and its number.
    listed: Option<(u32, Vec<bool>)>,
    /// The stale and missing replicas last recorded with that list.
    told: (Vec<usize>, Vec<usize>),
}

/// What one resolution did.
#[derive(Debug, PartialEq)]
struct Resolved {
    /// The event to record, if it says something new.
    record: Option<ResolutionOutcome>,
    /// A new list for the channel, with its number.
    publish: Option<(u32, Vec<bool>)>,
}

impl Resolver {
    fn new(dns: Dns) -> Self {
        Self {
            dns,
            cache: None,
            listed: None,
            told: (Vec::new(), Vec::new()),
        }
    }

    /// One resolution at `now`: `out` while the DNS fails, `members` the
    /// set's membership now; `names` the replicas' host names.
    fn resolve(
        &mut self,
        now: Duration,
        out: bool,
        members: &[bool],
        names: &[String],
    ) -> Resolved {
        if out {
            let record = ResolutionOutcome::Failed {
                kept: self.listed.as_ref().map(|(n, _)| *n),
                retry_in: self.dns.refresh,
            };
            return Resolved {
                record: Some(record),
                publish: None,
            };
        }
        let fresh = match &self.cache {
            Some((made, _)) => now.saturating_sub(*made) >= self.dns.ttl,
            None => true,
        };
        if fresh {
            self.cache = Some((now, members.to_vec()));
        }
        let (made, list) = self.cache.clone().expect("filled above");
        let mut publish = None;
        if self.listed.as_ref().is_none_or(|(_, l)| *l != list) {
            let number = self.listed.as_ref().map_or(1, |(n, _)| n + 1);
            self.listed = Some((number, list.clone()));
            publish = Some((number, list.clone()));
        }
        let stale: Vec<usize> = indices(&list, members, |listed, member| listed && !member);
        let missing: Vec<usize> = indices(&list, members, |listed, member| !listed && member);
        let told = (stale, missing);
        if publish.is_none() && told == self.told {
            return Resolved {
                record: None,
                publish,
            };
        }
        let hosts = |is: &[usize]| is.iter().map(|i| HostName::new(&names[*i])).collect();
        let all: Vec<usize> = (0..list.len()).filter(|i| list[*i]).collect();
        let record = ResolutionOutcome::Answered {
            answer: self.listed.as_ref().map_or(1, |(n, _)| *n),
            addresses: hosts(&all),
            age: now.saturating_sub(made),
            stale: hosts(&told.0),
            missing: hosts(&told.1),
        };
        self.told = told;
        Resolved {
            record: Some(record),
            publish,
        }
    }
}

fn indices(list: &[bool], members: &[bool], pick: impl Fn(bool, bool) -> bool) -> Vec<usize> {
    (0..list.len().min(members.len()))
        .filter(|i| pick(list[*i], members[*i]))
        .collect()
}

/// The resolver task of one channel: resolves at once, then every
/// `refresh`, for as long as the channel lives.
pub(super) async fn run(site: Weak<Site>, dns: Dns, answers: Arc<Answers>) {
    let start = tokio::time::Instant::now();
    let mut resolver = Resolver::new(dns);
    let mut next = start;
    loop {
        let Some(site) = site.upgrade() else { return };
        let set = &site.set;
        let members = site
            .replicas
            .members(&set.name)
            .unwrap_or_else(|| vec![false; set.count]);
        let out = site.replicas.dns_out(&set.name);
        // The run's clock, not this task's start: the cache's age reads
        // the same in every channel.
        let now = site.wiring.tap.recorder.now();
        let resolved = resolver.resolve(now, out, &members, &set.replicas());
        if let Some(outcome) = resolved.record {
            let event = Resolution {
                set: set.name.clone(),
                outcome,
            };
            site.wiring
                .tap
                .recorder
                .push(&site.from, EventKind::Resolution(Box::new(event)));
        }
        if let Some((number, list)) = resolved.publish {
            answers.publish(number, list);
        }
        drop(site);
        next += dns.refresh;
        tokio::time::sleep_until(next).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        (0..3).map(|i| format!("store-{i}")).collect()
    }

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    fn answered(r: &Resolved) -> (u32, usize, Duration, usize, usize) {
        match &r.record {
            Some(ResolutionOutcome::Answered {
                answer,
                addresses,
                age,
                stale,
                missing,
            }) => (*answer, addresses.len(), *age, stale.len(), missing.len()),
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn the_channel_sees_each_published_list_once_and_is_woken_for_the_next() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::task::Wake;

        struct Count(AtomicUsize);
        impl Wake for Count {
            fn wake(self: Arc<Self>) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(count.clone());
        let answers = Answers::default();
        assert!(answers.poll_change(None, &waker).is_none(), "no answer yet");
        answers.publish(1, vec![true, true]);
        assert_eq!(count.0.load(Ordering::Relaxed), 1, "woken by the first");
        let (n, first) = answers.poll_change(None, &waker).expect("the first");
        assert_eq!((n, first.present), (1, vec![true, true]));
        assert!(
            answers.poll_change(Some(first.version), &waker).is_none(),
            "seen"
        );
        answers.publish(2, vec![true, false]);
        assert_eq!(count.0.load(Ordering::Relaxed), 2, "woken by the second");
        let (n, second) = answers
            .poll_change(Some(first.version), &waker)
            .expect("a newer list");
        assert_eq!((n, second.present), (2, vec![true, false]));
        assert!(second.version > first.version);
    }

    #[test]
    fn without_a_cache_every_change_is_a_new_answer_at_the_next_resolution() {
        let mut r = Resolver::new(Dns::new().refresh(s(5)));
        let all = [true, true, true];
        let first = r.resolve(s(0), false, &all, &names());
        assert_eq!(answered(&first), (1, 3, s(0), 0, 0));
        assert_eq!(first.publish, Some((1, all.to_vec())));
        let same = r.resolve(s(5), false, &all, &names());
        assert_eq!(
            same,
            Resolved {
                record: None,
                publish: None
            },
            "nothing new, nothing recorded"
        );
        let left = [true, true, false];
        let next = r.resolve(s(10), false, &left, &names());
        assert_eq!(answered(&next), (2, 2, s(0), 0, 0));
        assert_eq!(next.publish, Some((2, left.to_vec())));
    }

    #[test]
    fn a_cached_answer_names_a_drained_replica_until_its_ttl_runs_out() {
        let mut r = Resolver::new(Dns::new().refresh(s(5)).ttl(s(30)));
        let all = [true, true, true];
        let left = [true, true, false];
        r.resolve(s(0), false, &all, &names());
        // store-2 left at 7 s: the answer made at 0 s still lists it.
        let stale = r.resolve(s(10), false, &left, &names());
        assert_eq!(
            answered(&stale),
            (1, 3, s(10), 1, 0),
            "stale, recorded once"
        );
        assert_eq!(stale.publish, None, "the channel keeps the list it has");
        let again = r.resolve(s(15), false, &left, &names());
        assert_eq!(again.record, None, "the same staleness is not news");
        let fresh = r.resolve(s(30), false, &left, &names());
        assert_eq!(answered(&fresh), (2, 2, s(0), 0, 0));
        // A join shows as missing from the cached answer.
        let back = r.resolve(s(35), false, &all, &names());
        assert_eq!(answered(&back), (2, 2, s(5), 0, 1));
    }

    #[test]
    fn an_outage_keeps_the_last_answer_and_says_so_each_time() {
        let mut r = Resolver::new(Dns::new().refresh(s(5)));
        let all = [true, true, true];
        let none = r.resolve(s(0), true, &all, &names());
        let failed = |kept| ResolutionOutcome::Failed {
            kept,
            retry_in: s(5),
        };
        assert_eq!(none.record, Some(failed(None)), "no answer yet");
        r.resolve(s(5), false, &all, &names());
        let kept = r.resolve(s(10), true, &[true, false, true], &names());
        assert_eq!(kept.record, Some(failed(Some(1))));
        assert_eq!(kept.publish, None);
    }
}
