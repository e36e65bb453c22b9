//! Graceful shutdowns ([`Fault::shutdown`](crate::Fault::shutdown)): each
//! start of a server host gets a shutdown signal and a count of the
//! connections it accepted; the driver fires the signal, and learns whether
//! the host is still draining when its grace ends or the run does.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::server::Signal;

/// One start of a server host's software.
struct Incarnation {
    signal: watch::Sender<bool>,
    /// One clone per open connection, plus this one.
    conns: Arc<()>,
    /// When its shutdown started.
    draining_since: Option<Duration>,
    /// Whether its serve future returned.
    returned: bool,
}

/// The shutdown state of every server host, keyed by name.
#[derive(Default)]
pub(crate) struct Shutdowns {
    hosts: Mutex<BTreeMap<String, Incarnation>>,
    /// Hosts whose software is down (crashed, not restarted).
    down: Mutex<std::collections::BTreeSet<String>>,
    /// Shutdowns that began before the host's server started (at 0 ms, or
    /// at the instant of its restart, before the world's next step runs
    /// it): when each began. The server starts draining at once.
    early: Mutex<BTreeMap<String, Duration>>,
}

/// What [`Shutdowns::begin`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Begun {
    /// The running server got its signal.
    Now,
    /// The server has not started yet; it gets the signal as it starts.
    AtStart,
    /// The host's software is down (crashed), or its server is already
    /// shutting down or has returned.
    NotRunning,
}

/// A host still draining: when it started, and how many connections it has
/// open.
pub(crate) struct Draining {
    pub(crate) since: Duration,
    pub(crate) open_conns: u32,
}

impl Shutdowns {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Incarnation>> {
        lock(&self.hosts)
    }

    /// A new start of `host`'s server: the signal its serve future waits
    /// on, and the token each accepted connection holds while open.
    pub(crate) fn arm(&self, host: &str) -> (Signal, Arc<()>) {
        let (rx, conns) = self.arm_watch(host);
        (Box::pin(signal(rx)), conns)
    }

    /// [`Shutdowns::arm`], with the signal as a receiver that
    /// [`signal`] turns into as many signals as a serve fn asks for.
    pub(crate) fn arm_watch(&self, host: &str) -> (watch::Receiver<bool>, Arc<()>) {
        let early = lock(&self.early).remove(host);
        let (signal, rx) = watch::channel(early.is_some());
        let conns = Arc::new(());
        self.lock().insert(
            host.to_owned(),
            Incarnation {
                signal,
                conns: conns.clone(),
                draining_since: early,
                returned: false,
            },
        );
        (rx, conns)
    }

    /// Starts `host`'s graceful shutdown at `now`, or, when its server has
    /// not started yet, at its start.
    pub(crate) fn begin(&self, host: &str, now: Duration) -> Begun {
        let mut hosts = self.lock();
        let Some(inc) = hosts.get_mut(host) else {
            if lock(&self.down).contains(host) {
                return Begun::NotRunning;
            }
            return match lock(&self.early).entry(host.to_owned()) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(now);
                    Begun::AtStart
                }
                std::collections::btree_map::Entry::Occupied(_) => Begun::NotRunning,
            };
        };
        if inc.draining_since.is_some() || inc.returned || inc.signal.send(true).is_err() {
            return Begun::NotRunning;
        }
        inc.draining_since = Some(now);
        Begun::Now
    }

    /// `host`'s serve future returned: when its shutdown started, if one
    /// did (else the server stopped by itself).
    pub(crate) fn returned(&self, host: &str) -> Option<Duration> {
        let mut hosts = self.lock();
        let inc = hosts.get_mut(host)?;
        inc.returned = true;
        inc.draining_since
    }

    /// `host`'s software crashed: nothing of it drains, and a shutdown
    /// before its restart finds nothing to stop.
    pub(crate) fn crashed(&self, host: &str) {
        self.lock().remove(host);
        lock(&self.early).remove(host);
        lock(&self.down).insert(host.to_owned());
    }

    /// `host`'s software restarts: what ran before drains no more; its
    /// server starts at the world's next step.
    pub(crate) fn restarted(&self, host: &str) {
        self.lock().remove(host);
        lock(&self.early).remove(host);
        lock(&self.down).remove(host);
    }

    /// Whether `host` is draining a shutdown that started at `since`.
    pub(crate) fn draining(&self, host: &str, since: Duration) -> Option<Draining> {
        self.all_draining()
            .into_iter()
            .find(|(h, d)| h == host && d.since == since)
            .map(|(_, d)| d)
    }

    /// Every host still draining, by name.
    pub(crate) fn all_draining(&self) -> Vec<(String, Draining)> {
        self.lock()
            .iter()
            .filter(|(_, inc)| !inc.returned)
            .filter_map(|(host, inc)| {
                let since = inc.draining_since?;
                let open = Arc::strong_count(&inc.conns).saturating_sub(1);
                Some((
                    host.clone(),
                    Draining {
                        since,
                        open_conns: u32::try_from(open).unwrap_or(u32::MAX),
                    },
                ))
            })
            .collect()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Completes when the shutdown `rx` belongs to starts.
pub(crate) async fn signal(mut rx: watch::Receiver<bool>) {
    // A sender dropped without a shutdown (the host restarted) never means
    // "shut down".
    if rx.wait_for(|down| *down).await.is_err() {
        std::future::pending::<()>().await;
    }
}
