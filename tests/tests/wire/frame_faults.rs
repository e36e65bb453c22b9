//! Frame faults between real tonic peers: kept-back frames keep TCP's
//! order, and the trace says so; frames injected after a frame of either
//! direction; SETTINGS injected on a server's behalf; frames held until a
//! named release.

use grpc_chaos::recorder::event;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{Fate, FrameDetail, FrameFlags, GoAway, WaitingFor};
use grpc_chaos::trace::{Call, RenderOptions};
use grpc_chaos::wire::{ErrorCode, FrameType, SettingId};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{LoadRequest, SaveRequest};
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

/// GOAWAY(`code`, `last_stream_id`, `debug`).
fn goaway_of(code: ErrorCode, last_stream_id: u32, debug: &[u8]) -> FrameDetail {
    FrameDetail::GoAway(Box::new(GoAway {
        last_stream_id,
        code,
        debug: debug.into(),
    }))
}

/// Waiting for the release of the hold `name`.
fn release(name: &str) -> WaitingFor {
    WaitingFor::Release {
        hold: name.to_owned(),
    }
}

/// `(time, frame, flags, fate)` of every frame the store wrote.
fn store_frames(trace: &grpc_chaos::Trace) -> Vec<(Duration, FrameType, FrameFlags, String)> {
    trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                frame, flags, fate, ..
            } => Some((e.at(), *frame, *flags, format!("{fate:?}"))),
            _ => None,
        })
        .collect()
}

#[test]
fn frames_behind_a_delayed_frame_leave_with_it() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Settings)
            .ack(true)
            .delay(ms(100)),
    );
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await?;
        Ok(())
    });
    let trace = sim.run()?;
    let frames = store_frames(&trace);
    let ack = frames
        .iter()
        .position(|(_, f, flags, _)| *f == FrameType::Settings && flags.ack())
        .expect("the store acked the client's SETTINGS");
    let (at, _, _, fate) = &frames[ack];
    let until = *at + ms(100);
    assert_eq!(
        fate,
        &format!("Delayed {{ until: {until:?} }}"),
        "{frames:?}"
    );
    // Everything the store wrote after the ACK, before it left, waits behind
    // it, and says so (the rule did not match it).
    for (t, frame, flags, fate) in frames.iter().skip(ack + 1).filter(|(t, ..)| *t < until) {
        assert_eq!(
            fate,
            &format!("Behind {{ until: {until:?} }}"),
            "{frame} {flags:?} written at {t:?} left before the ACK ahead of it"
        );
    }
    let released = trace
        .events_on("store")
        .filter(|e| matches!(e.kind, EventKind::FrameReleased { .. }))
        .count();
    assert!(
        released >= 2,
        "the ACK and what queued behind it: {}",
        trace.render()
    );
    Ok(())
}

// ---- injection after a frame, SETTINGS injection, named holds ----

/// One recorded frame, flattened for assertions.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    at: Duration,
    stream: u32,
    frame: FrameType,
    flags: FrameFlags,
    detail: FrameDetail,
    fate: Fate,
}

/// Every frame `from` wrote, in order.
fn seen(trace: &Trace, from: &str) -> Vec<Seen> {
    trace
        .events_on(from)
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                stream,
                frame,
                flags,
                detail,
                fate,
                ..
            } => Some(Seen {
                at: e.at(),
                stream: *stream,
                frame: *frame,
                flags: *flags,
                detail: detail.clone(),
                fate: fate.get(),
            }),
            _ => None,
        })
        .collect()
}

/// `(time, stream, frame, kept)` of every FrameReleased `from` recorded.
fn releases(trace: &Trace, from: &str) -> Vec<(Duration, u32, FrameType, Duration)> {
    trace
        .events_on(from)
        .filter_map(|e| match &e.kind {
            EventKind::FrameReleased {
                stream,
                frame,
                kept,
                ..
            } => Some((e.at(), *stream, *frame, *kept)),
            _ => None,
        })
        .collect()
}

