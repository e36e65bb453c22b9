//! Finding the failures nobody scripted: run a scenario under many fault
//! schedules drawn from a declared [`Space`], check invariants on each
//! trace, and report what broke with a schedule that replays it.
//!
//! Two ways to make schedules, both reproducible from the explorer's seed:
//! - [`Explorer::explore`]: schedules drawn at random (1 to
//!   [`Space::max_faults`] faults, each at a random time of the window),
//!   schedule `n` from its own seeded stream;
//! - [`Explorer::sweep_instants`]: run the baseline (no faults), collect
//!   every instant it visited (calls and handlers starting and ending,
//!   frames, log lines), and place one fault at each, a cancel on every
//!   stream open then; a stratified sample when that is more than the
//!   budget. This is how a handler that is not cancel-safe is found
//!   without being told the instant.
//!
//! Each invariant's first failure then shrinks to a minimal schedule that
//! still breaks it (`shrink.rs`, [`Explorer::shrink`]), printed as the
//! lines of a regression test, its run's trace written to disk.
//!
//! The guide's page is [`crate::guide::exploration`].

mod budget;
mod instants;
mod minimal;
mod progress;
mod report;
mod rng;
mod scenario;
mod schedule;
mod shrink;
mod space;
mod workers;

use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

pub use report::{Coverage, Divergence, Ended, Failure, FailureGroup, Mode, Report, Shrunk};
pub use scenario::{Scenario, WithCalls};
pub use schedule::{Placed, Schedule};
pub use space::{Space, Target};

use crate::error::{Error, Kind};
use crate::sim::{first_difference, Record};
use crate::{Sim, Trace};
use budget::Budget;
use instants::StreamLife;
use progress::Progress;
use rng::Rng;

/// The invariant a [`Failure`] names when the run itself failed (a client
/// body returned an error or panicked, a handler panicked, the run timed
/// out): [`Sim::run`] returned an error.
pub const RUN_FAILED: &str = "the run completes";

type Invariant = Box<dyn Fn(&Trace) -> Result<(), String>>;
/// A "sometimes" assertion's condition.
type Reached = Box<dyn Fn(&Trace) -> bool>;

/// Runs a scenario under fault schedules and checks invariants on each
/// run.
///
/// `scenario` builds the sim from a seed (`Sim::builder().seed(seed)`),
/// hosts and clients, without the faults the explorer adds; it is called
/// once per run. Every run uses the explorer's seed, so the runs differ
/// only in their faults.
///
/// | setting | default |
/// |---|---|
/// | [`Explorer::space`] | empty: an error until given |
/// | [`Explorer::seed`] | 0 |
/// | [`Explorer::budget`] | 100 runs (no bound on runs with only a wall-time budget) |
/// | [`Explorer::budget_time`] | none: runs alone bound it |
/// | [`Explorer::partition`] | the whole run, `(0, 1)` |
/// | [`Explorer::progress`] | drawn on a terminal, outside a test |
/// | [`Explorer::shrink`] | on: each invariant's first failure shrinks |
/// | [`Explorer::shrink_budget`] | 100 runs per failure shrunk |
/// | invariants | none: only [`RUN_FAILED`] (the run itself failing) |
///
/// ```
/// # mod grpc_chaos_scenarios { pub mod services { include!(concat!(env!("CARGO_MANIFEST_DIR"), "/reference/services.rs")); } }
/// use std::time::Duration;
/// use grpc_chaos::explore::{Explorer, Space};
/// use grpc_chaos::Sim;
/// use grpc_chaos_scenarios::services::Store;
/// use grpc_chaos_scenarios::services::pb::{store_client::StoreClient, SaveRequest};
///
/// let report = Explorer::new(|seed| {
///     let mut sim = Sim::builder().seed(seed).duration(Duration::from_secs(2)).build();
///     sim.server("store", |s| s.add_service(Store::default().into_server()));
///     sim.client("player", |c| async move {
///         let mut store = StoreClient::new(c.channel("store"));
///         let _ = store.save(SaveRequest::default()).await; // may fail under a fault
///         Ok(())
///     });
///     sim
/// })
/// .space(Space::new().crash("store").max_faults(2))
/// .invariant("a call ends", |trace| match trace.calls().len() {
///     1 => Ok(()),
///     n => Err(format!("{n} calls")),
/// })
/// .budget(3)
/// .explore()?;
/// assert_eq!(report.runs, 3);
/// # Ok::<(), grpc_chaos::Error>(())
/// ```
#[must_use = "call .explore() or .sweep_instants() to run it"]
pub struct Explorer<S> {
    scenario: S,
    space: Space,
    invariants: Vec<(String, Invariant)>,
    sometimes: Vec<(String, Reached)>,
    seed: u64,
    budget: Budget,
    part: (usize, usize),
    progress: Option<bool>,
    shrink: bool,
    shrink_budget: usize,
}

