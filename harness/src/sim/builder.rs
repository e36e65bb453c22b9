//! Building a [`Sim`]: the knobs of the simulated world and their defaults.

use std::time::Duration;

use super::Sim;
use crate::env::{env_u64, JITTER_ENV, SEED_ENV, SLOW_POLL_ENV};

/// The defaults, all fixed so that a run is the same on every machine.
///
/// | setting | default | why |
/// |---|---|---|
/// | seed | `CHAOS_SEED`, else 0 | reproducible; turmoil's own default is the OS RNG |
/// | duration | 60 s | long enough for keepalive stories at 10 s intervals |
/// | tick | 1 ms | the resolution of simulated time |
/// | link latency | 1 ms, fixed | turmoil's default is random 0–100 ms, too noisy for 500 ms budgets |
/// | settle | 100 ms, or 4 one-way latencies (jitter included) when longer | after the last client returns, cancellations already on the wire still land, two hops deep, so the trace (and the orphan-work check) sees them |
/// | latency jitter | `CHAOS_JITTER_US` µs, else 0 | a fixed latency makes every seed the same run; add jitter to explore interleavings |
/// | epoch | 2026-01-01T00:00:00Z | turmoil's default is the wall clock |
/// | max steps | 10,000,000 | a run ends, even one with `Duration::MAX`: 2.8 simulated hours at a 1 ms tick, about a minute of wall time idle in release |
/// | slow-poll threshold | `CHAOS_SLOW_POLL_MS` ms, else 50 ms, *wall* time | a handler poll that blocks its thread that long is reported (outside the trace, which it cannot change) |
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
    /// How long a run goes on after its last client body returned,
    /// *simulated* time.
    pub const SETTLE: Duration = Duration::from_millis(100);
    /// The simulated wall clock at the start of a run, seconds since the
    /// Unix epoch (2026-01-01T00:00:00Z).
    pub const EPOCH_SECS: u64 = 1_767_225_600;
    /// The most steps (ticks) a run takes. An idle step costs about 4 µs of
    /// wall time in a release build (the README's speed table: ~250
    /// simulated seconds per wall second at a 1 ms tick), more in debug.
    pub const MAX_STEPS: u64 = 10_000_000;
    /// A handler poll that holds its thread longer than this, *wall* time,
    /// is reported ([`SimBuilder::slow_poll_threshold`](super::SimBuilder::slow_poll_threshold)).
    /// Far above what a poll should take (the rule of thumb of Alice Ryhl's
    /// "Async: What is blocking?" is 10 to 100 µs between `.await`s), and
    /// above most pauses a loaded machine gives a thread that does not
    /// block: measured on 2 cores, polls of handlers that never block took
    /// at most 1.6 ms idle, 16 ms beside 3 busy loops and 57 ms beside 7
    /// (2,700 polls each; beside 7, 0.7% of them over 20 ms, none over 50
    /// ms in a second run). A lower threshold names handlers that do
    /// nothing wrong on a busy CI machine.
    pub const SLOW_POLL: Duration = Duration::from_millis(50);
}

/// Configures a [`Sim`]. See [`defaults`] for every default and why.
#[derive(Debug, Clone)]
#[must_use]
pub struct SimBuilder {
    seed: Option<u64>,
    duration: Duration,
    tick: Duration,
    latency: Duration,
    jitter: Option<Duration>,
    settle: Option<Duration>,
    wire_tap: bool,
    max_steps: u64,
    slow_poll: Option<Duration>,
}

