//! How the recording observer turns a hedged call's layer events into the
//! trace's typed `Hedge` payloads (`record.rs` does the rest).

use super::event::{AttemptEventKind, AttemptOutcome};
use super::hedge::{HedgeDecision, NextHedge};
use super::record::pushback_ms;
use crate::recorder::event::{HedgeStep, HedgeVerdict};
use crate::spec::code_name;

/// The payload step for a `Hedged`, `Cancelled`, `Committed` or `HedgeNotSent` event
/// (`outcome`: how the attempt ended, for `Hedged`), and whether the call
/// ends with it (a win or a failure; cancellations may still follow);
/// `None` for the other kinds.
pub(super) fn step(
    kind: &AttemptEventKind,
    outcome: Option<AttemptOutcome>,
) -> Option<(HedgeStep, bool)> {
    Some(match kind {
        AttemptEventKind::Hedged(decision) => {
            let (verdict, done) = verdict(*decision);
            let step = HedgeStep::Ended {
                outcome: outcome.map_or_else(|| "ended".to_owned(), |o| o.to_string()),
                code: outcome.and_then(|o| o.code()).map(code_name),
                committed: matches!(outcome, Some(AttemptOutcome::Headers)),
                pushback_ms: pushback_ms(outcome),
                verdict,
            };
            (step, done)
        }
        AttemptEventKind::Cancelled {
            winner,
            buffer_limit,
        } => (
            HedgeStep::Cancelled {
                winner: *winner,
                buffer_limit: *buffer_limit,
            },
            false,
        ),
        AttemptEventKind::Committed(stop) => (
            HedgeStep::Committed {
                stop: stop.as_str(),
            },
            false,
        ),
        AttemptEventKind::HedgeNotSent(stop) => (
            HedgeStep::NotSent {
                stop: stop.as_str(),
            },
            false,
        ),
        _ => return None,
    })
}

/// The verdict, and whether it ends the call.
fn verdict(decision: HedgeDecision) -> (HedgeVerdict, bool) {
    match decision {
        HedgeDecision::Commit => (HedgeVerdict::Won, true),
        HedgeDecision::Continue(NextHedge::Now) => (HedgeVerdict::NextNow, false),
        HedgeDecision::Continue(NextHedge::After(delay)) => {
            (HedgeVerdict::NextAfter { delay }, false)
        }
        HedgeDecision::Continue(NextHedge::Never(stop)) => (
            HedgeVerdict::NoMoreHedges {
                stop: stop.as_str(),
            },
            false,
        ),
        HedgeDecision::Fail(stop) => (
            HedgeVerdict::Failed {
                stop: stop.as_str(),
            },
            true,
        ),
    }
}
