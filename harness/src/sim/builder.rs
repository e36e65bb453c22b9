//! Building a [`Sim`]: the knobs of the simulated world and their defaults.

use std::time::Duration;

use super::Sim;

/// Environment variable that sets the seed when the builder was not given
/// one: `CHAOS_SEED=42 cargo test`.
pub const SEED_ENV: &str = "CHAOS_SEED";

/// Environment variable that sets the default latency jitter, in
/// microseconds (`CHAOS_JITTER_US=2000`): how `grpc-chaos sweep` makes the
/// catalog's stories explore interleavings without changing their code.
pub const JITTER_ENV: &str = "CHAOS_JITTER_US";

/// The defaults, all fixed so that a run is the same on every machine.
///
/// | setting | default | why |
/// |---|---|---|
/// | seed | `CHAOS_SEED`, else 0 | reproducible; turmoil's own default is the OS RNG |
/// | duration | 60 s | long enough for keepalive stories at 10 s intervals |
/// | tick | 1 ms | the resolution of simulated time |
/// | link latency | 1 ms, fixed | turmoil's default is random 0–100 ms, too noisy for 500 ms budgets |
/// | latency jitter | `CHAOS_JITTER_US` µs, else 0 | a fixed latency makes every seed the same run; add jitter to explore interleavings |
/// | epoch | 2026-01-01T00:00:00Z | turmoil's default is the wall clock |
pub mod defaults {
    use std::time::Duration;

    /// Seed used when neither `SimBuilder::seed` nor `CHAOS_SEED` is set.
    pub const SEED: u64 = 0;
    /// How long a run may last, *simulated* time.
    pub const DURATION: Duration = Duration::from_secs(60);
    /// How far every host advances per step, *simulated* time.
    pub const TICK: Duration = Duration::from_millis(1);
    /// One-way latency of every link, *simulated* time.
    pub const LATENCY: Duration = Duration::from_millis(1);
    /// The simulated wall clock at the start of a run, seconds since the
    /// Unix epoch (2026-01-01T00:00:00Z).
    pub const EPOCH_SECS: u64 = 1_767_225_600;
}

/// Configures a [`Sim`]. See [`defaults`] for every default and why.
#[derive(Debug, Clone)]
#[must_use]
pub struct SimBuilder {
    seed: Option<u64>,
    duration: Duration,
    tick: Duration,
    latency: Duration,
    jitter: Duration,
}

impl Default for SimBuilder {
    fn default() -> Self {
        Self {
            seed: None,
            duration: defaults::DURATION,
            tick: defaults::TICK,
            latency: defaults::LATENCY,
            jitter: Duration::from_micros(env_u64(JITTER_ENV).unwrap_or(0)),
        }
    }
}

impl SimBuilder {
    /// The seed of the run. Defaults to `CHAOS_SEED` when set, else 0. It
    /// seeds turmoil's RNG and every random choice the harness makes.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// How long the run may last, *simulated* time. Defaults to 60 s. A run
    /// whose clients are still going at this point fails with an error
    /// naming them.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The resolution of simulated time: every host advances by this much
    /// per step. Defaults to 1 ms. Coarser ticks make long idle stories
    /// cheaper in wall time (a 10-minute idle story costs the same number of
    /// steps as 10 minutes of busy traffic) at the price of rounding every
    /// timer and message delivery up to a tick.
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The one-way latency of every link, *simulated* time. Defaults to
    /// 1 ms, fixed (no jitter). Change single links with
    /// [`Fault::link_latency`](crate::Fault::link_latency).
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Adds up to `jitter` (*simulated* time) to each message's latency,
    /// drawn from the run's seed. Defaults to 0: with no jitter every seed
    /// gives the same run, so seed sweeps ([`crate::check::sweep`]) need
    /// some. Each message gets its own draw; turmoil's TCP still delivers
    /// each connection's bytes in order.
    pub fn latency_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// Builds the sim. Reads `CHAOS_SEED` if no seed was given; an
    /// unparsable value is ignored with a warning on stderr.
    pub fn build(self) -> Sim {
        let seed = self.seed.unwrap_or_else(seed_from_env);
        Sim::new(super::Config {
            seed,
            duration: self.duration,
            tick: self.tick.max(Duration::from_micros(1)),
            latency: self.latency,
            jitter: self.jitter,
        })
    }
}

fn seed_from_env() -> u64 {
    env_u64(SEED_ENV).unwrap_or(defaults::SEED)
}

/// An unsigned integer from the environment; an unparsable value is
/// ignored with a warning on stderr.
fn env_u64(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    v.trim().parse().map_or_else(
        |_| {
            eprintln!("grpc-chaos: ignoring {name}={v:?}: not an unsigned integer");
            None
        },
        Some,
    )
}
