//! The hedging decisions, as pure functions; [`HedgeDecision`] gives the rules.

use std::fmt;
use std::time::Duration;

use tonic::Code;

use super::config::HedgingPolicy;
use super::decide::Pushback;
use super::throttle::Throttler;

/// What `on_attempt_end` needs to know about the attempt and the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HedgeInput {
    /// The attempt's status code (for response headers, whatever; see
    /// `headers_received`).
    pub code: Code,
    /// The attempt received response headers (not trailers-only).
    pub headers_received: bool,
    /// Its `grpc-retry-pushback-ms`.
    pub pushback: Pushback,
    /// Attempts sent so far, this one included (≥ 1).
    pub sent: u32,
    /// Other attempts of the call still in flight.
    pub in_flight: u32,
    /// Why hedging already stopped for this call, if it did.
    pub stopped: Option<HedgeStop>,
}

/// The verdict on an attempt of a hedged call that ended.
///
/// # The rules
///
/// The hedging decisions, as pure functions: what to do when an attempt of
/// a hedged call ends (`on_attempt_end`) and whether the next hedge may be
/// sent (`may_send`).
///
/// The rules are gRFC A6 "Hedging Policy", "Throttling Retry Attempts and
/// Hedged RPCs", "Pushback" and "Summary of Retry and Hedging Logic" (read,
/// not measured: grpc-go has no hedging to compare with):
///
/// 1. response headers received — the call is committed to this attempt
///    ([`HedgeDecision::Commit`]); the others are cancelled;
/// 2. OK — [`HedgeDecision::Commit`] (the caller reports the success to the
///    token bucket);
/// 3. a fatal code (not in `nonFatalStatusCodes`) — [`HedgeDecision::Commit`]:
///    its status is the call's, the others are cancelled; a pushback stop on
///    it still takes a token;
/// 4. a non-fatal code — take a token (A6 counts non-fatal failures and
///    pushback stops, nothing else); then the next hedge: none after a
///    pushback stop, none at `maxAttempts`, none when the bucket is at or
///    below half after the token, after the pushback's delay for a pushback
///    ≥ 0, else at once (A6 summary item 3: "immediately send next scheduled
///    hedged request");
/// 5. when no further hedge will be sent and no other attempt is in flight,
///    the call ends with this attempt's failure ([`HedgeDecision::Fail`]).
///
/// A hedge due by the timer (every `hedgingDelay` after the last one sent)
/// is sent only while `may_send` allows it: under `maxAttempts`, hedging
/// not stopped, and the bucket above half (A6: "subsequent hedged RPCs will
/// only be sent if token_count is greater than the threshold"). A refused
/// hedge stops the call's hedging; the attempts in flight go on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HedgeDecision {
    /// This attempt's response is the call's: the other attempts are
    /// cancelled and no hedge is sent any more.
    Commit,
    /// A non-fatal failure; the others go on, and the next hedge is `next`.
    Continue(NextHedge),
    /// A non-fatal failure, nothing else in flight and no hedge to come: the
    /// call ends with this attempt's failure, for the reason given.
    Fail(HedgeStop),
}

/// When the next hedge goes after a non-fatal failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NextHedge {
    /// At once; later hedges follow every `hedgingDelay` from it.
    Now,
    /// After the server's pushback (`grpc-retry-pushback-ms` ≥ 0); later
    /// hedges follow every `hedgingDelay` from it.
    After(Duration),
    /// No more hedges for this call.
    Never(HedgeStop),
}

/// Why a hedged call sends no further hedge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeStop {
    /// `maxAttempts` attempts were sent.
    MaxAttempts,
    /// A server's pushback was negative, unparsable or repeated.
    PushbackStop,
    /// The token bucket is at or below half.
    Throttled,
    /// More request bytes were sent than the replay buffer holds.
    BufferLimit,
    /// The call's deadline passed.
    Deadline,
}

impl HedgeStop {
    /// A fixed snake_case word for traces (`"max_attempts"`).
    pub fn as_str(&self) -> &'static str {
        match self {
            HedgeStop::MaxAttempts => "max_attempts",
            HedgeStop::PushbackStop => "pushback_stop",
            HedgeStop::Throttled => "throttled",
            HedgeStop::BufferLimit => "buffer_limit",
            HedgeStop::Deadline => "deadline",
        }
    }
}

impl fmt::Display for HedgeStop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for HedgeDecision {
    /// `commit`, `next hedge now`, `next hedge after 500ms (pushback)`,
    /// `no more hedges: throttled`, `fail: max_attempts`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HedgeDecision::Commit => f.write_str("commit"),
            HedgeDecision::Continue(NextHedge::Now) => f.write_str("next hedge now"),
            HedgeDecision::Continue(NextHedge::After(d)) => {
                write!(f, "next hedge after {}ms (pushback)", d.as_millis())
            }
            HedgeDecision::Continue(NextHedge::Never(stop)) => write!(f, "no more hedges: {stop}"),
            HedgeDecision::Fail(stop) => write!(f, "fail: {stop}"),
        }
    }
}

/// Decides what an ended attempt of a hedged call means for the call.
///
/// Side effect: takes one token from `throttler` for a non-fatal code or a
/// pushback stop (A6 "Throttling"); nothing else.
pub(crate) fn on_attempt_end(
    input: &HedgeInput,
    policy: &HedgingPolicy,
    throttler: Option<&Throttler>,
) -> HedgeDecision {
    if input.headers_received || input.code == Code::Ok {
        return HedgeDecision::Commit;
    }
    let counts_as_failure = policy.is_non_fatal(input.code) || input.pushback == Pushback::Stop;
    let throttled = counts_as_failure && throttler.is_some_and(Throttler::throttle);
    if !policy.is_non_fatal(input.code) {
        return HedgeDecision::Commit;
    }
    let next = match (input.stopped, input.pushback) {
        (Some(stop), _) => NextHedge::Never(stop),
        (None, Pushback::Stop) => NextHedge::Never(HedgeStop::PushbackStop),
        _ if input.sent >= policy.max_attempts() => NextHedge::Never(HedgeStop::MaxAttempts),
        _ if throttled => NextHedge::Never(HedgeStop::Throttled),
        (None, Pushback::Wait(d)) => NextHedge::After(d),
        (None, Pushback::Absent) => NextHedge::Now,
    };
    match next {
        NextHedge::Never(stop) if input.in_flight == 0 => HedgeDecision::Fail(stop),
        next => HedgeDecision::Continue(next),
    }
}

/// Whether hedge number `sent + 1` may be sent now (`sent` ≥ 1 already
/// sent; the original attempt is always sent and never asks).
///
/// # Errors
/// The rule that refuses it, in this order: hedging already stopped
/// (`stopped`), `maxAttempts`, the bucket at or below half. Reads the bucket
/// without taking a token.
pub(crate) fn may_send(
    sent: u32,
    stopped: Option<HedgeStop>,
    policy: &HedgingPolicy,
    throttler: Option<&Throttler>,
) -> Result<(), HedgeStop> {
    if let Some(stop) = stopped {
        return Err(stop);
    }
    if sent >= policy.max_attempts() {
        return Err(HedgeStop::MaxAttempts);
    }
    if throttler.is_some_and(Throttler::is_throttled) {
        return Err(HedgeStop::Throttled);
    }
    Ok(())
}

#[cfg(test)]
#[path = "hedge_tests.rs"]
mod tests;
