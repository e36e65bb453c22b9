//! Middleboxes (issue 15): load balancers and proxies between a client and
//! a server host, as built-in connection policies (`Sim::middlebox`), and
//! the stories they tell: a Watch stream cut by an ALB idle timeout although
//! keepalive PINGs flow; keepalive that cannot see a dead backend behind a
//! PING-answering proxy, and the deadline that does.
//!
//! Every story runs with a 10 ms tick; link latency is the default 1 ms.
//! Times pinned below are simulated.

use grpc_chaos::recorder::event;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::policy::{
    Activity, ConnectionLifetime, Expiry, IdleTimeout, Middlebox, StreamLifetime,
};
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::recorder::event::{EventKind, PolicyEnd, TimerRanOut};
use grpc_chaos::wire::{ErrorCode, FrameType};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{SaveRequest, WatchRequest};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use grpc_chaos_tests::{ms, secs};
use tonic::Code;

/// What the player's call ended with, as tonic reported it.
type Seen = Arc<Mutex<Option<(Code, String, u32)>>>;

/// A gateway whose Watch sends `count` scores `every` apart, behind `mb`,
/// watched by a player whose channel PINGs every 20 s (10 s to answer).
fn watch_world(mb: Option<Middlebox>, every: Duration, count: u32, seen: Seen) -> Sim {
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(200))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", move |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO)
                .with_watch_interval(every)
                .into_server(),
        )
    });
    if let Some(mb) = mb {
        sim.middlebox("gateway", mb);
    }
    sim.client("player", move |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel_with("gateway", |e| {
            e.http2_keep_alive_interval(secs(20))
                .keep_alive_timeout(secs(10))
        }));
        let request = WatchRequest {
            match_id: "final".into(),
            count,
            padding: 0,
        };
        let mut scores = scoreboard.watch(request).await?.into_inner();
        let mut received = 0;
        loop {
            match scores.message().await {
                Ok(Some(_)) => received += 1,
                Ok(None) => {
                    *seen.lock().unwrap() = Some((Code::Ok, String::new(), received));
                    break;
                }
                Err(status) => {
                    *seen.lock().unwrap() =
                        Some((status.code(), status.message().to_owned(), received));
                    break;
                }
            }
        }
        Ok(())
    });
    sim
}

fn seen() -> Seen {
    Arc::new(Mutex::new(None))
}

/// (time, policy, reason) of each close a policy made.
fn closes(trace: &Trace) -> Vec<(Duration, String, PolicyEnd)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PolicyClosed(policy_closed) => {
                let event::PolicyClosed { policy, reason, .. } = &**policy_closed;
                Some((e.at(), policy.clone(), reason.clone()))
            }
            _ => None,
        })
        .collect()
}

/// (time, host, fate) of every PING without ACK the player wrote, and of
/// every PING ACK.
fn pings(trace: &Trace, ack: bool) -> Vec<(Duration, String, Fate)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                frame: FrameType::Ping,
                flags,
                fate,
                ..
            } if flags.ack() == ack => Some((e.at(), e.host.to_string(), fate.get())),
            _ => None,
        })
        .collect()
}

