//! A middlebox's per-connection stream limit (issue 15): the box
//! advertises SETTINGS_MAX_CONCURRENT_STREAMS to the client and refuses a
//! stream above it with RST_STREAM(REFUSED_STREAM), without the server's
//! handler ever seeing it and without breaking HPACK between the two ends.
//! Times are simulated; link latency is the default 1 ms.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::wire::{ErrorCode, FrameType};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::ms;
use tonic::Code;

/// The codes of each burst's calls, in the order they ended.
type Codes = Arc<Mutex<Vec<Vec<Code>>>>;

/// A store whose Save takes 100 ms behind a box with a limit of `limit`
/// streams; the player sends `bursts` bursts of `calls` concurrent saves,
/// 1 s apart, on one channel.
fn burst_world(limit: u32, calls: usize, bursts: usize, codes: Codes) -> Sim {
    let mut sim = Sim::builder()
        .seed(15)
        .duration(Duration::from_secs(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(100)));
    let mut mb = Middlebox::new("the proxy");
    mb.max_concurrent_streams = Some(limit);
    sim.middlebox("store", mb);
    sim.client("player", move |player| async move {
        let channel = player.channel("store");
        for burst in 0..bursts {
            if burst > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let mut saves = tokio::task::JoinSet::new();
            for _ in 0..calls {
                let mut store = StoreClient::new(channel.clone());
                saves.spawn(async move {
                    match store.save(SaveRequest::default()).await {
                        Ok(_) => Code::Ok,
                        Err(status) => status.code(),
                    }
                });
            }
            let mut ended = Vec::new();
            while let Some(code) = saves.join_next().await {
                ended.push(code?);
            }
            codes.lock().unwrap().push(ended);
        }
        Ok(())
    });
    sim
}

fn count(trace: &Trace, pick: impl Fn(&EventKind) -> bool) -> usize {
    trace.events().iter().filter(|e| pick(&e.kind)).count()
}

/// The story's core: a burst of 6 on a cold connection through a limit of
/// 2 — the client opened all 6 before it read the box's SETTINGS; the box
/// refuses 4 (tonic: UNAVAILABLE, which is also the spec's code for
/// REFUSED_STREAM), and only 2 handlers run. The next burst, on the warm
/// connection, waits in the client instead: all 6 succeed, 2 at a time.
#[test]
fn a_stream_limit_refuses_a_cold_burst_and_queues_a_warm_one() -> grpc_chaos::Result {
    let codes: Codes = Arc::default();
    let trace = burst_world(2, 6, 2, codes.clone()).run()?;
    let text = trace.render();
    let codes = codes.lock().unwrap().clone();
    assert_eq!(codes.len(), 2, "{text}");
    let ok = |b: &[Code]| b.iter().filter(|c| **c == Code::Ok).count();
    assert_eq!(ok(&codes[0]), 2, "{codes:?}\n{text}");
    assert!(
        codes[0]
            .iter()
            .all(|c| matches!(c, Code::Ok | Code::Unavailable)),
        "{codes:?}"
    );
    assert_eq!(ok(&codes[1]), 6, "{codes:?}\n{text}");
    // Four REFUSED_STREAMs, all from the box, none reaching a handler:
    // 2 + 6 handler runs in all.
    let refused = count(&trace, |k| {
        matches!(
            k,
            EventKind::Frame {
                frame: FrameType::RstStream,
                fate,
                detail: grpc_chaos::recorder::event::FrameDetail::RstStream {
                    code: ErrorCode::RefusedStream
                },
                ..
            } if *fate == Fate::Injected
        )
    });
    assert_eq!(refused, 4, "{text}");
    assert_eq!(trace.handler_runs().len(), 8, "{text}");
    // h2's own RST_STREAM(PROTOCOL_ERROR) for each malformed request is
    // swallowed by the box; nothing else reset the connection.
    // HPACK stayed in step: the server decoded every later block (the
    // warm burst's six), and neither end sent GOAWAY (COMPRESSION_ERROR
    // would be one, RFC 9113 §4.3); the client's GOAWAY NO_ERROR when its
    // channel is dropped at the end is the only one.
    assert!(!text.contains("COMPRESSION_ERROR"), "{text}");
    assert!(
        !text.contains("store→player         c1 s0 GOAWAY"),
        "{text}"
    );
    assert!(
        text.contains("ended UNAVAILABLE \"h2 protocol error: http2 error\""),
        "{text}"
    );
    assert!(
        text.contains("the proxy: advertises SETTINGS_MAX_CONCURRENT_STREAMS = 2 to the client"),
        "{text}"
    );
    // tonic's own word for it.
    let outcomes: Vec<_> = trace
        .calls()
        .iter()
        .filter_map(|c| c.outcome())
        .filter(|o| o.code != "OK")
        .map(|o| (o.code, o.spec_code))
        .collect();
    assert_eq!(outcomes, vec![("UNAVAILABLE", "UNAVAILABLE"); 4]);
    Ok(())
}

/// A limit at least as large as the burst refuses nothing.
#[test]
fn a_limit_above_the_burst_refuses_nothing() -> grpc_chaos::Result {
    let codes: Codes = Arc::default();
    let trace = burst_world(6, 6, 1, codes.clone()).run()?;
    assert_eq!(codes.lock().unwrap()[0], vec![Code::Ok; 6]);
    assert!(!trace.render().contains("REFUSED_STREAM"));
    Ok(())
}

#[test]
fn a_stream_limit_of_zero_is_an_error() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    let mut mb = Middlebox::envoy();
    mb.max_concurrent_streams = Some(0);
    sim.middlebox("store", mb);
    let err = sim.run().expect_err("misconfigured");
    assert!(err.is_misconfigured(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("the middlebox Envoy on `store` has max_concurrent_streams = Some(0)"),
        "{text}"
    );
    assert!(text.contains("give it at least 1, or None"), "{text}");
}
