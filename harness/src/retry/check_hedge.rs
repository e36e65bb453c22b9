//! The check of a trace's hedged calls against the `hedgingPolicy` the
//! caller meant to have ([`Trace::assert_hedging_conforms`]); the query it
//! reads ([`Trace::hedged_calls`]) is in `trace/query/hedges.rs`.

use std::time::Duration;

use tonic::Code;

use super::{HedgingPolicy, RetryConfig};
use crate::recorder::event::{Hedge, HedgeStep, HedgeVerdict};
use crate::spec::code_from_name;
use crate::trace::{HedgeAttempt, HedgedCall, Trace, Violation, TICK_TOLERANCE};
use crate::units::fmt_duration;

const RULE: &str = "hedging policy";

const NOTHING_TO_CHECK: &str =
    "no call in this trace was hedged by a recording retry layer, so there is nothing to check. \
The check sees calls made through Host::retry_channel (or a channel wrapped in Host::retry_layer) \
whose method a methodConfig with a hedgingPolicy names";

impl Trace {
    /// Checks every hedged call through a recording retry layer against
    /// `config` (gRFC A6 "Hedging Policy" and "Summary of Retry and Hedging
    /// Logic"), with times measured on the trace:
    ///
    /// - the method has a `hedgingPolicy`; at most `maxAttempts` (capped at
    ///   5) attempts, numbered 1, 2, … in order;
    /// - hedge `k` is sent `hedgingDelay` after hedge `k − 1`, unless an
    ///   attempt ended non-fatally in between: then at that end (or after
    ///   its pushback), and later hedges `hedgingDelay` after it — each on
    ///   time up to [`TICK_TOLERANCE`], never early;
    /// - OK, a fatal code (not in `nonFatalStatusCodes`) or response
    ///   headers win; a non-fatal code never does;
    /// - nothing is sent after a win, a failed call, a pushback stop or a
    ///   refused hedge; at most one attempt wins, and every attempt still
    ///   in flight then is cancelled at that instant, naming the winner;
    /// - a commit to an attempt in flight (its request passed the buffer
    ///   limit, A6 "Memory Management (Buffering)"): nothing sent after it,
    ///   every other attempt in flight cancelled then, naming it, and no
    ///   other attempt wins;
    /// - every attempt that reached a sim server carried
    ///   `grpc-previous-rpc-attempts` = the attempts sent before it: none
    ///   on the original, `k − 1` on hedge `k` (A6 "Exposed Retry
    ///   Metadata"; grpc-java `RetriableStream` sends it on hedges too);
    ///
    /// - with `retryThrottling`: the token bucket of each channel, replayed
    ///   from the trace (−1 per non-fatal or retryable failure or pushback
    ///   stop, +`tokenRatio` per attempt that ended OK, retried and hedged
    ///   calls alike), is above half whenever a hedge was sent.
    ///
    /// # Errors
    /// The first [`Violation`] (rule `hedging policy`), naming the call
    /// (`g2 /tt.v1.Store/Load (player→store)`), the attempt and the numbers;
    /// or one saying there was nothing to check.
    pub fn assert_hedging_conforms(&self, config: &RetryConfig) -> Result<(), Violation> {
        let calls = self.hedged_calls();
        if calls.is_empty() {
            return Err(self.keep(Violation::custom(RULE, NOTHING_TO_CHECK)));
        }
        for call in &calls {
            let Some(policy) = config.hedging_for(&call.path) else {
                let detail = format!(
                    "{}: hedged, but the config has no hedgingPolicy for it",
                    call.label()
                );
                return Err(self.keep(Violation::custom(RULE, detail)));
            };
            check_call(call, policy).map_err(|d| {
                self.keep(Violation::custom(RULE, format!("{}: {d}", call.label())))
            })?;
        }
        self.check_throttling(&self.retried_calls(), config)
            .map_err(|v| self.keep(v))
    }
}

