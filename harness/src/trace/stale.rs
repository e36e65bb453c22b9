//! Stale work: a handler that starts, or commits a side effect, after its
//! caller has given up (its deadline passed, it cancelled, its connection
//! went, anywhere up the call chain). The work is wasted at best; a side
//! effect the caller will never hear of (stock reserved for an order
//! whose caller gave up) is a leak. Issue #26's "stale work" invariant.

use std::time::Duration;

use super::assert::Violation;
use super::ORPHAN_GRACE;
use super::{HandlerRun, Trace};
use crate::recorder::event::EventKind;
use crate::units::fmt_duration;

const STALE: &str = "stale work";

/// What a run did after its caller had given up.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StaleKind {
    /// The handler started more than [`ORPHAN_GRACE`] after: the request
    /// reached the server that late (held by a partition, a queue, a
    /// slow link), and the server could not tell.
    Started,
    /// It committed the side effect `name`
    /// ([`server::effect`](crate::server::effect)) after it, by any margin:
    /// the caller does not know the effect happened.
    Effect {
        /// The effect's name.
        name: String,
    },
}

/// One piece of stale work ([`Trace::stale_work`]). Times are *simulated*,
/// since the start of the run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StaleWork {
    /// The handler run.
    pub run: HandlerRun,
    /// What it did late.
    pub kind: StaleKind,
    /// When it did it.
    pub at: Duration,
    /// When its caller, or one up its chain, had given up.
    pub abandoned_at: Duration,
}

impl StaleWork {
    /// How long after the caller gave up.
    pub fn late_by(&self) -> Duration {
        self.at.saturating_sub(self.abandoned_at)
    }
}

impl Trace {
    /// Every handler run that started after its caller had given up (by
    /// more than [`ORPHAN_GRACE`], the time a cancellation takes to
    /// arrive), and every side effect committed after it (by any margin),
    /// in the order they happened. A run with no deadline or cancellation
    /// anywhere up its chain is never stale.
    pub fn stale_work(&self) -> Vec<StaleWork> {
        let mut found: Vec<StaleWork> = Vec::new();
        for run in self.runs.iter() {
            let Some(abandoned_at) = self.abandoned_at(run, 0) else {
                continue;
            };
            if run.started > abandoned_at + ORPHAN_GRACE {
                found.push(StaleWork {
                    run: run.clone(),
                    kind: StaleKind::Started,
                    at: run.started,
                    abandoned_at,
                });
            }
        }
        for e in self.events() {
            let EventKind::Effect(effect) = &e.kind else {
                continue;
            };
            let Some(run) = effect.run.and_then(|r| self.run(r)) else {
                continue;
            };
            let Some(abandoned_at) = self.abandoned_at(run, 0) else {
                continue;
            };
            if e.at() > abandoned_at {
                found.push(StaleWork {
                    run: run.clone(),
                    kind: StaleKind::Effect {
                        name: effect.name.clone(),
                    },
                    at: e.at(),
                    abandoned_at,
                });
            }
        }
        found.sort_by_key(|s| s.at);
        found
    }

    /// Checks that no handler started, and no marked side effect
    /// ([`server::effect`](crate::server::effect)) was committed, after
    /// its caller had given up; see [`Trace::stale_work`] for the rules.
    ///
    /// # Errors
    /// A [`Violation`] naming the first piece of stale work, its run and
    /// how late it was, with the trace written as a failure artifact.
    pub fn assert_no_stale_work(&self) -> Result<(), Violation> {
        let Some(s) = self.stale_work().into_iter().next() else {
            return Ok(());
        };
        let r = &s.run;
        let what = match &s.kind {
            StaleKind::Started => "started".to_owned(),
            StaleKind::Effect { name } => format!("committed effect {name}"),
        };
        Err(self.keep(Violation::new(
            STALE,
            format!(
                "{} {} on {} (from {}) {what} at {}, {} after its caller gave up at {}",
                r.id,
                r.path,
                r.host,
                r.from,
                fmt_duration(s.at),
                fmt_duration(s.late_by()),
                fmt_duration(s.abandoned_at)
            ),
        )))
    }
}
