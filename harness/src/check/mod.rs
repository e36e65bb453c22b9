//! Trust checks: is a run deterministic, and does a test hold for many
//! seeds?

mod sweep;

pub use sweep::{sweep, SweepReport};

use crate::error::{Error, Kind};
use crate::trace::{RenderOptions, Trace};
use crate::Sim;

/// The environment that replays a run of `seed` from this process:
/// `CHAOS_SEED=<n>`, behind `CHAOS_JITTER_US=<µs>` when that is set (to a
/// number), as every "reproduce with" hint the harness prints reads.
pub fn replay_env(seed: u64) -> String {
    let jitter = crate::env::env_set(crate::JITTER_ENV).and_then(|j| j.trim().parse().ok());
    crate::env::replay_env(seed, jitter)
}

/// Runs the sim that `build` makes twice and compares the two runs' full
/// renders and JSON event logs byte for byte.
///
/// `build` must make the same scenario each time (same seed, hosts and
/// faults); it is called twice because a run consumes its `Sim`.
///
/// # Errors
/// On any difference between the two runs — their traces, or how they
/// ended (passed, or failed with which error) — an error that shows the
/// first differing line of each (test with [`Error::is_nondeterministic`]). Else, when the run
/// fails the same way both times, its error: a failing scenario is
/// checked too, as long as it got far enough to record a trace.
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
    let first = build().run();
    let second = build().run();
    let (Some(a), Some(b)) = (recorded(&first), recorded(&second)) else {
        return first; // refused before running: nothing to compare
    };
    let everything = RenderOptions::everything();
    let diff = first_difference(&a.render_with(&everything), &b.render_with(&everything))
        .or_else(|| first_difference(&a.to_json(), &b.to_json()))
        // A client's error is not in the trace: compare the endings too.
        .or_else(|| {
            let (x, y) = (ending(&first), ending(&second));
            (x != y).then_some((0, x, y))
        });
    match diff {
        None => first,
        Some((line, left, right)) => Err(crate::sim::run_failed(
            Error::new(Kind::Nondeterministic { line, left, right }),
            a.clone(),
        )),
    }
}

/// The trace a run recorded, whether it passed or failed.
fn recorded(run: &Result<Trace, Error>) -> Option<&Trace> {
    match run {
        Ok(trace) => Some(trace),
        Err(e) => e.trace(),
    }
}

/// How a run ended, in words.
fn ending(run: &Result<Trace, Error>) -> String {
    match run {
        Ok(_) => "the run passed".to_owned(),
        Err(e) => format!("the run failed: {}", e.message()),
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

pub use crate::env::tokio_rng_seeded;

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
}
