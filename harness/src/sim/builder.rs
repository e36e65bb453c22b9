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
/// | no-progress limit | 10 min, `Duration::MAX` runs only | an unbounded run whose clients wait on something that never comes ends in seconds of wall time, not at the step ceiling; longer than the keepalive and connect timers of tonic and h2 the stories use, which the harness cannot see |
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
    pub const EPOCH_SECS: u64 = crate::units::EPOCH_SECS;
    /// The most steps (ticks) a run takes. An idle step costs about 4 µs of
    /// wall time in a release build (CONTRIBUTING.md's speed table: ~250
    /// simulated seconds per wall second at a 1 ms tick), more in debug.
    pub const MAX_STEPS: u64 = 10_000_000;
    /// How long a `duration(Duration::MAX)` run may go without progress
    /// while every client still running waits on a call, *simulated* time
    /// (see `SimBuilder::no_progress_limit`). 10 minutes: 600,000 steps at
    /// the 1 ms tick; a hung call stopped so took 2.6–3.1 s of wall time
    /// in a debug build with the workspace's optimized dependencies
    /// (measured, `tests/tests/faults/no_progress.rs`), where the step ceiling
    /// took 33 s. Longer than the timers of tonic and h2 the stories use,
    /// which the harness cannot see (a keepalive interval of 10 s to a few
    /// minutes plus its timeout, a connect timeout of seconds); the timers
    /// it knows (deadlines, middleboxes' idle timers such as AWS NLB's
    /// 350 s or Envoy's 5 minutes, host faults) are waited for, however
    /// long.
    pub const NO_PROGRESS_LIMIT: Duration = Duration::from_secs(600);
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
    show_credentials: bool,
    max_steps: u64,
    no_progress_limit: Option<Duration>,
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
            show_credentials: false,
            max_steps: defaults::MAX_STEPS,
            no_progress_limit: None,
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
    /// clients are done, for at most [`max_steps`](Self::max_steps) ticks,
    /// and stops early when it makes no progress for
    /// [`no_progress_limit`](Self::no_progress_limit); a duration shorter
    /// than one [`tick`](Self::tick), or longer than `max_steps` ticks, is
    /// an error from [`Sim::run`](crate::Sim::run).
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
    /// no frames, and a run is cheaper (see the speed table in the repository's CONTRIBUTING.md).
    /// Frame faults, injected frames and keepalive policies act through the
    /// tap, so with it off they are an [`Error`](crate::Error) from
    /// [`Sim::run`](crate::Sim::run) that says so.
    pub fn wire_tap(mut self, on: bool) -> Self {
        self.wire_tap = on;
        self
    }

    /// Whether the trace records credentials as sent. Defaults to `false`:
    /// the values of `authorization`, `proxy-authorization`, `cookie`,
    /// `set-cookie` and `x-api-key`
    /// ([`CREDENTIALS`](crate::recorder::event::CREDENTIALS)) are recorded
    /// as `<masked>`, in every render, the JSON and the failure artifacts
    /// (the key stays, so a missing token still shows), and in what a frame
    /// rule's [`FrameView`](crate::fault::FrameView) shows; the bytes sent
    /// are never changed. Field names match in any case. Only these fields
    /// are masked: a token your code logs, puts in an error message or in
    /// `grpc-message` is recorded as it is. Turn it on for a test that
    /// asserts on a token's value, or a frame rule that reads one.
    pub fn show_credentials(mut self, shown: bool) -> Self {
        self.show_credentials = shown;
        self
    }

    /// The most steps (one [`tick`](Self::tick) each) the run may take.
    /// Defaults to [`defaults::MAX_STEPS`] (10,000,000). A finite
    /// [`duration`](Self::duration) longer than this many ticks is an error
    /// from [`Sim::run`](crate::Sim::run), so that a typo in a duration
    /// cannot make a test run for hours; with `Duration::MAX` the run stops
    /// after this many steps, with an error naming the clients still
    /// waiting, when the [no-progress rule](Self::no_progress_limit) did
    /// not stop it earlier (its clients kept something moving, or one had
    /// no call open). Raise it for a long story (or coarsen the tick); 0 is an
    /// error.
    pub fn max_steps(mut self, steps: u64) -> Self {
        self.max_steps = steps;
        self
    }

    /// How long an unbounded run ([`duration`](Self::duration)`(Duration::MAX)`)
    /// may go without progress while its clients wait, *simulated* time.
    /// Defaults to [`defaults::NO_PROGRESS_LIMIT`] (10 minutes).
    /// `Duration::MAX` turns the rule off (the step ceiling ends such a
    /// run, as [`max_steps`](Self::max_steps) says).
    ///
    /// The run stops with an error
    /// ([`Error::is_no_progress`](crate::Error::is_no_progress)) that says
    /// since when nothing moved and what each client waits on (a call with
    /// no deadline to a handler that never answers: the call, the handler,
    /// the fault on it), at the first step where all of these hold:
    ///
    /// - Every client still running has a call open (started, not ended).
    ///   A client with none may be asleep on a timer of its own, which the
    ///   harness cannot see (tokio exposes no timer deadlines), and what it
    ///   does when it wakes (a call, a [`Host::release`](crate::Host::release),
    ///   its return) may be what the others wait for: that run is not
    ///   stalled, however long it sleeps.
    /// - Nothing counted as progress for this long: a frame on a stream
    ///   (HEADERS, DATA, RST_STREAM, a stream's WINDOW_UPDATE) or a GOAWAY;
    ///   a call, retry attempt, handler, fault, host, link or connection
    ///   event, a policy's action, a log line of your code; a message's
    ///   bytes passing a recorded call's body (what shows them with the
    ///   wire tap off); a client body returning. The connection's upkeep
    ///   is not progress: PINGs and their ACKs (a channel with
    ///   `http2_keep_alive_interval` sends them on an idle connection for
    ///   good), SETTINGS, the connection's WINDOW_UPDATE, and a keepalive
    ///   policy's judging of PINGs.
    /// - This long has passed since the last host fault
    ///   ([`Fault::crash`](crate::Fault::crash), restart, partition,
    ///   release, …) was due, and since the last timer of the harness's
    ///   own: a recorded call's deadline (`grpc-timeout`), a handler
    ///   fault's delay, a frame kept back until an instant, a connection
    ///   policy's or middlebox's timer, a partition's `reset_after`, a
    ///   retry's backoff. So a scheduled fault, or a deadline longer than
    ///   the limit, is always waited for.
    ///
    /// What the harness cannot see is cut after this long with nothing
    /// else moving: a timer in tonic or h2 (a keepalive interval plus its
    /// timeout, `Endpoint::connect_timeout`, a server's `timeout`), or in
    /// your code (a handler that sleeps, a client that waits between the
    /// messages of an open stream). Raise the limit for such a story, or
    /// give the run a finite duration. A run with a finite duration always
    /// runs to it (the rule is off): setting this on one, or setting 0, is
    /// an error from [`Sim::run`](crate::Sim::run)
    /// ([`Error::is_misconfigured`](crate::Error::is_misconfigured)).
    pub fn no_progress_limit(mut self, limit: Duration) -> Self {
        self.no_progress_limit = Some(limit);
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
                show_credentials: self.show_credentials,
                max_steps: self.max_steps,
                no_progress_limit: self.no_progress_limit,
                slow_poll: slow_poll.ok().filter(|t| !t.is_zero()),
            },
            problem,
        )
    }
}
