//! The rows of grpc's `doc/statuscodes.md`, `doc/PROTOCOL-HTTP2.md` and
//! `doc/http-grpc-status-mapping.md` that the library itself generates,
//! measured against tonic 0.14.9 in the sim: what tonic says, what the
//! spec says, and what the trace shows. The table of rules is in the
//! `spec` module's docs; each test names its row.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::{CallEnd, RenderOptions, RunEnd};
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::{spec, Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::store_server::StoreServer;
use grpc_chaos_scenarios::services::pb::{SaveRequest, WatchRequest};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};
use grpc_chaos_tests::ms;
use tonic::Code;

fn save() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 3,
    }
}

/// Message-size limits on a store and its player: `(decode, encode)` on
/// each side. The player makes one Save and keeps its error's code.
#[derive(Default, Clone, Copy)]
struct Limits {
    server: (Option<usize>, Option<usize>),
    client: (Option<usize>, Option<usize>),
}

fn save_with(limits: Limits) -> (Trace, Code) {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", move |s| {
        let mut svc = StoreServer::new(Store::default());
        if let Some(n) = limits.server.0 {
            svc = svc.max_decoding_message_size(n);
        }
        if let Some(n) = limits.server.1 {
            svc = svc.max_encoding_message_size(n);
        }
        s.add_service(svc)
    });
    let code = std::sync::Arc::new(std::sync::Mutex::new(Code::Ok));
    let seen = code.clone();
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        if let Some(n) = limits.client.0 {
            store = store.max_decoding_message_size(n);
        }
        if let Some(n) = limits.client.1 {
            store = store.max_encoding_message_size(n);
        }
        if let Err(e) = store.save(save()).await {
            *seen.lock().expect("not poisoned") = e.code();
        }
        // Long enough for the store to see what the player sent.
        tokio::time::sleep(ms(50)).await;
        Ok(())
    });
    let trace = sim.run().expect("the run");
    let code = *code.lock().expect("not poisoned");
    (trace, code)
}

fn rpc_rows(trace: &Trace) -> String {
    trace.render_with(&RenderOptions::rpc_only())
}

/// statuscodes.md "message larger than the configured limit", received,
/// server side: tonic answers OUT_OF_RANGE before the handler; the run is
/// recorded as never having run, with the spec's RESOURCE_EXHAUSTED. The
/// player gets the peer's OUT_OF_RANGE, shown as sent.
#[test]
fn a_request_over_the_servers_decode_limit_never_reaches_the_handler() {
    let (trace, code) = save_with(Limits {
        server: (Some(2), None),
        ..Limits::default()
    });
    assert_eq!(code, Code::OutOfRange);
    let run = &trace.handler_runs()[0];
    let RunEnd::Rejected { outcome, .. } = &run.end else {
        panic!("{:?}", run.end);
    };
    assert_eq!(
        (outcome.code, outcome.spec_code),
        ("OUT_OF_RANGE", "RESOURCE_EXHAUSTED")
    );
    assert_eq!(outcome.rule, Some(spec::rules::DECODE_LIMIT));
    let rows = rpc_rows(&trace);
    assert!(
        rows.contains("h1 handler /tt.v1.Store/Save request arrived (r1 from player, #1)"),
        "{rows}"
    );
    assert!(
        rows.contains("h1 handler /tt.v1.Store/Save never ran: tonic answered OUT_OF_RANGE \"Error, decoded message length too large: found 6 bytes, the limit is: 2 bytes\" (spec RESOURCE_EXHAUSTED) after 0ms: its message is over the server's max_decoding_message_size"),
        "{rows}"
    );
    assert!(!rows.contains("saved"), "the Store never ran: {rows}");
    // The caller's status is the peer's, as sent.
    let call = trace.calls()[0].outcome().expect("ended");
    assert_eq!(
        (call.code, call.spec_code),
        ("OUT_OF_RANGE", "OUT_OF_RANGE")
    );
}

/// statuscodes.md "message larger than the configured limit", sent, server
/// side: the handler ran; tonic's encoder answers OUT_OF_RANGE in trailers.
#[test]
fn a_reply_over_the_servers_encode_limit_is_resource_exhausted_by_the_spec() {
    let (trace, code) = save_with(Limits {
        server: (None, Some(1)),
        ..Limits::default()
    });
    assert_eq!(code, Code::OutOfRange);
    let rows = rpc_rows(&trace);
    assert!(
        rows.contains("saved match_id=m1"),
        "the handler ran: {rows}"
    );
    assert!(
        rows.contains("h1 handler /tt.v1.Store/Save finished RESOURCE_EXHAUSTED (tonic said OUT_OF_RANGE \"Error, encoded message length too large: found 2 bytes, the limit is: 1 bytes\")"),
        "{rows}"
    );
}

