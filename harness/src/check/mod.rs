//! Trust checks: is a run deterministic, and does a test hold for many
//! seeds?

mod keepalive;
mod middlebox;
mod sweep;

pub use keepalive::{check_keepalive, KeepaliveCheck, KeepaliveReport, Traffic};
pub use middlebox::{check_middlebox, MiddleboxReport};
pub use sweep::{sweep, SweepReport};

use crate::error::Error;
use crate::sim::Record;
use crate::trace::Trace;
use crate::Sim;

/// The environment that replays a run of `seed` from this process:
/// `CHAOS_SEED=<n>`, behind `CHAOS_JITTER_US=<µs>` when that is set (to a
/// number), as every "reproduce with" hint the harness prints reads.
pub fn replay_env(seed: u64) -> String {
    let jitter = crate::env::env_set(crate::env::JITTER_ENV).and_then(|j| j.trim().parse().ok());
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
    let (Some(a), Some(b)) = (Record::of(&first), Record::of(&second)) else {
        return first; // refused before running: nothing to compare
    };
    let trace = match &first {
        Ok(trace) => Some(trace),
        Err(e) => e.trace(),
    };
    match (a.difference(&b), trace) {
        (Some(diff), Some(trace)) => {
            let run_error = first.as_ref().err().map(Error::what);
            let e = diff.into_error(["first", "second"], run_error);
            Err(crate::sim::run_failed(e, trace.clone()))
        }
        _ => first,
    }
}

pub use crate::env::tokio_rng_seeded;
pub use crate::sim::CANARY_ENV;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    #[test]
    fn nondeterminism_points_at_the_guide_and_at_tokio_unstable() {
        let e = Error::new(Kind::Nondeterministic {
            at: crate::error::Differs::Render,
            line: 3,
            left: "a".into(),
            right: "b".into(),
            sides: ["first", "second"],
            run_error: None,
        })
        .to_string();
        assert!(e.contains("see grpc_chaos::guide::determinism"), "{e}");
        assert_eq!(
            e.contains("--cfg tokio_unstable"),
            !tokio_rng_seeded(),
            "{e}"
        );
    }
}
