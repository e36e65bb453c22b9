//! Handler polls that held their thread too long, timed on the *wall*
//! clock: a handler that blocks (`std::thread::sleep`, a blocking lock,
//! heavy CPU) takes no simulated time, so its calls "succeed" and the
//! event log cannot show it. Kept apart from the event log, because wall
//! time differs from run to run: never in a render or an export (those
//! stay byte-identical for a seed), only in
//! [`Trace::slow_polls`](crate::Trace::slow_polls) and in the warnings the
//! run prints on stderr at its end.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::event::{HostName, RunId};

/// What of a handler a [`SlowPoll`] polled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Polled {
    /// Its future (the server's own layers, tonic's decoding and the
    /// handler up to its response).
    Handler,
    /// Its response body (a streaming handler's stream of messages).
    Body,
}

/// One poll of a handler's future or response body that held its thread
/// for longer than the run's threshold
/// ([`SimBuilder::slow_poll_threshold`](crate::SimBuilder::slow_poll_threshold)).
/// Polls of tasks the handler spawns are not timed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SlowPoll {
    /// The server host.
    pub host: HostName,
    /// The handler run (`h3` in the trace).
    pub run: RunId,
    /// The method path.
    pub path: String,
    /// What was polled.
    pub polled: Polled,
    /// How long the poll held the thread, *wall* time. Not reproducible:
    /// it depends on the machine and its load.
    pub wall: Duration,
    /// When, *simulated* time since the start of the run (simulated time
    /// stands still during a poll).
    pub at: Duration,
}

/// The run's threshold and the slow polls found so far.
#[derive(Debug, Default)]
pub(crate) struct SlowPolls {
    /// `None`: polls are not timed.
    threshold: Option<Duration>,
    found: Mutex<Vec<SlowPoll>>,
}

impl SlowPolls {
    pub(crate) fn new(threshold: Option<Duration>) -> Self {
        Self {
            threshold,
            found: Mutex::default(),
        }
    }

    /// Runs `poll` and, when it held the thread for longer than the
    /// threshold, passes the wall time it took to `slow`. Reads the wall
    /// clock only when polls are timed.
    pub(crate) fn time<T>(&self, poll: impl FnOnce() -> T, slow: impl FnOnce(Duration)) -> T {
        let Some(threshold) = self.threshold else {
            return poll();
        };
        // The wall clock, on purpose: a blocked thread takes no simulated
        // time. The figure goes only to `Trace::slow_polls` and stderr,
        // never into an event, so traces stay the same for a seed.
        let start = Instant::now();
        let out = poll();
        let wall = start.elapsed();
        if wall > threshold {
            slow(wall);
        }
        out
    }

    pub(crate) fn note(&self, poll: SlowPoll) {
        self.found
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(poll);
    }

    /// The slow polls, in the order they ended.
    pub(crate) fn take(&self) -> Vec<SlowPoll> {
        std::mem::take(&mut *self.found.lock().unwrap_or_else(|p| p.into_inner()))
    }
}