/// statuscodes.md "message larger than the configured limit", sent, client
/// side: tonic's encoder fails the request body, h2 resets the stream with
/// INTERNAL_ERROR, and the caller gets INTERNAL; the server's tonic never
/// hands the request to the handler.
#[test]
fn a_request_over_the_clients_encode_limit_is_internal_from_tonic_and_resource_exhausted_by_the_spec(
) {
    let (trace, code) = save_with(Limits {
        client: (None, Some(2)),
        ..Limits::default()
    });
    assert_eq!(code, Code::Internal);
    let call = trace.calls()[0].outcome().expect("ended");
    assert_eq!(
        (call.code, call.spec_code),
        ("INTERNAL", "RESOURCE_EXHAUSTED")
    );
    assert_eq!(call.rule, Some(spec::rules::ENCODE_LIMIT));
    let run = &trace.handler_runs()[0];
    assert!(matches!(run.end, RunEnd::Rejected { .. }), "{:?}", run.end);
}

/// statuscodes.md "message larger than the configured limit", received,
/// client side: tonic's decoder, above the recorded channel, stops at the
/// header of a 20,005-byte Score and ends the call OUT_OF_RANGE; the trace
/// says so instead of "dropped by the caller".
#[test]
fn a_reply_over_the_clients_decode_limit_stops_the_call_at_the_message_header() {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.client("player", |c| async move {
        let board = ScoreboardClient::new(c.channel("gateway")).max_decoding_message_size(10_000);
        let req = WatchRequest {
            match_id: "m1".into(),
            count: 1,
            padding: 20_000,
        };
        let mut stream = board.clone().watch(req).await?.into_inner();
        let err = stream.message().await.expect_err("over the limit");
        assert_eq!(err.code(), Code::OutOfRange);
        Ok(())
    });
    let trace = sim.run().expect("the run");
    let call = &trace.calls()[0];
    assert!(
        matches!(call.end, CallEnd::StoppedReading { flag: 0, message_len } if message_len > 20_000),
        "{:?}",
        call.end
    );
    let rows = rpc_rows(&trace);
    assert!(
        rows.contains("r1 call /tt.v1.Scoreboard/Watch stopped by its decoder at a 20010-byte response message (16379 bytes in)"),
        "{rows}"
    );
    assert!(rows.contains("spec RESOURCE_EXHAUSTED"), "{rows}");
    assert!(!rows.contains("dropped by the caller"), "{rows}");
}

/// statuscodes.md "method not found": the router's fallback answers
/// UNIMPLEMENTED without a handler; the trace says the handler never ran.
#[test]
fn a_service_the_server_does_not_serve_is_rejected_before_any_handler() {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.client("player", |c| async move {
        // A Store client pointed at the gateway, which serves only Scoreboard.
        let err = StoreClient::new(c.channel("gateway"))
            .save(save())
            .await
            .expect_err("not served there");
        assert_eq!(err.code(), Code::Unimplemented);
        Ok(())
    });
    let trace = sim.run().expect("the run");
    let run = &trace.handler_runs()[0];
    let RunEnd::Rejected { outcome, why } = &run.end else {
        panic!("{:?}", run.end);
    };
    assert_eq!(
        (outcome.code, outcome.spec_code),
        ("UNIMPLEMENTED", "UNIMPLEMENTED")
    );
    assert!(why.contains("no such service or method"), "{why}");
}

/// PROTOCOL-HTTP2.md's RST_STREAM table, client side: a reset from the
/// server with each code ends the call with the table's status (tonic's
/// `code_from_h2` follows it; STREAM_CLOSED has no mapping, tonic says
/// UNKNOWN). Each code is injected on stream 1 while the Save works.
#[test]
fn every_rst_stream_code_ends_the_call_as_the_spec_table_says() {
    let table = [
        (ErrorCode::NoError, "INTERNAL"),
        (ErrorCode::ProtocolError, "INTERNAL"),
        (ErrorCode::InternalError, "INTERNAL"),
        (ErrorCode::FlowControlError, "INTERNAL"),
        (ErrorCode::SettingsTimeout, "INTERNAL"),
        (ErrorCode::FrameSizeError, "INTERNAL"),
        (ErrorCode::CompressionError, "INTERNAL"),
        (ErrorCode::ConnectError, "INTERNAL"),
        (ErrorCode::StreamClosed, "UNKNOWN"),
        (ErrorCode::RefusedStream, "UNAVAILABLE"),
        (ErrorCode::Cancel, "CANCELLED"),
        (ErrorCode::EnhanceYourCalm, "RESOURCE_EXHAUSTED"),
        (ErrorCode::InadequateSecurity, "PERMISSION_DENIED"),
    ];
    for (code, want) in table {
        let mut sim = Sim::builder().seed(1).build();
        sim.server("store", |s| {
            s.add_service(Store::with_work(ms(100)).into_server())
        });
        sim.fault(
            Fault::inject("store", "player")
                .rst_stream(1, code)
                .at(ms(20)),
        );
        sim.client("player", |c| async move {
            let _ = StoreClient::new(c.channel("store")).save(save()).await;
            Ok(())
        });
        let trace = sim.run().expect("the run");
        let call = trace.calls()[0].outcome().expect("ended");
        assert_eq!(
            (call.code, call.spec_code),
            (want, want),
            "RST_STREAM {code}"
        );
    }
}

