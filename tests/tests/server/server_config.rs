//! A sim server configured as in production (`ServerHost::configure`):
//! tonic's own builder options, layers and interceptors, `Routes`; each
//! test asserts the behaviour the option causes.

use grpc_chaos::recorder::event;
use std::time::Duration;

use grpc_chaos::recorder::event::{EventKind, LayerSide};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::store_server::StoreServer;
use grpc_chaos_scenarios::services::pb::{LoadRequest, SaveRequest};
use grpc_chaos_scenarios::services::{Store, SAVE};
use grpc_chaos_tests::{codes, ms};
use tonic::service::{InterceptorLayer, Routes};
use tonic::{Code, Request, Status};

fn save(points: u32) -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points,
    }
}

/// The production auth check: a request needs `authorization: token`.
#[allow(clippy::result_large_err)]
fn auth(req: Request<()>) -> Result<Request<()>, Status> {
    match req.metadata().get("authorization") {
        Some(v) if v == "token" => Ok(req),
        _ => Err(Status::unauthenticated("no token")),
    }
}

fn with_token<T>(msg: T) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut()
        .insert("authorization", "token".parse().expect("ascii"));
    req
}

#[test]
fn a_service_with_an_interceptor_is_served_and_its_rejections_recorded() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| {
        s.add_service(StoreServer::with_interceptor(Store::default(), auth))
    });
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        let err = store.save(save(1)).await.unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
        assert_eq!(store.save(with_token(save(2))).await?.into_inner().total, 2);
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(codes(&trace), ["UNAUTHENTICATED", "OK"]);
    // The interceptor is part of the service: the handler layer sits in
    // front of it and records both requests, the rejected one included.
    let runs: Vec<String> = trace
        .handler_runs()
        .iter()
        .map(|r| format!("{:?}", r.end))
        .collect();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].contains("UNAUTHENTICATED"), "{runs:?}");
    assert!(runs[1].contains("\"OK\""), "{runs:?}");
    Ok(())
}

/// A store whose builder has tonic's interceptor layer (a tower layer
/// through `Server::layer`, the production way to wrap every service),
/// with one handler fault on each side of it.
fn layered_store(seed: u64) -> Sim {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| {
        s.configure(|b| b.layer(InterceptorLayer::new(auth)))
            .add_service(Store::default().into_server())
    });
    // Outside the layers: every request is slowed, the rejected one too.
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(100)));
    // Inside: only requests the auth layer let through.
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .inside_layers()
            .delay(ms(1000)),
    );
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        let err = store.save(save(1)).await.unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
        store.save(with_token(save(2))).await?;
        Ok(())
    });
    sim
}

#[test]
fn a_layer_on_the_builder_wraps_every_service_and_faults_act_on_either_side() -> grpc_chaos::Result
{
    let trace = layered_store(2).run()?;
    assert_eq!(codes(&trace), ["UNAUTHENTICATED", "OK"]);
    let latencies: Vec<Duration> = trace
        .calls_from("player")
        .filter_map(|c| c.latency())
        .collect();
    // 100 ms outside + the round trip; then 100 ms outside + 1 s inside.
    assert!(latencies[0] < ms(200), "{latencies:?}");
    assert!(latencies[1] >= ms(1100), "{latencies:?}");
    let sides: Vec<(u32, Option<LayerSide>)> = trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::FaultFired(fault_fired) => {
                let event::FaultFired { run, side, .. } = &**fault_fired;
                Some((run.0, *side))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        sides,
        [
            (1, Some(LayerSide::OutsideLayers)),
            (2, Some(LayerSide::OutsideLayers)),
            (2, Some(LayerSide::InsideLayers)),
        ]
    );
    let render = trace.render_with(&RenderOptions::rpc_only());
    assert!(
        render.contains("h2 fault delay 1000ms on /tt.v1.Store/Save (inside the server's layers)"),
        "{render}"
    );
    assert!(
        render.contains("h1 fault delay 100ms on /tt.v1.Store/Save (outside the server's layers)"),
        "{render}"
    );
    Ok(())
}

