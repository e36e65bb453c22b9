//! What an exploration found: runs made, failures grouped by the invariant
//! they broke (each with a schedule that replays it), and coverage of the
//! space.

use std::fmt::Write as _;

use super::schedule::Schedule;
use super::space::Target;

/// How the schedules of an exploration were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mode {
    /// Drawn at random from the space ([`Explorer::explore`](super::Explorer::explore)).
    Random,
    /// One fault at each instant the baseline visited
    /// ([`Explorer::sweep_instants`](super::Explorer::sweep_instants)).
    Instants,
}

/// Where a failing run first differed from the baseline (the run without
/// faults): the line of the default render, 1-based, and both versions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Divergence {
    /// The line number in both renders.
    pub line: usize,
    /// The baseline's line (empty when the baseline ended there).
    pub baseline: String,
    /// The failing run's line (empty when it ended there).
    pub run: String,
}

/// One failing run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Failure {
    /// The invariant it broke: a name given to
    /// [`Explorer::invariant`](super::Explorer::invariant), or
    /// [`RUN_FAILED`](super::RUN_FAILED) when the run itself failed.
    pub invariant: String,
    /// What the invariant (or the run) said; for a panicking invariant,
    /// `panicked: <message>`.
    pub message: String,
    /// The schedule that made it: replay it with
    /// [`Explorer::run`](super::Explorer::run), or paste
    /// [`Schedule::rust`] into a test.
    pub schedule: Schedule,
    /// Where the run left the baseline, when it did.
    pub left_baseline: Option<Divergence>,
}

/// The failures of one invariant: how many runs broke it, and the first.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FailureGroup {
    /// The invariant.
    pub invariant: String,
    /// How many runs broke it.
    pub runs: usize,
    /// The first run that did (lowest schedule number).
    pub first: Failure,
}

/// How often one point of the space was placed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Coverage {
    /// The fault kind and its target.
    pub target: Target,
    /// In how many schedules it was placed (0: never tried).
    pub schedules: usize,
}

/// The result of an exploration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Report {
    /// How the schedules were made.
    pub mode: Mode,
    /// The explorer's seed.
    pub seed: u64,
    /// Runs made with a schedule (the baseline's two runs not counted).
    pub runs: usize,
    /// For the instant sweep: how many instants the baseline visited in
    /// the window, and how many schedules placing one fault at one of
    /// them there were before the budget cut them down.
    pub instants: Option<(usize, usize)>,
    /// The failures, one group per invariant broken, in the order first
    /// found.
    pub failures: Vec<FailureGroup>,
    /// Every point of the space, in the order declared, with how often it
    /// was placed.
    pub coverage: Vec<Coverage>,
}

impl Report {
    pub(super) fn new(mode: Mode, seed: u64, targets: &[Target]) -> Self {
        Self {
            mode,
            seed,
            runs: 0,
            instants: None,
            failures: Vec::new(),
            coverage: targets
                .iter()
                .map(|t| Coverage {
                    target: t.clone(),
                    schedules: 0,
                })
                .collect(),
        }
    }

    pub(super) fn count(&mut self, schedule: &Schedule) {
        self.runs += 1;
        for c in &mut self.coverage {
            if schedule.faults.iter().any(|p| p.target == c.target) {
                c.schedules += 1;
            }
        }
    }

    pub(super) fn add(&mut self, failure: Failure) {
        match self
            .failures
            .iter_mut()
            .find(|g| g.invariant == failure.invariant)
        {
            Some(group) => group.runs += 1,
            None => self.failures.push(FailureGroup {
                invariant: failure.invariant.clone(),
                runs: 1,
                first: failure,
            }),
        }
    }

    /// True when no run broke an invariant.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// The failures of invariant `name`, if any run broke it.
    pub fn broken(&self, name: &str) -> Option<&FailureGroup> {
        self.failures.iter().find(|g| g.invariant == name)
    }

    /// A line of counts; per invariant broken, its first failure, where it
    /// left the baseline and its schedule as Rust; then the coverage.
    pub fn summary(&self) -> String {
        let mode = match self.mode {
            Mode::Random => "random schedules".to_owned(),
            Mode::Instants => match self.instants {
                Some((n, candidates)) => {
                    format!("instant sweep over {n} instants ({candidates} placements)")
                }
                None => "instant sweep".to_owned(),
            },
        };
        let mut out = format!(
            "explored {mode}, seed {}: {} run{}, {}",
            self.seed,
            self.runs,
            if self.runs == 1 { "" } else { "s" },
            match self.failures.len() {
                0 => "no invariant broken".to_owned(),
                1 => "1 invariant broken".to_owned(),
                n => format!("{n} invariants broken"),
            }
        );
        for g in &self.failures {
            let f = &g.first;
            let _ = write!(
                out,
                "\n  {}: broken in {} run{}; first in schedule {}: {}",
                g.invariant,
                g.runs,
                if g.runs == 1 { "" } else { "s" },
                f.schedule.number,
                f.message
            );
            if let Some(d) = &f.left_baseline {
                let _ = write!(
                    out,
                    "\n    left the baseline at line {}:\n      baseline: {}\n      this run: {}",
                    d.line,
                    d.baseline.trim(),
                    d.run.trim()
                );
            }
            out.push_str("\n    replay it with Explorer::run, or paste into a test:");
            for line in f.schedule.rust().lines() {
                let _ = write!(out, "\n      {line}");
            }
        }
        out.push_str("\n  coverage (schedules per fault):");
        for c in &self.coverage {
            let _ = write!(
                out,
                "\n    {} {}: {}",
                c.target.kind(),
                c.target.on(),
                c.schedules
            );
        }
        out
    }

    /// Panics with [`Report::summary`] when an invariant was broken, so a
    /// `#[test]` fails and prints the schedules to replay.
    ///
    /// # Panics
    /// When any run broke an invariant.
    pub fn assert_passed(&self) {
        assert!(self.passed(), "{}", self.summary());
    }
}