/// The story: an ALB (idle timeout 60 s, PINGs do not reset it) in front of
/// a gateway whose Watch sends a score every 90 s. The player's keepalive
/// PINGs every 20 s are all answered, yet 60 s after the first score the
/// ALB closes the connection under the open stream.
#[test]
fn an_alb_idle_timeout_cuts_a_watch_although_keepalive_pings_flow() -> grpc_chaos::Result {
    let seen = seen();
    let trace = watch_world(Some(Middlebox::aws_alb()), secs(90), 3, seen.clone()).run()?;
    let text = trace.render();
    // The PINGs at 20 s and 40 s were answered by the box; neither
    // reached the gateway, and neither reset the timer.
    let sent = pings(&trace, false);
    assert_eq!(sent.len(), 2, "{text}");
    assert!(sent.iter().all(|p| p.2 == Fate::Swallowed), "{text}");
    let acks = pings(&trace, true);
    assert!(acks
        .iter()
        .all(|p| p.1 == "gateway" && p.2 == Fate::Injected));
    // The box's ACKs are its own doing, not a fault's: the summary lists no
    // fault fired, and the JSON marks them as a policy's.
    let summary = trace.render_summary(None);
    assert!(
        summary
            .lines()
            .any(|l| l.starts_with("  faults fired") && l.ends_with(" none")),
        "{summary}"
    );
    assert_eq!(
        trace.to_json().matches(r#""by_policy": true"#).count(),
        acks.len(),
        "{text}"
    );
    assert_eq!(
        trace
            .to_json()
            .matches("\"by_policy\": true,\n      \"policy\": \"AWS ALB\"")
            .count(),
        acks.len(),
        "{text}"
    );
    // Their rows name the box, not an injection, in the text and on the
    // page alike (one row builder serves both).
    let row = "c1 s0 PING ack 3b7cdb7a0b8716b4 [sent by AWS ALB]";
    assert_eq!(text.matches(row).count(), acks.len(), "{text}");
    assert!(!text.contains("[injected]"), "{text}");
    let page = trace.render_html();
    assert!(
        page.contains(row) && !page.contains("[injected]"),
        "the page says what the text says"
    );
    // The first score left at about 3 ms; the box closed 60 s later.
    let closes = closes(&trace);
    assert_eq!(closes.len(), 1, "{text}");
    let (at, policy, reason) = &closes[0];
    assert_eq!(policy, "AWS ALB");
    assert!(
        matches!(
            reason,
            PolicyEnd::Timer(TimerRanOut::Idle { after, since, .. })
                if *after == secs(60) && *since == Duration::from_millis(20)
        ),
        "{reason:?}"
    );
    assert!(*at >= secs(60) && *at < secs(61), "{at:?}");
    // tonic: the stream fails with UNKNOWN ("transport error"-like h2
    // error) after one score; the spec's code for a connection lost under
    // a call is UNAVAILABLE.
    let (code, message, received) = seen.lock().unwrap().clone().expect("watch ended");
    assert_eq!(received, 1);
    assert_eq!(code, Code::Unknown, "{message}");
    let outcome = trace.calls()[0].outcome().expect("outcome");
    assert_eq!(
        (outcome.code, outcome.spec_code),
        ("UNKNOWN", "UNAVAILABLE")
    );
    insta::assert_snapshot!(text);
    Ok(())
}

/// With the ALB's idle timeout raised above the gap between scores, the
/// same Watch completes: the timer, not the PINGs, decided.
#[test]
fn the_same_watch_lives_when_scores_come_sooner_than_the_idle_timeout() -> grpc_chaos::Result {
    let seen = seen();
    let trace = watch_world(Some(Middlebox::aws_alb()), secs(50), 3, seen.clone()).run()?;
    assert!(closes(&trace).is_empty(), "{}", trace.render());
    assert_eq!(
        seen.lock().unwrap().clone().map(|s| (s.0, s.2)),
        Some((Code::Ok, 3))
    );
    Ok(())
}

/// A store that is dead from 1 s on: its Save hangs, and a frame fault
/// drops everything it writes after 1 s (PING ACKs included) — the box,
/// which is emulated on the connection itself, keeps running. Not a
/// `Fault::crash`: the box runs in the store host's wire tap, so a crash
/// would stop the box's own ACKs with the store. Called with
/// `deadline` through `mb`; the player's keepalive PINGs every 5 s with
/// 2 s to answer.
fn dead_backend_world(mb: Option<Middlebox>, deadline: Option<Duration>, seen: Seen) -> Sim {
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(60))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).hang());
    sim.fault(
        Fault::frames()
            .from("store")
            .during(secs(1), secs(60))
            .drop(),
    );
    if let Some(mb) = mb {
        sim.middlebox("store", mb);
    }
    sim.client("player", move |player| async move {
        let mut store = StoreClient::new(player.channel_with("store", |e| {
            e.http2_keep_alive_interval(secs(5))
                .keep_alive_timeout(secs(2))
        }));
        let mut request = tonic::Request::new(SaveRequest::default());
        if let Some(d) = deadline {
            request.set_timeout(d);
        }
        let status = store.save(request).await.expect_err("no answer");
        *seen.lock().unwrap() = Some((status.code(), status.message().to_owned(), 0));
        Ok(())
    });
    sim
}

/// Envoy as deployments that stream configure it: the route timeout off
/// (`timeout: 0s`, as Envoy's timeouts FAQ says for streaming responses).
fn envoy_for_streaming() -> Middlebox {
    let mut envoy = Middlebox::envoy();
    envoy.upstream_timeout = None;
    envoy
}