/// `(code tonic said, message, spec code, end time)` of the `n`-th call
/// (0-based) `host` made.
fn ended(trace: &Trace, host: &str, n: usize) -> (String, String, String, Duration) {
    let call: &Call = trace.calls_from(host).nth(n).expect("the call");
    let o = call.outcome().expect("an outcome");
    (
        o.code.to_owned(),
        o.message.clone(),
        o.spec_code.to_owned(),
        call.ended_at.expect("ended"),
    )
}

fn save(points: u32, timeout: Duration) -> tonic::Request<SaveRequest> {
    let mut req = tonic::Request::new(SaveRequest {
        match_id: "final".into(),
        points,
    });
    req.set_timeout(timeout);
    req
}

/// The store's SETTINGS (not the ACK): the server preface.
fn store_settings() -> grpc_chaos::fault::FrameFault {
    Fault::frames()
        .from("store")
        .kind(FrameType::Settings)
        .ack(false)
}

/// A store whose first SETTINGS is followed by an injected one carrying
/// `values`, and whose player's ACK of that injected SETTINGS (its second
/// ACK) is dropped, so the store's stack never sees an ACK it did not ask
/// for.
fn settings_injected(values: &[(SettingId, u32)]) -> Sim {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::inject("store", "player")
            .settings(values)
            .after(store_settings()),
    );
    sim.fault(
        Fault::frames()
            .from("player")
            .kind(FrameType::Settings)
            .ack(true)
            .nth(2)
            .drop(),
    );
    sim
}

/// A store that takes 100 ms per call, a player that saves on stream 1 and
/// 10 ms later on stream 3, and a GOAWAY(NO_ERROR, last-stream-id 1,
/// `debug`) from the store set off by the player's HEADERS on stream 3.
fn goaway_after_stream_3(debug: &'static [u8]) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(100)).into_server())
    });
    sim.fault(
        Fault::inject("store", "player")
            .goaway(ErrorCode::NoError, 1, debug)
            .after(
                Fault::frames()
                    .from("player")
                    .kind(FrameType::Headers)
                    .stream(3),
            ),
    );
    sim.client("player", |c| async move {
        let store = StoreClient::new(c.channel("store"));
        let (mut a, mut b) = (store.clone(), store.clone());
        let first = tokio::spawn(async move { a.save(save(1, ms(1_000))).await });
        tokio::time::sleep(ms(10)).await;
        let _ = b.save(save(2, ms(1_000))).await;
        let _ = first.await;
        Ok(())
    });
    sim.run()
}

