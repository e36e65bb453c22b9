//! Retry stories (issue 5; seed 000 §5 and §8): every attempt of a call
//! through a gRFC A6 retry layer (`Host::retry_channel`) is a recorded call
//! and a handler run, the layer's decisions are in the trace, and the trace
//! is checked against the policy. Counts and delays are pinned for seed 0.

use std::time::Duration;

use grpc_chaos::retry::{delay_window, Jitter, RetryConfig};
use grpc_chaos::trace::{RenderOptions, RetriedCall, RunEnd};
use grpc_chaos::Trace;
use grpc_chaos_scenarios::catalog;
use grpc_chaos_tests::{ms, story, SEED};

/// Seed 000 §5's policy, as the catalog uses it.
const SEED_POLICY: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

const SAVE: &str = "/tt.v1.Store/Save";
const LOAD: &str = "/tt.v1.Store/Load";

fn ns(n: u64) -> Duration {
    Duration::from_nanos(n)
}

fn policy(json: &str) -> RetryConfig {
    json.parse().expect("valid policy")
}

fn only_call(trace: &Trace) -> RetriedCall {
    let calls = trace.retried_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls.into_iter().next().expect("one call")
}

fn starts(call: &RetriedCall) -> Vec<Duration> {
    call.attempts.iter().map(|a| a.started).collect()
}

fn claimed(call: &RetriedCall) -> Vec<Duration> {
    call.attempts.iter().map(|a| a.claimed_delay).collect()
}

/// The status of the call's last attempt, as the caller saw it.
fn ended(trace: &Trace, call: &RetriedCall) -> Option<&'static str> {
    let id = call.attempts.last()?.call?;
    Some(trace.call(id)?.outcome()?.code)
}

fn stop(call: &RetriedCall) -> Option<&'static str> {
    call.attempts.last()?.decision.as_ref()?.stop
}

#[test]
fn retry_backoff_makes_four_attempts_inside_their_windows() {
    let (trace, report) = story("retry-backoff");
    assert_eq!(
        report.happened,
        "4 attempts, store saw 4 Saves, delays 101ms, 191ms, 337ms; the call ended OK"
    );
    let call = only_call(&trace);
    assert_eq!(
        (call.host.as_str(), call.target.as_str()),
        ("player", "store")
    );
    assert_eq!(call.attempts.len(), 4);
    assert_eq!(starts(&call), [ms(0), ms(104), ms(297), ms(636)]);
    // What the seeded layer drew, and what the trace measured (the next
    // 1 ms tick after the timer's instant).
    assert_eq!(
        claimed(&call),
        [ms(0), ns(100_878_321), ns(190_964_203), ns(336_397_032)]
    );
    assert_eq!(call.delays(), [ms(101), ms(191), ms(337)]);
    let p = policy(SEED_POLICY);
    let p = p.policy_for(SAVE).expect("policy");
    for (n, d) in claimed(&call)[1..].iter().enumerate() {
        let w = delay_window(p, Jitter::GrpcGo, n as u32);
        assert!(w.contains(*d), "n={n}: {d:?} not in {w:?}");
    }
    assert_eq!(
        [w(p, 0), w(p, 1), w(p, 2)],
        [(ms(80), ms(120)), (ms(160), ms(240)), (ms(320), ms(480))]
    );
    // Every attempt is a recorded call that reached its own handler run.
    let runs: Vec<_> = trace.runs_on("store").collect();
    assert_eq!(runs.len(), 4);
    for (a, r) in call.attempts.iter().zip(&runs) {
        assert_eq!(r.call, a.call, "{a:?} {r:?}");
        assert_eq!(a.run, Some(r.id));
    }
    assert_eq!(runs.iter().map(|r| r.nth).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert!(matches!(runs[3].end, RunEnd::Finished { code: "OK", .. }));
    // The server saw each retry's grpc-previous-rpc-attempts.
    assert_eq!(
        call.attempts
            .iter()
            .map(|a| a.previous_seen)
            .collect::<Vec<_>>(),
        [None, Some(1), Some(2), Some(3)]
    );
    assert!(trace
        .render_with(&RenderOptions::rpc_only())
        .contains("h4 handler /tt.v1.Store/Save is a retry (grpc-previous-rpc-attempts=3)"));
    trace
        .assert_retries_conform(&policy(SEED_POLICY))
        .expect("conforms");
    insta::assert_snapshot!(trace.render());
}

fn w(p: &grpc_chaos::retry::RetryPolicy, n: u32) -> (Duration, Duration) {
    let w = delay_window(p, Jitter::GrpcGo, n);
    (w.lo, w.hi)
}

#[test]
fn the_checker_names_call_attempt_rule_and_numbers() {
    let (trace, _) = story("retry-backoff");
    let two = SEED_POLICY.replace("\"maxAttempts\": 4", "\"maxAttempts\": 2");
    let v = trace
        .assert_retries_conform(&policy(&two))
        .expect_err("3 attempts > 2");
    assert_eq!(v.rule(), "retry policy");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 3 started but maxAttempts is 2 (requested 2)"
    );
    let internal_only = SEED_POLICY.replace("[\"UNAVAILABLE\"]", "[\"INTERNAL\"]");
    let v = trace
        .assert_retries_conform(&policy(&internal_only))
        .expect_err("UNAVAILABLE not retryable");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 2 started after attempt 1 ended UNAVAILABLE, which is not in retryableStatusCodes"
    );
    let slow = SEED_POLICY.replace("\"0.1s\"", "\"0.5s\"");
    let v = trace
        .assert_retries_conform(&policy(&slow))
        .expect_err("delay outside the window");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 2 started 101ms after attempt 1 ended; backoff n=0 allows [400ms, 600ms)"
    );
    let none = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Scoreboard"}],
      "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                      "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
    let v = trace
        .assert_retries_conform(&policy(none))
        .expect_err("no policy for Save");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 2 started but the method has no retryPolicy"
    );
}

