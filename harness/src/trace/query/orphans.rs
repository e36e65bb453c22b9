//! Orphan work: handler runs that went on after their callers gave up,
//! found from the calls and runs (the assertion on it, with its words, is
//! `assert_no_orphan_work` in the trace's front).

use std::time::Duration;

use super::{HandlerRun, RunEnd, Trace};

/// Work a handler did after its caller had given up.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Orphan {
    /// The handler run.
    pub run: HandlerRun,
    /// When the work stopped mattering: the earliest of its own deadline,
    /// its caller's deadline or give-up, and the same for every call up the
    /// chain (*simulated* time since the start of the run).
    pub abandoned_at: Duration,
    /// How long it kept going after that (to its finish, or to the end of
    /// the run if it never finished).
    pub ran_on: Duration,
}

/// How long after its caller gave up a handler may still finish, or still
/// be running at the end of the run, without counting as orphan work
/// (*simulated* time). Cancellation takes a network hop or two to arrive: a
/// handler that finishes a millisecond after its caller's deadline, or one
/// abandoned just before the run ended whose RST_STREAM is still in
/// flight, is propagation at work, and calling it an orphan would be
/// wrong or a guess.
pub const ORPHAN_GRACE: Duration = Duration::from_millis(50);

impl Trace {
    /// Every handler run that finished, or was still running at the end of
    /// the run, more than [`ORPHAN_GRACE`] after the work stopped
    /// mattering; see [`Orphan`]. The longest-running first (by
    /// [`Orphan::ran_on`]; ties in run order). Runs that were dropped
    /// (cancelled) are not orphans.
    pub fn orphans(&self) -> Vec<Orphan> {
        let end_of_run = self.ended;
        let mut orphans = self
            .runs
            .iter()
            .filter(|r| matches!(r.end, RunEnd::Finished { .. } | RunEnd::Running))
            .filter_map(|r| {
                let abandoned_at = self.abandoned_at(r, 0)?;
                let finished = r.ended_at.unwrap_or(end_of_run);
                (finished > abandoned_at + ORPHAN_GRACE).then(|| Orphan {
                    run: r.clone(),
                    abandoned_at,
                    ran_on: finished - abandoned_at,
                })
            })
            .collect::<Vec<_>>();
        // Stable: equal ones stay in run order.
        orphans.sort_by_key(|o| std::cmp::Reverse(o.ran_on));
        orphans
    }

    /// When the work of `run` stopped mattering, following the call chain
    /// upwards (bounded, in case of a malformed chain).
    pub(crate) fn abandoned_at(&self, run: &HandlerRun, depth: usize) -> Option<Duration> {
        let mut times = vec![run.deadline()];
        if let Some(call) = run.call.and_then(|c| self.call(c)) {
            times.push(call.deadline());
            times.push(call.gave_up_at());
            if depth < 16 {
                if let Some(parent) = call.parent.and_then(|p| self.run(p)) {
                    times.push(self.abandoned_at(parent, depth + 1));
                }
            }
        }
        times.into_iter().flatten().min()
    }
}
