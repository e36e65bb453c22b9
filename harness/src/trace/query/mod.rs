//! The trace's value and the queries over it: calls and handler runs
//! built from the events, the calls completed from the wire, retries,
//! hedges, redials, select races, stalls, orphans and slow polls. Data in,
//! data out: the words here are only the `Display` of a query's own
//! results (a stall, a retried call, the slow-poll warning); the trace's
//! rows and pages are the renderers', above, and nothing here imports
//! from them or from the assertions.

pub(super) mod backoff;
pub(super) mod chance;
pub(super) mod hedges;
mod orphans;
mod retries;
mod server_timeouts;
mod slow_polls;
mod stalls;
mod value;
pub(super) mod views;
pub(super) mod wire_calls;
mod wire_hops;

pub use crate::recorder::slow_polls::SlowPoll;
pub use backoff::QuickRedials;
pub use hedges::{HedgeAttempt, HedgedCall};
pub use orphans::{Orphan, ORPHAN_GRACE};
pub use retries::{AttemptRecord, DecisionRecord, RetriedCall, TICK_TOLERANCE};
pub(crate) use slow_polls::warn as warn_slow_polls;
pub use stalls::{Stall, StallEnd, Window};
pub(crate) use value::open_runs;
pub use value::Trace;
pub use views::{Call, CallEnd, HandlerRun, RunEnd};