/// RFC 9113 §6.8: a GOAWAY whose last-stream-id is below a stream the
/// client just opened. Set off by the client's HEADERS on stream 3, it
/// leaves the store on the next tick (the store's host runs before the
/// player's in each turmoil step), long before stream 3's answer.
#[test]
fn goaway_after_the_players_stream_3_fails_that_call_and_spares_stream_1() -> grpc_chaos::Result {
    let trace = goaway_after_stream_3(b"")?;
    let trigger = seen(&trace, "player")
        .into_iter()
        .find(|f| f.frame == FrameType::Headers && f.stream == 3)
        .expect("the player opened stream 3");
    let goaways: Vec<Seen> = seen(&trace, "store")
        .into_iter()
        .filter(|f| f.frame == FrameType::GoAway)
        .collect();
    assert_eq!(goaways.len(), 1, "once per connection: {goaways:?}");
    assert_eq!(goaways[0].detail, goaway_of(ErrorCode::NoError, 1, b""));
    assert_eq!(goaways[0].fate, Fate::Injected);
    assert_eq!(goaways[0].at, trigger.at + ms(1), "the next tick");
    // Stream 3 is above last-stream-id: not processed, by the spec
    // UNAVAILABLE; tonic says INTERNAL. Stream 1 completes.
    let (code, message, spec, at) = ended(&trace, "player", 1);
    assert_eq!(
        (code.as_str(), message.as_str(), spec.as_str()),
        ("INTERNAL", "h2 protocol error: http2 error", "UNAVAILABLE")
    );
    assert!(at < ms(100), "failed before the store answered: {at:?}");
    assert_eq!(ended(&trace, "player", 0).0, "OK");
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// The same GOAWAY with debug data: h2 appends it to its error text, and
/// the call is still UNAVAILABLE by the spec.
#[test]
fn goaway_debug_data_does_not_change_the_spec_code() -> grpc_chaos::Result {
    let trace = goaway_after_stream_3(b"bye")?;
    let goaway = seen(&trace, "store")
        .into_iter()
        .find(|f| f.frame == FrameType::GoAway)
        .expect("the GOAWAY");
    assert_eq!(goaway.detail, goaway_of(ErrorCode::NoError, 1, b"bye"));
    let (code, _, spec, _) = ended(&trace, "player", 1);
    assert_eq!((code.as_str(), spec.as_str()), ("INTERNAL", "UNAVAILABLE"));
    Ok(())
}

/// The other way round: a frame the store writes sets off an injection
/// from the player, whose host runs after the store's in the same step,
/// so it leaves at the same simulated instant.
#[test]
fn an_injection_set_off_by_the_servers_frame_leaves_the_client_at_the_same_instant(
) -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::inject("player", "store")
            .ping(false, *b"injected")
            .after(Fault::frames().from("store").kind(FrameType::Headers)),
    );
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.load(LoadRequest::default()).await?;
        store.load(LoadRequest::default()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let answer = seen(&trace, "store")
        .into_iter()
        .find(|f| f.frame == FrameType::Headers)
        .expect("the store answered");
    let pings: Vec<Seen> = seen(&trace, "player")
        .into_iter()
        .filter(|f| f.frame == FrameType::Ping && f.fate == Fate::Injected)
        .collect();
    assert_eq!(pings.len(), 1, "once per connection: {pings:?}");
    assert_eq!(pings[0].at, answer.at);
    Ok(())
}

/// RFC 9113 §6.5.2: SETTINGS_MAX_CONCURRENT_STREAMS=0, injected right
/// behind the store's own SETTINGS. The player's stack obeys: the call in
/// flight finishes, the next one never gets a stream (no HEADERS goes
/// out) and ends at its deadline. The player's ACK of the injected
/// SETTINGS is dropped, or the store's stack would see an ACK it never
/// asked for (next test).
#[test]
fn max_concurrent_streams_0_leaves_the_next_call_without_a_stream() -> grpc_chaos::Result {
    let mut sim = settings_injected(&[(SettingId::MaxConcurrentStreams, 0)]);
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1, ms(1_000))).await?;
        tokio::time::sleep(ms(100)).await;
        let _ = store.save(save(2, ms(500))).await;
        Ok(())
    });
    let trace = sim.run()?;
    let store = seen(&trace, "store");
    let injected = store
        .iter()
        .position(|f| f.fate == Fate::Injected)
        .expect("injected");
    assert_eq!(
        store[injected].detail,
        FrameDetail::Settings {
            values: [(SettingId::MaxConcurrentStreams, 0)].into()
        }
    );
    assert_eq!(
        (store[injected - 1].frame, store[injected - 1].at),
        (FrameType::Settings, store[injected].at),
        "right behind the store's SETTINGS"
    );
    let player = seen(&trace, "player");
    assert!(
        player.iter().all(|f| f.stream != 3),
        "stream 3 never opened: {player:?}"
    );
    let (code, message, spec, at) = ended(&trace, "player", 1);
    assert_eq!(
        (code.as_str(), message.as_str(), spec.as_str()),
        ("CANCELLED", "Timeout expired", "DEADLINE_EXCEEDED")
    );
    let started = trace.calls_from("player").nth(1).expect("r2").started;
    assert_eq!(at, started + ms(500), "ended by its deadline");
    // Every frame: the SETTINGS exchange is the story here.
    insta::assert_snapshot!(trace.render_with(&RenderOptions::everything()));
    Ok(())
}

