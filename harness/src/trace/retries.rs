//! Retries in a trace: the attempts of each logical call made through a
//! retry layer ([`Host::retry_channel`](crate::Host::retry_channel)), and a
//! check of them against the policy the caller meant to have.
//!
//! Attempts are grouped by the layer's `RetryAttempt` events (one group id,
//! `g1`, `g2`, …, per logical call); each is linked to the recorded call
//! (`rN`) that immediately follows it on the calling host. Times are
//! measured on the trace, not taken from the layer: the delay before an
//! attempt is the *simulated* time from the previous attempt's end (its
//! `RetryDecision`) to its start.

use std::collections::HashMap;
use std::time::Duration;

use tonic::Code;

use super::assert::Violation;
use super::{fmt_duration, Trace};
use crate::recorder::event::{CallId, EventKind, RunId};
use crate::retry::{delay_window, Jitter, RetryConfig, Throttler};
use crate::spec::code_from_name;

/// How much later than drawn a retry may start: simulated time advances in
/// ticks (1 ms by default, [`SimBuilder::tick`](crate::SimBuilder::tick)),
/// so a timer fires at the first tick at or after its instant.
pub const TICK_TOLERANCE: Duration = Duration::from_millis(1);

/// One logical call through a retry layer and its attempts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetriedCall {
    /// The group id (`g1` is 1): numbered in order of first attempt.
    pub group: u32,
    /// The calling host.
    pub host: String,
    /// The called host.
    pub target: String,
    /// The method path.
    pub path: String,
    /// The attempts, in order.
    pub attempts: Vec<AttemptRecord>,
}

/// One attempt of a [`RetriedCall`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// 1 for the original call.
    pub attempt: u32,
    /// The recorded call that carried it.
    pub call: Option<CallId>,
    /// The handler run it reached on the server, if it reached one.
    pub run: Option<RunId>,
    /// The `grpc-previous-rpc-attempts` that run received, if any.
    pub previous_seen: Option<u32>,
    /// When it started, *simulated* time since the start of the run.
    pub started: Duration,
    /// The delay the layer said it waited before it.
    pub claimed_delay: Duration,
    /// The `grpc-timeout` it carried.
    pub timeout: Option<Duration>,
    /// What the layer decided after it, if it ended.
    pub decision: Option<DecisionRecord>,
}

/// A `RetryDecision` event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecisionRecord {
    /// When the attempt ended and the decision was taken.
    pub at: Duration,
    /// How the attempt ended, in the trace's words.
    pub outcome: String,
    /// The attempt's gRPC code name, when known.
    pub code: Option<&'static str>,
    /// Response headers were received: the call was committed.
    pub committed: bool,
    /// `grpc-retry-pushback-ms` (negative: stop).
    pub pushback_ms: Option<i64>,
    /// The delay before the next attempt, when retrying.
    pub retry_in: Option<Duration>,
    /// The rule that stopped the call, when stopping.
    pub stop: Option<&'static str>,
}

impl RetriedCall {
    /// `g2 /tt.v1.Store/Save (player→store)`.
    pub fn label(&self) -> String {
        format!(
            "g{} {} ({}→{})",
            self.group, self.path, self.host, self.target
        )
    }

    /// When the last attempt ended (its decision), if it did.
    pub fn ended_at(&self) -> Option<Duration> {
        self.attempts.last()?.decision.as_ref().map(|d| d.at)
    }

    /// The delays measured between attempts: `delays()[i]` is the time from
    /// the end of attempt `i + 1` to the start of attempt `i + 2`.
    pub fn delays(&self) -> Vec<Duration> {
        self.attempts
            .windows(2)
            .filter_map(|w| {
                let end = w[0].decision.as_ref()?.at;
                Some(w[1].started.saturating_sub(end))
            })
            .collect()
    }
}

const RULE: &str = "retry policy";

/// Why a trace without retried calls fails the check, and what to use.
const NOTHING_TO_CHECK: &str = "no call in this trace went through a recording retry layer, so there is nothing to check. \
The check sees calls made through Host::retry_channel (or a channel wrapped in Host::retry_layer) \
whose method a methodConfig with a retryPolicy names; calls through a plain channel, \
a retry loop of your own or another retry library are separate calls to it (count them with Trace::attempts)";

impl Trace {
    /// Every logical call made through a recording retry layer, in order of
    /// first attempt.
    pub fn retried_calls(&self) -> Vec<RetriedCall> {
        let mut out: Vec<RetriedCall> = Vec::new();
        let mut ix: HashMap<u32, usize> = HashMap::new();
        let runs: HashMap<CallId, RunId> = self
            .runs
            .iter()
            .filter_map(|r| Some((r.call?, r.id)))
            .collect();
        let previous: HashMap<RunId, u32> = self
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::RetryArrived { run, previous, .. } => Some((*run, *previous)),
                _ => None,
            })
            .collect();
        for (i, e) in self.events.iter().enumerate() {
            match &e.kind {
                EventKind::RetryAttempt {
                    group,
                    target,
                    path,
                    attempt,
                    delay,
                } => {
                    // The attempt's own call is the next CallStarted on this
                    // host: the layer records the attempt right before it.
                    let started = self.events[i + 1..]
                        .iter()
                        .take_while(|n| n.at == e.at)
                        .find_map(|n| match &n.kind {
                            EventKind::CallStarted {
                                call,
                                path: p,
                                timeout,
                                ..
                            } if n.host == e.host && p == path => Some((*call, *timeout)),
                            _ => None,
                        });
                    let slot = *ix.entry(*group).or_insert_with(|| {
                        out.push(RetriedCall {
                            group: *group,
                            host: e.host.clone(),
                            target: target.clone(),
                            path: path.clone(),
                            attempts: Vec::new(),
                        });
                        out.len() - 1
                    });
                    out[slot].attempts.push(AttemptRecord {
                        attempt: *attempt,
                        call: started.map(|s| s.0),
                        run: started.and_then(|s| runs.get(&s.0).copied()),
                        previous_seen: started
                            .and_then(|s| runs.get(&s.0))
                            .and_then(|r| previous.get(r).copied()),
                        started: e.at,
                        claimed_delay: *delay,
                        timeout: started.and_then(|s| s.1),
                        decision: None,
                    });
                }
                EventKind::RetryDecision {
                    group,
                    attempt,
                    outcome,
                    code,
                    committed,
                    pushback_ms,
                    retry_in,
                    stop,
                    ..
                } => {
                    let Some(&slot) = ix.get(group) else { continue };
                    if let Some(a) = out[slot]
                        .attempts
                        .iter_mut()
                        .rev()
                        .find(|a| a.attempt == *attempt)
                    {
                        a.decision = Some(DecisionRecord {
                            at: e.at,
                            outcome: outcome.clone(),
                            code: *code,
                            committed: *committed,
                            pushback_ms: *pushback_ms,
                            retry_in: *retry_in,
                            stop: *stop,
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }

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
    ///   attempt that ended OK), is above half whenever the layer retried.
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
    /// [`Trace::assert_retries_conform_with`]).
    fn check_throttling(
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
        let mut buckets: HashMap<(&str, &str), Throttler> = HashMap::new();
        for e in self.events.iter() {
            match &e.kind {
                EventKind::RetryDecision {
                    group,
                    path,
                    attempt,
                    code,
                    committed,
                    pushback_ms,
                    retry_in,
                    ..
                } => {
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
                                fmt_duration(e.at),
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
        if let Some(seen) = a.previous_seen {
            if seen + 1 != number {
                return Err(format!(
                    "attempt {number} reached the server with grpc-previous-rpc-attempts={seen}"
                ));
            }
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
