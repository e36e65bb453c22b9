//! Graceful shutdowns ([`Fault::shutdown`](crate::Fault::shutdown)): each
//! start of a server host gets a shutdown signal and a count of the
//! connections it accepted; the driver fires the signal, and learns whether
//! the host is still draining when its grace ends or the run does.

use std::collections::{BTreeMap, BTreeSet};
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
pub(crate) struct Shutdowns(Mutex<State>);

#[derive(Default)]
struct State {
    /// The running start of each server host.
    running: BTreeMap<String, Incarnation>,
    /// Hosts whose software is down (crashed, not restarted).
    down: BTreeSet<String>,
    /// Shutdowns that began before the host's server started (at 0 ms, or
    /// at the instant of its restart, before the world's next step runs
    /// it): when each began. The server starts draining at once.
    early: BTreeMap<String, Duration>,
}

/// A host still draining: when it started, and how many connections it has
/// open.
pub(crate) struct Draining {
    pub(crate) since: Duration,
    pub(crate) open_conns: u32,
}

impl Shutdowns {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
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
        let mut state = self.lock();
        let early = state.early.remove(host);
        let (signal, rx) = watch::channel(early.is_some());
        let conns = Arc::new(());
        state.running.insert(
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
    /// not started yet, at its start; false when its software is down
    /// (crashed) or its server is already shutting down or has returned.
    pub(crate) fn begin(&self, host: &str, now: Duration) -> bool {
        let mut state = self.lock();
        let State {
            running,
            down,
            early,
        } = &mut *state;
        let Some(inc) = running.get_mut(host) else {
            if down.contains(host) || early.contains_key(host) {
                return false;
            }
            early.insert(host.to_owned(), now);
            return true;
        };
        if inc.draining_since.is_some() || inc.returned || inc.signal.send(true).is_err() {
            return false;
        }
        inc.draining_since = Some(now);
        true
    }

    /// `host`'s serve future returned: when its shutdown started, if one
    /// did (else the server stopped by itself).
    pub(crate) fn returned(&self, host: &str) -> Option<Duration> {
        let mut state = self.lock();
        let inc = state.running.get_mut(host)?;
        inc.returned = true;
        inc.draining_since
    }

    /// `host`'s software crashed: nothing of it drains, and a shutdown
    /// before its restart finds nothing to stop.
    pub(crate) fn crashed(&self, host: &str) {
        let mut state = self.lock();
        state.running.remove(host);
        state.early.remove(host);
        state.down.insert(host.to_owned());
    }

    /// `host`'s software restarts: what ran before drains no more; its
    /// server starts at the world's next step.
    pub(crate) fn restarted(&self, host: &str) {
        let mut state = self.lock();
        state.running.remove(host);
        state.early.remove(host);
        state.down.remove(host);
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
            .running
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

/// Completes when the shutdown `rx` belongs to starts.
pub(crate) async fn signal(mut rx: watch::Receiver<bool>) {
    // A sender dropped without a shutdown (the host restarted) never means
    // "shut down".
    if rx.wait_for(|down| *down).await.is_err() {
        std::future::pending::<()>().await;
    }
}
