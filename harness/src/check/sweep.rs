//! One test body over many seeds: every seed runs even when one fails or
//! panics, and each failure comes with the environment that replays it.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::env::{JITTER_ENV, SEED_ENV};
use crate::error::Error;

/// The result of running one test body over many seeds.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SweepReport {
    /// The seeds asked for.
    pub seeds: Range<u64>,
    /// How many seeds ran: all of `seeds`, or under `CHAOS_SEED` the one
    /// it names (none when it is outside `seeds`).
    pub runs: usize,
    /// Each failing seed with its error or panic message, in seed order.
    pub failures: Vec<(u64, String)>,
    /// The seed `CHAOS_SEED` named, when it was set: the sweep replayed
    /// that seed only.
    pub replay: Option<u64>,
    /// `CHAOS_SEED` when it is not a number: nothing ran, and the sweep
    /// failed.
    bad_seed: Option<String>,
    /// `CHAOS_JITTER_US` during the sweep: a seed replays only with it.
    jitter: Option<String>,
    /// Failing seeds whose body ran its sims with another seed, and that
    /// seed: `CHAOS_SEED` does not replay them.
    ignored: Vec<(u64, u64)>,
}

impl SweepReport {
    /// True when no seed failed (and `CHAOS_SEED`, if set, is a number).
    /// A replay of a seed outside [`SweepReport::seeds`] ran nothing and
    /// passes.
    pub fn passed(&self) -> bool {
        self.failures.is_empty() && self.bad_seed.is_none()
    }

    /// A line of counts, then one line per failing seed with its message
    /// and the environment that replays it (`reproduce with
    /// CHAOS_SEED=<n>`, with `CHAOS_JITTER_US` when it was set).
    pub fn summary(&self) -> String {
        let Range { start, end } = self.seeds;
        let failed = self.failures.len();
        let mut out = match (&self.bad_seed, self.replay) {
            (Some(value), _) => format!(
                "{SEED_ENV}={value:?} is not an unsigned integer: no seed of {start}..{end} ran; unset it or give a number"
            ),
            (None, Some(seed)) if self.runs == 0 => format!(
                "{SEED_ENV}={seed} is outside {start}..{end}: no seed of this sweep ran (unset {SEED_ENV} to run them all)"
            ),
            (None, Some(seed)) => format!(
                "{SEED_ENV}={seed}: replayed seed {seed} only of {start}..{end}, {}",
                if failed == 0 { "passed" } else { "failed" }
            ),
            (None, None) => format!(
                "{} seed{}, {} passed, {failed} failed",
                self.runs,
                if self.runs == 1 { "" } else { "s" },
                self.runs - failed
            ),
        };
        for (seed, error) in &self.failures {
            let hint = match self.ignored.iter().find(|(s, _)| s == seed) {
                Some((_, used)) => format!(
                    "not replayable: the body ran its sims with seed {used}, not {seed}; build \
                     them with Sim::builder().seed(seed)"
                ),
                None => format!("reproduce with {}", self.replay_env(*seed)),
            };
            out.push_str(&format!("\n  seed {seed}: {error} ({hint})"));
        }
        out
    }

    /// The environment that replays `seed`: `CHAOS_SEED=<n>`, behind
    /// `CHAOS_JITTER_US=<µs>` when the sweep ran with it set.
    pub fn replay_env(&self, seed: u64) -> String {
        // A jitter that is not a number failed every run before it began.
        let jitter = self.jitter.as_deref().and_then(|j| j.trim().parse().ok());
        crate::env::replay_env(seed, jitter)
    }

    /// Panics with [`SweepReport::summary`] when a seed failed, so that a
    /// `#[test]` fails and prints the seeds to replay.
    ///
    /// # Panics
    /// When any seed failed, or `CHAOS_SEED` is not a number.
    pub fn assert_passed(&self) {
        assert!(self.passed(), "{}", self.summary());
    }
}