/// Whether a hedged attempt's end took a token: a non-fatal code or a
/// pushback stop, not after response headers (A6 "Throttling").
pub(super) fn takes_token(h: &Hedge, config: &RetryConfig) -> bool {
    let HedgeStep::Ended {
        code,
        committed,
        pushback_ms,
        ..
    } = &h.step
    else {
        return false;
    };
    let code = code.and_then(code_from_name);
    let non_fatal = code.is_some_and(|c| {
        config
            .hedging_for(&h.path)
            .is_some_and(|p| p.is_non_fatal(c))
    });
    !committed && code != Some(Code::Ok) && (pushback_ms.is_some_and(|ms| ms < 0) || non_fatal)
}

fn check_call(call: &HedgedCall, policy: &HedgingPolicy) -> Result<(), String> {
    let max = policy.max_attempts() as usize;
    if call.attempts.len() > max {
        return Err(format!(
            "{} attempts sent, maxAttempts is {max}",
            call.attempts.len()
        ));
    }
    for (i, a) in call.attempts.iter().enumerate() {
        if a.attempt as usize != i + 1 {
            return Err(format!("attempt {} sent in place {}", a.attempt, i + 1));
        }
        check_previous_attempts(a)?;
        check_verdict(a.attempt, a.ended, policy)?;
    }
    for k in 1..call.attempts.len() {
        check_spacing(call, k, policy.hedging_delay())?;
    }
    check_win(call)
}

/// gRFC A6 "Exposed Retry Metadata": hedge `k` tells the server that
/// `k − 1` attempts were sent before it; the original says nothing.
/// Checked only for attempts that reached a sim server's handler layer
/// (which records what arrived).
fn check_previous_attempts(a: &HedgeAttempt) -> Result<(), String> {
    if a.run.is_none() {
        return Ok(());
    }
    let want = a.attempt.checked_sub(1).filter(|n| *n > 0);
    if a.previous_seen == want {
        return Ok(());
    }
    let seen = a.previous_seen.map_or_else(
        || "no grpc-previous-rpc-attempts".to_owned(),
        |n| format!("grpc-previous-rpc-attempts={n}"),
    );
    let want = want.map_or_else(
        || "none (the original attempt)".to_owned(),
        |n| n.to_string(),
    );
    Err(format!(
        "attempt {} reached the server with {seen}; A6 wants {want}",
        a.attempt
    ))
}