impl Default for SimBuilder {
    fn default() -> Self {
        Self {
            seed: None,
            duration: defaults::DURATION,
            tick: defaults::TICK,
            latency: defaults::LATENCY,
            jitter: None,
            settle: None,
            wire_tap: true,
            max_steps: defaults::MAX_STEPS,
            slow_poll: None,
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
    /// naming them and what they wait on. `Duration::MAX` runs until the
    /// clients are done, for at most [`max_steps`](Self::max_steps) ticks;
    /// a duration shorter than one [`tick`](Self::tick), or longer than
    /// `max_steps` ticks, is an error from [`Sim::run`](crate::Sim::run).
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The resolution of simulated time: every host advances by this much
    /// per step. Defaults to 1 ms. Coarser ticks make long idle stories
    /// cheaper in wall time (a 10-minute idle story costs the same number of
    /// steps as 10 minutes of busy traffic) at the price of rounding every
    /// timer and message delivery up to a tick: with a 10 ms tick the 1 ms
    /// link latency becomes 10 ms per hop. A tick below 1 µs (the
    /// resolution of the trace), or one longer than the run's duration or
    /// than 365 days, is an error from [`Sim::run`](crate::Sim::run).
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// The one-way latency of every link, *simulated* time. Defaults to
    /// 1 ms, fixed (no jitter). Change single links with
    /// [`Fault::link_latency`](crate::Fault::link_latency). Latency plus
    /// [jitter](Self::latency_jitter) longer than the run's duration (no
    /// message would arrive), or either longer than 365 days, is an error
    /// from [`Sim::run`](crate::Sim::run).
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// How long the run goes on after the last client body returned,
    /// *simulated* time. Defaults to 100 ms, or to four one-way link
    /// latencies (latency plus jitter) when that is longer: a client that
    /// gives up and returns at once has sent its RST_STREAM, and the trace
    /// should show where it went, two hops down (handlers dropped, or still
    /// working: orphan work). Never past [`SimBuilder::duration`].
    pub fn settle(mut self, settle: Duration) -> Self {
        self.settle = Some(settle);
        self
    }

    /// Adds up to `jitter` (*simulated* time) to each message's latency,
    /// drawn from the run's seed. Defaults to 0: with no jitter every seed
    /// gives the same run, so seed sweeps ([`crate::check::sweep`]) need
    /// some. Each message gets its own draw; turmoil's TCP still delivers
    /// each connection's bytes in order. Given here, it wins over
    /// `CHAOS_JITTER_US`, but a `CHAOS_JITTER_US` that is not a number is
    /// still an error from [`Sim::run`](crate::Sim::run).
    pub fn latency_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = Some(jitter);
        self
    }

    /// Whether the wire tap decodes and records every HTTP/2 frame. Defaults
    /// to `true`. With `false`, hosts write straight to their sockets: the
    /// trace keeps calls, attempts, handler runs, host faults and logs, but
    /// no frames, and a run is cheaper (see the speed table in the README).
    /// Frame faults, injected frames and keepalive policies act through the
    /// tap, so with it off they are an [`Error`](crate::Error) from
    /// [`Sim::run`](crate::Sim::run) that says so.
    pub fn wire_tap(mut self, on: bool) -> Self {
        self.wire_tap = on;
        self
    }

    /// The most steps (one [`tick`](Self::tick) each) the run may take.
    /// Defaults to [`defaults::MAX_STEPS`] (10,000,000). A finite
    /// [`duration`](Self::duration) longer than this many ticks is an error
    /// from [`Sim::run`](crate::Sim::run), so that a typo in a duration
    /// cannot make a test run for hours; with `Duration::MAX` the run stops
    /// after this many steps, with an error naming the clients still
    /// waiting. Raise it for a long story (or coarsen the tick); 0 is an
    /// error.
    pub fn max_steps(mut self, steps: u64) -> Self {
        self.max_steps = steps;
        self
    }

    /// Reports every poll of a handler's future or response body that
    /// holds its thread for longer than `threshold`, *wall* time (measured
    /// with `std::time::Instant`): a handler that blocks
    /// (`std::thread::sleep`, a blocking lock, heavy CPU) takes no
    /// simulated time, so its calls succeed in the trace, while in
    /// production it stalls every task of its tokio worker. Defaults to
    /// `CHAOS_SLOW_POLL_MS` milliseconds when set, else
    /// [`defaults::SLOW_POLL`] (50 ms); `Duration::ZERO` (or
    /// `CHAOS_SLOW_POLL_MS=0`) turns the report off. Given here, it wins
    /// over the variable, but a `CHAOS_SLOW_POLL_MS` that is not a number
    /// is still an error from [`Sim::run`](crate::Sim::run).
    ///
    /// The report is never part of the trace's events, renders or exports,
    /// which stay the same for a seed whatever the machine: the run prints
    /// each slow poll on stderr at its end (host, handler run, method, the
    /// poll's wall time, the simulated instant), and
    /// [`Trace::slow_polls`](crate::Trace::slow_polls) lists them. Polls of
    /// tasks a handler spawns are not timed.
    pub fn slow_poll_threshold(mut self, threshold: Duration) -> Self {
        self.slow_poll = Some(threshold);
        self
    }

    /// Builds the sim. Takes the seed from `CHAOS_SEED` if no seed was
    /// given, the jitter from `CHAOS_JITTER_US` if no jitter was, and the
    /// slow-poll threshold from `CHAOS_SLOW_POLL_MS` if none was; an
    /// unparsable value of a variable read is a misconfiguration
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)) from
    /// [`Sim::run`](crate::Sim::run) that names the variable and its value.
    /// Every variable is checked even when the builder gave its value
    /// ([`seed`](Self::seed), [`latency_jitter`](Self::latency_jitter),
    /// [`slow_poll_threshold`](Self::slow_poll_threshold); a number there
    /// is then ignored): a typo in one must not pass unnoticed.
    pub fn build(self) -> Sim {
        // Every variable is read even when the builder sets its value:
        // a malformed one is a typo to report (the builder only wins over
        // a number).
        let seed = match (self.seed, env_u64(SEED_ENV)) {
            (_, Err(e)) => Err(e),
            (Some(seed), Ok(_)) => Ok(seed),
            (None, Ok(seed)) => Ok(seed.unwrap_or(defaults::SEED)),
        };
        // Jitter from the environment is part of what replays the run.
        let from_env = env_u64(JITTER_ENV);
        let jitter = match (self.jitter, &from_env) {
            (_, Err(e)) => Err(e.clone()),
            (Some(j), Ok(_)) => Ok(j),
            (None, Ok(us)) => Ok(Duration::from_micros(us.unwrap_or(0))),
        };
        let jitter_env = match self.jitter {
            Some(_) => None,
            None => from_env.ok().flatten(),
        };
        let slow_poll = match (self.slow_poll, env_u64(SLOW_POLL_ENV)) {
            (_, Err(e)) => Err(e),
            (Some(t), Ok(_)) => Ok(t),
            (None, Ok(ms)) => Ok(ms.map_or(defaults::SLOW_POLL, Duration::from_millis)),
        };
        let problem = [
            seed.as_ref().err(),
            jitter.as_ref().err(),
            slow_poll.as_ref().err(),
        ]
        .into_iter()
        .flatten()
        .next()
        .cloned();
        let (seed, jitter) = (seed.unwrap_or(defaults::SEED), jitter.unwrap_or_default());
        Sim::new(
            super::Config {
                seed,
                duration: self.duration,
                tick: self.tick,
                latency: self.latency,
                jitter,
                jitter_env,
                settle: self.settle.unwrap_or_else(|| {
                    // A cancellation crosses each hop at the link's latency.
                    let hop = self.latency.saturating_add(jitter);
                    defaults::SETTLE.max(hop.saturating_mul(4))
                }),
                wire_tap: self.wire_tap,
                max_steps: self.max_steps,
                slow_poll: slow_poll.ok().filter(|t| !t.is_zero()),
            },
            problem,
        )
    }
}