/// Runs `body` once per seed in `seeds` and collects the failures.
///
/// `body` builds and runs a scenario with the seed it is given
/// (`Sim::builder().seed(seed)`) and checks its trace. Give the scenario
/// some [`latency_jitter`](crate::SimBuilder::latency_jitter) (or other
/// seeded choices), or every seed is the same run.
///
/// A seed fails when `body` returns an error or panics (a failed
/// `assert!`): the panic is caught, its message becomes that seed's
/// failure, and the other seeds still run. Each failing seed leaves its
/// own trace on disk (`<target>/grpc-chaos/<test name>/<seed>/`, as
/// [`Sim::run`](crate::Sim::run) says); the panic of
/// [`SweepReport::assert_passed`] writes none, so no passing seed's trace
/// stands in for the failure.
///
/// A body whose sims all ran with another seed than the one it was given
/// (a `Sim::builder()` without `.seed(seed)` runs `CHAOS_SEED` or 0 every
/// time) fails that seed, passing or not: every seed would be the same run,
/// and `CHAOS_SEED=<n>` would not replay the failure. Its line says so in
/// place of a replay hint. A body that makes no sim (the example below) is
/// not checked.
///
/// Each failure in [`SweepReport::summary`] ends with `reproduce with
/// CHAOS_SEED=<n>`: with `CHAOS_SEED` set, `sweep` runs that one seed
/// (`CHAOS_SEED=3 cargo test my_sweep`). A seed outside `seeds` runs
/// nothing, and the sweep passes: a sweep split into ranges (below) then
/// replays the seed in the one range that holds it, and the other ranges
/// do not fail for it. The summary says which. A `CHAOS_SEED` that is not
/// a number runs nothing and fails the sweep.
///
/// To split a long sweep across CI workers, make each range its own test
/// (`sweep(0..250, ..)`, `sweep(250..500, ..)`) and let
/// `cargo nextest run --partition count:1/2` hand them out.
///
/// ```
/// use grpc_chaos::check::sweep;
/// let report = sweep(0..4, |seed| {
///     assert!(seed != 2, "seed 2 is bad");
///     Ok(())
/// });
/// if std::env::var("CHAOS_SEED").is_err() {
///     assert_eq!(report.runs, 4);
///     assert_eq!(report.failures[0].0, 2);
///     assert!(report.summary().contains("seed 2: panicked: seed 2 is bad"));
/// }
/// ```
pub fn sweep(seeds: Range<u64>, body: impl FnMut(u64) -> Result<(), Error>) -> SweepReport {
    let env = crate::env::env_set;
    sweep_with(seeds, env(SEED_ENV), env(JITTER_ENV), body)
}

