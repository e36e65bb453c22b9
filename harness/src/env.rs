//! The seed and replay environment: the variables that set a run's seed
//! and jitter, reading them, and the `CHAOS_SEED=<n>` hint every failure
//! prints. A leaf that imports nothing from the crate, so an error, a
//! trace and a sweep report all say how to replay a run without reaching
//! up into the sim or the checks for it.

/// Environment variable that sets the seed when the builder was not given
/// one: `CHAOS_SEED=42 cargo test`.
pub const SEED_ENV: &str = "CHAOS_SEED";

/// Environment variable that sets the default latency jitter, in
/// microseconds (`CHAOS_JITTER_US=2000`): how `grpc-chaos sweep` makes the
/// catalog's stories explore interleavings without changing their code.
pub const JITTER_ENV: &str = "CHAOS_JITTER_US";

/// Environment variable that sets the slow-poll threshold when the builder
/// was not given one, in milliseconds of *wall* time
/// (`CHAOS_SLOW_POLL_MS=100`; `0` turns the report off): see
/// [`SimBuilder::slow_poll_threshold`](crate::SimBuilder::slow_poll_threshold).
pub const SLOW_POLL_ENV: &str = "CHAOS_SLOW_POLL_MS";

/// The environment that replays a run of `seed`: `CHAOS_SEED=<n>`, behind
/// `CHAOS_JITTER_US=<µs>` when the run took its jitter from there (a seed
/// alone would replay it without the jitter, so differently).
pub(crate) fn replay_env(seed: u64, jitter_us: Option<u64>) -> String {
    match jitter_us {
        Some(us) => format!("{JITTER_ENV}={us} {SEED_ENV}={seed}"),
        None => format!("{SEED_ENV}={seed}"),
    }
}

/// The variable `name` when it is set to something: CI templates often set
/// a variable to nothing, and that means unset.
pub(crate) fn env_set(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// An unsigned integer from the environment: `Ok(None)` when unset or
/// empty, an
/// error naming the variable when set to something else (a typo while
/// replaying a failure must not quietly run seed 0).
pub(crate) fn env_u64(name: &str) -> Result<Option<u64>, String> {
    match env_set(name) {
        None => Ok(None),
        Some(v) => v.trim().parse().map(Some).map_err(|e| {
            format!(
                "{name}={v:?} is not an unsigned 64-bit integer ({e}); unset it or give a number"
            )
        }),
    }
}

std::thread_local! {
    /// While a sweep runs a body for a seed on this thread: that seed,
    /// whether a run used it, and the first other seed a run used.
    static SWEPT: std::cell::Cell<Option<(u64, bool, Option<u64>)>> =
        const { std::cell::Cell::new(None) };
}

/// A run of `seed` starts on this thread (for [`watch_seeds`]).
pub(crate) fn note_run_seed(seed: u64) {
    SWEPT.with(|s| {
        if let Some((want, used, other)) = s.get() {
            let other = other.or((seed != want).then_some(seed));
            s.set(Some((want, used || seed == want, other)));
        }
    });
}

/// Runs `body` noting the seeds of the runs it makes on this thread, and
/// returns what it returned with the seed its runs used instead of `seed`:
/// `Some(other)` when runs were made and none used `seed` (a sweep's body
/// that builds its sim without `.seed(seed)` runs the same seed every
/// time, and `CHAOS_SEED=<n>` would not replay what failed).
pub(crate) fn watch_seeds<T>(seed: u64, body: impl FnOnce() -> T) -> (T, Option<u64>) {
    let outer = SWEPT.with(|s| s.replace(Some((seed, false, None))));
    let out = body();
    let seen = SWEPT.with(|s| s.replace(outer));
    let ignored = match seen {
        Some((_, false, other)) => other,
        _ => None,
    };
    (out, ignored)
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
/// print a warning that changes nothing. [`check_determinism`](crate::check::check_determinism) mentions it
/// when it finds a difference.
pub fn tokio_rng_seeded() -> bool {
    cfg!(tokio_unstable)
}
