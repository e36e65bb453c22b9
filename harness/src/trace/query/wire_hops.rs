//! Hops the harness did not record on the client side (a call through
//! [`Host::tonic_channel`](crate::Host::tonic_channel) or a channel of the
//! user's own): the request HEADERS the wire tap saw leave the caller stand
//! in for the call in [`Trace::assert_deadline_propagated`].

use std::time::Duration;

use super::{HandlerRun, Trace};
use crate::recorder::event::{EventKind, Fate, FrameDetail};

impl Trace {
    /// For each of `runs` (handler runs on `to` called from `from`, in the
    /// order they started), when the request that started it left the
    /// caller (*simulated* time): the latest request HEADERS for its path
    /// that `from` wrote to `to`, no later than the run started, and not
    /// already taken by an earlier run. `None` where the tap saw none (it
    /// was off, or the frame was dropped).
    pub(in crate::trace) fn wire_requests(
        &self,
        from: &str,
        to: &str,
        runs: &[&HandlerRun],
    ) -> Vec<Option<Duration>> {
        let mut sent = self.requests_written(from, to);
        runs.iter()
            .map(|run| {
                let i = sent
                    .iter()
                    .rposition(|(path, at)| *path == run.path && *at <= run.started)?;
                Some(sent.remove(i).1)
            })
            .collect()
    }

    /// Every request HEADERS `from` wrote to `to` that the network did not
    /// lose: its path and when it was written, in the order written.
    fn requests_written(&self, from: &str, to: &str) -> Vec<(String, Duration)> {
        self.events_on(from)
            .filter_map(|e| match &e.kind {
                EventKind::Frame {
                    to: receiver,
                    detail: FrameDetail::Headers(block),
                    fate,
                    ..
                } if receiver == to
                    && !matches!(
                        **fate,
                        Fate::Dropped | Fate::Lost | Fate::LostBehind | Fate::Swallowed
                    ) =>
                {
                    block
                        .request_path()
                        .filter(|path| path.starts_with('/'))
                        .map(|path| (path.to_owned(), e.at()))
                }
                _ => None,
            })
            .collect()
    }

    /// The handler run on `host` that was running at `at`: `Ok(None)` if
    /// none was (the host is a client, or made the call outside any
    /// handler), `Err(n)` if `n` were, so the tap cannot tell which one
    /// made the call.
    pub(in crate::trace) fn run_active_on(
        &self,
        host: &str,
        at: Duration,
    ) -> Result<Option<&HandlerRun>, usize> {
        let active: Vec<&HandlerRun> = self
            .runs
            .iter()
            .filter(|r| r.host == host && r.active_at(at))
            .collect();
        match active.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            many => Err(many.len()),
        }
    }
}
