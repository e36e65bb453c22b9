//! Hedging's finer rules through a real (simulated) store: pushback, a zero
//! delay, the deadline (gRFC A6 "Pushback", "Hedging Policy"). Times are
//! *simulated*, measured on the trace or by the caller.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::recorder::event::HedgeVerdict;
use grpc_chaos::retry::RetryConfig;
use grpc_chaos::trace::HedgedCall;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Fault, Host, Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::Rally;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use grpc_chaos_tests::ms;
use tonic::codegen::http;
use tonic::Code;

fn hedge(delay: &str) -> String {
    format!(
        r#"{{"methodConfig": [{{"name": [{{"service": "tt.v1.Store"}}],
          "hedgingPolicy": {{"maxAttempts": 3, "hedgingDelay": "{delay}",
                            "nonFatalStatusCodes": ["UNAVAILABLE"]}}}}]}}"#
    )
}

/// One Save (with `timeout` when given) through a hedged channel to a store
/// (10 ms per Save) with `faults`; the trace, the caller's code and latency.
fn one_save(
    config: &str,
    faults: impl IntoIterator<Item = Fault>,
    timeout: Option<Duration>,
) -> (Trace, Code, Duration) {
    let mut sim = Sim::builder().seed(grpc_chaos_tests::SEED).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    for fault in faults {
        sim.fault(fault);
    }
    let seen: Arc<Mutex<Option<(Code, Duration)>>> = Arc::default();
    let out = seen.clone();
    let config = config.to_owned();
    sim.client("player", move |player: Host| async move {
        let mut store = StoreClient::new(player.retry_channel("store", &config)?);
        let mut req = tonic::Request::new(SaveRequest {
            match_id: "final".into(),
            points: 1,
        });
        if let Some(t) = timeout {
            req.set_timeout(t);
        }
        let start = tokio::time::Instant::now();
        let code = store
            .save(req)
            .await
            .map_or_else(|s| s.code(), |_| Code::Ok);
        *out.lock().expect("lock") = Some((code, start.elapsed()));
        Ok(())
    });
    let trace = sim.run().expect("run");
    let (code, took) = seen.lock().expect("lock").expect("the call ended");
    (trace, code, took)
}

fn only(trace: &Trace) -> HedgedCall {
    let calls = trace.hedged_calls();
    assert_eq!(calls.len(), 1, "{calls:?}");
    calls.into_iter().next().expect("one")
}

#[test]
fn a_pushback_delays_the_next_hedge_by_exactly_its_value() {
    let fault = Fault::handler("store")
        .method(SAVE)
        .pushback_ms(200)
        .fail_first(1, Code::Unavailable);
    let config = hedge("0.05s");
    let (trace, code, _) = one_save(&config, [fault], None);
    assert_eq!(code, Code::Ok);
    let call = only(&trace);
    assert_eq!(call.attempts.len(), 2);
    let (failed_at, failed_code, verdict) = call.attempts[0].ended.expect("ended");
    assert_eq!(failed_code, Some("UNAVAILABLE"));
    assert_eq!(verdict, HedgeVerdict::NextAfter { delay: ms(200) });
    // Not at the 50 ms timer: 200 ms after the pushback.
    assert_eq!(call.attempts[1].started - failed_at, ms(200));
    assert_eq!(call.winner().map(|w| w.attempt), Some(2));
    trace
        .assert_hedging_conforms(&config.parse().expect("valid"))
        .expect("conforms");
}

#[test]
fn a_negative_pushback_stops_hedging_and_the_call_fails() {
    let fault = Fault::handler("store")
        .method(SAVE)
        .pushback_ms(-1)
        .fail_first(1, Code::Unavailable);
    let (trace, code, took) = one_save(&hedge("0.05s"), [fault], None);
    assert_eq!(code, Code::Unavailable);
    assert!(
        took < ms(50),
        "failed before the first hedge was due: {took:?}"
    );
    assert_eq!(trace.attempts("store", SAVE), 1);
    let call = only(&trace);
    let verdict = call.attempts[0].ended.expect("ended").2;
    assert_eq!(
        verdict,
        HedgeVerdict::Failed {
            stop: "pushback_stop"
        }
    );
}

#[test]
fn a_zero_delay_sends_every_attempt_at_once_and_is_warned() {
    let config = hedge("0s");
    let parsed: RetryConfig = config.parse().expect("valid");
    assert_eq!(parsed.warnings().len(), 1, "0s without throttling");
    let fault = Fault::handler("store").method(SAVE).delay(ms(5));
    let (trace, code, took) = one_save(&config, [fault], None);
    assert_eq!(code, Code::Ok);
    let call = only(&trace);
    let starts: Vec<Duration> = call.attempts.iter().map(|a| a.started).collect();
    assert_eq!(starts, [starts[0]; 3]);
    // All three reached the store with the whole request (one buffer,
    // replayed side by side); the first to answer won, two were cancelled.
    assert_eq!(trace.attempts("store", SAVE), 3);
    let winner = call.winner().expect("a winner").attempt;
    let cancelled = call
        .attempts
        .iter()
        .filter(|a| a.cancelled.is_some_and(|c| c.1 == Some(winner)))
        .count();
    assert_eq!(cancelled, 2);
    assert_eq!(call.latency(), Some(took));
    trace.assert_hedging_conforms(&parsed).expect("conforms");
}