/// With Envoy's default route timeout (15 s) the same dead backend is
/// found by the box: the call ends at 15 s with Envoy's trailers-only
/// UNAVAILABLE "upstream request timeout", before the 30 s deadline.
#[test]
fn envoys_route_timeout_is_what_ends_a_call_to_a_dead_backend() -> grpc_chaos::Result {
    let seen = seen();
    let trace = dead_backend_world(Some(Middlebox::envoy()), Some(secs(30)), seen.clone()).run()?;
    let (code, message, _) = seen.lock().unwrap().clone().expect("ended");
    assert_eq!(
        (code, message.as_str()),
        (Code::Unavailable, "upstream request timeout")
    );
    let ended = trace.calls()[0].ended_at.expect("ended");
    assert!(ended >= secs(15) && ended < secs(16), "{ended:?}");
    Ok(())
}

/// The story: behind Envoy (which answers PINGs itself), the backend dies;
/// every keepalive PING is ACKed by the box, so keepalive never closes the
/// connection, and a call without a deadline hangs to the end of the run.
/// A deadline is what detects it.
#[test]
fn keepalive_cannot_see_a_dead_backend_behind_a_ping_answering_proxy() -> grpc_chaos::Result {
    // Without a deadline the call never ends: the run's clients are still
    // waiting when it is over.
    let seen_forever = seen();
    let err = dead_backend_world(Some(envoy_for_streaming()), None, seen_forever.clone())
        .run()
        .expect_err("the call hangs");
    assert!(seen_forever.lock().unwrap().is_none(), "{err}");

    // With a 30 s deadline: DEADLINE_EXCEEDED at 30 s, although eight
    // PINGs were ACKed (by the box) meanwhile.
    let seen = seen();
    let trace =
        dead_backend_world(Some(envoy_for_streaming()), Some(secs(30)), seen.clone()).run()?;
    let text = trace.render();
    let acks = pings(&trace, true);
    assert!(acks.len() >= 5, "{text}");
    assert!(acks.iter().all(|p| p.2 == Fate::Injected), "{text}");
    assert!(closes(&trace).is_empty(), "{text}");
    // tonic's own words for its deadline: CANCELLED "Timeout expired";
    // the spec's code is DEADLINE_EXCEEDED.
    let (code, message, _) = seen.lock().unwrap().clone().expect("ended");
    assert_eq!(
        (code, message.as_str()),
        (Code::Cancelled, "Timeout expired")
    );
    let call = &trace.calls()[0];
    assert_eq!(
        call.outcome().map(|o| o.spec_code),
        Some("DEADLINE_EXCEEDED")
    );
    let ended = call.ended_at.expect("ended");
    assert!(ended >= secs(30) && ended < secs(31), "{ended:?}");
    insta::assert_snapshot!(text);
    Ok(())
}

/// The control: without the box the same dead backend's silence includes
/// its PING ACKs, and keepalive closes the connection 2 s after the first
/// unanswered PING (tonic: UNAVAILABLE, well before any deadline).
#[test]
fn without_the_proxy_keepalive_detects_the_dead_backend() -> grpc_chaos::Result {
    let seen = seen();
    let trace = dead_backend_world(None, Some(secs(30)), seen.clone()).run()?;
    let (code, message, _) = seen.lock().unwrap().clone().expect("ended");
    assert_ne!(code, Code::DeadlineExceeded, "{message}");
    let ended = trace.calls()[0].ended_at.expect("ended");
    assert!(ended < secs(10), "{ended:?}\n{}", trace.render());
    Ok(())
}

/// A GCP-style stream lifetime cap: RST_STREAM(CANCEL) at 30 s, both ways;
/// tonic reports CANCELLED, and the gateway's handler is reset too.
#[test]
fn a_stream_lifetime_cap_resets_a_long_watch() -> grpc_chaos::Result {
    let seen = seen();
    let trace = watch_world(
        Some(Middlebox::gcp_external_lb()),
        secs(10),
        10,
        seen.clone(),
    )
    .run()?;
    let text = trace.render();
    assert!(
        text.contains("c1 GCP external LB: RST_STREAM(CANCEL) on s1 both ways: stream lifetime 30000ms reached (opened at 10ms)"),
        "{text}"
    );
    // tonic: CANCELLED (RST_STREAM(CANCEL) maps to it, gRPC's HTTP/2
    // error-code table).
    let (code, _, received) = seen.lock().unwrap().clone().expect("ended");
    assert_eq!(code, Code::Cancelled);
    // Scores at 0, 10 and 20 s; the cap came first at 30.01 s.
    assert_eq!(received, 3, "{text}");
    let resets = trace
        .events()
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Frame {
                    frame: FrameType::RstStream,
                    fate,
                    ..
                } if *fate == Fate::Injected
            )
        })
        .count();
    assert_eq!(resets, 2, "one to each end: {text}");
    Ok(())
}

