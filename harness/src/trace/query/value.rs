//! The trace itself: a run's events and the views made from them. Its
//! fields are the `trace` module's; the type is reached at the crate root
//! only (`grpc_chaos::Trace`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{server_timeouts, views, wire_calls, Call, CallEnd, HandlerRun, RunEnd, SlowPoll};
use crate::recorder::event::{self, CallId, Event, RunId};

/// Everything recorded in one run, in *simulated*-time order.
///
/// Render it with [`Trace::render`] (the text timeline users snapshot) or
/// [`Trace::render_html`] (the same rows as a page for a browser), export
/// it with [`Trace::to_json`], [`Trace::to_perfetto`] (a timeline for
/// Perfetto or `chrome://tracing`) or [`Trace::to_mermaid`] (a sequence
/// diagram for a PR comment), query it ([`Trace::calls`],
/// [`Trace::handler_runs`], [`Trace::attempts`]) or check it
/// ([`Trace::assert_deadline_propagated`], [`Trace::assert_no_orphan_work`]).
/// It serializes as [`Trace::to_json`]'s document.
#[derive(Clone)]
pub struct Trace {
    pub(in crate::trace) seed: u64,
    /// When the run ended, *simulated* time since its start.
    pub(in crate::trace) ended: Duration,
    pub(in crate::trace) hosts: Vec<String>,
    // Shared, not copied, by clones: the failure-artifact keeper holds a
    // clone of every run's trace (see `artifacts`).
    /// An `Arc<Vec>`, not an `Arc<[Event]>`: the recorder's vector is
    /// kept as it is (turning it into a slice would copy the whole log once
    /// more, at the run's end, while both copies are live).
    pub(in crate::trace) events: Arc<Vec<Event>>,
    pub(in crate::trace) calls: Arc<[Call]>,
    pub(in crate::trace) runs: Arc<[HandlerRun]>,
    /// `CHAOS_JITTER_US` when the run's jitter came from it.
    pub(in crate::trace) jitter_env: Option<u64>,
    /// Handler polls that held their thread too long, *wall* time: not
    /// events, in no render or export (see [`Trace::slow_polls`]).
    pub(in crate::trace) slow_polls: Arc<[SlowPoll]>,
    /// Set once this run's trace was written as a failure artifact, in any
    /// clone: one write per failure, whichever way the test then fails.
    pub(in crate::trace) written: Arc<AtomicBool>,
}

impl std::fmt::Debug for Trace {
    // Sizes, not the event log: a trace holds thousands of events, and a
    // failed `unwrap_err` on a run prints this. The events are in
    // `Trace::render` and `Trace::to_json`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("seed", &self.seed)
            .field("ended", &self.ended)
            .field("hosts", &self.hosts)
            .field("events", &self.events.len())
            .field("calls", &self.calls.len())
            .field("runs", &self.runs.len())
            .finish_non_exhaustive()
    }
}

impl Trace {
    pub(crate) fn new(seed: u64, hosts: Vec<String>, events: Vec<Event>, ended: Duration) -> Self {
        let events = server_timeouts::complete(wire_calls::complete(events));
        let (calls, runs) = views::build(&events);
        Self {
            seed,
            ended,
            hosts,
            events: Arc::new(events),
            calls: calls.into(),
            runs: runs.into(),
            jitter_env: None,
            slow_polls: Arc::new([]),
            written: Arc::default(),
        }
    }

    /// Notes that the run took its jitter from `CHAOS_JITTER_US`.
    pub(crate) fn with_jitter_env(mut self, jitter_us: Option<u64>) -> Self {
        self.jitter_env = jitter_us;
        self
    }

    /// Adds the run's slow polls.
    pub(crate) fn with_slow_polls(mut self, polls: Vec<SlowPoll>) -> Self {
        self.slow_polls = polls.into();
        self
    }