#[test]
fn the_deadline_ends_a_hedged_call_and_cancels_every_attempt() {
    let fault = Fault::handler("store").method(SAVE).delay(ms(500));
    let (trace, code, took) = one_save(&hedge("0.05s"), [fault], Some(ms(120)));
    assert_eq!(code, Code::DeadlineExceeded);
    assert_eq!(took, ms(120));
    let call = only(&trace);
    let starts: Vec<Duration> = call.attempts.iter().map(|a| a.started).collect();
    assert_eq!(starts, [ms(0), ms(50), ms(100)]);
    assert!(call.winner().is_none());
    let ended: Vec<_> = call.attempts.iter().filter_map(|a| a.ended).collect();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].2, HedgeVerdict::Failed { stop: "deadline" });
    let cancelled = call
        .attempts
        .iter()
        .filter(|a| a.cancelled == Some((ms(120), None)))
        .count();
    assert_eq!(cancelled, 2);
}

/// Three Saves' worth of hedges (store 500 ms slow, so all 3 attempts are
/// out) through `player.retry_layer` over a plain channel, with `rewrite`
/// applied to each attempt's request between the layer and the channel.
fn three_hedges(
    rewrite: fn(http::Request<tonic::body::Body>) -> http::Request<tonic::body::Body>,
) -> Trace {
    let mut sim = Sim::builder().seed(grpc_chaos_tests::SEED).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(500)));
    sim.client("player", move |player: Host| async move {
        let config: RetryConfig = hedge("0.05s").parse().expect("valid");
        let channel = tower::ServiceBuilder::new()
            .layer(player.retry_layer("store", config))
            .map_request(rewrite)
            .service(player.channel("store"));
        let code = StoreClient::new(channel)
            .save(SaveRequest {
                match_id: "final".into(),
                points: 1,
            })
            .await
            .map_or_else(|s| s.code(), |_| Code::Ok);
        assert_eq!(code, Code::Ok);
        Ok(())
    });
    sim.run().expect("run")
}

#[test]
fn each_hedge_tells_the_server_how_many_attempts_came_before_it() {
    // gRFC A6 "Exposed Retry Metadata": the original carries no
    // grpc-previous-rpc-attempts, hedge k carries k − 1.
    let trace = three_hedges(|r| r);
    let call = only(&trace);
    let seen: Vec<Option<u32>> = call.attempts.iter().map(|a| a.previous_seen).collect();
    assert_eq!(seen, [None, Some(1), Some(2)]);
    assert!(
        call.attempts.iter().all(|a| a.run.is_some()),
        "all reached the store"
    );
    let config = hedge("0.05s").parse().expect("valid");
    trace.assert_hedging_conforms(&config).expect("conforms");
    // A layer under the retry layer that miscounts (every hedge says 1):
    // the check names the hedge and the value A6 wants.
    let trace = three_hedges(|mut r| {
        if r.headers().contains_key("grpc-previous-rpc-attempts") {
            r.headers_mut().insert(
                "grpc-previous-rpc-attempts",
                http::HeaderValue::from_static("1"),
            );
        }
        r
    });
    let v = trace
        .assert_hedging_conforms(&config)
        .expect_err("hedge 3 said 1");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 3 reached the server with \
         grpc-previous-rpc-attempts=1; A6 wants 2"
    );
    // One that drops it is caught as well.
    let trace = three_hedges(|mut r| {
        r.headers_mut().remove("grpc-previous-rpc-attempts");
        r
    });
    let v = trace
        .assert_hedging_conforms(&config)
        .expect_err("hedge 2 said nothing");
    assert_eq!(
        v.detail(),
        "g1 /tt.v1.Store/Save (player→store): attempt 2 reached the server with \
         no grpc-previous-rpc-attempts; A6 wants 1"
    );
}