impl<S> std::fmt::Debug for Explorer<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.invariants.iter().map(|(n, _)| n.as_str()).collect();
        let sometimes: Vec<&str> = self.sometimes.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Explorer")
            .field("space", &self.space)
            .field("invariants", &names)
            .field("sometimes", &sometimes)
            .field("seed", &self.seed)
            .field("budget", &self.budget)
            .field("partition", &self.part)
            .field("progress", &self.progress)
            .field("shrink", &self.shrink)
            .field("shrink_budget", &self.shrink_budget)
            .finish_non_exhaustive()
    }
}

/// What the baseline run told the explorer.
struct Baseline {
    render: String,
    trace: Trace,
    window: (Duration, Duration),
    end: Duration,
    /// The instants it visited in the window (what shrinking moves
    /// faults to).
    instants: Vec<Duration>,
}

/// What one run under a schedule broke, and its trace (none when the
/// run panicked).
struct Checked {
    broken: Vec<(String, String)>,
    trace: Option<Trace>,
}

impl<S: Fn(u64) -> Sim> Explorer<S> {
    /// An explorer of the scenario `scenario` builds (see the type's docs).
    pub fn new(scenario: S) -> Self {
        Self::of(scenario)
    }
}

impl<F: Fn(u64, usize) -> Sim> Explorer<WithCalls<F>> {
    /// An explorer of a scenario that takes a number of calls:
    /// `scenario(seed, calls)` builds the sim making `calls` calls (in a
    /// loop of the client's, say), and every run makes `calls` unless its
    /// schedule says fewer ([`Schedule::calls`]). Shrinking then also
    /// tries fewer calls (bisecting toward the fewest that still break
    /// the invariant, before the faults are touched), and the minimal
    /// schedule's lines say the count to build the scenario with. The
    /// baseline and every random schedule make `calls`.
    pub fn with_calls(calls: usize, scenario: F) -> Self {
        Explorer::of(WithCalls {
            calls,
            build: scenario,
        })
    }
}

impl<S> Explorer<S> {
    fn of(scenario: S) -> Self {
        Self {
            scenario,
            space: Space::new(),
            invariants: Vec::new(),
            sometimes: Vec::new(),
            seed: 0,
            budget: Budget::default(),
            part: (0, 1),
            progress: None,
            shrink: true,
            shrink_budget: 100,
        }
    }
}

impl<S: Scenario> Explorer<S> {
    /// What may break.
    pub fn space(mut self, space: Space) -> Self {
        self.space = space;
        self
    }