#[test]
fn a_host_without_layers_of_its_own_says_nothing_about_sides() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| {
        s.configure(|b| b.timeout(Duration::from_secs(30)))
            .add_service(Store::default().into_server())
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .inside_layers()
            .abort(Code::Unavailable, "down"),
    );
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .save(save(1))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::Unavailable);
        Ok(())
    });
    let trace = sim.run()?;
    let render = trace.render_with(&RenderOptions::rpc_only());
    assert!(
        render.contains("h1 fault abort UNAVAILABLE on /tt.v1.Store/Save\n"),
        "{render}"
    );
    // The inside layer's answer went out through the outer one, which
    // recorded the run's status.
    assert!(
        render.contains("h1 handler /tt.v1.Store/Save finished UNAVAILABLE \"down\""),
        "{render}"
    );
    Ok(())
}

#[test]
fn routes_from_one_function_are_served_with_services_added_either_side() -> grpc_chaos::Result {
    /// Production code that builds the host's routes in one place.
    fn routes() -> Routes {
        Routes::new(Store::default().into_server())
    }
    let mut sim = Sim::builder().seed(4).build();
    sim.server("store", |s| s.add_routes(routes()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .fail_first(1, Code::Unavailable),
    );
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        assert_eq!(
            store.save(save(3)).await.unwrap_err().code(),
            Code::Unavailable
        );
        store.save(save(4)).await?;
        let total = store
            .load(LoadRequest {
                match_id: "m1".into(),
            })
            .await?
            .into_inner()
            .total;
        assert_eq!(total, 4, "the first save was refused by the fault");
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(codes(&trace), ["UNAVAILABLE", "OK", "OK"]);
    Ok(())
}

#[test]
fn two_routes_on_one_host_are_a_misconfiguration() {
    let mut sim = Sim::builder().seed(5).build();
    sim.server("store", |s| {
        s.add_routes(Routes::new(Store::default().into_server()))
            .add_routes(Routes::default())
    });
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store")).save(save(1)).await;
        Ok(())
    });
    let err = sim.run().unwrap_err();
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("add_routes was called twice on host `store`"),
        "{err}"
    );
}

#[test]
fn configuring_a_host_twice_is_a_misconfiguration() {
    let mut sim = Sim::builder().seed(6).build();
    sim.server("store", |s| {
        s.configure(|b| b.timeout(ms(100)))
            .configure(|b| b.max_concurrent_streams(1))
            .add_service(Store::default().into_server())
    });
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store")).save(save(1)).await;
        Ok(())
    });
    let err = sim.run().unwrap_err();
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("configure was called twice on host `store`"),
        "{err}"
    );
}

