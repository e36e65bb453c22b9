//! The check of a trace's retried calls against the policy the caller
//! meant to have ([`Trace::assert_retries_conform`]). It replays the
//! policy (backoff windows, the token bucket), so it lives beside it (it
//! runs no sim, unlike the checks in `check/`); the query it reads
//! ([`Trace::retried_calls`]) stays with the trace (`trace/query/retries.rs`).

use crate::recorder::event;
use std::collections::HashMap;
use std::time::Duration;

use tonic::Code;

use super::{delay_window, Jitter, RetryConfig, Throttler};
use crate::recorder::event::{CallId, EventKind};
use crate::spec::code_from_name;
use crate::trace::{HedgedCall, RetriedCall, Trace, Violation, TICK_TOLERANCE};
use crate::units::fmt_duration;

const RULE: &str = "retry policy";

/// Why a trace without retried calls fails the check, and what to use.
const NOTHING_TO_CHECK: &str = "no call in this trace went through a recording retry layer, so there is nothing to check. \
The check sees calls made through Host::retry_channel (or a channel wrapped in Host::retry_layer) \
whose method a methodConfig with a retryPolicy names; calls through a plain channel, \
a retry loop of your own or another retry library are separate calls to it (count them with Trace::attempts)";

impl Trace {
    /// Checks every logical call through a recording retry layer against
    /// `config` (gRFC A6 as grpc-go applies it, seed 000 §5), with grpc-go's
    /// jitter. See [`Trace::assert_retries_conform_with`].
    ///
    /// Only calls through a recording layer are checked
    /// ([`Host::retry_channel`](crate::Host::retry_channel), or a channel
    /// wrapped in [`Host::retry_layer`](crate::Host::retry_layer)): a retry
    /// loop of your own makes plain calls, which this cannot tell apart
    /// from separate calls.
    ///
    /// # Errors
    /// The first [`Violation`], as described there; also when the trace
    /// holds no call through a recording retry layer at all.
    pub fn assert_retries_conform(&self, config: &RetryConfig) -> Result<(), Violation> {
        self.assert_retries_conform_with(config, Jitter::GrpcGo)
    }

    /// Checks every logical call through a recording retry layer against
    /// `config` and `jitter`:
    ///
    /// - no method without a `retryPolicy` is retried;
    /// - attempt `k` reaches the server with `grpc-previous-rpc-attempts`
    ///   `k − 1` (when it reaches a sim server and sends the header);
    /// - attempts ≤ `maxAttempts` (capped at 5);
    /// - an attempt is retried only after a code in `retryableStatusCodes`,
    ///   never after response headers (a committed call), never after a
    ///   negative `grpc-retry-pushback-ms`;
    /// - the measured delay before each retry is what the layer said it
    ///   would wait (up to [`TICK_TOLERANCE`] late), and that is the pushback exactly, or
    ///   inside the backoff window for its exponent `n` (retries since the
    ///   last pushback, [`delay_window`]), up to [`TICK_TOLERANCE`] late;
    /// - with a `grpc-timeout` on the first attempt: no attempt starts at or
    ///   after the deadline, each carries at most the budget left (+1 ms for
    ///   the wire's rounding up), and the call ends by the deadline (+ a tick).
    ///
    /// - with `retryThrottling`: the token bucket of each channel (calling
    ///   host → called host), replayed from the trace in grpc-go's order
    ///   (−1 per retryable failure or pushback stop, +`tokenRatio` per
    ///   attempt that ended OK; a hedged call's non-fatal failures and
    ///   successes too, as they share the bucket), is above half whenever
    ///   the layer retried.
    ///   Calls of methods without a `retryPolicy` are not in the layer's
    ///   events, so their successes are missing from the replay.
    ///
    /// # Errors
    /// A [`Violation`] (rule `retry policy`) naming the logical call (`g2
    /// /tt.v1.Store/Save (player→store)`), the attempt, the rule and the
    /// numbers; or, when the trace holds no call through a recording retry
    /// layer, one that says so: a check with nothing to check would pass
    /// anything.
    pub fn assert_retries_conform_with(
        &self,
        config: &RetryConfig,
        jitter: Jitter,
    ) -> Result<(), Violation> {
        self.check_retries(config, jitter).map_err(|v| self.keep(v))
    }

    fn check_retries(&self, config: &RetryConfig, jitter: Jitter) -> Result<(), Violation> {
        let calls = self.retried_calls();
        if calls.is_empty() {
            return Err(Violation::custom(RULE, NOTHING_TO_CHECK));
        }
        for call in &calls {
            check_call(call, config, jitter)
                .map_err(|detail| Violation::custom(RULE, format!("{}: {detail}", call.label())))?;
        }
        self.check_throttling(&calls, config)
    }