/// nginx's read timeout counts only what the backend writes: a Watch whose
/// scores come 70 s apart is reset at 60 s after the first, although the
/// client's PINGs (answered by nginx) keep flowing.
#[test]
fn an_nginx_read_timeout_resets_a_stream_the_backend_is_silent_on() -> grpc_chaos::Result {
    let seen = seen();
    let trace = watch_world(Some(Middlebox::nginx()), secs(70), 3, seen.clone()).run()?;
    let text = trace.render();
    assert!(
        text.contains("c1 nginx: s1 upstream timeout 60000ms (nothing read from the server since 20ms): RST_STREAM(INTERNAL_ERROR) to the client (its response headers went out); RST_STREAM(CANCEL) to the server"),
        "{text}"
    );
    // tonic: INTERNAL for RST_STREAM(INTERNAL_ERROR), as gRPC's HTTP/2
    // error-code table maps it.
    assert_eq!(
        seen.lock().unwrap().clone().map(|s| (s.0, s.2)),
        Some((Code::Internal, 1))
    );
    Ok(())
}

/// A connection lifetime cap: GOAWAY(NO_ERROR) at 5 s, close 2 s later;
/// a box limited to one client host leaves another's connection alone.
#[test]
fn a_connection_lifetime_cap_sends_goaway_then_closes_after_the_grace() -> grpc_chaos::Result {
    let mut mb = Middlebox::new("the edge proxy").for_clients(["player"]);
    mb.connection_lifetime = Some(ConnectionLifetime::new(secs(5), secs(2)));
    let seen = seen();
    let trace = watch_world(Some(mb), secs(3), 5, seen.clone()).run()?;
    let text = trace.render();
    assert!(
        text.contains("c1 the edge proxy: GOAWAY(NO_ERROR, last s1): connection lifetime 5000ms reached; close in 2000ms"),
        "{text}"
    );
    let closes = closes(&trace);
    assert_eq!(closes.len(), 1, "{text}");
    assert!(
        closes[0].0 >= secs(7) && closes[0].0 < secs(8),
        "{closes:?}"
    );
    assert_eq!(
        closes[0].2,
        PolicyEnd::LifetimeGraceOver {
            after: secs(5),
            grace: secs(2)
        }
    );
    // The gateway's own connection to the store is not the box's: the
    // box fronts `gateway` only.
    Ok(())
}

/// `for_clients`: connections from other client hosts pass untouched.
#[test]
fn a_box_for_one_client_leaves_the_others_alone() -> grpc_chaos::Result {
    let mut sim = Sim::builder()
        .seed(15)
        .tick(ms(10))
        .duration(secs(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).delay(secs(2)));
    let mut mb = Middlebox::new("a strict box").for_clients(["player"]);
    mb.connection_idle = Some(IdleTimeout::new(ms(500), Activity::DATA, Expiry::Close));
    sim.middlebox("store", mb);
    for name in ["player", "coach"] {
        sim.client(name, |host| async move {
            let _ = StoreClient::new(host.channel("store"))
                .save(SaveRequest::default())
                .await;
            Ok(())
        });
    }
    let trace = sim.run()?;
    let outcomes: Vec<_> = trace
        .calls()
        .iter()
        .map(|c| (c.host.clone(), c.outcome().map(|o| o.code)))
        .collect();
    assert!(
        outcomes.contains(&("player".into(), Some("UNKNOWN"))),
        "{outcomes:?}"
    );
    assert!(
        outcomes.contains(&("coach".into(), Some("OK"))),
        "{outcomes:?}"
    );
    Ok(())
}

