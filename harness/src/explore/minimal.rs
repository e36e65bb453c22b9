//! A failure the explorer reports first for its invariant: shrunk to a
//! minimal schedule ([`super::shrink`]) and its run's trace written.

use std::time::Duration;

use super::report::{Failure, Mode, Report, Shrunk};
use super::Scenario;
use super::{instants, shrink, Baseline, Checked, Explorer};
use crate::Trace;

impl<S: Scenario> Explorer<S> {
    /// The minimal schedule that still breaks `failure`'s invariant (when
    /// shrinking is on) and the trace of its run.
    pub(super) fn minimal(
        &self,
        failure: &Failure,
        trace: Option<&Trace>,
        base: &Baseline,
        mode: Mode,
    ) -> (Option<Shrunk>, Option<Trace>) {
        if !self.shrink {
            return (None, trace.cloned());
        }
        let streams_at = |caller: &str, server: &str, at: Duration| {
            let lives = instants::streams(&base.trace, caller, server);
            lives
                .iter()
                .filter(|l| l.open_at(at))
                .map(|l| l.stream)
                .collect()
        };
        let moves = shrink::Moves {
            all: mode == Mode::Random,
            instants: &base.instants,
            end: base.end,
            targets: self.space.targets(),
            streams_at: &streams_at,
        };
        let found = (failure.message.clone(), trace.cloned());
        // A scenario that takes a count starts from the count it ran, so
        // shrinking may lower it.
        let mut start = failure.schedule.clone();
        start.calls = start.calls.or(self.scenario.calls());
        let out = shrink::shrink(start, found, &moves, self.shrink_budget, |s| {
            let Checked { broken, trace } = self.check(s);
            let (_, why) = broken
                .into_iter()
                .find(|(name, _)| *name == failure.invariant)?;
            Some((why, trace))
        });
        let ((message, trace), from) = (out.found, failure.schedule.faults.len());
        let shrunk = Shrunk {
            schedule: out.schedule,
            message,
            runs: out.runs,
            exhausted: out.exhausted,
            from,
            calls_from: self.scenario.calls(),
        };
        (Some(shrunk), trace)
    }
}

/// Keeps what shrinking the newest failure group's first failure found,
/// and writes the trace of its minimal run (or of the failure itself,
/// unshrunk) as that group's artifacts.
pub(super) fn keep(report: &mut Report, shrunk: Option<Shrunk>, trace: Option<Trace>) {
    let (folder, mode) = (report.artifacts_folder(), report.mode);
    let Some(group) = report.failures.last_mut() else {
        return;
    };
    group.shrunk = shrunk;
    let name = group.artifact_name(mode);
    let (verdict, error) = (group.artifact_verdict(), group.artifact_text());
    group.artifacts = trace.and_then(|t| {
        crate::trace::write_artifacts_in(&t, [folder.as_str(), &name], &verdict, &error)
    });
}
