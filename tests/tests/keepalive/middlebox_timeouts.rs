//! A middlebox's upstream response timeout (issue 15): at expiry the box
//! ends the client's stream with the response the real box synthesizes —
//! Envoy's trailers-only UNAVAILABLE "upstream request timeout", nginx's
//! 504 page — and resets the stream upstream, or leaves the backend
//! handler running. Times are simulated; link latency is the default 1 ms.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::policy::{LocalReply, Middlebox, TimeoutStart, UpstreamTimeout};
use grpc_chaos::trace::RunEnd;
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::{ms, secs};
use tonic::Code;

/// Each call's (code, message), in order.
type Seen = Arc<Mutex<Vec<(Code, String)>>>;

/// A store whose first Save takes `slow` behind `mb`; the player makes
/// `calls` saves in turn on one channel, each with `deadline`, then
/// waits 1 s.
fn slow_world(mb: Middlebox, slow: Duration, deadline: Duration, calls: usize, seen: Seen) -> Sim {
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(200))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .during(Duration::ZERO, ms(25))
            .delay(slow),
    );
    sim.middlebox("store", mb);
    sim.client("player", move |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        for _ in 0..calls {
            let mut request = tonic::Request::new(SaveRequest::default());
            request.set_timeout(deadline);
            let seen_now = match store.save(request).await {
                Ok(_) => (Code::Ok, String::new()),
                Err(status) => (status.code(), status.message().to_owned()),
            };
            seen.lock().unwrap().push(seen_now);
        }
        // The channel (and with it the connection) lives on for 1 s, so a
        // handler the box did not cancel can finish.
        tokio::time::sleep(secs(1)).await;
        Ok(())
    });
    sim
}

/// nginx's 60 s read timeout against a 120 s client deadline and a 90 s
/// handler: at 60 s nginx answers its 504 page and resets the stream
/// upstream, so the handler is dropped. What tonic makes of a 504 whose
/// body is HTML is measured here.
#[test]
fn nginx_answers_504_at_its_read_timeout_before_the_deadline() -> grpc_chaos::Result {
    let seen: Seen = Arc::default();
    let trace = slow_world(Middlebox::nginx(), secs(90), secs(120), 1, seen.clone()).run()?;
    let text = trace.render();
    assert!(
        text.contains("c1 nginx: s1 upstream timeout 60000ms (nothing read from the server since "),
        "{text}"
    );
    assert!(
        text.contains(":status 504 (text/html, 160 bytes of body) to the client; RST_STREAM(CANCEL) to the server"),
        "{text}"
    );
    let call = &trace.calls()[0];
    let ended = call.ended_at.expect("ended");
    assert!(ended >= secs(60) && ended < secs(61), "{ended:?}");
    let (code, message) = seen.lock().unwrap()[0].clone();
    // tonic reads the HTML body as a gRPC message before it looks at the
    // 504: `<` is a Compressed-Flag of 60, and the call ends INTERNAL,
    // where gRPC's HTTP-status mapping (504 → UNAVAILABLE) would apply to
    // a client that checks `:status` first.
    assert_eq!(code, Code::Internal, "{message}\n{text}");
    assert!(
        text.contains("Compressed-Flag 60, tonic says INTERNAL"),
        "{text}"
    );
    // The handler was cancelled by the box's RST_STREAM(CANCEL).
    let run = &trace.handler_runs()[0];
    assert_eq!(run.end, RunEnd::Dropped, "{text}");
    assert!(run.ended_at.is_some_and(|t| t < secs(61)), "{text}");
    Ok(())
}

/// A box that does not reset upstream: the client gets UNAVAILABLE at the
/// 1 s timeout, the handler finishes at 1.5 s anyway, and its late
/// response (HEADERS, DATA, trailers) is kept from the client without
/// breaking the connection: the next call on it succeeds.
#[test]
fn without_an_upstream_reset_the_handler_keeps_running_and_the_connection_survives(
) -> grpc_chaos::Result {
    let mut mb = Middlebox::new("the proxy");
    mb.upstream_timeout = Some(UpstreamTimeout::new(
        secs(1),
        TimeoutStart::RequestEnd,
        LocalReply::Grpc {
            status: 14,
            message: "upstream request timeout".into(),
        },
        ErrorCode::NoError,
        false,
    ));
    let seen: Seen = Arc::default();
    let trace = slow_world(mb, ms(1500), secs(5), 2, seen.clone()).run()?;
    let text = trace.render();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (Code::Unavailable, "upstream request timeout".to_owned()),
            (Code::Ok, String::new())
        ],
        "{text}"
    );
    assert!(
        text.contains("the server's handler is not told (reset_upstream: false)"),
        "{text}"
    );
    assert!(
        text.contains("h1 handler /tt.v1.Store/Save finished OK after 1500ms"),
        "{text}"
    );
    assert!(
        text.contains(
            "s1 was ended by the box: the server's late HEADERS goes on with END_STREAM cleared"
        ),
        "{text}"
    );
    // One connection throughout: no GOAWAY from either end before the
    // channel is dropped, and no second connection.
    assert!(
        !text.contains("COMPRESSION_ERROR") && !text.contains(" c2 "),
        "{text}"
    );
    assert!(
        !text.contains("store→player         c1 s0 GOAWAY"),
        "{text}"
    );
    Ok(())
}

#[test]
fn an_upstream_timeout_of_zero_is_an_error() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    let mut mb = Middlebox::envoy();
    if let Some(t) = mb.upstream_timeout.as_mut() {
        t.after = Duration::ZERO;
    }
    sim.middlebox("store", mb);
    let err = sim.run().expect_err("misconfigured");
    assert!(
        err.to_string()
            .contains("the middlebox Envoy on `store` has upstream_timeout.after = 0"),
        "{err}"
    );
}