#[test]
fn retry_not_retryable_makes_one_attempt() {
    let (trace, report) = story("retry-not-retryable");
    assert_eq!(
        report.happened,
        "1 attempt, store saw 1 Save, the layer stopped (not_retryable_code), the caller saw INTERNAL"
    );
    let call = only_call(&trace);
    assert_eq!(call.attempts.len(), 1);
    assert_eq!(stop(&call), Some("not_retryable_code"));
    assert_eq!(trace.attempts("store", SAVE), 1);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn retry_committed_is_not_retried() {
    let (trace, report) = story("retry-committed");
    assert_eq!(
        report.happened,
        "1 attempt, store saw 1 Save, the layer stopped (committed), the caller saw UNAVAILABLE"
    );
    let call = only_call(&trace);
    let decision = call.attempts[0].decision.clone().expect("decided");
    assert!(decision.committed);
    assert_eq!(decision.code, None, "the status came later, in trailers");
    assert_eq!(stop(&call), Some("committed"));
    assert_eq!(trace.attempts("store", SAVE), 1);
    let render = trace.render();
    assert!(render.contains("HEADERS :status=200"), "{render}");
    assert!(render.contains("grpc-status=14 END_STREAM"), "{render}");
    insta::assert_snapshot!(render);
}

#[test]
fn retry_pushback_waits_500ms_then_stops_on_minus_one() {
    let (trace, report) = story("retry-pushback");
    assert_eq!(
        report.happened,
        "Save: 2 attempts, attempt 2 started 500ms after attempt 1 ended; Load: 1 attempt, stopped (pushback_stop)"
    );
    let calls = trace.retried_calls();
    assert_eq!(calls.len(), 2);
    let (save, load) = (&calls[0], &calls[1]);
    assert_eq!((save.path.as_str(), load.path.as_str()), (SAVE, LOAD));
    assert_eq!(starts(save), [ms(0), ms(503)]);
    assert_eq!(claimed(save), [ms(0), ms(500)]);
    assert_eq!(save.delays(), [ms(500)], "exactly the pushback, no jitter");
    assert_eq!(
        save.attempts[0]
            .decision
            .as_ref()
            .and_then(|d| d.pushback_ms),
        Some(500)
    );
    assert_eq!(load.attempts.len(), 1);
    assert_eq!(
        load.attempts[0]
            .decision
            .as_ref()
            .and_then(|d| d.pushback_ms),
        Some(-1)
    );
    assert_eq!(stop(load), Some("pushback_stop"));
    assert_eq!(trace.attempts("store", LOAD), 1);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn retry_deadline_ends_at_500ms_without_a_hopeless_attempt() {
    let (trace, report) = story("retry-deadline");
    assert_eq!(
        report.happened,
        "3 attempts (last at 297ms), the layer stopped (deadline), the caller gave up at 500ms"
    );
    let call = only_call(&trace);
    assert_eq!(starts(&call), [ms(0), ms(104), ms(297)]);
    // Each attempt carries what is left of the 500 ms budget.
    assert_eq!(
        call.attempts.iter().map(|a| a.timeout).collect::<Vec<_>>(),
        [Some(ms(500)), Some(ms(396)), Some(ms(203))]
    );
    // The next backoff (n=2: 320–480 ms) would not fit in the 201 ms left.
    assert_eq!(stop(&call), Some("deadline"));
    assert_eq!(call.ended_at(), Some(ms(299)));
    assert_eq!(trace.attempts("store", SAVE), 3);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn retry_storm_multiplies_to_27_saves() {
    let (trace, report) = story("retry-storm");
    assert_eq!(
        report.happened,
        "player calls: 1; Saves at the gateway: 3; Saves at the store: 27; amplification ×27"
    );
    let calls = trace.retried_calls();
    let player: Vec<_> = calls.iter().filter(|c| c.host == "player").collect();
    let gateway: Vec<_> = calls.iter().filter(|c| c.host == "gateway").collect();
    assert_eq!(player.len(), 1);
    assert_eq!(player[0].attempts.len(), 3);
    assert_eq!(gateway.len(), 9, "3 player attempts × 3 relay tries");
    assert!(gateway.iter().all(|c| c.attempts.len() == 3));
    assert_eq!(stop(player[0]), Some("max_attempts"));
    // Each layer alone conforms to its policy: the storm is the product.
    assert!(report.passed());
    insta::assert_snapshot!(trace.render_with(&RenderOptions::rpc_only()));
}

#[test]
fn retry_storm_fix_retries_at_one_layer() {
    let (trace, report) = story("retry-storm-fix");
    assert_eq!(
        report.happened,
        "player calls: 1; Saves at the gateway: 1; Saves at the store: 3; amplification ×3"
    );
    let call = only_call(&trace);
    assert_eq!(call.host, "gateway");
    assert_eq!(call.attempts.len(), 3);
    assert_eq!(stop(&call), Some("max_attempts"));
    insta::assert_snapshot!(trace.render_with(&RenderOptions::rpc_only()));
}

#[test]
fn retry_traces_are_deterministic() {
    for name in ["retry-backoff", "retry-storm"] {
        let scenario = catalog::find(name).expect("story");
        let a = (scenario.simulate)(SEED).expect("run").render();
        let b = (scenario.simulate)(SEED).expect("run").render();
        assert_eq!(a, b, "{name}");
    }
}

#[test]
fn retry_throttling_stops_retries_at_half_the_tokens() {
    let (trace, report) = story("retry-throttling");
    assert_eq!(
        report.happened,
        "during the outage 30 calls made 33 attempts (1.10 per call): the first 4, \
         then 1 each (29 stopped as throttled); unthrottled it would be 120"
    );
    let calls = trace.retried_calls();
    assert_eq!(calls.len(), 40);
    // Tokens: 10 → 6 over the first failing call's 4 attempts (the 4th
    // stops on maxAttempts), then 5 = half: throttled from the next one.
    assert_eq!(calls[5].attempts.len(), 4);
    assert_eq!(stop(&calls[5]), Some("max_attempts"));
    assert_eq!(stop(&calls[6]), Some("throttled"));
    assert_eq!(trace.attempts("store", SAVE), 43, "5 + 33 + 5");
    // A smaller bucket (half = 2) would have stopped the first call's
    // second retry: the checker replays the bucket and says so.
    let small = format!(
        "{}{}",
        &THROTTLED[..THROTTLED.find("\"maxTokens\": 10").expect("maxTokens")],
        "\"maxTokens\": 4, \"tokenRatio\": 0.1}}"
    );
    let v = trace
        .assert_retries_conform(&policy(&small))
        .expect_err("retried while throttled");
    assert_eq!(
        v.detail(),
        "g6 /tt.v1.Store/Save (player→store): attempt 2 ended at 5105ms and the layer \
         retried, but the channel's retry tokens were then at 2 of 4 (throttled at or below half)"
    );
    let summary: String = calls
        .iter()
        .map(|c| {
            format!(
                "{:>4} at {:>8}: {} attempt(s), ended {}, layer stop rule {}\n",
                format!("g{}", c.group),
                grpc_chaos::trace::fmt_duration(c.attempts[0].started),
                c.attempts.len(),
                ended(&trace, c).unwrap_or("-"),
                stop(c).unwrap_or("-")
            )
        })
        .collect();
    insta::assert_snapshot!(summary);
}

const THROTTLED: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#;
