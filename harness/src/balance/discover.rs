//! Service discovery for one balanced channel: the replica set's
//! membership ([`crate::sim`]'s `Replicas`) as a stream of
//! `tower::discover::Change`s, as tonic's `DynamicServiceStream`
//! (`transport/channel/service/discover.rs`) turns `Change::Insert` of an
//! endpoint into a new lazy connection and `Change::Remove` into an
//! eviction. The balancer polls it from its `poll_ready`, so a change is
//! seen when the balancer next routes a call. With DNS the changes come
//! from the channel's resolver (`resolver.rs`) instead of the membership.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::Stream;
use tower::discover::Change;

use super::replica::Replica;
use super::Site;
use crate::recorder::event::BalancerChange;

/// The discovery stream of one balanced channel. Never ends: like tonic's,
/// an empty set leaves the balancer waiting for a join.
pub(super) struct Discover {
    site: Arc<Site>,
    watcher: u64,
    /// The membership version last seen.
    seen: Option<u64>,
    /// Which replicas this balancer has.
    known: Vec<bool>,
    changes: VecDeque<Change<Arc<str>, Replica>>,
}

impl Discover {
    pub(super) fn new(site: Arc<Site>) -> Self {
        let watcher = site.replicas.watcher();
        Self {
            watcher,
            seen: None,
            known: vec![false; site.set.count],
            site,
            changes: VecDeque::new(),
        }
    }
}

impl Stream for Discover {
    type Item = Result<Change<Arc<str>, Replica>, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(change) = this.changes.pop_front() {
                return Poll::Ready(Some(Ok(change)));
            }
            let change = match &this.site.dns {
                // With DNS, the resolver's answers are the membership; the
                // picks made from here on came from this answer.
                Some(answers) => answers.poll_change(this.seen, cx.waker()).map(|(n, now)| {
                    this.site.applied_answer.store(n, Ordering::Relaxed);
                    now
                }),
                None => this.site.replicas.poll_change(
                    &this.site.set.name,
                    this.seen,
                    this.watcher,
                    cx.waker(),
                ),
            };
            let Some(now) = change else {
                return Poll::Pending;
            };
            // The membership the channel starts with is not news; later
            // changes are recorded as this balancer applies them.
            let news = this.seen.is_some();
            this.seen = Some(now.version);
            for (i, (had, has)) in this.known.iter_mut().zip(&now.present).enumerate() {
                if *had == *has {
                    continue;
                }
                *had = *has;
                let name: Arc<str> = this.site.set.replica(i).into();
                if *has {
                    if news {
                        this.site.record(&name, BalancerChange::Added);
                    }
                    let replica = Replica::new(this.site.clone(), name.clone());
                    this.changes.push_back(Change::Insert(name, replica));
                } else {
                    this.site.record(&name, BalancerChange::Removed);
                    this.changes.push_back(Change::Remove(name));
                }
            }
        }
    }
}