/// The receiver acks injected SETTINGS (RFC 9113 §6.5.3), and the
/// sender's stack, which never sent them, gets an ACK it did not expect:
/// h2 answers GOAWAY(PROTOCOL_ERROR).
#[test]
fn injected_settings_are_acked_to_a_stack_that_never_sent_them() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::inject("store", "player")
            .settings(&[(SettingId::MaxConcurrentStreams, 100)])
            .after(store_settings()),
    );
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await;
        Ok(())
    });
    let trace = sim.run()?;
    let acks = seen(&trace, "player")
        .into_iter()
        .filter(|f| f.frame == FrameType::Settings && f.flags.ack())
        .count();
    assert_eq!(acks, 2, "the store's SETTINGS and the injected ones");
    let goaway = seen(&trace, "store")
        .into_iter()
        .find(|f| f.frame == FrameType::GoAway)
        .expect("the store went away");
    assert_eq!(goaway.detail, goaway_of(ErrorCode::ProtocolError, 1, b""));
    Ok(())
}

/// RFC 9113 §4.2: SETTINGS_MAX_FRAME_SIZE=65,536 injected on the store's
/// behalf (its own stack advertised 16,384). The player's stack acks it
/// and sends a 40,011-octet DATA frame; the tap, which follows what the
/// player acked, passes it as a legal frame; the store's stack refuses it
/// with GOAWAY(FRAME_SIZE_ERROR).
#[test]
fn a_max_frame_size_the_server_never_advertised_gets_a_frame_it_refuses() -> grpc_chaos::Result {
    let mut sim = settings_injected(&[(SettingId::MaxFrameSize, 65_536)]);
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.load(LoadRequest::default()).await?;
        let mut big = save(1, ms(1_000));
        big.get_mut().match_id = "x".repeat(40_000);
        let _ = store.save(big).await;
        Ok(())
    });
    let trace = sim.run()?;
    let data: Vec<Seen> = seen(&trace, "player")
        .into_iter()
        .filter(|f| f.frame == FrameType::Data && f.stream == 3)
        .collect();
    assert_eq!(
        data[0].detail,
        FrameDetail::Data {
            len: 40_011,
            compressed_flag: Some(0),
        },
        "one frame: {data:?}"
    );
    let protocol_errors = trace
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ProtocolError { .. }))
        .count();
    assert_eq!(protocol_errors, 0, "{}", trace.render());
    let goaway = seen(&trace, "store")
        .into_iter()
        .find(|f| f.frame == FrameType::GoAway)
        .expect("the store refused the frame");
    assert_eq!(goaway.detail, goaway_of(ErrorCode::FrameSizeError, 3, b""));
    let (code, message, spec, _) = ended(&trace, "player", 1);
    assert_eq!(
        (code.as_str(), message.as_str(), spec.as_str()),
        ("UNKNOWN", "transport error", "UNAVAILABLE")
    );
    Ok(())
}