/// A connection idle timer whose expiry is GOAWAY, and one that resets
/// every open stream instead.
#[test]
fn idle_expiry_can_be_a_goaway_or_resets() -> grpc_chaos::Result {
    let mut mb = Middlebox::new("box");
    mb.connection_idle = Some(IdleTimeout::new(
        secs(5),
        Activity::DATA_OR_HEADERS,
        Expiry::GoAway(ErrorCode::EnhanceYourCalm),
    ));
    let trace = watch_world(Some(mb), secs(8), 2, seen()).run()?;
    let text = trace.render();
    assert!(
        text.contains("c1 box: GOAWAY(ENHANCE_YOUR_CALM, last s1) then close: idle timeout 5000ms"),
        "{text}"
    );
    assert_eq!(closes(&trace).len(), 1);

    let mut mb = Middlebox::new("box");
    mb.connection_idle = Some(IdleTimeout::new(
        secs(5),
        Activity::DATA_OR_HEADERS,
        Expiry::RstStream(ErrorCode::RefusedStream),
    ));
    let seen = seen();
    let trace = watch_world(Some(mb), secs(8), 2, seen.clone()).run()?;
    let text = trace.render();
    assert!(
        text.contains("c1 box: RST_STREAM(REFUSED_STREAM) on s1 both ways: idle timeout 5000ms"),
        "{text}"
    );
    assert!(closes(&trace).is_empty(), "{text}");
    assert_eq!(
        seen.lock().unwrap().clone().map(|s| s.0),
        Some(Code::Unavailable)
    );
    Ok(())
}

fn bad(configure: impl FnOnce(&mut Sim)) -> grpc_chaos::Error {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    configure(&mut sim);
    let err = sim.run().expect_err("misconfigured");
    assert!(err.is_misconfigured() || err.is_unknown_host(), "{err}");
    err
}

#[test]
fn a_box_on_a_host_that_does_not_exist_is_an_error() {
    let err = bad(|sim| {
        sim.middlebox("stor", Middlebox::aws_alb());
    });
    assert!(err.is_unknown_host(), "{err}");
    assert!(err.to_string().contains("stor"), "{err}");
    assert!(err.to_string().contains("the middlebox AWS ALB"), "{err}");
}

#[test]
fn a_box_on_a_client_host_is_an_error() {
    let err = bad(|sim| {
        sim.middlebox("player", Middlebox::aws_alb());
    });
    assert!(err.is_misconfigured());
    assert!(
        err.to_string().contains("Sim::middlebox(\"player\", AWS ALB): `player` is a client host; a middlebox sits in front of a server host"),
        "{err}"
    );
}

#[test]
fn a_box_for_a_client_that_is_not_one_is_an_error() {
    let err = bad(|sim| {
        sim.middlebox("store", Middlebox::aws_alb().for_clients(["playr"]));
    });
    assert!(
        err.to_string()
            .contains("lists `playr` in for_clients, which is not a host of this sim"),
        "{err}"
    );
}

#[test]
fn an_idle_timer_of_zero_is_an_error() {
    let err = bad(|sim| {
        let mut alb = Middlebox::aws_alb();
        alb.connection_idle = Some(IdleTimeout::new(
            Duration::ZERO,
            Activity::DATA,
            Expiry::Close,
        ));
        sim.middlebox("store", alb);
    });
    assert!(err.is_misconfigured());
    assert!(
        err.to_string()
            .contains("the middlebox AWS ALB on `store` has connection_idle.after = 0"),
        "{err}"
    );
    assert!(err.to_string().contains("give it at least 1ms"), "{err}");
}

#[test]
fn a_lifetime_cap_of_zero_is_an_error() {
    let err = bad(|sim| {
        let mut gcp = Middlebox::gcp_external_lb();
        gcp.stream_lifetime = Some(StreamLifetime::new(Duration::ZERO, ErrorCode::Cancel));
        sim.middlebox("store", gcp);
    });
    assert!(
        err.to_string().contains("has stream_lifetime.after = 0"),
        "{err}"
    );
    let err = bad(|sim| {
        let mut mb = Middlebox::new("box");
        mb.connection_lifetime = Some(ConnectionLifetime::new(Duration::ZERO, secs(1)));
        sim.middlebox("store", mb);
    });
    assert!(
        err.to_string()
            .contains("has connection_lifetime.after = 0"),
        "{err}"
    );
}

#[test]
fn a_box_without_the_wire_tap_is_an_error() {
    let mut sim = Sim::builder().wire_tap(false).build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.middlebox("store", Middlebox::nginx());
    let err = sim.run().expect_err("no tap");
    assert!(err.to_string().contains("acts in the wire tap"), "{err}");
}
