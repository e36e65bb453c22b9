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
