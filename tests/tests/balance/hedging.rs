//! Hedging (gRFC A6 `hedgingPolicy`) through the retry layer: one slow
//! replica behind a balanced channel (the hedge wins, the tail shrinks, the
//! loser is cancelled), and an overloaded store (throttling stops the
//! amplification). Latencies are *simulated* time, measured by the caller.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::FrameDetail;
use grpc_chaos::retry::RetryConfig;
use grpc_chaos::trace::{CallEnd, HedgeAttempt};
use grpc_chaos::{Fault, Host, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::ms;
use tonic::Code;
use tower::Layer;

/// Up to 3 attempts, one every 50 ms, UNAVAILABLE lets the others go on.
const HEDGE: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                    "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#;

fn with_throttling(json: &str) -> String {
    let end = json.rfind('}').expect("object");
    format!(
        "{}, \"retryThrottling\": {{\"maxTokens\": 10, \"tokenRatio\": 0.1}}}}",
        &json[..end]
    )
}

fn config(json: &str) -> RetryConfig {
    json.parse().expect("valid config")
}

fn save(n: u32) -> SaveRequest {
    SaveRequest {
        match_id: format!("m{n}"),
        points: 1,
    }
}

type Latencies = Arc<Mutex<Vec<Duration>>>;

/// 30 Saves, 20 ms apart, from the player through `store` (a
/// `StoreClient` of any channel); each one's latency as the caller measured
/// it (simulated time) goes to `out`. A macro, as the two clients' channel
/// types differ.
macro_rules! saves {
    ($store:expr, $out:expr) => {{
        let store = $store;
        for n in 0..30 {
            let start = tokio::time::Instant::now();
            let result = store.clone().save(save(n)).await;
            $out.lock().expect("lock").push(start.elapsed());
            if let Err(s) = result {
                assert_eq!(s.code(), Code::Unavailable, "{s:?}");
            }
            tokio::time::sleep(ms(20)).await;
        }
        Ok(())
    }};
}

/// Three store replicas (10 ms per Save), `store-2` 500 ms slower; the
/// player saves through a balanced channel, hedged when `hedged`.
fn slow_replica(hedged: bool) -> (Trace, Vec<Duration>) {
    let mut sim = Sim::builder().seed(grpc_chaos_tests::SEED).build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim.fault(Fault::handler("store-2").method(SAVE).delay(ms(500)));
    let out: Latencies = Arc::default();
    let seen = out.clone();
    sim.client("player", move |player: Host| async move {
        let channel = player.balanced_channel("store");
        if hedged {
            let layer = player.retry_layer("store", config(HEDGE));
            saves!(StoreClient::new(layer.layer(channel)), seen)
        } else {
            saves!(StoreClient::new(channel), seen)
        }
    });
    let trace = sim.run().expect("run");
    let latencies = out.lock().expect("lock").clone();
    (trace, latencies)
}

fn max(v: &[Duration]) -> Duration {
    v.iter().copied().max().unwrap_or_default()
}

#[test]
fn hedging_under_one_slow_replica_cuts_the_tail() {
    let (_, plain) = slow_replica(false);
    let (trace, hedged) = slow_replica(true);
    assert_eq!((plain.len(), hedged.len()), (30, 30));
    // Seed 0: the balancer sends 12 of 30 plain calls to store-2. Hedged,
    // one call is still slow: its hedges were picked onto store-2 as well
    // (nothing steers a hedge away from a used replica: A6 does not ask
    // for it, grpc-java picks each hedge like any call), and three needed
    // the third attempt.
    let slow = |v: &[Duration]| v.iter().filter(|d| **d >= ms(500)).count();
    assert_eq!((slow(&plain), slow(&hedged)), (12, 1));
    assert_eq!((p90(&plain), p90(&hedged)), (ms(512), ms(112)));
    assert_eq!((max(&plain), max(&hedged)), (ms(513), ms(512)));
    trace
        .assert_hedging_conforms(&config(HEDGE))
        .expect("conforms");
    let calls = trace.hedged_calls();
    assert_eq!(calls.len(), 30);
    let replica = |a: &HedgeAttempt| {
        let call = trace.call(a.call.expect("recorded")).expect("call");
        call.replica.clone().expect("routed")
    };
    let mut hedges = 0;
    let mut cancelled_at = Vec::new();
    for c in &calls {
        let winner = c.winner().expect("a winner");
        let won_at = winner.ended.expect("ended").0;
        assert_eq!(c.latency(), Some(won_at - c.attempts[0].started));
        for (i, a) in c.attempts.iter().enumerate().skip(1) {
            assert_eq!(
                a.started - c.attempts[i - 1].started,
                ms(50),
                "{}",
                c.label()
            );
        }
        hedges += c.attempts.len() - 1;
        for loser in c.attempts.iter().filter(|a| a.attempt != winner.attempt) {
            // Still in flight at the win: cancelled at that instant, and
            // its recorded call ended then, CANCELLED, on store-2.
            assert_eq!(
                loser.cancelled,
                Some((won_at, Some(winner.attempt))),
                "{}",
                c.label()
            );
            let call = trace.call(loser.call.expect("recorded")).expect("call");
            assert_eq!(call.end, CallEnd::Dropped, "{}", c.label());
            assert_eq!(call.ended_at, Some(won_at), "{}", c.label());
            assert_eq!(replica(loser), "store-2", "{}", c.label());
            cancelled_at.push(won_at);
        }
        if c.latency() >= Some(ms(500)) {
            assert!(
                c.attempts.iter().all(|a| replica(a) == "store-2"),
                "{}",
                c.label()
            );
        }
    }
    assert_eq!(hedges, 18, "extra attempts the hedging cost");
    // On the wire: one RST_STREAM CANCEL from the player per loser, sent
    // the instant its hedge won.
    let resets: Vec<Duration> = trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                detail: FrameDetail::RstStream { code },
                ..
            } if code.to_string() == "CANCEL" => Some(e.at()),
            _ => None,
        })
        .collect();
    assert_eq!(resets, cancelled_at);
}

