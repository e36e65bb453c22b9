//! The rows of a retry layer: attempts, a retry's arrival, the decision
//! after each attempt, a hedged call's steps.

use std::collections::HashMap;

use crate::recorder::event::{self, Event, EventKind};
use crate::units::fmt_duration;

/// The `where` column and text of a retry event; `None` for any other.
/// `hedge_replicas`: the replica each hedged attempt (group, attempt) was
/// balanced to.
pub(super) fn line(
    e: &Event,
    hedge_replicas: &HashMap<(u32, u32), String>,
) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::RetryAttempt(retry_attempt) => {
            let event::RetryAttempt {
                group,
                target,
                path,
                attempt,
                delay,
                hedged,
            } = &**retry_attempt;
            let text = if *hedged {
                super::hedge::attempt_row(
                    *group,
                    path,
                    *attempt,
                    *delay,
                    hedge_replicas.get(&(*group, *attempt)).map(String::as_str),
                )
            } else if *attempt == 1 {
                format!("g{group} retry layer: attempt 1 of {path}")
            } else {
                format!(
                    "g{group} retry layer: attempt {attempt} of {path} after {}",
                    fmt_duration(*delay)
                )
            };
            (format!("{host}→{target}"), text)
        }
        EventKind::RetryArrived {
            run,
            path,
            previous,
        } => (
            host,
            format!("{run} handler {path} is a retry (grpc-previous-rpc-attempts={previous})"),
        ),
        EventKind::Hedge(hedge) => (host, super::hedge::step_row(hedge)),
        EventKind::RetryDecision(retry_decision) => {
            let event::RetryDecision {
                group,
                attempt,
                outcome,
                retry_in,
                backoff_n,
                pushback_ms,
                stop,
                ..
            } = &**retry_decision;
            let decision = match (retry_in, stop) {
                (Some(d), _) => match backoff_n {
                    Some(n) => format!("retry in {} (backoff n={n})", fmt_duration(*d)),
                    None => format!(
                        "retry in {} (pushback {}ms)",
                        fmt_duration(*d),
                        pushback_ms.unwrap_or_default()
                    ),
                },
                (None, Some(rule)) => format!("stop: {rule}"),
                (None, None) => "stop".to_owned(),
            };
            (
                host,
                format!("g{group} attempt {attempt} {outcome} → {decision}"),
            )
        }
        _ => return None,
    })
}