    /// Adds an invariant named `name`: `check` returns `Err` with what is
    /// wrong when a trace breaks it. The trace's own assertions fit as
    /// they are (`|t| t.assert_no_orphan_work()`). A `check` that panics
    /// fails that run under `name` with `panicked: <message>`; the
    /// exploration goes on.
    pub fn invariant<E: Display>(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&Trace) -> Result<(), E> + 'static,
    ) -> Self {
        let check = move |t: &Trace| check(t).map_err(|e| e.to_string());
        self.invariants.push((name.into(), Box::new(check)));
        self
    }

    /// Adds a "sometimes" assertion named `name`: a state the exploration
    /// should reach at least once (a retry made, a replica ejected, the
    /// handler cancelled mid-work), as moonpool's and Antithesis's
    /// `sometimes` do. It never fails a run; the report counts the
    /// schedules whose trace met `reached` ([`Report::sometimes`]) and its
    /// summary names those never met, so what the schedules did not cover
    /// shows. A `reached` that panics counts as not met.
    pub fn sometimes(
        mut self,
        name: impl Into<String>,
        reached: impl Fn(&Trace) -> bool + 'static,
    ) -> Self {
        self.sometimes.push((name.into(), Box::new(reached)));
        self
    }

    /// The seed: of every run's sim, and of the random schedules.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// How many runs with a schedule to make (the baseline's two runs are
    /// not counted). Zero is an error from [`Explorer::explore`]. With
    /// [`Explorer::budget_time`] too, the exploration stops at whichever
    /// ends first.
    pub fn budget(mut self, runs: usize) -> Self {
        self.budget.runs = Some(runs);
        self
    }

    /// A budget of *wall* time (real time, not simulated) for the runs
    /// with a schedule: before each one the explorer reads the clock and
    /// stops once `wall` has passed since the baseline ended
    /// ([`Report::ended`] says so, [`Report::runs`] how many ran). It
    /// decides only how many schedules run: schedule `n` is the same from
    /// the seed and `n` however long the machine takes, so a failure found
    /// under a time budget replays like any other. Without
    /// [`Explorer::budget`], the runs are not bounded otherwise (the
    /// instant sweep runs all its placements, in an order whose every
    /// prefix is spread over the window); with it, whichever ends first.
    /// The baseline's two runs and shrinking (bounded by
    /// [`Explorer::shrink_budget`]) are not cut short: a zero budget runs
    /// the baseline, and its checks, and no schedule.
    pub fn budget_time(mut self, wall: Duration) -> Self {
        self.budget.wall = Some(wall);
        self
    }

    /// Whether to draw a progress bar on standard error while the
    /// schedules run: runs done of the budget (a count alone under a
    /// wall-time budget only) and the invariants broken so far, cleared
    /// at the end. Default: drawn when standard error is a terminal and
    /// the exploration is not inside a test (libtest's thread for a test
    /// is named after it); `false` never draws it, `true` draws it on a
    /// terminal inside a test too. Never on anything but a terminal, and
    /// never in the trace or the report.
    pub fn progress(mut self, on: bool) -> Self {
        self.progress = Some(on);
        self
    }

    /// Whether each invariant's first failure shrinks to a minimal
    /// schedule that still breaks it ([`FailureGroup::shrunk`]; the guide's
    /// [shrinking](crate::guide::exploration#shrinking) section says how).
    /// Default on; off, the first failure's schedule is reported as found.
    pub fn shrink(mut self, on: bool) -> Self {
        self.shrink = on;
        self
    }

    /// At most `runs` runs to shrink one failure (default 100); shrinking
    /// stops there with the smallest failing schedule found so far
    /// ([`Shrunk::exhausted`]). These runs are not counted in
    /// [`Report::runs`]. Zero runs shrink nothing.
    pub fn shrink_budget(mut self, runs: usize) -> Self {
        self.shrink_budget = runs;
        self
    }

    /// Runs [`Explorer::budget`] random schedules, numbered from 0 (fewer
    /// when [`Explorer::budget_time`] runs out first), and shrinks each
    /// invariant's first failure (see [`Explorer::shrink`]).
    ///
    /// # Errors
    /// Before any schedule runs: a budget of 0; an empty space, zero
    /// `max_faults`, an unknown host (the message lists the known ones),
    /// a client host where a server is needed, a window outside the run;
    /// a baseline that is not deterministic (it runs twice; the error
    /// shows the first differing line), that fails, or that already
    /// breaks an invariant; a [`Space::cancel`] pair with no call between
    /// them in the baseline. A failing schedule is not an error: it is in
    /// the report.
    pub fn explore(&self) -> Result<Report, Error> {
        let base = self.baseline()?;
        let mut report = Report::new(Mode::Random, self.seed, self.space.targets());
        let runs = self.budget.runs();
        let numbers = (0..runs as u64).filter(|&n| self.owns(n));
        let schedules = numbers.map(|number| self.draw(number, &base));
        let len = (runs != usize::MAX).then_some(self.owned_of(runs) as u64);
        self.run_each(schedules, len, &base, &mut report);
        Ok(report)
    }

    /// Places one fault at each instant the baseline visited in the
    /// window, for each target of the space (a cancel on each stream open
    /// then), and runs each placement as a schedule of its own. When
    /// there are more placements than the budget, a sample spread evenly
    /// over each target's instants, the budget shared between targets.
    /// Each invariant's first failure, one fault already, shrinks its
    /// outage and delay only.
    ///
    /// # Errors
    /// As [`Explorer::explore`].
    pub fn sweep_instants(&self) -> Result<Report, Error> {
        let base = self.baseline()?;
        let mut report = Report::new(Mode::Instants, self.seed, self.space.targets());
        let placements = self.placements(&base.instants, &base);
        report.instants = Some((base.instants.len(), placements.len()));
        let mut chosen = sample(&placements, self.budget.runs());
        chosen.retain(|&n| self.owns(n as u64));
        if self.budget.wall.is_some() {
            let order = budget::spread(chosen.len());
            chosen = order.into_iter().map(|i| chosen[i]).collect();
        }
        let len = Some(chosen.len() as u64);
        let schedules = chosen.into_iter().map(|number| {
            let placed = placements[number].1.clone();
            Schedule::new(self.seed, number as u64, vec![placed])
        });
        self.run_each(schedules, len, &base, &mut report);
        Ok(report)
    }

    /// Judges each schedule in turn until they or the wall-time budget
    /// run out.
    fn run_each(
        &self,
        schedules: impl Iterator<Item = Schedule>,
        len: Option<u64>,
        base: &Baseline,
        report: &mut Report,
    ) {
        report.partition = self.partition_named();
        crate::trace::clear_stale_artifacts_under(&report.artifacts_folder());
        let bar = Progress::start(self.progress, len);
        let clock = self.budget.start();
        for schedule in schedules {
            if let Some(wall) = clock.ran_out() {
                report.ended = Ended::WallTime(wall);
                break;
            }
            self.judge(&schedule, base, report, &bar);
            bar.ran(report.failures.len());
        }
        bar.finish();
        crate::trace::forget_last_run();
    }

    /// Random schedule `number` (as [`Explorer::explore`] draws it).
    ///
    /// # Errors
    /// As [`Explorer::explore`] (it runs the baseline to know the calls).
    pub fn schedule(&self, number: u64) -> Result<Schedule, Error> {
        Ok(self.draw(number, &self.baseline()?))
    }

    /// Runs the scenario under `schedule` (from a report, or written by
    /// hand) and returns its trace, to look at or assert on.
    ///
    /// # Errors
    /// What [`Sim::run`] returns.
    pub fn run(&self, schedule: &Schedule) -> Result<Trace, Error> {
        let mut sim = self.scenario.build(self.seed, schedule.calls);
        for fault in schedule.to_faults() {
            sim.fault(fault);
        }
        sim.run()
    }

    /// Checks the setup, runs the baseline twice and compares the runs.
    fn baseline(&self) -> Result<Baseline, Error> {
        let bad = |m: &str| Err(Error::new(Kind::Misconfigured(m.to_owned())));
        if self.budget.runs == Some(0) {
            return bad("Explorer::budget(0) runs nothing: give 1 or more runs");
        }
        self.check_partition()?;
        if self.scenario.calls() == Some(0) {
            return bad("Explorer::with_calls(0, …) makes no call: give 1 or more calls");
        }
        let sim = self.scenario.build(self.seed, None);
        let (servers, clients, end) = (sim.server_names(), sim.client_names(), sim.end());
        self.space.check(&servers, &clients)?;
        let window = self.space.window_in(end)?;
        let first = sim.run();
        let second = self.scenario.build(self.seed, None).run();
        if let (Some(a), Some(b)) = (Record::of(&first), Record::of(&second)) {
            if let Some(diff) = a.difference(&b) {
                let run_error = first.as_ref().err().map(Error::what);
                return Err(diff.into_error(["baseline", "its repeat"], run_error));
            }
        }
        let trace = first.map_err(|e| {
            Error::new(Kind::Misconfigured(format!(
                "the baseline (the scenario without faults) fails: {}; the explorer needs a \
                 scenario that passes without faults",
                e.message()
            )))
        })?;
        for (name, check) in &self.invariants {
            if let Err(why) = checked(check, &trace) {
                return Err(Error::new(Kind::Misconfigured(format!(
                    "the baseline (the scenario without faults) already breaks invariant \
                     `{name}`: {why}; fix the scenario or the invariant first"
                ))));
            }
        }
        for target in self.space.targets() {
            if let Target::Cancel { caller, server } = target {
                let open = instants::streams(&trace, caller, server);
                if !open
                    .iter()
                    .any(|l| l.first < window.1 && l.last >= window.0)
                {
                    return bad(&format!(
                        "Space::cancel({caller:?}, {server:?}): the baseline has no call from \
                         {caller} to {server} in the window; name a pair that talks, or widen \
                         the window"
                    ));
                }
            }
        }
        Ok(Baseline {
            render: trace.render(),
            instants: instants::instants(&trace, window),
            trace,
            window,
            end,
        })
    }

    /// Runs `schedule` and adds what it broke to `report`; the first
    /// failure of an invariant is shrunk and its artifacts written.
    fn judge(&self, schedule: &Schedule, base: &Baseline, report: &mut Report, bar: &Progress) {
        report.count(schedule);
        let Checked { broken, trace } = self.check(schedule);
        for (name, reached) in &self.sometimes {
            let met = trace
                .as_ref()
                .is_some_and(|t| catch_unwind(AssertUnwindSafe(|| reached(t))).unwrap_or(false));
            report.reach(name, met);
        }
        let left_baseline = match (&trace, broken.is_empty()) {
            (Some(trace), false) => divergence(&base.render, &trace.render()),
            _ => None,
        };
        for (invariant, message) in broken {
            let new = report.broken(&invariant).is_none();
            let failure = Failure {
                invariant,
                message,
                schedule: schedule.clone(),
                left_baseline: left_baseline.clone(),
            };
            if new && self.shrink {
                bar.shrinking(&failure.invariant);
            }
            let minimal = new.then(|| self.minimal(&failure, trace.as_ref(), base, report.mode));
            report.add(failure);
            if let Some((shrunk, trace)) = minimal {
                minimal::keep(report, shrunk, trace);
            }
        }
    }

    /// Runs `schedule` and checks every invariant on its trace.
    fn check(&self, schedule: &Schedule) -> Checked {
        let run = catch_unwind(AssertUnwindSafe(|| self.run(schedule)));
        let mut broken: Vec<(String, String)> = Vec::new();
        let trace = match run {
            Ok(Ok(trace)) => Some(trace),
            Ok(Err(e)) => {
                broken.push((RUN_FAILED.to_owned(), e.message()));
                e.trace().cloned()
            }
            Err(panic) => {
                let why = crate::units::panic_message(&*panic);
                broken.push((RUN_FAILED.to_owned(), format!("panicked: {why}")));
                None
            }
        };
        if let Some(trace) = &trace {
            for (name, check) in &self.invariants {
                if let Err(why) = checked(check, trace) {
                    broken.push((name.clone(), why));
                }
            }
        }
        Checked { broken, trace }
    }

    /// Random schedule `number`: 1 to `max_faults` faults, each on a
    /// target drawn from the space.
    fn draw(&self, number: u64, base: &Baseline) -> Schedule {
        let mut rng = Rng::for_schedule(self.seed, number);
        let targets = self.space.targets();
        let n = rng.between(1, self.space.max() as u64);
        let mut faults: Vec<Placed> = Vec::new();
        for _ in 0..n {
            let target = &targets[rng.below(targets.len() as u64) as usize];
            let placed = self.place_random(target, &mut rng, base);
            if !faults.iter().any(|p| clashes(p, &placed, base.end)) {
                faults.push(placed);
            }
        }
        Schedule::new(self.seed, number, faults)
    }

    fn place_random(&self, target: &Target, rng: &mut Rng, base: &Baseline) -> Placed {
        let (from, until) = base.window;
        if let Target::Cancel { caller, server } = target {
            let lives: Vec<StreamLife> = instants::streams(&base.trace, caller, server)
                .into_iter()
                .filter(|l| l.first < until && l.last >= from)
                .collect();
            let life = lives[rng.below(lives.len() as u64) as usize];
            let lo = micros(life.first.max(from));
            let hi = micros(
                life.last
                    .min(until.saturating_sub(Duration::from_micros(1))),
            );
            let at = Duration::from_micros(rng.between(lo, hi.max(lo)));
            return self.place(target, at, life.stream, base);
        }
        let span_ms = (until - from).as_millis() as u64;
        let at = from + Duration::from_millis(rng.below(span_ms.max(1)));
        let outage_ms = (self.space.outage_len().as_millis() as u64).max(1);
        let lasts = Duration::from_millis(rng.between(1, outage_ms));
        self.placed(target, at, lasts, 0, base)
    }

    /// `target` at `at`, lasting the space's outage.
    fn place(&self, target: &Target, at: Duration, stream: u32, base: &Baseline) -> Placed {
        self.placed(target, at, self.space.outage_len(), stream, base)
    }

    fn placed(
        &self,
        target: &Target,
        at: Duration,
        lasts: Duration,
        stream: u32,
        base: &Baseline,
    ) -> Placed {
        let until = shrink::heal_within(target, at + lasts, base.end);
        Placed {
            target: target.clone(),
            at,
            until,
            stream,
        }
    }

    /// Every placement of the instant sweep, with the index of its target
    /// in the space: instant by instant, target by target.
    fn placements(&self, instants: &[Duration], base: &Baseline) -> Vec<(usize, Placed)> {
        let targets = self.space.targets();
        let streams: Vec<Vec<StreamLife>> = targets
            .iter()
            .map(|t| match t {
                Target::Cancel { caller, server } => instants::streams(&base.trace, caller, server),
                _ => Vec::new(),
            })
            .collect();
        let mut out = Vec::new();
        for &at in instants {
            for (i, target) in targets.iter().enumerate() {
                if matches!(target, Target::Cancel { .. }) {
                    for life in streams[i].iter().filter(|l| l.open_at(at)) {
                        out.push((i, self.place(target, at, life.stream, base)));
                    }
                } else {
                    out.push((i, self.place(target, at, 0, base)));
                }
            }
        }
        out
    }
}