#[test]
fn the_server_timeout_cancels_a_slow_handler_as_tonic_does() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| {
        s.configure(|b| b.timeout(ms(100)))
            .add_service(Store::with_work(ms(500)).into_server())
    });
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .save(save(1))
            .await
            .unwrap_err();
        // tonic's GrpcTimeout answers for the server (transport/service/grpc_timeout.rs).
        assert_eq!(err.code(), Code::Cancelled);
        assert_eq!(err.message(), "Timeout expired");
        Ok(())
    });
    let trace = sim.run()?;
    let call = &trace.calls()[0];
    let outcome = call.outcome().expect("ended");
    // The server sent that status in its trailers: the player's tonic
    // only decoded it, so the call shows it as sent (the finding belongs to
    // the server's answer, which the spec wants as DEADLINE_EXCEEDED).
    assert_eq!(
        (outcome.code, outcome.spec_code),
        ("CANCELLED", "CANCELLED")
    );
    // About 100 ms after the request arrived: the handler is dropped by
    // tonic's timer, not finished, and the caller hears it one hop later.
    let run = &trace.handler_runs()[0];
    let timed_out = server_timeout(run);
    assert_eq!(
        timed_out.timer,
        event::ServerTimer::ServerTimeout { grpc_timeout: None }
    );
    let ran = run.ended_at.expect("ended") - run.started;
    assert_eq!(ran, ms(100));
    let latency = call.latency().expect("ended");
    assert!(latency >= ms(100) && latency < ms(110), "{latency:?}");
    // The server's answer is the finding: the spec wants DEADLINE_EXCEEDED.
    let summary = trace.render_summary(None);
    assert!(
        summary.contains(
            "tonic reported CANCELLED \"Timeout expired\" where the spec requires DEADLINE_EXCEEDED (server's timeout expired: spec DEADLINE_EXCEEDED (statuscodes.md)): h1"
        ),
        "{summary}"
    );
    let json: serde_json::Value = serde_json::from_str(&trace.to_json()).expect("JSON");
    assert_eq!(
        json["findings"],
        serde_json::json!([{
            "run": "h1",
            "code": "CANCELLED",
            "message": "Timeout expired",
            "spec_code": "DEADLINE_EXCEEDED",
            "rule": grpc_chaos::spec::rules::SERVER_DEADLINE,
        }])
    );
    assert_eq!(json["handler_runs"][0]["end"], "timed_out");
    assert_eq!(json["handler_runs"][0]["timer"], "server_timeout");
    insta::assert_snapshot!(trace.render_with(&RenderOptions::rpc_only()));
    Ok(())
}

/// How tonic's server timer ended `run`.
///
/// # Panics
/// When something else ended it.
fn server_timeout(run: &grpc_chaos::trace::HandlerRun) -> &event::ServerTimeout {
    match &run.end {
        grpc_chaos::trace::RunEnd::TimedOut(t) => {
            assert_eq!(
                (
                    t.outcome.code,
                    t.outcome.message.as_str(),
                    t.outcome.spec_code
                ),
                ("CANCELLED", "Timeout expired", "DEADLINE_EXCEEDED")
            );
            t
        }
        end => panic!("{} ended {end:?}", run.id),
    }
}

/// The request's grpc-timeout is tonic's server timer too: with the
/// player's cancel lost, the store's tonic answers the stream itself at
/// the 100 ms the request carried.
#[test]
fn the_grpc_timeout_a_request_carries_is_the_servers_timer_too() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(500)).into_server())
    });
    sim.fault(
        Fault::frames()
            .from("player")
            .kind(grpc_chaos::wire::FrameType::RstStream)
            .drop(),
    );
    sim.client("player", |c| async move {
        let mut req = Request::new(save(1));
        req.set_timeout(ms(100));
        // The channel stays up past the server's timer: its close would
        // end the run first.
        let mut store = StoreClient::new(c.channel("store"));
        let _ = store.save(req).await;
        tokio::time::sleep(ms(50)).await;
        drop(store);
        Ok(())
    });
    let trace = sim.run()?;
    let run = &trace.handler_runs()[0];
    assert_eq!(
        server_timeout(run).timer,
        event::ServerTimer::GrpcTimeout { timeout: ms(100) },
        "{}",
        trace.render()
    );
    let text = trace.render_with(&RenderOptions::rpc_only());
    assert!(
        text.contains("h1 handler /tt.v1.Store/Save dropped by tonic's server timeout after 100ms (its grpc-timeout=100ms ran out): tonic answered CANCELLED \"Timeout expired\" (spec DEADLINE_EXCEEDED)"),
        "{text}"
    );
    Ok(())
}

/// A `Server::timeout` shorter than the request's grpc-timeout is the one
/// that runs out, and the trace says the request's was longer.
#[test]
fn a_server_timeout_shorter_than_the_grpc_timeout_is_named() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| {
        s.configure(|b| b.timeout(ms(100)))
            .add_service(Store::with_work(ms(500)).into_server())
    });
    sim.client("player", |c| async move {
        let mut req = Request::new(save(1));
        req.set_timeout(ms(400));
        let _ = StoreClient::new(c.channel("store")).save(req).await;
        Ok(())
    });
    let trace = sim.run()?;
    let run = &trace.handler_runs()[0];
    assert_eq!(
        server_timeout(run).timer,
        event::ServerTimer::ServerTimeout {
            grpc_timeout: Some(ms(400))
        }
    );
    let text = trace.render_with(&RenderOptions::rpc_only());
    assert!(
        text.contains("(Server::timeout, shorter than its grpc-timeout=400ms)"),
        "{text}"
    );
    Ok(())
}