/// [`sweep`] with the environment given: `seed` and `jitter` as
/// `CHAOS_SEED` and `CHAOS_JITTER_US` say.
fn sweep_with(
    seeds: Range<u64>,
    seed: Option<String>,
    jitter: Option<String>,
    mut body: impl FnMut(u64) -> Result<(), Error>,
) -> SweepReport {
    let mut report = SweepReport {
        seeds: seeds.clone(),
        jitter,
        ..SweepReport::default()
    };
    let to_run = match seed.map(|s| s.trim().parse::<u64>().map_err(|_| s)) {
        None => seeds,
        Some(Ok(seed)) => {
            report.replay = Some(seed);
            let only = if seeds.contains(&seed) {
                seed..seed + 1
            } else {
                0..0
            };
            eprintln!("grpc-chaos: sweep of {seeds:?} under {SEED_ENV}={seed}: runs {only:?}");
            only
        }
        Some(Err(bad)) => {
            report.bad_seed = Some(bad);
            0..0
        }
    };
    for seed in to_run {
        report.runs += 1;
        // A panic in this seed's body is about this seed's run, not the last.
        crate::trace::forget_last_run();
        let (outcome, ignored) =
            crate::env::watch_seeds(seed, || catch_unwind(AssertUnwindSafe(|| body(seed))));
        // The sweep prints its own replay hint (or says why there is none),
        // in place of the error's.
        let message = match (outcome, ignored) {
            (Ok(Ok(())), None) => continue,
            (Ok(Ok(())), Some(used)) => format!(
                "every sim of this seed's body ran with seed {used}, none with {seed}: each seed \
                 of the sweep is then the same run"
            ),
            (Ok(Err(e)), _) if e.seed().is_some() => e.message(),
            (Ok(Err(e)), _) => e.to_string(),
            (Err(panic), _) => format!("panicked: {}", crate::units::panic_message(&*panic)),
        };
        if let Some(used) = ignored {
            report.ignored.push((seed, used));
        }
        report.failures.push((seed, message));
    }
    // `assert_passed` panics after the loop: that panic is about the sweep,
    // and the last seed's trace (which may have passed) is not its artifact;
    // each failing seed wrote its own.
    crate::trace::forget_last_run();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    fn odd(seed: u64) -> Result<(), Error> {
        if seed % 4 == 1 {
            Err(Error::new(Kind::Misconfigured(format!("odd {seed}"))))
        } else {
            Ok(())
        }
    }

    #[test]
    fn collects_failing_seeds() {
        let report = sweep_with(0..10, None, None, odd);
        assert_eq!(report.runs, 10);
        let failed: Vec<u64> = report.failures.iter().map(|(s, _)| *s).collect();
        assert_eq!(failed, [1, 5, 9]);
        let summary = report.summary();
        assert!(
            summary.starts_with("10 seeds, 7 passed, 3 failed"),
            "{summary}"
        );
        assert!(
            summary.contains("\n  seed 5: odd 5 (reproduce with CHAOS_SEED=5)"),
            "{summary}"
        );
    }

    /// What `Sim::run` notes for a run of `seed`, without a sim.
    fn ran(seed: u64) {
        crate::env::note_run_seed(seed);
    }

    #[test]
    fn a_body_whose_runs_ignore_its_seed_fails_without_a_replay_hint() {
        let report = sweep_with(0..3, None, None, |seed| {
            ran(0);
            if seed == 2 {
                return Err(Error::new(Kind::Misconfigured("broke".into())));
            }
            Ok(())
        });
        let failed: Vec<u64> = report.failures.iter().map(|(s, _)| *s).collect();
        assert_eq!(failed, [1, 2], "seed 0's runs used seed 0");
        let summary = report.summary();
        assert!(
            summary.contains(
                "\n  seed 1: every sim of this seed's body ran with seed 0, none with 1: each \
                 seed of the sweep is then the same run (not replayable: the body ran its sims \
                 with seed 0, not 1; build them with Sim::builder().seed(seed))"
            ),
            "{summary}"
        );
        assert!(
            summary
                .contains("\n  seed 2: broke (not replayable: the body ran its sims with seed 0"),
            "{summary}"
        );
        assert!(!summary.contains("CHAOS_SEED=2"), "{summary}");
    }

    #[test]
    fn a_body_that_also_runs_other_seeds_is_fine_when_one_run_used_its_own() {
        let report = sweep_with(0..3, None, None, |seed| {
            ran(seed + 100);
            ran(seed);
            Ok(())
        });
        assert!(report.passed(), "{}", report.summary());
        // Outside a sweep nothing is watched.
        ran(7);
        let (_, ignored) = crate::env::watch_seeds(1, || ());
        assert_eq!(ignored, None, "no run in the body, nothing to say");
    }

    #[test]
    fn a_panicking_seed_fails_alone_and_the_sweep_goes_on() {
        let mut ran = Vec::new();
        let report = sweep_with(0..6, None, None, |seed| {
            ran.push(seed);
            assert!(seed != 3, "seed 3 is bad");
            Ok(())
        });
        assert_eq!(ran, [0, 1, 2, 3, 4, 5]);
        assert_eq!(report.runs, 6);
        assert_eq!(report.failures, [(3, "panicked: seed 3 is bad".to_owned())]);
        assert!(!report.passed());
    }

    #[test]
    fn chaos_seed_replays_that_seed_only() {
        let mut ran = Vec::new();
        let report = sweep_with(0..6, Some("3".into()), None, |seed| {
            ran.push(seed);
            odd(seed + 2)
        });
        assert_eq!((ran, report.runs, report.replay), (vec![3], 1, Some(3)));
        let summary = report.summary();
        assert!(
            summary.starts_with("CHAOS_SEED=3: replayed seed 3 only of 0..6, failed"),
            "{summary}"
        );
    }

    #[test]
    fn chaos_seed_outside_the_range_runs_nothing_and_says_so() {
        let report = sweep_with(0..6, Some("30".into()), None, |_| panic!("ran"));
        assert_eq!(report.runs, 0);
        assert!(report.passed());
        let summary = report.summary();
        assert!(
            summary.contains("CHAOS_SEED=30 is outside 0..6"),
            "{summary}"
        );
    }

    #[test]
    fn a_chaos_seed_that_is_not_a_number_fails_the_sweep() {
        let report = sweep_with(0..6, Some("x3".into()), None, |_| panic!("ran"));
        assert_eq!(report.runs, 0);
        assert!(!report.passed());
        assert!(report
            .summary()
            .contains("\"x3\" is not an unsigned integer"));
    }

    #[test]
    fn the_hint_carries_the_jitter_of_the_sweep() {
        let report = sweep_with(0..2, None, Some("2000".into()), odd);
        let summary = report.summary();
        assert!(
            summary.contains("seed 1: odd 1 (reproduce with CHAOS_JITTER_US=2000 CHAOS_SEED=1)"),
            "{summary}"
        );
    }

    #[test]
    fn a_run_error_loses_its_own_hint_for_the_sweeps() {
        let report = sweep_with(0..1, None, None, |seed| {
            let replay = crate::env::replay_env(seed, None);
            Err(Error::new(Kind::Misconfigured("bad".into())).with_run(seed, replay, None, None))
        });
        assert_eq!(report.failures, [(0, "bad".to_owned())]);
    }
}