/// The store's answers are held under "answer" until the player's own
/// code releases them 300 ms in. They leave on the store's next tick
/// (its host runs before the player's), the call completes right after,
/// and a later answer passes: the hold is over.
#[test]
fn a_held_answer_leaves_when_the_client_releases_it() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Headers)
            .hold("answer"),
    );
    sim.client("player", |c| async move {
        let store = StoreClient::new(c.channel("store"));
        let mut first = store.clone();
        let call = tokio::spawn(async move { first.save(save(1, ms(1_000))).await });
        tokio::time::sleep(ms(300)).await;
        c.release("answer");
        call.await??;
        store.clone().save(save(2, ms(1_000))).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let store = seen(&trace, "store");
    let held: Vec<(u32, FrameType, Fate)> = store
        .iter()
        .filter(|f| f.fate != Fate::Passed)
        .map(|f| (f.stream, f.frame, f.fate))
        .collect();
    // The response headers and trailers (the rule matches HEADERS), and the
    // DATA queued between them.
    assert_eq!(
        held,
        [
            (1, FrameType::Headers, Fate::Held),
            (1, FrameType::Data, Fate::BehindHeld),
            (1, FrameType::Headers, Fate::Held)
        ]
    );
    let written = store.iter().find(|f| f.stream == 1).expect("answer").at;
    let released = releases(&trace, "store");
    assert_eq!(released.len(), 3, "{released:?}");
    for (at, _, _, kept) in &released {
        assert_eq!(*at, ms(301), "one tick after the release at 300ms");
        assert_eq!(*kept, ms(301) - written);
    }
    assert_eq!(ended(&trace, "player", 0).3, ms(302));
    assert!(
        store
            .iter()
            .filter(|f| f.stream == 3)
            .all(|f| f.fate == Fate::Passed),
        "{store:?}"
    );
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// `Fault::release(name).at(t)` frees the hold at exactly `t`; frames held
/// under a name nobody releases never leave, and the end of the trace says
/// so, for them and for what queued behind them.
#[test]
fn a_timed_release_frees_its_hold_and_a_hold_never_released_is_reported() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let answers = Fault::frames().from("store").kind(FrameType::Headers);
    sim.fault(answers.clone().stream(1).hold("first"));
    sim.fault(answers.stream(3).hold("never"));
    sim.fault(Fault::release("first").at(ms(200)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.save(save(1, ms(1_000))).await?;
        let _ = store.save(save(2, ms(300))).await;
        Ok(())
    });
    let trace = sim.run()?;
    let released = releases(&trace, "store");
    assert!(!released.is_empty());
    assert!(
        released
            .iter()
            .all(|(at, stream, ..)| *at == ms(200) && *stream == 1),
        "{released:?}"
    );
    let (code, _, spec, _) = ended(&trace, "player", 1);
    assert_eq!(
        (code.as_str(), spec.as_str()),
        ("CANCELLED", "DEADLINE_EXCEEDED")
    );
    let never_left: Vec<_> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FrameNeverLeft(frame_never_left) => {
                let event::FrameNeverLeft {
                    stream,
                    frame,
                    waiting_for,
                    ..
                } = &**frame_never_left;
                Some((e.at(), e.host.as_str(), *stream, *frame, waiting_for))
            }
            _ => None,
        })
        .collect();
    let held_s3 = seen(&trace, "store")
        .into_iter()
        .filter(|f| f.stream == 3 && matches!(f.fate, Fate::Held | Fate::BehindHeld))
        .count();
    assert!(held_s3 >= 3, "HEADERS, DATA, trailers of stream 3");
    assert_eq!(never_left.len(), held_s3, "{never_left:?}");
    for (at, host, stream, _, waiting_for) in &never_left {
        assert_eq!((*at, *host, *stream), (trace.ended_at(), "store", 3));
        assert_eq!(*waiting_for, &release("never"));
    }
    assert_eq!(never_left[0].3, FrameType::Headers, "{never_left:?}");
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// A frame held until a time the run does not reach (it ends 100 ms after
/// the player gives up) never left either.
#[test]
fn a_frame_due_after_the_end_of_the_run_is_reported_as_never_left() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).duration(ms(1_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Headers)
            .hold_until(ms(900)),
    );
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store"))
            .save(save(1, ms(300)))
            .await;
        Ok(())
    });
    let trace = sim.run()?;
    let never_left: Vec<(u32, FrameType, &WaitingFor)> = trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::FrameNeverLeft(frame_never_left) => {
                let event::FrameNeverLeft {
                    stream,
                    frame,
                    waiting_for,
                    ..
                } = &**frame_never_left;
                Some((*stream, *frame, waiting_for))
            }
            _ => None,
        })
        .collect();
    assert_eq!(never_left.len(), 3, "{}", trace.render());
    assert_eq!(
        (never_left[0].0, never_left[0].1),
        (1, FrameType::Headers),
        "{never_left:?}"
    );
    assert!(
        never_left
            .iter()
            .all(|f| *f.2 == WaitingFor::Time { until: ms(900) }),
        "{never_left:?}"
    );
    Ok(())
}

// ---- misconfigured frame faults ----

