//! What an exploration found: runs made, failures grouped by the invariant
//! they broke (each with a schedule that replays it, shrunk to a minimal
//! one), and coverage of the space.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::schedule::Schedule;
use super::space::Target;

/// How the schedules of an exploration were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Mode {
    /// Drawn at random from the space ([`Explorer::explore`](super::Explorer::explore)).
    Random,
    /// One fault at each instant the baseline visited
    /// ([`Explorer::sweep_instants`](super::Explorer::sweep_instants)).
    Instants,
}

/// What ended an exploration's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Ended {
    /// Every schedule the run budget allowed ran ([`Explorer::budget`](super::Explorer::budget);
    /// for the instant sweep, every placement it sampled).
    AllRuns,
    /// The wall-time budget ([`Explorer::budget_time`](super::Explorer::budget_time),
    /// this long) ran out first: [`Report::runs`] says how many ran.
    WallTime(Duration),
}

/// Where a failing run first differed from the baseline (the run without
/// faults): the line of the default render, 1-based, and both versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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

/// A failing schedule shrunk to a minimal one that still breaks the same
/// invariant ([`Explorer::shrink`](super::Explorer::shrink)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Shrunk {
    /// The minimal schedule (the seed and number of the one it came
    /// from): replay it with [`Explorer::run`](super::Explorer::run), or
    /// paste [`Shrunk::rust`] into a test.
    pub schedule: Schedule,
    /// What the invariant said on the minimal schedule's run.
    pub message: String,
    /// Runs the shrinking made (not counted in [`Report::runs`]).
    pub runs: usize,
    /// The shrink budget ran out first: smaller than the schedule found,
    /// maybe not minimal.
    pub exhausted: bool,
    /// How many faults the schedule found had.
    pub from: usize,
    /// How many calls the scenario made when found, for one that takes a
    /// count ([`Explorer::with_calls`](super::Explorer::with_calls)); the
    /// minimal schedule's [`Schedule::calls`] says how many it kept.
    pub calls_from: Option<usize>,
}

impl Shrunk {
    /// The minimal schedule as Rust: a comment with its seed, the number
    /// of the schedule it was shrunk from and what the shrink took, then
    /// the `sim.fault(…);` lines, ready to paste into a regression test.
    pub fn rust(&self) -> String {
        let s = &self.schedule;
        let calls = match (self.calls_from, s.calls) {
            (Some(from), Some(to)) if from != to => format!(" and from {from} calls to {to}"),
            _ => String::new(),
        };
        let mut out = format!(
            "// grpc-chaos explore: seed {}, schedule {}, shrunk from {} to {}{calls} in {} run{}\n",
            s.seed,
            s.number,
            faults(self.from),
            faults(s.faults.len()),
            self.runs,
            if self.runs == 1 { "" } else { "s" }
        );
        out.extend(s.calls_line());
        for fault in &s.faults {
            out.push_str(&fault.rust());
        }
        out
    }
}

impl Shrunk {
    /// Whether shrinking changed `found`: its faults, or the calls.
    fn changed(&self, found: &Schedule) -> bool {
        let fewer_calls =
            matches!((self.calls_from, self.schedule.calls), (Some(a), Some(b)) if a != b);
        self.schedule.faults != found.faults || fewer_calls
    }

    /// ` and 3 calls of 50`, when shrinking took calls away.
    fn calls_kept(&self) -> String {
        match (self.calls_from, self.schedule.calls) {
            (Some(from), Some(to)) if from != to => {
                format!(" and {to} call{} of {from}", if to == 1 { "" } else { "s" })
            }
            _ => String::new(),
        }
    }
}

fn faults(n: usize) -> String {
    format!("{n} fault{}", if n == 1 { "" } else { "s" })
}

/// The failures of one invariant: how many runs broke it, and the first,
/// shrunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FailureGroup {
    /// The invariant.
    pub invariant: String,
    /// How many runs broke it.
    pub runs: usize,
    /// The first run that did (lowest schedule number), as found.
    pub first: Failure,
    /// The first failure shrunk; `None` with shrinking off.
    pub shrunk: Option<Shrunk>,
    /// The folder holding the trace of the minimal run (of the first
    /// failure when not shrunk): `<target>/grpc-chaos/<test
    /// name>/explore-<seed>/<random|sweep>-<schedule>-<invariant>/`, with
    /// `trace.txt` (summary first), `trace.json`, `trace.html` and
    /// `error.txt` (the invariant's message and the schedule as Rust), as
    /// [`Sim::run`](crate::Sim::run)'s failure artifacts; `None` when
    /// turned off (`GRPC_CHAOS_ARTIFACTS=0`), not written, or the run
    /// panicked and left no trace.
    pub artifacts: Option<PathBuf>,
}

impl FailureGroup {
    /// The schedule to paste: the minimal one as Rust
    /// ([`Shrunk::rust`]), else (not shrunk, or minimal as found) the
    /// first failure's ([`Schedule::rust`]).
    pub fn rust(&self) -> String {
        match &self.shrunk {
            Some(s) if s.changed(&self.first.schedule) => s.rust(),
            _ => self.first.schedule.rust(),
        }
    }

    /// The folder name of this failure's artifacts (see
    /// [`FailureGroup::artifacts`]).
    pub(super) fn artifact_name(&self, mode: Mode) -> String {
        let mode = match mode {
            Mode::Random => "random",
            Mode::Instants => "sweep",
        };
        let slug: String = self
            .invariant
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        format!("{mode}-{}-{slug}", self.first.schedule.number)
    }

