//! The trace of a run, in three boxes, each importing only from the ones
//! below it (the flow check ranks them so):
//!
//! - the front (this folder's files): the assertions that judge a trace
//!   and the failure artifacts they leave on disk;
//! - `render`: the renderers and every word the trace prints;
//! - `query`: the trace's value and the queries over it.

mod artifacts;
mod assert;
mod bounds;
mod codes;
pub(crate) mod query;
mod render;
mod stale;

pub use crate::recorder::slow_polls::Polled;
pub use crate::units::fmt_duration;
pub(crate) use artifacts::passed as run_passed;
pub(crate) use artifacts::shown as artifact_shown;
pub(crate) use artifacts::write_with as write_artifacts_with;
pub use artifacts::ARTIFACTS_ENV;
pub(crate) use artifacts::{
    clear_stale_in as clear_stale_artifacts_under, write_in as write_artifacts_in,
};
pub(crate) use artifacts::{forget as forget_last_run, remember as remember_run, running};
pub use assert::Violation;
pub(crate) use query::{open_runs, warn_slow_polls, Trace};
pub use query::{
    AttemptRecord, Call, CallEnd, DecisionRecord, HandlerRun, HedgeAttempt, HedgedCall, Orphan,
    QuickRedials, RetriedCall, RunEnd, SlowPoll, Stall, StallEnd, Window, ORPHAN_GRACE,
    TICK_TOLERANCE,
};
pub(crate) use render::{act_words, open_calls};
pub use render::{
    finding, MaskMetadata, MermaidOf, RenderOptions, RunVerdict, TraceFiles, PEER_STRING_LIMIT,
};
pub use stale::{StaleKind, StaleWork};