/// http-grpc-status-mapping.md: a response without `grpc-status`, by its
/// HTTP status. tonic follows the table except 431 (UNKNOWN where the
/// table says INTERNAL): the call's row shows the spec's code for it.
#[test]
fn responses_without_grpc_status_map_as_the_http_table_says() {
    let table: [(u16, &str, &str); 11] = [
        (400, "INTERNAL", "INTERNAL"),
        (401, "UNAUTHENTICATED", "UNAUTHENTICATED"),
        (403, "PERMISSION_DENIED", "PERMISSION_DENIED"),
        (404, "UNIMPLEMENTED", "UNIMPLEMENTED"),
        (429, "UNAVAILABLE", "UNAVAILABLE"),
        (431, "UNKNOWN", "INTERNAL"),
        (502, "UNAVAILABLE", "UNAVAILABLE"),
        (503, "UNAVAILABLE", "UNAVAILABLE"),
        (504, "UNAVAILABLE", "UNAVAILABLE"),
        (500, "UNKNOWN", "UNKNOWN"),
        (200, "UNKNOWN", "UNKNOWN"),
    ];
    for (http, tonic_code, spec_code) in table {
        let mut sim = Sim::builder().seed(1).build();
        sim.server("store", move |s| {
            // A layer in the server's builder that answers with the bare
            // HTTP status, as a proxy in front of it would.
            let answer = tower::layer::layer_fn(move |_inner: grpc_chaos::server::Routed| {
                tower::service_fn(
                    move |_req: tonic::codegen::http::Request<tonic::body::Body>| async move {
                        let mut response =
                            tonic::codegen::http::Response::new(tonic::body::Body::empty());
                        *response.status_mut() =
                            tonic::codegen::http::StatusCode::from_u16(http).expect("valid");
                        Ok::<_, std::convert::Infallible>(response)
                    },
                )
            });
            s.configure(move |b| b.layer(answer))
                .add_service(Store::default().into_server())
        });
        sim.client("player", |c| async move {
            let _ = StoreClient::new(c.channel("store")).save(save()).await;
            Ok(())
        });
        let trace = sim.run().expect("the run");
        let call = trace.calls()[0].outcome().expect("ended");
        assert_eq!(
            (call.code, call.spec_code),
            (tonic_code, spec_code),
            "HTTP {http}"
        );
    }
}

/// A server-streaming call runs past its deadline (tonic bounds only the
/// wait for response headers): the render says so when the deadline
/// passes, and its end line says by how much.
#[test]
fn a_stream_past_its_deadline_says_so_when_it_passes_and_at_its_end() {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO)
                .with_watch_interval(ms(100))
                .into_server(),
        )
    });
    sim.client("player", |c| async move {
        let mut req = tonic::Request::new(WatchRequest {
            match_id: "m1".into(),
            count: 5,
            padding: 0,
        });
        req.set_timeout(ms(250));
        let mut stream = ScoreboardClient::new(c.channel("gateway"))
            .watch(req)
            .await?
            .into_inner();
        while stream.message().await?.is_some() {}
        Ok(())
    });
    let trace = sim.run().expect("the run");
    let rows = rpc_rows(&trace);
    let passed = rows
        .lines()
        .find(|l| l.contains("still open at its deadline"))
        .unwrap_or_else(|| panic!("{rows}"));
    assert!(passed.trim_start().starts_with("250.000"), "{passed}");
    assert!(
        passed.ends_with(
            "r1 call /tt.v1.Scoreboard/Watch still open at its deadline (grpc-timeout=250ms)"
        ),
        "{passed}"
    );
    let end = rows
        .lines()
        .find(|l| l.contains("ended OK"))
        .unwrap_or_else(|| panic!("{rows}"));
    let over = trace.calls()[0].overran_deadline().expect("ended late");
    assert!(
        end.ends_with(&format!(
            "ended OK, {} past its deadline",
            grpc_chaos::trace::fmt_duration(over)
        )),
        "{end}"
    );
    // Every row stays in time order.
    let times: Vec<f64> = rows
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{rows}");
    let _ = EventKind::HostCrashed;
}
