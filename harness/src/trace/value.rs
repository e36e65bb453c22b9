//! The trace itself: a run's events and the views made from them. Its
//! fields are the `trace` module's; the type is reached at the crate root
//! only (`grpc_chaos::Trace`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{Call, HandlerRun, SlowPoll};
use crate::recorder::event::Event;

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
    pub(super) seed: u64,
    /// When the run ended, *simulated* time since its start.
    pub(super) ended: Duration,
    pub(super) hosts: Vec<String>,
    // Shared, not copied, by clones: the failure-artifact keeper holds a
    // clone of every run's trace (see `artifacts`).
    /// An `Arc<Vec>`, not an `Arc<[Event]>`: the recorder's vector is
    /// kept as it is (turning it into a slice would copy the whole log once
    /// more, at the run's end, while both copies are live).
    pub(super) events: Arc<Vec<Event>>,
    pub(super) calls: Arc<[Call]>,
    pub(super) runs: Arc<[HandlerRun]>,
    /// `CHAOS_JITTER_US` when the run's jitter came from it.
    pub(super) jitter_env: Option<u64>,
    /// Handler polls that held their thread too long, *wall* time: not
    /// events, in no render or export (see [`Trace::slow_polls`]).
    pub(super) slow_polls: Arc<[SlowPoll]>,
    /// Set once this run's trace was written as a failure artifact, in any
    /// clone: one write per failure, whichever way the test then fails.
    pub(super) written: Arc<AtomicBool>,
}