/// A hedged Upload (3 attempts, 50 ms apart) of 10 rallies, one every
/// 30 ms (18 bytes each on the wire), through a retry layer whose replay
/// buffer holds `limit` bytes, to the gateway (which sums the shots); the
/// trace and the total the gateway answered.
fn hedged_upload(limit: u64) -> (Trace, u32) {
    let mut sim = Sim::builder().seed(grpc_chaos_tests::SEED).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, ms(0)).into_server())
    });
    let total: Arc<Mutex<Option<u32>>> = Arc::default();
    let out = total.clone();
    sim.client("player", move |player: Host| async move {
        let config: RetryConfig = UPLOAD_HEDGE.parse().expect("valid");
        let layer = player.retry_layer("gateway", config).buffer_limit(limit);
        let channel = tower::ServiceBuilder::new()
            .layer(layer)
            .service(player.channel("gateway"));
        let rallies = futures_util::stream::unfold(0u32, |n| async move {
            if n == 10 {
                return None;
            }
            if n > 0 {
                tokio::time::sleep(ms(30)).await;
            }
            let rally = Rally {
                match_id: "final".into(),
                player: format!("p{n}"),
                shots: n + 1,
            };
            Some((rally, n + 1))
        });
        let score = ScoreboardClient::new(channel)
            .upload(rallies)
            .await
            .expect("the upload succeeds");
        *out.lock().expect("lock") = Some(score.into_inner().home);
        Ok(())
    });
    let trace = sim.run().expect("run");
    let total = total.lock().expect("lock").expect("answered");
    (trace, total)
}

const UPLOAD_HEDGE: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Scoreboard", "method": "Upload"}],
  "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                    "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#;

#[test]
fn a_request_past_the_buffer_limit_commits_to_one_hedge_and_cancels_the_others() {
    // gRFC A6 "Memory Management (Buffering)": the 6th rally (108 bytes
    // > 100) commits the call to the attempt that sent it; the other
    // attempts in flight are cancelled at once and no hedge follows. The
    // committed attempt carries the whole stream: 1 + 2 + … + 10.
    let (trace, total) = hedged_upload(100);
    assert_eq!(total, 55, "the committed attempt sent every rally");
    let call = only(&trace);
    assert_eq!(call.attempts.len(), 3, "hedges at 0, 50 and 100 ms");
    let winner = call.winner().expect("the committed attempt won").attempt;
    for a in call.attempts.iter().filter(|a| a.attempt != winner) {
        // Cancelled when the 6th rally went out (151 ms: the first left at
        // 1 ms), not when the
        // winner answered after the 10th.
        assert_eq!(
            a.cancelled,
            Some((ms(151), Some(winner))),
            "attempt {}",
            a.attempt
        );
        assert!(a.ended.is_none(), "attempt {} ended", a.attempt);
    }
    // The gateway's other handler runs were dropped (their streams reset).
    let ends: Vec<bool> = trace
        .runs_on("gateway")
        .map(|r| r.end == RunEnd::Dropped)
        .collect();
    assert_eq!(ends.iter().filter(|d| !**d).count(), 1, "{ends:?}");
    let (n, stop, at) = call.committed.expect("committed at the buffer limit");
    assert_eq!((n, stop, at), (winner, "buffer_limit", ms(151)));
    let config = UPLOAD_HEDGE.parse().expect("valid");
    trace.assert_hedging_conforms(&config).expect("conforms");
    // The layer's steps and the losers' resets, as the trace reads them.
    let rows: String = trace
        .render()
        .lines()
        .filter(|l| l.contains(" g1 ") || l.contains("RST_STREAM") || l.contains("handler"))
        .map(|l| format!("{}\n", l.trim_end()))
        .collect();
    insta::assert_snapshot!(rows);
}

#[test]
fn a_fatal_code_is_the_calls_status_and_cancels_the_hedges_in_flight() {
    // gRFC A6 "Hedging Policy": "If any other status code is received, all
    // outstanding RPCs are canceled and the error is returned to the client
    // application layer" (summary item 2: cancel previous and pending
    // hedges). The original is slow (it arrives before 40 ms); hedge 2,
    // at 50 ms, meets INVALID_ARGUMENT, which is not in nonFatalStatusCodes.
    let slow = Fault::handler("store")
        .method(SAVE)
        .during(ms(0), ms(40))
        .delay(ms(500));
    let refuse = Fault::handler("store")
        .method(SAVE)
        .during(ms(40), ms(1_000))
        .abort(Code::InvalidArgument, "bad match id");
    let config = hedge("0.05s");
    let (trace, code, took) = one_save(&config, [slow, refuse], None);
    assert_eq!(code, Code::InvalidArgument);
    let call = only(&trace);
    assert_eq!(call.attempts.len(), 2, "no hedge 3 after the fatal end");
    let (at, failed, verdict) = call.attempts[1].ended.expect("hedge 2 ended");
    assert_eq!(
        (failed, verdict),
        (Some("INVALID_ARGUMENT"), HedgeVerdict::Won)
    );
    assert_eq!(took, at, "the call ended with it");
    assert_eq!(call.attempts[0].cancelled, Some((at, Some(2))));
    assert_eq!(trace.attempts("store", SAVE), 2);
    trace
        .assert_hedging_conforms(&config.parse().expect("valid"))
        .expect("conforms");
}