    /// Replays each channel's token bucket over the trace (see
    /// [`Trace::assert_retries_conform_with`]), hedged calls included: they
    /// share the bucket (gRFC A6 "Throttling Retry Attempts and Hedged
    /// RPCs").
    pub(super) fn check_throttling(
        &self,
        calls: &[RetriedCall],
        config: &RetryConfig,
    ) -> Result<(), Violation> {
        let Some(policy) = config.throttling() else {
            return Ok(());
        };
        let by_group: HashMap<u32, &RetriedCall> = calls.iter().map(|c| (c.group, c)).collect();
        let by_call: HashMap<CallId, &RetriedCall> = calls
            .iter()
            .flat_map(|c| c.attempts.iter().filter_map(move |a| Some((a.call?, c))))
            .collect();
        let hedged = self.hedged_calls();
        let hedged_by_group: HashMap<u32, &HedgedCall> =
            hedged.iter().map(|c| (c.group, c)).collect();
        let hedged_by_call: HashMap<CallId, (&str, &str)> = hedged
            .iter()
            .flat_map(|c| {
                let channel = (c.host.as_str(), c.target.as_str());
                c.attempts
                    .iter()
                    .filter_map(move |a| Some((a.call?, channel)))
            })
            .collect();
        let mut buckets: HashMap<(&str, &str), Throttler> = HashMap::new();
        for e in self.events() {
            match &e.kind {
                EventKind::Hedge(h) => {
                    let Some(call) = hedged_by_group.get(&h.group) else {
                        continue;
                    };
                    let t = buckets
                        .entry((call.host.as_str(), call.target.as_str()))
                        .or_insert_with(|| Throttler::new(policy));
                    if super::check_hedge::takes_token(h, config) {
                        t.throttle();
                    }
                }
                EventKind::RetryAttempt(a) if a.hedged && a.attempt > 1 => {
                    let Some(call) = hedged_by_group.get(&a.group) else {
                        continue;
                    };
                    let t = buckets
                        .entry((call.host.as_str(), call.target.as_str()))
                        .or_insert_with(|| Throttler::new(policy));
                    if t.is_throttled() {
                        return Err(Violation::custom(
                            RULE,
                            format!(
                                "{}: hedge {} was sent at {}, but the channel's retry tokens were then at {} of {} (no hedge at or below half)",
                                call.label(),
                                a.attempt,
                                fmt_duration(e.at()),
                                t.tokens(),
                                policy.max_tokens()
                            ),
                        ));
                    }
                }
                EventKind::CallEnded { call, outcome, .. }
                    if outcome.is_ok() && hedged_by_call.contains_key(call) =>
                {
                    if let Some(channel) = hedged_by_call.get(call) {
                        buckets
                            .entry(*channel)
                            .or_insert_with(|| Throttler::new(policy))
                            .successful_rpc();
                    }
                }
                EventKind::RetryDecision(retry_decision) => {
                    let event::RetryDecision {
                        group,
                        path,
                        attempt,
                        code,
                        committed,
                        pushback_ms,
                        retry_in,
                        ..
                    } = &**retry_decision;
                    let Some(call) = by_group.get(group) else {
                        continue;
                    };
                    let code = code.and_then(code_from_name);
                    let retryable = code.is_some_and(|c| {
                        c != Code::Ok && config.policy_for(path).is_some_and(|p| p.is_retryable(c))
                    });
                    let takes = !committed
                        && code != Some(Code::Ok)
                        && (pushback_ms.is_some_and(|ms| ms < 0) || retryable);
                    if !takes {
                        continue;
                    }
                    let t = buckets
                        .entry((call.host.as_str(), call.target.as_str()))
                        .or_insert_with(|| Throttler::new(policy));
                    if t.throttle() && retry_in.is_some() {
                        return Err(Violation::custom(
                            RULE,
                            format!(
                                "{}: attempt {attempt} ended at {} and the layer retried, but the channel's retry tokens were then at {} of {} (throttled at or below half)",
                                call.label(),
                                fmt_duration(e.at()),
                                t.tokens(),
                                policy.max_tokens()
                            ),
                        ));
                    }
                }
                EventKind::CallEnded { call, outcome, .. } if outcome.is_ok() => {
                    if let Some(c) = by_call.get(call) {
                        buckets
                            .entry((c.host.as_str(), c.target.as_str()))
                            .or_insert_with(|| Throttler::new(policy))
                            .successful_rpc();
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}

fn check_call(call: &RetriedCall, config: &RetryConfig, jitter: Jitter) -> Result<(), String> {
    let policy = config.policy_for(&call.path);
    let Some(first) = call.attempts.first() else {
        return Ok(());
    };
    let deadline = first.timeout.map(|t| first.started + t);
    let Some(policy) = policy else {
        return match call.attempts.get(1) {
            Some(a) => Err(format!(
                "attempt {} started but the method has no retryPolicy",
                a.attempt
            )),
            None => Ok(()),
        };
    };
    let max = policy.max_attempts();
    let mut n = 0u32;
    for (k, a) in call.attempts.iter().enumerate() {
        let number = u32::try_from(k + 1).unwrap_or(u32::MAX);
        if number > max {
            return Err(format!(
                "attempt {number} started but maxAttempts is {max} (requested {})",
                policy.requested_max_attempts()
            ));
        }
        if let Some(d) = deadline {
            if a.started >= d {
                return Err(format!(
                    "attempt {number} started at {} at or after the deadline at {}",
                    fmt_duration(a.started),
                    fmt_duration(d)
                ));
            }
            if let Some(t) = a.timeout {
                let left = d - a.started;
                if t > left + Duration::from_millis(1) {
                    return Err(format!(
                        "attempt {number} carried grpc-timeout={} but only {} was left",
                        fmt_duration(t),
                        fmt_duration(left)
                    ));
                }
            }
        }
        match (a.run, a.previous_seen) {
            (_, Some(seen)) if seen + 1 != number => {
                return Err(format!(
                    "attempt {number} reached the server with grpc-previous-rpc-attempts={seen}"
                ));
            }
            // A6 "Exposed Retry Metadata": every retry carries the header.
            (Some(run), None) if number > 1 => {
                return Err(format!(
                    "attempt {number} reached the server ({run}) without grpc-previous-rpc-attempts"
                ));
            }
            _ => {}
        }
        if k == 0 {
            continue;
        }
        let prev = &call.attempts[k - 1];
        let Some(dec) = &prev.decision else {
            return Err(format!(
                "attempt {number} started before attempt {} ended",
                number - 1
            ));
        };
        let code = dec.code.unwrap_or("UNKNOWN");
        let retryable =
            code_from_name(code).is_some_and(|c| c != Code::Ok && policy.is_retryable(c));
        if dec.committed {
            return Err(format!(
                "attempt {number} started after attempt {} received response headers (committed)",
                number - 1
            ));
        }
        if !retryable {
            return Err(format!(
                "attempt {number} started after attempt {} ended {code}, which is not in retryableStatusCodes",
                number - 1
            ));
        }
        let measured = a.started.saturating_sub(dec.at);
        if let Some(said) = dec.retry_in {
            // The layer must wait what it said it would (to the next tick).
            if measured < said || measured > said + TICK_TOLERANCE {
                return Err(format!(
                    "attempt {number} started {} after attempt {} ended, but the layer said it would wait {}",
                    fmt_duration(measured),
                    number - 1,
                    fmt_duration(said)
                ));
            }
        }
        match dec.pushback_ms {
            Some(ms) if ms < 0 => {
                return Err(format!(
                    "attempt {number} started after attempt {} carried grpc-retry-pushback-ms={ms} (stop)",
                    number - 1
                ))
            }
            Some(ms) => {
                let want = Duration::from_millis(ms.unsigned_abs());
                if measured < want || measured > want + TICK_TOLERANCE {
                    return Err(format!(
                        "attempt {number} started {} after attempt {} ended; its pushback asked for {}",
                        fmt_duration(measured),
                        number - 1,
                        fmt_duration(want)
                    ));
                }
                n = 0;
            }
            None => {
                let w = delay_window(policy, jitter, n);
                if measured < w.lo || measured >= w.hi + TICK_TOLERANCE {
                    return Err(format!(
                        "attempt {number} started {} after attempt {} ended; backoff n={n} allows [{}, {})",
                        fmt_duration(measured),
                        number - 1,
                        fmt_duration(w.lo),
                        fmt_duration(w.hi)
                    ));
                }
                n += 1;
            }
        }
    }
    if let (Some(d), Some(end)) = (deadline, call.ended_at()) {
        if end > d + TICK_TOLERANCE {
            return Err(format!(
                "the call ended at {}, after its deadline at {}",
                fmt_duration(end),
                fmt_duration(d)
            ));
        }
    }
    Ok(())
}
