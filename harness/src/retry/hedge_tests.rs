use std::time::Duration;

use tonic::Code;

use super::{may_send, on_attempt_end, HedgeDecision, HedgeInput, HedgeStop, NextHedge};
use crate::retry::{Pushback, RetryConfig, Throttler};

const PATH: &str = "/tt.v1.Store/Load";

/// 3 attempts, 50 ms apart, UNAVAILABLE non-fatal; a bucket of 4 tokens.
fn config() -> RetryConfig {
    r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
        "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                          "nonFatalStatusCodes": ["UNAVAILABLE"]}}],
        "retryThrottling": {"maxTokens": 4, "tokenRatio": 0.5}}"#
        .parse()
        .expect("valid")
}

fn input(code: Code, sent: u32, in_flight: u32) -> HedgeInput {
    HedgeInput {
        code,
        headers_received: false,
        pushback: Pushback::Absent,
        sent,
        in_flight,
        stopped: None,
    }
}

fn decide(i: HedgeInput, throttler: Option<&Throttler>) -> HedgeDecision {
    let c = config();
    on_attempt_end(&i, c.hedging_for(PATH).expect("hedged"), throttler)
}

fn bucket() -> Throttler {
    Throttler::new(config().throttling().expect("throttling"))
}

#[test]
fn ok_fatal_and_headers_commit_and_only_failures_take_tokens() {
    let t = bucket();
    assert_eq!(
        decide(input(Code::Ok, 1, 2), Some(&t)),
        HedgeDecision::Commit
    );
    let headers = HedgeInput {
        headers_received: true,
        ..input(Code::Unavailable, 1, 1)
    };
    assert_eq!(decide(headers, Some(&t)), HedgeDecision::Commit);
    // INVALID_ARGUMENT is fatal: it is the call's status, no token taken.
    assert_eq!(
        decide(input(Code::InvalidArgument, 2, 1), Some(&t)),
        HedgeDecision::Commit
    );
    assert_eq!(t.milli_tokens(), 4000);
    // A fatal code with a pushback stop still counts as a failure (A6).
    let fatal_stop = HedgeInput {
        pushback: Pushback::Stop,
        ..input(Code::Internal, 1, 0)
    };
    assert_eq!(decide(fatal_stop, Some(&t)), HedgeDecision::Commit);
    assert_eq!(t.milli_tokens(), 3000);
}

#[test]
fn a_non_fatal_failure_sends_the_next_hedge_at_once() {
    let t = bucket();
    assert_eq!(
        decide(input(Code::Unavailable, 1, 0), Some(&t)),
        HedgeDecision::Continue(NextHedge::Now)
    );
    assert_eq!(t.milli_tokens(), 3000, "a non-fatal failure takes a token");
}

#[test]
fn pushback_delays_or_stops_the_next_hedge() {
    let wait = HedgeInput {
        pushback: Pushback::Wait(Duration::from_millis(200)),
        ..input(Code::Unavailable, 1, 0)
    };
    assert_eq!(
        decide(wait, None),
        HedgeDecision::Continue(NextHedge::After(Duration::from_millis(200)))
    );
    let stop = HedgeInput {
        pushback: Pushback::Stop,
        ..input(Code::Unavailable, 1, 1)
    };
    assert_eq!(
        decide(stop, None),
        HedgeDecision::Continue(NextHedge::Never(HedgeStop::PushbackStop))
    );
    // The same with nothing else in flight ends the call.
    let last = HedgeInput {
        in_flight: 0,
        ..stop
    };
    assert_eq!(
        decide(last, None),
        HedgeDecision::Fail(HedgeStop::PushbackStop)
    );
}

#[test]
fn max_attempts_and_an_earlier_stop_end_hedging() {
    assert_eq!(
        decide(input(Code::Unavailable, 3, 1), None),
        HedgeDecision::Continue(NextHedge::Never(HedgeStop::MaxAttempts))
    );
    assert_eq!(
        decide(input(Code::Unavailable, 3, 0), None),
        HedgeDecision::Fail(HedgeStop::MaxAttempts)
    );
    let stopped = HedgeInput {
        stopped: Some(HedgeStop::Throttled),
        ..input(Code::Unavailable, 2, 0)
    };
    assert_eq!(
        decide(stopped, None),
        HedgeDecision::Fail(HedgeStop::Throttled)
    );
}

#[test]
fn throttling_stops_hedges_at_half_the_tokens() {
    let t = bucket();
    let c = config();
    let policy = c.hedging_for(PATH).expect("hedged");
    assert_eq!(may_send(1, None, policy, Some(&t)), Ok(()));
    // 4 → 3 tokens: still above half.
    assert_eq!(
        decide(input(Code::Unavailable, 1, 0), Some(&t)),
        HedgeDecision::Continue(NextHedge::Now)
    );
    // 3 → 2 = half: throttled, and the timer may not send one either.
    assert_eq!(
        decide(input(Code::Unavailable, 2, 1), Some(&t)),
        HedgeDecision::Continue(NextHedge::Never(HedgeStop::Throttled))
    );
    assert_eq!(
        may_send(2, None, policy, Some(&t)),
        Err(HedgeStop::Throttled)
    );
    assert_eq!(t.milli_tokens(), 2000, "may_send takes no token");
    assert_eq!(may_send(3, None, policy, None), Err(HedgeStop::MaxAttempts));
    assert_eq!(
        may_send(1, Some(HedgeStop::PushbackStop), policy, None),
        Err(HedgeStop::PushbackStop)
    );
}