/// Whether `b` would overlap `a` on the same host or link where the run
/// refuses two at once (a second partition of a cut link, a crash of a
/// crashed host): the draw then leaves `b` out.
fn clashes(a: &Placed, b: &Placed, end: Duration) -> bool {
    let same = match (&a.target, &b.target) {
        (Target::Crash { host: x }, Target::Crash { host: y }) => x == y,
        (Target::Partition { a: a1, b: b1 }, Target::Partition { a: a2, b: b2 }) => {
            (a1, b1) == (a2, b2) || (a1, b1) == (b2, a2)
        }
        _ => false,
    };
    let span = |p: &Placed| p.at..p.until.unwrap_or(end).max(p.at + Duration::from_nanos(1));
    let (x, y) = (span(a), span(b));
    same && x.start <= y.end && y.start <= x.end
}

/// Runs an invariant, a panic in it reported as its failure.
fn checked(check: &Invariant, trace: &Trace) -> Result<(), String> {
    match catch_unwind(AssertUnwindSafe(|| check(trace))) {
        Ok(result) => result,
        Err(panic) => Err(format!(
            "panicked: {}",
            crate::units::panic_message(&*panic)
        )),
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

fn divergence(baseline: &str, run: &str) -> Option<Divergence> {
    first_difference(baseline, run).map(|(line, baseline, run)| Divergence {
        line,
        baseline,
        run,
    })
}

/// The placements to run under `budget`: all of them when they fit; else
/// the budget shared between targets as evenly as their placements allow,
/// and each target's share spread evenly over its placements. Indices
/// into `placements`, ascending.
fn sample(placements: &[(usize, Placed)], budget: usize) -> Vec<usize> {
    if placements.len() <= budget {
        return (0..placements.len()).collect();
    }
    let groups = placements
        .iter()
        .map(|(t, _)| *t)
        .max()
        .map_or(0, |m| m + 1);
    let members: Vec<Vec<usize>> = (0..groups)
        .map(|g| {
            (0..placements.len())
                .filter(|&i| placements[i].0 == g)
                .collect()
        })
        .collect();
    let mut share = vec![0usize; groups];
    let mut left = budget;
    // Round robin: one more for each target that still has placements.
    while left > 0 {
        let before = left;
        for g in 0..groups {
            if left > 0 && share[g] < members[g].len() {
                share[g] += 1;
                left -= 1;
            }
        }
        if left == before {
            break;
        }
    }
    let mut chosen: Vec<usize> = members
        .iter()
        .zip(&share)
        .flat_map(|(m, &k)| (0..k).map(move |j| m[j * m.len() / k]))
        .collect();
    chosen.sort_unstable();
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(t: usize) -> (usize, Placed) {
        let target = Target::Crash {
            host: format!("h{t}"),
        };
        let p = Placed {
            target,
            at: Duration::ZERO,
            until: None,
            stream: 0,
        };
        (t, p)
    }

    #[test]
    fn the_sample_shares_the_budget_between_targets_and_spreads_it() {
        // Two targets interleaved, 10 placements each: a stride of 2 over
        // the list would only ever pick target 0.
        let all: Vec<(usize, Placed)> = (0..20).map(|i| placed(i % 2)).collect();
        let chosen = sample(&all, 4);
        let per: Vec<usize> = chosen.iter().map(|&i| all[i].0).collect();
        assert_eq!(per.iter().filter(|&&t| t == 0).count(), 2, "{chosen:?}");
        assert_eq!(per.iter().filter(|&&t| t == 1).count(), 2, "{chosen:?}");
        assert_eq!(chosen, [0, 1, 10, 11]);
        // A target with fewer placements than its share gives the rest away.
        let mut few: Vec<(usize, Placed)> = (0..10).map(|_| placed(0)).collect();
        few.push(placed(1));
        assert_eq!(sample(&few, 4).len(), 4);
        assert!(sample(&few, 4).contains(&10));
        assert_eq!(sample(&few, 40).len(), 11);
    }

    #[test]
    fn overlapping_cuts_of_one_link_or_crashes_of_one_host_clash() {
        let ms = Duration::from_millis;
        let cut = |a: &str, b: &str, at: u64, until: Option<u64>| Placed {
            target: Target::Partition {
                a: a.into(),
                b: b.into(),
            },
            at: ms(at),
            until: until.map(ms),
            stream: 0,
        };
        let end = ms(1_000);
        let first = cut("orders", "inventory", 100, Some(200));
        assert!(clashes(
            &first,
            &cut("inventory", "orders", 150, Some(300)),
            end
        ));
        assert!(!clashes(
            &first,
            &cut("orders", "inventory", 250, Some(300)),
            end
        ));
        // Lasting to the end: anything later on that link clashes.
        let open = cut("orders", "inventory", 100, None);
        assert!(clashes(
            &open,
            &cut("orders", "inventory", 900, Some(950)),
            end
        ));
        assert!(!clashes(
            &first,
            &cut("orders", "ledger", 150, Some(300)),
            end
        ));
        let (crash, other) = (placed(0).1, placed(1).1);
        assert!(clashes(&crash, &crash, end));
        assert!(!clashes(&crash, &other, end));
    }
}