/// The 27th of 30 latencies, sorted.
fn p90(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() * 9 / 10 - 1]
}

/// An overloaded store sheds every Save with UNAVAILABLE; the player makes
/// 30 hedged Saves; the store's Save count.
fn overload(json: &str) -> (Trace, usize) {
    let mut sim = Sim::builder().seed(grpc_chaos_tests::SEED).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .abort(Code::Unavailable, "overloaded"),
    );
    let json = json.to_owned();
    sim.client("player", move |player: Host| async move {
        let store = StoreClient::new(player.retry_channel("store", &json)?);
        let out: Latencies = Arc::default();
        saves!(store, out)
    });
    let trace = sim.run().expect("run");
    let n = trace.attempts("store", SAVE);
    (trace, n)
}

#[test]
fn hedging_under_overload_is_stopped_by_throttling() {
    // Unthrottled: every call sends all 3 attempts, each at the previous
    // one's non-fatal failure.
    let (trace, unthrottled) = overload(HEDGE);
    assert_eq!(unthrottled, 90);
    trace
        .assert_hedging_conforms(&config(HEDGE))
        .expect("conforms");
    // Throttled (10 tokens, −1 per non-fatal failure, no hedge at ≤ 5):
    // call 1 makes 3 attempts (10 → 7), call 2 two (→ 5, throttled), then
    // the original attempt only.
    let throttled_json = with_throttling(HEDGE);
    let (trace, throttled) = overload(&throttled_json);
    assert_eq!(throttled, 3 + 2 + 28);
    trace
        .assert_hedging_conforms(&config(&throttled_json))
        .expect("conforms");
    // A bucket of 4 (half = 2) would have refused call 1's third attempt:
    // the checker replays the bucket and says so.
    let small = throttled_json.replace("\"maxTokens\": 10", "\"maxTokens\": 4");
    let v = trace
        .assert_hedging_conforms(&config(&small))
        .expect_err("hedged while throttled");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): hedge 3 was sent at 5ms, but the channel's \
         retry tokens were then at 2 of 4 (no hedge at or below half)"
    );
    let calls = trace.hedged_calls();
    let sent: Vec<usize> = calls.iter().map(|c| c.attempts.len()).collect();
    assert_eq!(&sent[..3], [3, 2, 1]);
    assert!(sent[2..].iter().all(|n| *n == 1));
}

#[test]
fn the_checker_names_the_call_the_attempt_and_the_schedule() {
    let (trace, _) = slow_replica(true);
    let slower = HEDGE.replace("0.05s", "0.08s");
    let v = trace
        .assert_hedging_conforms(&config(&slower))
        .expect_err("sent 30 ms early");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 2 was sent at 50ms, but was due at 80ms \
         (hedgingDelay 80ms after attempt 1, or at a non-fatal end or its pushback)"
    );
}

#[test]
fn hedged_traces_are_deterministic_and_read_as_a_race() {
    let (a, _) = slow_replica(true);
    let (b, _) = slow_replica(true);
    let text = a.render();
    assert_eq!(text, b.render());
    // g15 needed all three attempts: two went to store-2, and the rows of
    // its attempts say so (the third, to store-1, won).
    let rows: String = text
        .lines()
        .filter(|l| l.contains(" g15 ") || l.contains("RST_STREAM"))
        .filter(|l| l.contains(" g15 ") || l.contains("1410.000"))
        .map(|l| format!("{}\n", l.trim_end()))
        .collect();
    insta::assert_snapshot!(rows);
    // The JSON export carries the same steps as typed fields.
    let json: String = a.to_json().split_whitespace().collect();
    assert!(json.contains(r#""hedged":true"#), "hedged attempts marked");
    for step in [
        r#""step":"ended""#,
        r#""verdict":"won""#,
        r#""step":"cancelled","winner":3"#,
    ] {
        assert!(json.contains(step), "{step} missing from the JSON");
    }
}

#[test]
fn the_catalog_stories_pass_and_say_what_happened() {
    let (_, slow) = grpc_chaos_tests::story("hedging-slow-replica");
    assert_eq!(
        slow.happened,
        "30 hedged calls: p90 112ms, slowest 512ms; 1 at 500ms or more (every attempt of each \
         picked store-2); 18 hedges sent (1.60 attempts per call)"
    );
    let (_, overload) = grpc_chaos_tests::story("hedging-overload");
    assert_eq!(
        overload.happened,
        "30 calls made 33 attempts (1.10 per call): 3, then 2, then 1 each once the tokens \
         were at half; unthrottled it would be 90"
    );
}
