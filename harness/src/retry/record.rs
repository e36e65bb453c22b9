//! The observer [`Host::retry_channel`](crate::Host::retry_channel) installs:
//! writes each attempt and each decision of a retry layer into the trace.

use crate::recorder::event;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::decide::{Decision, Pushback, RetryReason};
use super::event::{AttemptEvent, AttemptEventKind, AttemptOutcome, Observer};
use crate::recorder::event::{EventKind, HostName};
use crate::recorder::Recorder;
use crate::spec::code_name;

/// Key under which the recorder counts logical calls (a host name no
/// turmoil host can have, so it never meets a handler's request count).
const GROUP_COUNTER: &str = "\u{0}retry-groups";

/// Per layer: the trace's group id of each open call, and how its last
/// attempt ended.
#[derive(Default)]
struct Open {
    calls: HashMap<u64, (u32, Option<AttemptOutcome>)>,
    /// Hedged calls: attempts in flight, and whether the call has ended.
    /// Its group is forgotten once both say so (the losers' cancellations
    /// come after the winner's end).
    hedged: HashMap<u64, (u32, bool)>,
}

/// An observer recording into `recorder`, on host `host`, for calls to
/// `target`.
pub(crate) fn recording_observer(
    recorder: Arc<Recorder>,
    host: Arc<str>,
    target: Arc<str>,
) -> Observer {
    let open = Mutex::new(Open::default());
    Arc::new(move |event: &AttemptEvent| {
        let mut open = open.lock().unwrap_or_else(|p| p.into_inner());
        let entry = open.calls.entry(event.call).or_insert_with(|| {
            // Numbered in order of first attempt across the whole run.
            (
                recorder.count_request(HostName::new(GROUP_COUNTER), ""),
                None,
            )
        });
        let group = entry.0;
        match &event.kind {
            AttemptEventKind::Started {
                delay_before,
                hedged,
                next_hedge_in,
            } => {
                if *hedged {
                    open.hedged.entry(event.call).or_default().0 += 1;
                }
                if let Some(d) = next_hedge_in {
                    // The hedging timer is one the run's no-progress rule
                    // must sit out, as a backoff is.
                    recorder.timer_at(recorder.now().saturating_add(*d));
                }
                recorder.push(
                    &host,
                    EventKind::RetryAttempt(Box::new(event::RetryAttempt {
                        group,
                        target: (&target).into(),
                        path: event.path.to_string(),
                        attempt: event.attempt,
                        delay: *delay_before,
                        hedged: *hedged,
                    })),
                )
            }
            AttemptEventKind::Ended(outcome) => entry.1 = Some(*outcome),
            AttemptEventKind::Hedged(_)
            | AttemptEventKind::Cancelled { .. }
            | AttemptEventKind::Committed(_)
            | AttemptEventKind::HedgeNotSent(_) => {
                let outcome = match event.kind {
                    AttemptEventKind::Hedged(_) => entry.1.take(),
                    _ => None,
                };
                let Some((step, ends)) = super::record_hedge::step(&event.kind, outcome) else {
                    return;
                };
                if let event::HedgeStep::Ended {
                    verdict: event::HedgeVerdict::NextAfter { delay },
                    ..
                } = &step
                {
                    recorder.timer_at(recorder.now().saturating_add(*delay));
                }
                recorder.push(
                    &host,
                    EventKind::Hedge(Box::new(event::Hedge {
                        group,
                        path: event.path.to_string(),
                        attempt: event.attempt,
                        step,
                    })),
                );
                let not_sent = matches!(event.kind, AttemptEventKind::HedgeNotSent(_));
                let committed = matches!(event.kind, AttemptEventKind::Committed(_));
                let live = open.hedged.entry(event.call).or_default();
                if !not_sent && !committed {
                    // An end or a cancellation: one attempt fewer in flight.
                    live.0 = live.0.saturating_sub(1);
                }
                // A refused hedge with nothing in flight ends the call too.
                live.1 |= ends || (not_sent && live.0 == 0);
                if live.1 && live.0 == 0 {
                    open.hedged.remove(&event.call);
                    open.calls.remove(&event.call);
                }
            }
            AttemptEventKind::Decided(decision) => {
                let outcome = entry.1.take();
                let (retry_in, backoff_n, stop) = match decision {
                    Decision::Retry { delay, reason } => {
                        // The backoff is a timer the run's no-progress
                        // rule must sit out.
                        recorder.timer_at(recorder.now().saturating_add(*delay));
                        let n = match reason {
                            RetryReason::Backoff { n } => Some(*n),
                            RetryReason::Pushback { .. } => None,
                        };
                        (Some(*delay), n, None)
                    }
                    Decision::Stop(rule) => (None, None, Some(rule.as_str())),
                };
                let pushback_ms = pushback_ms(outcome);
                recorder.push(
                    &host,
                    EventKind::RetryDecision(Box::new(event::RetryDecision {
                        group,
                        path: event.path.to_string(),
                        attempt: event.attempt,
                        outcome: outcome.map_or_else(|| "ended".to_owned(), |o| o.to_string()),
                        code: outcome.and_then(|o| o.code()).map(code_name),
                        committed: matches!(outcome, Some(AttemptOutcome::Headers)),
                        pushback_ms,
                        retry_in,
                        backoff_n,
                        stop,
                    })),
                );
                if stop.is_some() {
                    open.calls.remove(&event.call);
                }
            }
        }
    })
}

/// The `grpc-retry-pushback-ms` an attempt's end carried, as the trace
/// keeps it: `None` when absent, −1 for a stop.
pub(super) fn pushback_ms(outcome: Option<AttemptOutcome>) -> Option<i64> {
    match outcome {
        Some(AttemptOutcome::TrailersOnly { pushback, .. }) => match pushback {
            Pushback::Absent => None,
            Pushback::Wait(d) => Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            Pushback::Stop => Some(-1),
        },
        _ => None,
    }
}

/// The seed of the layer on `host`'s channel to `target`: the run's seed
/// mixed with both names (FNV-1a), so two channels do not draw the same
/// jitter.
pub(crate) fn channel_seed(seed: u64, host: &str, target: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in host.bytes().chain([0]).chain(target.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    seed ^ h
}

#[cfg(test)]
mod tests {
    use super::channel_seed;

    #[test]
    fn channel_seeds_are_fixed_and_differ_per_channel() {
        assert_eq!(
            channel_seed(0, "player", "store"),
            channel_seed(0, "player", "store")
        );
        assert_ne!(
            channel_seed(0, "player", "store"),
            channel_seed(0, "gateway", "store")
        );
        assert_ne!(
            channel_seed(0, "player", "store"),
            channel_seed(1, "player", "store")
        );
        // The separator keeps ("ab", "c") apart from ("a", "bc").
        assert_ne!(channel_seed(0, "ab", "c"), channel_seed(0, "a", "bc"));
    }
}
