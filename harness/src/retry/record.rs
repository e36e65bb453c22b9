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
            AttemptEventKind::Started { delay_before } => recorder.push(
                &host,
                EventKind::RetryAttempt(Box::new(event::RetryAttempt {
                    group,
                    target: (&target).into(),
                    path: event.path.to_string(),
                    attempt: event.attempt,
                    delay: *delay_before,
                })),
            ),
            AttemptEventKind::Ended(outcome) => entry.1 = Some(*outcome),
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
                let pushback_ms = match outcome {
                    Some(AttemptOutcome::TrailersOnly { pushback, .. }) => match pushback {
                        Pushback::Absent => None,
                        Pushback::Wait(d) => Some(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
                        Pushback::Stop => Some(-1),
                    },
                    _ => None,
                };
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
