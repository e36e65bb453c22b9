//! The trace of a run: the recorded events, views over them (calls, handler
//! runs), assertions, and renderers.

pub(crate) mod act_words;
mod artifacts;
mod assert;
mod backoff;
mod bounds;
mod chance;
mod codes;
mod fold;
mod hedges;
mod html;
mod json;
mod mermaid;
mod perfetto;
mod render;
mod retries;
mod rows;
mod server_timeouts;
mod slow_polls;
mod stale;
mod stalls;
mod summary;
pub(crate) mod value;
mod views;
mod waits;
mod wire_calls;
mod wire_hops;
mod words;

use crate::recorder::event;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

pub use crate::recorder::slow_polls::{Polled, SlowPoll};
pub use crate::units::fmt_duration;
pub(crate) use artifacts::passed as run_passed;
pub(crate) use artifacts::shown as artifact_shown;
pub(crate) use artifacts::write_with as write_artifacts_with;
pub use artifacts::ARTIFACTS_ENV;
pub(crate) use artifacts::{
    clear_stale_in as clear_stale_artifacts_under, write_in as write_artifacts_in,
};
pub(crate) use artifacts::{forget as forget_last_run, remember as remember_run, running};
pub use assert::{Orphan, Violation, ORPHAN_GRACE};
pub use backoff::QuickRedials;
pub use hedges::{HedgeAttempt, HedgedCall};
pub use mermaid::MermaidOf;
pub use render::{MaskMetadata, RenderOptions};
pub use retries::{AttemptRecord, DecisionRecord, RetriedCall, TICK_TOLERANCE};
pub(crate) use slow_polls::warn as warn_slow_polls;
pub use stale::{StaleKind, StaleWork};
pub use stalls::{Stall, StallEnd, Window};
pub use summary::RunVerdict;
pub(crate) use value::Trace;
pub use views::{Call, CallEnd, HandlerRun, RunEnd};
pub(crate) use waits::open_calls;
pub use words::{finding, PEER_STRING_LIMIT};

use crate::recorder::event::{CallId, Event, RunId};

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

impl Serialize for Trace {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json::Document::of(self).serialize(s)
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

    /// The trace as pretty-printed JSON, with the ids the text uses (`r1`,
    /// `h1`, `c1`) and every event whatever the render options:
    ///
    /// - `seed`, `ended_us` (*simulated* µs), `hosts`;
    /// - the views: `calls` and `handler_runs` (as [`Trace::calls`] and
    ///   [`Trace::handler_runs`], times in `_us`), `findings` (calls whose
    ///   code differs from the spec's, with the rule), `faults_never_fired`
    ///   (`host`, `fault`), `stalls` (as [`Trace::stalls`] with no
    ///   threshold, each with the text's sentence);
    /// - `events`: each with `at_us`, `host`, `event` (its kind in
    ///   snake_case) and its fields, frames as typed data
    ///   ([`FrameDetail`](crate::recorder::event::FrameDetail)).
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The trace as Chrome trace-event JSON, which Perfetto
    /// (<https://ui.perfetto.dev>, "Open trace file") and `chrome://tracing`
    /// open unchanged: one process per host (sorted by name); on it, each
    /// call it made and each handler run it served as a slice (nested
    /// under the run a call was made from, overlapping ones on further
    /// lanes), with a flow arrow from each call to the run that served it;
    /// the frames it sent, and every other event (faults, policies,
    /// connection changes, logs) as instants named in the text's words.
    /// Timestamps (`ts`, `dur`) are *simulated* µs since the start of the
    /// run. Byte-stable for a seed, like every render.
    pub fn to_perfetto(&self) -> String {
        // Plain data with string keys: serializing cannot fail.
        serde_json::to_string(&perfetto::document(self)).unwrap_or_default()
    }

    /// Writes `<dir>/<name>.txt` (the summary, then the default render),
    /// `<dir>/<name>.json` (every event, every frame) and `<dir>/<name>.html`
    /// (the page with the default options: DATA runs folded), creating
    /// `dir`. Returns their paths, by format. The summary at the top of the
    /// text and the page says the run was not judged; give a verdict with
    /// [`Trace::write_with_verdict`].
    ///
    /// ```no_run
    /// # fn show(trace: &grpc_chaos::Trace) -> std::io::Result<()> {
    /// let files = trace.write_to("target/traces", "deadline-chain")?;
    /// println!("open {}", files.html.display());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// Any I/O error creating the directory or writing the files.
    pub fn write_to(&self, dir: impl AsRef<Path>, name: &str) -> std::io::Result<TraceFiles> {
        self.write_files(dir.as_ref(), name, None)
    }

    /// [`Trace::write_to`] with the run's verdict at the top of the `.txt`
    /// and the page: a story's verdict, or what failed (the failure
    /// artifacts of a failed run give its error).
    ///
    /// # Errors
    /// Any I/O error creating the directory or writing the files.
    pub fn write_with_verdict(
        &self,
        dir: impl AsRef<Path>,
        name: &str,
        verdict: &RunVerdict,
    ) -> std::io::Result<TraceFiles> {
        self.write_files(dir.as_ref(), name, Some(verdict))
    }

    fn write_files(
        &self,
        dir: &Path,
        name: &str,
        verdict: Option<&RunVerdict>,
    ) -> std::io::Result<TraceFiles> {
        std::fs::create_dir_all(dir)?;
        let options = RenderOptions::default();
        let txt = dir.join(format!("{name}.txt"));
        let json = dir.join(format!("{name}.json"));
        let html = dir.join(format!("{name}.html"));
        let text = self.render_summary(verdict) + "\n" + &self.render_with(&options);
        std::fs::write(&txt, text)?;
        std::fs::write(&json, self.to_json() + "\n")?;
        std::fs::write(&html, self.render_html_judged(&options, verdict))?;
        Ok(TraceFiles { txt, json, html })
    }
}

/// The files [`Trace::write_to`] wrote, by format. `#[non_exhaustive]`: a
/// format may be added without breaking callers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TraceFiles {
    /// `<dir>/<name>.txt`: [`Trace::render_summary`], a blank line, then
    /// the text render with the default [`RenderOptions`] (DATA runs
    /// folded, connection noise hidden; the JSON has every frame).
    pub txt: PathBuf,
    /// `<dir>/<name>.json`: [`Trace::to_json`].
    pub json: PathBuf,
    /// `<dir>/<name>.html`: the page with the default [`RenderOptions`].
    pub html: PathBuf,
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