    /// The polls of a handler's future or response body that held their
    /// thread for longer than the run's threshold, *wall* time
    /// ([`SimBuilder::slow_poll_threshold`](crate::SimBuilder::slow_poll_threshold),
    /// 50 ms by default), in the order they ended: a handler that blocks
    /// (`std::thread::sleep`, a blocking lock, heavy CPU) is invisible in
    /// simulated time. Wall time is not reproducible, so they are in no
    /// render, export or equality of traces; the run also prints them on
    /// stderr. Empty when the report is off.
    pub fn slow_polls(&self) -> &[SlowPoll] {
        &self.slow_polls
    }

    /// The environment that replays this run: `CHAOS_SEED=<n>`, behind
    /// `CHAOS_JITTER_US=<µs>` when the run took its jitter from there.
    /// (A seed set in code with [`SimBuilder::seed`](crate::SimBuilder::seed)
    /// wins over `CHAOS_SEED`; rerunning then replays it anyway.)
    pub fn replay_env(&self) -> String {
        crate::env::replay_env(self.seed, self.jitter_env)
    }

    /// The seed of the run.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// When the run ended (its last client body returned, or it failed),
    /// *simulated* time since its start. Handlers and calls still going then
    /// are left open in the trace: the end of the run is not a cancellation.
    pub fn ended_at(&self) -> Duration {
        self.ended
    }

    /// Every host of the run, sorted by name.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Every event, in time order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The events that happened on `host`.
    pub fn events_on<'a>(&'a self, host: &'a str) -> impl Iterator<Item = &'a Event> + 'a {
        self.events.iter().filter(move |e| e.host == host)
    }

    /// Every client call, in start order: those made through a recorded
    /// channel, and those the wire tap saw leave a tonic client the harness
    /// does not record ([`Call::seen_on_wire`]).
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// The calls that ended more than `tolerance` after their deadline,
    /// with by how much ([`Call::overran_deadline`]), and the calls still
    /// open when the run ended more than `tolerance` past theirs, with how
    /// far past it the run got (the worst overrun: a call stuck while its
    /// channel reconnects). A tolerance of a tick or two leaves out the
    /// tick the first poll takes.
    pub fn deadline_overruns(&self, tolerance: Duration) -> Vec<(&Call, Duration)> {
        self.calls
            .iter()
            .filter_map(|c| {
                let over = match c.end {
                    CallEnd::Open => self.ended.checked_sub(c.deadline()?),
                    _ => c.overran_deadline(),
                };
                over.map(|d| (c, d))
            })
            .filter(|(_, d)| *d > tolerance)
            .collect()
    }

    /// The calls `host` made.
    pub fn calls_from<'a>(&'a self, host: &'a str) -> impl Iterator<Item = &'a Call> + 'a {
        self.calls.iter().filter(move |c| c.host == host)
    }

    /// One call by id.
    pub fn call(&self, id: CallId) -> Option<&Call> {
        self.calls.iter().find(|c| c.id == id)
    }

    /// Every handler run (one per request that reached a sim server), in
    /// arrival order.
    pub fn handler_runs(&self) -> &[HandlerRun] {
        &self.runs
    }

    /// The handler runs of `host`.
    pub fn runs_on<'a>(&'a self, host: &'a str) -> impl Iterator<Item = &'a HandlerRun> + 'a {
        self.runs.iter().filter(move |r| r.host == host)
    }

    /// One handler run by id.
    pub fn run(&self, id: RunId) -> Option<&HandlerRun> {
        self.runs.iter().find(|r| r.id == id)
    }

    /// How many requests for `path` reached `host`: the server-side attempt
    /// count, retries included.
    pub fn attempts(&self, host: &str, path: &str) -> usize {
        self.runs_on(host).filter(|r| r.path == path).count()
    }
}

/// The handler runs still running on `host`, for the end-of-run report of
/// a server that is still draining.
pub(crate) fn open_runs(events: &[Event], host: &str) -> Vec<crate::recorder::event::OpenRun> {
    let (_, runs) = views::build(events);
    runs.iter()
        .filter(|r| r.host == host && matches!(r.end, RunEnd::Running))
        .map(|r| event::OpenRun {
            run: r.id,
            path: r.path.clone(),
        })
        .collect()
}