/// OK, fatal codes and response headers (no code yet) win; non-fatal don't.
fn check_verdict(
    n: u32,
    ended: Option<(Duration, Option<&'static str>, HedgeVerdict)>,
    policy: &HedgingPolicy,
) -> Result<(), String> {
    let Some((at, code, verdict)) = ended else {
        return Ok(());
    };
    let must_win = match code.and_then(code_from_name) {
        Some(c) => c == Code::Ok || !policy.is_non_fatal(c),
        None => true,
    };
    let won = verdict == HedgeVerdict::Won;
    if must_win != won {
        let code = code.unwrap_or("response headers");
        let want = if must_win {
            "win"
        } else {
            "let the others go on"
        };
        return Err(format!(
            "attempt {n} ended at {} with {code}, which should {want}, but the layer said {verdict:?}",
            fmt_duration(at)
        ));
    }
    Ok(())
}

/// Hedge `k + 1` (index `k`) against the schedule replayed from the trace.
fn check_spacing(call: &HedgedCall, k: usize, delay: Duration) -> Result<(), String> {
    let (prev, this) = (&call.attempts[k - 1], &call.attempts[k]);
    let mut due = Some(prev.started + delay);
    // Ends between the two sends, in log order.
    let mut ends: Vec<_> = call
        .attempts
        .iter()
        .filter_map(|a| Some((a.end_seq?, a.ended?)))
        .filter(|(seq, _)| *seq > prev.start_seq && *seq < this.start_seq)
        .collect();
    ends.sort_by_key(|(seq, _)| *seq);
    for (_, (at, _, verdict)) in ends {
        due = match verdict {
            HedgeVerdict::NextNow => Some(at),
            HedgeVerdict::NextAfter { delay } => Some(at + delay),
            _ => None,
        };
        if due.is_none() {
            return Err(format!(
                "attempt {} was sent at {} after the layer had stopped hedging at {} ({verdict:?})",
                this.attempt,
                fmt_duration(this.started),
                fmt_duration(at)
            ));
        }
    }
    let due = due.unwrap_or_default();
    if this.started < due || this.started > due + TICK_TOLERANCE {
        return Err(format!(
            "attempt {} was sent at {}, but was due at {} (hedgingDelay {} after attempt {}, \
             or at a non-fatal end or its pushback)",
            this.attempt,
            fmt_duration(this.started),
            fmt_duration(due),
            fmt_duration(delay),
            prev.attempt
        ));
    }
    Ok(())
}

/// A commit at the buffer limit (gRFC A6 "Memory Management (Buffering)":
/// "All other currently in-flight attempts will be immediately cancelled,
/// and no subsequent attempts will be started"): nothing sent after it,
/// every other attempt in flight then cancelled at that instant naming the
/// committed one, and no other attempt wins.
fn check_buffer_commit(
    call: &HedgedCall,
    (n, stop, at): (u32, &'static str, Duration),
    winner: Option<u32>,
) -> Result<(), String> {
    let seq = call.committed_seq.unwrap_or(0);
    for a in &call.attempts {
        if a.start_seq > seq {
            return Err(format!(
                "attempt {} was sent at {} after the call committed to attempt {n} ({stop}) at {}",
                a.attempt,
                fmt_duration(a.started),
                fmt_duration(at)
            ));
        }
        let in_flight = a.attempt != n && a.end_seq.is_none_or(|s| s > seq);
        if in_flight && a.cancelled != Some((at, Some(n))) {
            return Err(format!(
                "attempt {} was in flight when the call committed to attempt {n} ({stop}) at {}, \
                 but was not cancelled then",
                a.attempt,
                fmt_duration(at)
            ));
        }
    }
    match winner {
        Some(w) if w != n => Err(format!(
            "attempt {w} won, but the call had committed to attempt {n} ({stop}) at {}",
            fmt_duration(at)
        )),
        _ => Ok(()),
    }
}

/// At most one winner; nothing sent after it or after a refused hedge;
/// every attempt in flight at the win is cancelled then, naming it.
fn check_win(call: &HedgedCall) -> Result<(), String> {
    let winners: Vec<_> = call
        .attempts
        .iter()
        .filter(|a| matches!(a.ended, Some((_, _, HedgeVerdict::Won))))
        .collect();
    if winners.len() > 1 {
        return Err(format!("{} attempts won", winners.len()));
    }
    if let Some((n, stop, at)) = call.not_sent {
        if let Some(late) = call.attempts.iter().find(|a| a.started > at) {
            return Err(format!(
                "attempt {} was sent at {} after hedge {n} was refused ({stop}) at {}",
                late.attempt,
                fmt_duration(late.started),
                fmt_duration(at)
            ));
        }
    }
    if let Some(commit) = call.committed {
        return check_buffer_commit(call, commit, winners.first().map(|w| w.attempt));
    }
    let Some(w) = winners.first() else {
        return Ok(());
    };
    let (won_at, won_seq) = (
        w.ended.map(|e| e.0).unwrap_or_default(),
        w.end_seq.unwrap_or(0),
    );
    for a in &call.attempts {
        if a.start_seq > won_seq {
            return Err(format!(
                "attempt {} was sent at {} after attempt {} won",
                a.attempt,
                fmt_duration(a.started),
                w.attempt
            ));
        }
        let in_flight = a.attempt != w.attempt && a.end_seq.is_none_or(|s| s > won_seq);
        if in_flight && a.cancelled != Some((won_at, Some(w.attempt))) {
            return Err(format!(
                "attempt {} was in flight when attempt {} won at {}, but was not cancelled then",
                a.attempt,
                w.attempt,
                fmt_duration(won_at)
            ));
        }
    }
    Ok(())
}
