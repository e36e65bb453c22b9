//! Trust checks: is a run deterministic, and does a test hold for many
//! seeds?

use std::ops::Range;

use crate::error::{Error, Kind};
use crate::trace::{RenderOptions, Trace};
use crate::Sim;

/// Runs the sim that `build` makes twice and compares the two runs' full
/// renders and JSON event logs byte for byte.
///
/// `build` must make the same scenario each time (same seed, hosts and
/// faults); it is called twice because a run consumes its `Sim`.
///
/// # Errors
/// The first run's error, if it fails; else, on any difference, an error
/// that shows the first differing line of each run (test with
/// [`Error::is_nondeterministic`]).
///
/// ```
/// use grpc_chaos::{check, Sim};
/// let trace = check::check_determinism(|| {
///     let mut sim = Sim::builder().seed(3).build();
///     sim.client("player", |_| async { Ok(()) });
///     sim
/// })?;
/// assert_eq!(trace.seed(), 3);
/// # Ok::<(), grpc_chaos::Error>(())
/// ```
pub fn check_determinism(build: impl Fn() -> Sim) -> Result<Trace, Error> {
    let first = build().run()?;
    let second = build().run()?;
    let everything = RenderOptions::everything();
    let (a, b) = (
        first.render_with(&everything),
        second.render_with(&everything),
    );
    let diff =
        first_difference(&a, &b).or_else(|| first_difference(&first.to_json(), &second.to_json()));
    match diff {
        None => Ok(first),
        Some((line, left, right)) => Err(Error::new(Kind::Nondeterministic { line, left, right })
            .with_run(first.seed(), Some(first))),
    }
}

/// The first line (1-based) where `a` and `b` differ, with both versions.
fn first_difference(a: &str, b: &str) -> Option<(usize, String, String)> {
    let (mut la, mut lb) = (a.lines(), b.lines());
    for n in 1.. {
        match (la.next(), lb.next()) {
            (None, None) => return None,
            (x, y) if x == y => {}
            (x, y) => {
                let show = |l: Option<&str>| l.unwrap_or("(end of trace)").to_owned();
                return Some((n, show(x), show(y)));
            }
        }
    }
    None
}

/// Whether tokio's internal RNG is seeded from the run's seed.
///
/// That RNG picks which ready branch of a `tokio::select!` is polled first.
/// turmoil seeds it from [`SimBuilder::seed`](crate::SimBuilder::seed) only
/// when tokio is built with `--cfg tokio_unstable`
/// (`RUSTFLAGS="--cfg tokio_unstable"`); otherwise each host's runtime
/// draws a fresh seed and code whose outcome depends on `select!` order can
/// differ between two runs of the same seed. This answers for the flags
/// this crate was built with, which are the flags tokio was built with
/// unless they were set per package.
///
/// The harness does not warn when it is `false`: the catalog and the
/// harness itself do not depend on `select!` order, so every test would
/// print a warning that changes nothing. [`check_determinism`] mentions it
/// when it finds a difference.
pub fn tokio_rng_seeded() -> bool {
    cfg!(tokio_unstable)
}

/// The result of running one test body over many seeds.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SweepReport {
    /// How many seeds ran.
    pub runs: usize,
    /// Each failing seed with its error message, in seed order.
    pub failures: Vec<(u64, String)>,
}

impl SweepReport {
    /// True when every seed passed.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// One line per failing seed, each with the `CHAOS_SEED=<n>` that
    /// replays it.
    pub fn summary(&self) -> String {
        let mut out = format!(
            "{} seeds, {} passed, {} failed",
            self.runs,
            self.runs - self.failures.len(),
            self.failures.len()
        );
        for (seed, error) in &self.failures {
            out.push_str(&format!("\n  CHAOS_SEED={seed}: {error}"));
        }
        out
    }

    /// Panics with [`SweepReport::summary`] when a seed failed, so that a
    /// `#[test]` fails and prints the seeds to replay.
    ///
    /// # Panics
    /// When any seed failed.
    pub fn assert_passed(&self) {
        assert!(self.passed(), "{}", self.summary());
    }
}

/// Runs `body` once per seed in `seeds` and collects the failures.
///
/// `body` builds and runs a scenario with the seed it is given
/// (`Sim::builder().seed(seed)`) and checks its trace. Give the scenario
/// some [`latency_jitter`](crate::SimBuilder::latency_jitter) (or other
/// seeded choices), or every seed is the same run. A test replays one
/// failing seed with `CHAOS_SEED=<n>` when it builds with
/// `Sim::builder()` and no explicit seed.
///
/// To split a long sweep across CI workers, make each range its own test
/// (`sweep(0..250, ..)`, `sweep(250..500, ..)`) and let
/// `cargo nextest run --partition count:1/2` hand them out.
pub fn sweep(seeds: Range<u64>, mut body: impl FnMut(u64) -> Result<(), Error>) -> SweepReport {
    let mut report = SweepReport::default();
    for seed in seeds {
        report.runs += 1;
        if let Err(e) = body(seed) {
            report.failures.push((seed, e.to_string()));
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(first_difference("a\nb\nc", "a\nb\nc"), None);
        assert_eq!(
            first_difference("a\nb\nc", "a\nX\nc"),
            Some((2, "b".into(), "X".into()))
        );
        assert_eq!(
            first_difference("a\nb", "a\nb\nc"),
            Some((3, "(end of trace)".into(), "c".into()))
        );
    }

    #[test]
    fn nondeterminism_points_at_the_readme_and_at_tokio_unstable() {
        let e = Error::new(Kind::Nondeterministic {
            line: 3,
            left: "a".into(),
            right: "b".into(),
        })
        .to_string();
        assert!(
            e.contains("\"Determinism and reproducing failures\""),
            "{e}"
        );
        assert_eq!(
            e.contains("--cfg tokio_unstable"),
            !tokio_rng_seeded(),
            "{e}"
        );
    }

    #[test]
    fn sweep_collects_failing_seeds() {
        let report = sweep(0..10, |seed| {
            if seed % 4 == 1 {
                Err(Error::new(Kind::Misconfigured(format!("odd {seed}"))))
            } else {
                Ok(())
            }
        });
        assert_eq!(report.runs, 10);
        let failed: Vec<u64> = report.failures.iter().map(|(s, _)| *s).collect();
        assert_eq!(failed, [1, 5, 9]);
        assert!(report.summary().contains("CHAOS_SEED=5: odd 5"));
    }
}
