//! What the retry layer tells an observer about each attempt.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tonic::Code;

use super::decide::{Decision, Pushback};
use super::hedge::{HedgeDecision, HedgeStop};
use crate::spec::code_name;
use crate::units::fmt_duration;

/// The observer hook: called synchronously, in order, for every
/// [`AttemptEvent`] of every call through the layer. Keep it cheap; it runs
/// inside the call's future.
pub type Observer = Arc<dyn Fn(&AttemptEvent) + Send + Sync>;

/// One step of one call through the retry layer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AttemptEvent {
    /// Which call through this layer (service and its clones) the event is
    /// about: 1 for the first call, 2 for the second …, numbered when the
    /// call starts. Events of calls that overlap in time interleave; this
    /// tells them apart.
    pub call: u64,
    /// The request path, `/package.Service/Method`.
    pub path: Arc<str>,
    /// The attempt this event is about, 1-based (1 is the original call).
    pub attempt: u32,
    /// What happened.
    pub kind: AttemptEventKind,
}

/// What happened to an attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttemptEventKind {
    /// The attempt is about to be sent: emitted once the inner service is
    /// ready, immediately before it is called (nothing else runs in
    /// between), so an observer can pair it with what the inner service
    /// records when called.
    Started {
        /// The delay waited before it (zero for attempt 1); simulated time in
        /// the harness. For a hedge: the time since the previous attempt
        /// was sent.
        delay_before: Duration,
        /// The call is hedged (`hedgingPolicy`): the attempt runs beside the
        /// earlier ones.
        hedged: bool,
        /// Hedged calls: when the next hedge is due if nothing comes first
        /// (`hedgingDelay`); `None` when this is the last one.
        next_hedge_in: Option<Duration>,
    },
    /// The attempt finished.
    Ended(AttemptOutcome),
    /// The retry decision taken after it.
    Decided(Decision),
    /// A hedged call: what the attempt's end means for the call (after its
    /// `Ended`).
    Hedged(HedgeDecision),
    /// A hedged call: the attempt was still in flight when another one won
    /// (`winner`), or when the deadline passed (`None`); it was dropped at
    /// that moment, which makes tonic reset its stream (RST_STREAM CANCEL).
    Cancelled {
        /// The attempt the call committed to.
        winner: Option<u32>,
        /// The call committed to `winner` before it ended, because the
        /// request passed the buffer limit ([`AttemptEventKind::Committed`]);
        /// `false`: `winner`'s response won.
        buffer_limit: bool,
    },
    /// A hedged call committed to this attempt while it was in flight: its
    /// request passed the replay buffer's limit (the reason), so no other
    /// attempt could be replayed; the others are cancelled (a `Cancelled`
    /// each follows) and no hedge is sent any more. The attempt goes on,
    /// and its end is the call's (gRFC A6 "Memory Management (Buffering)").
    Committed(HedgeStop),
    /// A hedged call: hedge number `attempt` was due but not sent, and no
    /// further hedge will be (why).
    HedgeNotSent(HedgeStop),
}

/// How an attempt finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttemptOutcome {
    /// A trailers-only response: the status arrived in the response headers.
    TrailersOnly {
        /// The `grpc-status`.
        code: Code,
        /// The `grpc-retry-pushback-ms` it carried.
        pushback: Pushback,
    },
    /// Response headers without a status: the server answered, the call is
    /// committed and the response is passed on; its status comes later in
    /// the trailers.
    Headers,
    /// The inner service failed without a response (connect error, reset
    /// stream …); `code` is what tonic maps the error to.
    Error {
        /// `tonic::Status::from_error` of the error.
        code: Code,
    },
    /// The call's deadline passed while the attempt was in flight; the
    /// attempt was dropped (its stream cancelled).
    DeadlineExceeded,
}

impl AttemptOutcome {
    /// The attempt's status code, when it is known at this point.
    pub fn code(&self) -> Option<Code> {
        match self {
            AttemptOutcome::TrailersOnly { code, .. } | AttemptOutcome::Error { code } => {
                Some(*code)
            }
            AttemptOutcome::Headers => None,
            AttemptOutcome::DeadlineExceeded => Some(Code::DeadlineExceeded),
        }
    }
}

impl fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptOutcome::TrailersOnly { code, pushback } => {
                write!(f, "trailers-only {}", code_name(*code))?;
                match pushback {
                    Pushback::Absent => Ok(()),
                    Pushback::Wait(d) => write!(f, " pushback={}ms", d.as_millis()),
                    Pushback::Stop => write!(f, " pushback=stop"),
                }
            }
            AttemptOutcome::Headers => f.write_str("response headers (committed)"),
            AttemptOutcome::Error { code } => write!(f, "error {}", code_name(*code)),
            AttemptOutcome::DeadlineExceeded => f.write_str("deadline exceeded in flight"),
        }
    }
}

impl fmt::Display for AttemptEvent {
    /// One stable line: `/tt.v1.Scoreboard/Hit attempt 2 started after 93.117ms`,
    /// `… attempt 2 ended: trailers-only UNAVAILABLE`, `… attempt 2 decided: stop: max_attempts`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} attempt {} ", self.path, self.attempt)?;
        match &self.kind {
            AttemptEventKind::Started {
                delay_before,
                hedged,
                ..
            } => {
                let what = if *hedged { "hedge sent" } else { "started" };
                write!(f, "{what} after {}", fmt_duration(*delay_before))
            }
            AttemptEventKind::Ended(outcome) => write!(f, "ended: {outcome}"),
            AttemptEventKind::Decided(decision) => write!(f, "decided: {decision}"),
            AttemptEventKind::Hedged(decision) => write!(f, "hedging: {decision}"),
            AttemptEventKind::Cancelled {
                winner: Some(w),
                buffer_limit: false,
            } => write!(f, "cancelled: attempt {w} won"),
            AttemptEventKind::Cancelled {
                winner: Some(w),
                buffer_limit: true,
            } => write!(
                f,
                "cancelled: the call committed to attempt {w} (buffer_limit)"
            ),
            AttemptEventKind::Cancelled { winner: None, .. } => {
                f.write_str("cancelled: deadline exceeded")
            }
            AttemptEventKind::Committed(stop) => write!(f, "committed: {stop}"),
            AttemptEventKind::HedgeNotSent(stop) => write!(f, "not sent: {stop}"),
        }
    }
}
