//! The rows of a hedged call (gRFC A6 hedging): each attempt, each step.

use std::time::Duration;

use crate::recorder::event::{self, HedgeStep, HedgeVerdict};
use crate::units::fmt_duration;

/// The row of a hedged call's `RetryAttempt`; `replica`: the replica a
/// balanced channel sent it to (its call's `CallRouted`), named because a
/// hedge may go to the replica that is already slow (nothing steers it
/// elsewhere; see the module docs of [`crate::retry`]).
pub(super) fn attempt_row(
    group: u32,
    path: &str,
    attempt: u32,
    delay: Duration,
    replica: Option<&str>,
) -> String {
    let to = replica.map(|r| format!(" to {r}")).unwrap_or_default();
    if attempt == 1 {
        format!("g{group} hedging: attempt 1 of {path}{to}")
    } else {
        format!(
            "g{group} hedging: hedge {attempt} of {path}{to}, {} after the previous one",
            fmt_duration(delay)
        )
    }
}

/// The row of a `Hedge` event.
pub(super) fn step_row(h: &event::Hedge) -> String {
    let (g, n) = (h.group, h.attempt);
    match &h.step {
        HedgeStep::Ended {
            outcome, verdict, ..
        } => format!("g{g} attempt {n} {outcome} → {}", verdict_words(verdict)),
        HedgeStep::Cancelled {
            winner: Some(w),
            buffer_limit: false,
        } => {
            format!("g{g} attempt {n} cancelled: attempt {w} won (its stream is reset)")
        }
        HedgeStep::Cancelled {
            winner: Some(w),
            buffer_limit: true,
        } => format!(
            "g{g} attempt {n} cancelled: the call committed to attempt {w} (its stream is reset)"
        ),
        HedgeStep::Cancelled { winner: None, .. } => {
            format!("g{g} attempt {n} cancelled: the deadline passed")
        }
        HedgeStep::Committed { stop } => format!(
            "g{g} attempt {n} committed: the request passed the replay buffer ({stop}); \
             the others are cancelled, no more hedges"
        ),
        HedgeStep::NotSent { stop } => format!("g{g} hedge {n} not sent: {stop}"),
    }
}

fn verdict_words(v: &HedgeVerdict) -> String {
    match v {
        HedgeVerdict::Won => {
            "won: the call's response; any others still in flight are cancelled".to_owned()
        }
        HedgeVerdict::NextNow => "non-fatal: next hedge now".to_owned(),
        HedgeVerdict::NextAfter { delay } => {
            format!(
                "non-fatal: next hedge in {} (pushback)",
                fmt_duration(*delay)
            )
        }
        HedgeVerdict::NoMoreHedges { stop } => format!("non-fatal: no more hedges ({stop})"),
        HedgeVerdict::Failed { stop } => format!("call fails: no attempt left ({stop})"),
    }
}