    /// The artifacts' verdict: the invariant and what it said on the run.
    pub(super) fn artifact_verdict(&self) -> String {
        let message = self
            .shrunk
            .as_ref()
            .map_or(&self.first.message, |s| &s.message);
        format!("invariant `{}` broken: {message}", self.invariant)
    }

    /// The artifacts' `error.txt`: the verdict, then the lines to paste.
    pub(super) fn artifact_text(&self) -> String {
        format!("{}\n\n{}", self.artifact_verdict(), self.rust())
    }
}

/// How often one point of the space was placed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Coverage {
    /// The fault kind and its target.
    pub target: Target,
    /// In how many schedules it was placed (0: never tried).
    pub schedules: usize,
}

/// The result of an exploration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// How the schedules were made.
    pub mode: Mode,
    /// The explorer's seed.
    pub seed: u64,
    /// Runs made with a schedule (the baseline's two runs and the runs of
    /// shrinking, [`Shrunk::runs`], not counted).
    pub runs: usize,
    /// What ended the runs: the run budget, or the wall-time budget.
    pub ended: Ended,
    /// The part of the schedules this report ran, `(index, count)`:
    /// schedules `n` with `n % count == index`
    /// ([`Explorer::partition`](super::Explorer::partition)); `None`: all
    /// of them (a whole run, or reports merged with [`Report::merge`]).
    pub partition: Option<(usize, usize)>,
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
    /// Each "sometimes" assertion ([`Explorer::sometimes`](super::Explorer::sometimes)),
    /// in the order added, with the number of schedules whose trace met it.
    pub sometimes: Vec<(String, usize)>,
}

impl Report {
    pub(super) fn new(mode: Mode, seed: u64, targets: &[Target]) -> Self {
        Self {
            mode,
            seed,
            runs: 0,
            ended: Ended::AllRuns,
            partition: None,
            instants: None,
            failures: Vec::new(),
            coverage: targets
                .iter()
                .map(|t| Coverage {
                    target: t.clone(),
                    schedules: 0,
                })
                .collect(),
            sometimes: Vec::new(),
        }
    }

    /// Counts one schedule's answer to "sometimes" assertion `name`.
    pub(super) fn reach(&mut self, name: &str, met: bool) {
        let at = match self.sometimes.iter().position(|(n, _)| n == name) {
            Some(at) => at,
            None => {
                self.sometimes.push((name.to_owned(), 0));
                self.sometimes.len() - 1
            }
        };
        self.sometimes[at].1 += usize::from(met);
    }

    /// The "sometimes" assertions no schedule met, in the order added.
    pub fn never_reached(&self) -> Vec<&str> {
        self.sometimes
            .iter()
            .filter(|(_, n)| *n == 0)
            .map(|(name, _)| name.as_str())
            .collect()
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
                shrunk: None,
                artifacts: None,
            }),
        }
    }

    /// The folder of this exploration's failure artifacts, under the
    /// test's.
    pub(super) fn artifacts_folder(&self) -> String {
        format!("explore-{}", self.seed)
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
    /// left the baseline, its schedule as found and (shrunk) the minimal
    /// one, both as Rust, and where the minimal run's trace is; then the
    /// coverage.
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
        let ended = match self.ended {
            Ended::AllRuns => String::new(),
            Ended::WallTime(wall) => format!(
                " (the wall-time budget of {} ran out)",
                crate::units::fmt_duration(wall)
            ),
        };
        let part = match self.partition {
            Some((i, n)) => format!(", partition {i}/{n} (schedules n % {n} == {i})"),
            None => String::new(),
        };
        let mut out = format!(
            "explored {mode}, seed {}{part}: {} run{}{ended}, {}",
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
            g.write_schedules(&mut out);
        }
        if !self.sometimes.is_empty() {
            out.push_str("\n  sometimes (schedules that reached it):");
            for (name, n) in &self.sometimes {
                let note = if *n == 0 { " (never reached)" } else { "" };
                let _ = write!(out, "\n    {name}: {n}{note}");
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

impl FailureGroup {
    /// The summary's lines of the schedule found and the minimal one.
    fn write_schedules(&self, out: &mut String) {
        let found = &self.first.schedule;
        match &self.shrunk {
            Some(s) if s.changed(found) => {
                let _ = write!(out, "\n    as found ({}):", faults(found.faults.len()));
                indented(out, &found.rust());
                let _ = write!(
                    out,
                    "\n    shrunk to {}{} in {} run{}{}, breaking it still: {}",
                    faults(s.schedule.faults.len()),
                    s.calls_kept(),
                    s.runs,
                    if s.runs == 1 { "" } else { "s" },
                    if s.exhausted {
                        " (the shrink budget: maybe not minimal)"
                    } else {
                        ""
                    },
                    s.message
                );
            }
            Some(s) => {
                let _ = write!(
                    out,
                    "\n    minimal as found (shrinking tried {} run{})",
                    s.runs,
                    if s.runs == 1 { "" } else { "s" }
                );
            }
            None => {}
        }
        let _ = write!(
            out,
            "\n    replay it with Explorer::run, or paste into a test:"
        );
        indented(out, &self.rust());
        if let Some(dir) = &self.artifacts {
            let _ = write!(
                out,
                "\n    trace of that run: {}",
                dir.join("trace.txt").display()
            );
        }
    }
}

/// `text`'s lines, each on a line of its own indented under the summary's.
fn indented(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = write!(out, "\n      {line}");
    }
}