fn store_and_player() -> Sim {
    let mut sim = Sim::builder().seed(1).duration(ms(1_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await?;
        Ok(())
    });
    sim
}

#[test]
fn a_trigger_naming_an_unknown_host_is_an_unknown_host_error() {
    let mut sim = store_and_player();
    sim.fault(
        Fault::inject("store", "player")
            .ping(false, [0; 8])
            .after(Fault::frames().from("stoer")),
    );
    let err = sim.run().expect_err("unknown host");
    assert!(err.is_unknown_host(), "{err}");
    assert!(err.to_string().contains("`stoer`"), "{err}");
}

#[test]
fn a_trigger_naming_a_host_off_the_connection_is_misconfigured() {
    let mut sim = store_and_player();
    sim.server("gateway", |s| s);
    sim.fault(
        Fault::inject("store", "player")
            .ping(false, [0; 8])
            .after(Fault::frames().to("gateway").kind(FrameType::Headers)),
    );
    let err = sim.run().expect_err("misconfigured");
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.to_string().contains("HEADERS to gateway"), "{err}");
}

#[test]
fn releasing_a_name_no_hold_uses_is_misconfigured() {
    let mut sim = store_and_player();
    sim.fault(Fault::frames().from("store").hold("answer"));
    sim.fault(Fault::release("answr").at(ms(10)));
    let err = sim.run().expect_err("misconfigured");
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.to_string().contains("\"answr\""), "{err}");
    assert!(err.to_string().contains("holds: \"answer\""), "{err}");

    let mut sim = Sim::builder().seed(1).duration(ms(1_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |c| async move {
        c.release("answer");
        Ok(())
    });
    let err = sim.run().expect_err("misconfigured at run time");
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.to_string().contains("on `player`"), "{err}");
    assert!(err.to_string().contains("there is none"), "{err}");
}

#[test]
fn frame_fault_mistakes_are_misconfigurations_that_say_what_to_change() {
    let cases: [(Fault, &str); 4] = [
        (
            Fault::frames().kind(FrameType::Ping).nth(0).drop(),
            "frame fault with nth(0) never matches: frames are counted from 1",
        ),
        (
            Fault::frames().during(ms(100), ms(50)).drop(),
            "frame fault window [100ms, 50ms) is empty",
        ),
        (
            Fault::inject("store", "player")
                .ping(false, [0; 8])
                .after(Fault::frames().from("player").nth(0)),
            "injection trigger with nth(0) never matches",
        ),
        (
            Fault::inject("store", "store")
                .ping(false, [0; 8])
                .at(ms(5)),
            "a host has no connection to itself",
        ),
    ];
    for (fault, says) in cases {
        let mut sim = store_and_player();
        sim.fault(fault);
        let err = sim.run().expect_err("misconfigured");
        assert!(err.is_misconfigured(), "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn faults_that_never_acted_are_reported_in_words() -> grpc_chaos::Result {
    let mut sim = store_and_player();
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::PushPromise)
            .hold("pp"),
    );
    sim.fault(
        Fault::inject("store", "player")
            .ping(false, [0; 8])
            .at(ms(900)),
    );
    sim.fault(Fault::release("pp").at(ms(950)));
    let trace = sim.run()?;
    let never: Vec<String> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FaultNeverFired { fault } => Some(fault.clone()),
            _ => None,
        })
        .collect();
    let ended = grpc_chaos::trace::fmt_duration(trace.ended_at());
    assert_eq!(
        never,
        [
            "frame fault: hold until release \"pp\" PUSH_PROMISE from store".to_owned(),
            format!("frame injected from store to player at 900ms: the run ended at {ended}, before it was due"),
            format!("release \"pp\" at 950ms: the run ended at {ended}, before it was due"),
        ]
    );
    Ok(())
}

