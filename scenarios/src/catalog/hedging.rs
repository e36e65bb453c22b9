//! Hedging (gRFC A6 `hedgingPolicy`) stories. One slow replica: three
//! store replicas behind a balanced channel, `store-2` 500 ms slow; the
//! player hedges its Saves (3 attempts, 50 ms apart), so a call that meets
//! `store-2` is won by a hedge on another replica and the slow attempt is
//! cancelled. Each hedge is an ordinary pick of the balanced channel, so
//! it may land on `store-2` again (grpc does not steer hedges: A6 does not
//! ask for it, grpc-java picks each hedge like any call); the trace's
//! hedge rows name the replica each attempt went to, and a call is slow
//! only when every one of its attempts went to `store-2`. Overload: the
//! store sheds every Save with UNAVAILABLE (a
//! non-fatal code, which sends the next hedge at once); retry throttling
//! stops the hedges once half the tokens are gone.

use grpc_chaos::trace::{HedgeAttempt, HedgedCall};
use grpc_chaos::{Fault, Host, Sim, Trace};
use std::time::Duration;
use tonic::Code;
use tower::Layer;

use super::retry_world::parse;
use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::{Store, SAVE};

/// One slow replica.
pub(super) const SLOW_REPLICA: Scenario = Scenario {
    name: "hedging-slow-replica",
    source: "gRFC A6 (hedging); Dean & Barroso, The Tail at Scale (CACM 2013); grpc-go #2823",
    story: "One replica of three is 500 ms slow; hedged calls are won by a hedge elsewhere and the slow attempt is cancelled.",
    checks: "30 hedged Saves, store-2 +500ms: a slow call only when every attempt picked store-2; losers cancelled",
    simulate: simulate_slow,
    judge: judge_slow,
};

/// Overload, throttled.
pub(super) const OVERLOAD: Scenario = Scenario {
    name: "hedging-overload",
    source: "gRFC A6 (throttling of hedged RPCs); grpc-java #7337",
    story:
        "An overloaded store answers UNAVAILABLE; throttling stops hedges from tripling the load.",
    checks: "30 Saves, all shed: 33 attempts (3, 2, then 1 each) instead of 90",
    simulate: simulate_overload,
    judge: judge_overload,
};

/// Up to 3 attempts, 50 ms apart; UNAVAILABLE lets the others go on.
const HEDGE: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                    "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#;

/// [`HEDGE`] with retry throttling (10 tokens, 0.1 back per success).
const THROTTLED: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                    "nonFatalStatusCodes": ["UNAVAILABLE"]}}],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#;

const CALLS: u32 = 30;

fn save(n: u32) -> SaveRequest {
    SaveRequest {
        match_id: format!("m{n}"),
        points: 1,
    }
}

/// `CALLS` Saves, 20 ms apart (*simulated*); failures are part of the story.
macro_rules! saves {
    ($store:expr) => {{
        let store = $store;
        for n in 0..CALLS {
            let _ = store.clone().save(save(n)).await;
            tokio::time::sleep(ms(20)).await;
        }
        Ok(())
    }};
}

fn simulate_slow(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim.fault(Fault::handler("store-2").method(SAVE).delay(ms(500)));
    sim.client("player", |player: Host| async move {
        let layer = player.retry_layer("store", parse(HEDGE));
        saves!(StoreClient::new(
            layer.layer(player.balanced_channel("store"))
        ))
    });
    sim.run()
}

fn simulate_overload(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .abort(Code::Unavailable, "overloaded"),
    );
    sim.client("player", |player: Host| async move {
        saves!(StoreClient::new(player.retry_channel("store", THROTTLED)?))
    });
    sim.run()
}

fn replica<'a>(trace: &'a Trace, a: &HedgeAttempt) -> Option<&'a str> {
    trace.call(a.call?)?.replica.as_deref()
}

/// The 27th of 30 latencies (p90), and the slowest.
fn p90_and_max(calls: &[HedgedCall]) -> (Duration, Duration) {
    let mut v: Vec<Duration> = calls.iter().filter_map(HedgedCall::latency).collect();
    v.sort();
    let p90 = v.get((v.len() * 9 / 10).saturating_sub(1)).copied();
    (
        p90.unwrap_or_default(),
        v.last().copied().unwrap_or_default(),
    )
}

fn judge_slow(trace: &Trace) -> Report {
    let calls = trace.hedged_calls();
    let (p90, max) = p90_and_max(&calls);
    let hedges: usize = calls.iter().map(|c| c.attempts.len() - 1).sum();
    let slow: Vec<&HedgedCall> = calls
        .iter()
        .filter(|c| c.latency().is_some_and(|l| l >= ms(500)))
        .collect();
    let unlucky = slow.iter().all(|c| {
        c.attempts
            .iter()
            .all(|a| replica(trace, a) == Some("store-2"))
    });
    let (conforms, why) = match trace.assert_hedging_conforms(&parse(HEDGE)) {
        Ok(()) => (true, String::new()),
        Err(v) => (false, v.to_string()),
    };
    Report::from_checks(
        format!(
            "{} hedged calls: p90 {}, slowest {}; {} at 500ms or more (every attempt of each picked store-2); \
             {hedges} hedges sent ({:.2} attempts per call)",
            calls.len(),
            grpc_chaos::trace::fmt_duration(p90),
            grpc_chaos::trace::fmt_duration(max),
            slow.len(),
            (calls.len() + hedges) as f64 / calls.len().max(1) as f64
        ),
        &[
            (calls.len() == CALLS as usize, format!("{} hedged calls, not {CALLS}", calls.len())),
            (hedges > 0, "no hedge was sent".into()),
            (unlucky, "a call was slow although a hedge reached a fast replica".into()),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}

fn judge_overload(trace: &Trace) -> Report {
    let calls = trace.hedged_calls();
    let sent: Vec<usize> = calls.iter().map(|c| c.attempts.len()).collect();
    let total: usize = sent.iter().sum();
    let (conforms, why) = match trace.assert_hedging_conforms(&parse(THROTTLED)) {
        Ok(()) => (true, String::new()),
        Err(v) => (false, v.to_string()),
    };
    let pattern =
        sent.len() == CALLS as usize && sent[..3] == [3, 2, 1] && sent[3..].iter().all(|n| *n == 1);
    Report::from_checks(
        format!(
            "{} calls made {total} attempts ({:.2} per call): 3, then 2, then 1 each once the \
             tokens were at half; unthrottled it would be {}",
            sent.len(),
            total as f64 / sent.len().max(1) as f64,
            sent.len() * 3
        ),
        &[
            (
                pattern,
                format!("attempts per call {sent:?}, not 3, 2, then 1 each"),
            ),
            (
                trace.attempts("store", SAVE) == total,
                "the store saw other attempts".into(),
            ),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