/// Without the wire tap the answer is not seen: the run is a plain drop,
/// as much as the harness knows.
#[test]
fn without_the_wire_tap_a_server_timeout_is_a_plain_drop() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).wire_tap(false).build();
    sim.server("store", |s| {
        s.configure(|b| b.timeout(ms(100)))
            .add_service(Store::with_work(ms(500)).into_server())
    });
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store")).save(save(1)).await;
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(
        trace.handler_runs()[0].end,
        grpc_chaos::trace::RunEnd::Dropped
    );
    Ok(())
}

/// Two saves at once on one connection to a store that allows one stream
/// at a time and takes 200 ms per save. `warm` first makes a call, so the
/// client has the server's SETTINGS before the two go out.
fn one_stream_at_a_time(warm: bool) -> Sim {
    let mut sim = Sim::builder().seed(8).build();
    sim.server("store", |s| {
        s.configure(|b| b.max_concurrent_streams(1))
            .add_service(Store::with_work(ms(200)).into_server())
    });
    sim.client("player", move |c| async move {
        let store = StoreClient::new(c.channel("store"));
        if warm {
            store
                .clone()
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await?;
        }
        let (mut a, mut b) = (store.clone(), store);
        let (ra, rb) = tokio::join!(a.save(save(1)), b.save(save(2)));
        let code = |r: &Result<_, Status>| r.as_ref().map_or_else(|e| e.code(), |_| Code::Ok);
        // A target of its own: the trace (and its snapshot) does not
        // change with the module path of this file.
        tracing::info!(target: "server_config", first = ?code(&ra), second = ?code(&rb), "saves ended");
        Ok(())
    });
    sim
}

#[test]
fn max_concurrent_streams_one_makes_the_second_call_wait_for_the_first() -> grpc_chaos::Result {
    let trace = one_stream_at_a_time(true).run()?;
    assert_eq!(codes(&trace), ["OK", "OK", "OK"]);
    let saves: Vec<_> = trace
        .handler_runs()
        .iter()
        .filter(|r| r.path == SAVE)
        .collect();
    assert_eq!(saves.len(), 2);
    // h2's client keeps the second stream back until the first closes
    // (RFC 9113 §5.1.2): the second handler starts after the first ended.
    let first_end = saves[0].ended_at.expect("ended");
    assert!(saves[1].started >= first_end, "{saves:?}");
    let all = trace.render_with(&RenderOptions::everything());
    assert!(
        all.contains("store→player         c1 s0 SETTINGS MAX_CONCURRENT_STREAMS=1"),
        "the server's limit is on the wire:\n{all}"
    );
    insta::assert_snapshot!(trace.render());
    Ok(())
}

#[test]
fn max_concurrent_streams_one_on_a_cold_connection() -> grpc_chaos::Result {
    // Both requests leave before the server's SETTINGS arrived: h2 refuses
    // the stream over the limit (RST_STREAM REFUSED_STREAM, RFC 9113
    // §5.1.2) and tonic reports UNAVAILABLE, the code the spec asks for
    // (the request was not processed; safe to retry).
    let trace = one_stream_at_a_time(false).run()?;
    assert_eq!(codes(&trace), ["OK", "UNAVAILABLE"]);
    assert_eq!(
        trace.handler_runs().len(),
        1,
        "the refused stream never reached a handler"
    );
    let render = trace.render();
    assert!(
        render.contains("store→player         c1 s3 RST_STREAM REFUSED_STREAM"),
        "{render}"
    );
    insta::assert_snapshot!(render);
    Ok(())
}