#[test]
fn an_injection_whose_trigger_never_matched_is_reported() -> grpc_chaos::Result {
    let mut sim = store_and_player();
    sim.fault(
        Fault::inject("store", "player")
            .goaway(ErrorCode::NoError, 0, b"")
            .after(Fault::frames().from("player").kind(FrameType::RstStream)),
    );
    let trace = sim.run()?;
    let never: Vec<String> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FaultNeverFired { fault } => Some(fault.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        never,
        ["frame injected from store to player after RST_STREAM from player: no such frame was written on a connection between store and player"]
    );
    Ok(())
}

/// An injected frame queued behind a frame held for a release that never
/// comes never leaves either, and the end of the trace says so.
#[test]
fn an_injection_behind_a_frame_never_released_never_leaves() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).duration(ms(1_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Data)
            .hold("never"),
    );
    sim.fault(
        Fault::inject("store", "player")
            .rst_stream(1, ErrorCode::Cancel)
            .at(ms(50)),
    );
    sim.client("player", |c| async move {
        // The response headers get through, and tonic's deadline covers
        // only the wait for them: the player bounds the body itself.
        let mut store = StoreClient::new(c.channel("store"));
        let call = store.save(save(1, ms(300)));
        let _ = tokio::time::timeout(ms(300), call).await;
        Ok(())
    });
    let trace = sim.run()?;
    let never_left: Vec<(FrameType, &WaitingFor)> = trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::FrameNeverLeft(frame_never_left) => {
                let event::FrameNeverLeft {
                    frame, waiting_for, ..
                } = &**frame_never_left;
                Some((*frame, waiting_for))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        never_left.last(),
        Some(&(FrameType::RstStream, &release("never"))),
        "{}",
        trace.render()
    );
    Ok(())
}

/// A run that times out because a hold was never released says so.
#[test]
fn a_timeout_names_the_frames_still_held() {
    let mut sim = Sim::builder().seed(1).duration(ms(500)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Data)
            .hold("answer"),
    );
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await?;
        Ok(())
    });
    let err = sim.run().expect_err("the answer never comes");
    assert!(err.is_timeout(), "{err}");
    assert!(
        err.to_string()
            .contains("frames still kept back: 2 store→player held until release \"answer\""),
        "{err}"
    );
}

#[test]
fn more_mistakes_are_misconfigurations() {
    use grpc_chaos::Fault as F;
    let cases: [(Fault, &str); 4] = [
        (
            F::frames().kind(FrameType::Data).hold_until(ms(5_000)),
            "frame fault hold_until at 5000ms is after the end of the run (1000ms)",
        ),
        (
            F::handler("store").fail_first(0, tonic::Code::Unavailable),
            "fail_first(0, ..) on `store` would never fail a call",
        ),
        (
            F::partition("store", "store").at(ms(5)),
            "partition between store and store: a link joins two different hosts",
        ),
        (
            F::link_latency("player", "player", ms(5)).at(ms(5)),
            "a link joins two different hosts",
        ),
    ];
    for (fault, says) in cases {
        let mut sim = store_and_player();
        sim.fault(fault);
        let err = sim.run().expect_err("misconfigured");
        assert!(err.to_string().contains(says), "{err}");
    }
}

/// A timed release has no host of its own: the trace shows it at the host
/// whose frames the hold keeps back (`from`), or, when the hold names only
/// where they go, at that host.
#[test]
fn a_timed_release_is_shown_at_a_host_the_hold_names() -> grpc_chaos::Result {
    for (hold, host) in [
        (Fault::frames().from("store"), "store"),
        (Fault::frames().to("player"), "player"),
    ] {
        let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.fault(hold.kind(FrameType::Headers).stream(1).hold("answer"));
        sim.fault(Fault::release("answer").at(ms(100)));
        sim.client("player", |c| async move {
            StoreClient::new(c.channel("store"))
                .save(save(1, ms(1_000)))
                .await?;
            Ok(())
        });
        let trace = sim.run()?;
        let shown: Vec<(Duration, &str)> = trace
            .events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::HoldReleased { .. }))
            .map(|e| (e.at(), e.host.as_str()))
            .collect();
        assert_eq!(shown, [(ms(100), host)]);
    }
    Ok(())
}
