//! Partitions that heal like TCP, black holes that do not, paused hosts,
//! and the connection lifecycle the trace shows around them.

use grpc_chaos::recorder::event;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{ConnectFailure, Fate, LinkHold, WaitingFor};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{LoadRequest, SaveRequest};
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

fn save(points: u32) -> SaveRequest {
    SaveRequest {
        match_id: "final".into(),
        points,
    }
}

fn with_timeout<T>(msg: T, timeout: Duration) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    req.set_timeout(timeout);
    req
}

/// A store whose Save takes 500 ms, and a sim that runs up to `duration`.
fn store_sim(duration: Duration) -> Sim {
    let mut sim = Sim::builder().seed(1).duration(duration).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(500)).into_server())
    });
    sim
}

/// `(time, frame, fate)` of every frame `host` wrote.
fn frames(trace: &Trace, host: &str) -> Vec<(Duration, FrameType, Fate)> {
    trace
        .events_on(host)
        .filter_map(|e| match &e.kind {
            EventKind::Frame { frame, fate, .. } => Some((e.at(), *frame, fate.get())),
            _ => None,
        })
        .collect()
}

/// When `host` recorded a kept-back frame leaving.
fn releases(trace: &Trace, host: &str) -> Vec<Duration> {
    trace
        .events_on(host)
        .filter(|e| matches!(e.kind, EventKind::FrameReleased { .. }))
        .map(|e| e.at())
        .collect()
}

/// `(time, conn, attempt, waited)` of every connection `host` opened.
fn connected(trace: &Trace, host: &str) -> Vec<(Duration, u32, u32, bool)> {
    trace
        .events_on(host)
        .filter_map(|e| match e.kind {
            EventKind::Connected {
                conn,
                attempt,
                waited,
                ..
            } => Some((e.at(), conn, attempt, waited)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_partition_that_heals_resumes_the_call_on_the_same_connection() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(5_000));
    sim.fault(Fault::partition("player", "store").at(ms(100)));
    sim.fault(Fault::repair("player", "store").at(ms(2_000)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        let reply = store.save(save(3)).await?;
        assert_eq!(reply.into_inner().total, 3);
        Ok(())
    });
    let trace = sim.run()?;
    let call = trace.calls_from("player").next().expect("the Save");
    assert!(call.outcome().is_some_and(|o| o.is_ok()), "{call:?}");
    assert_eq!(
        call.ended_at,
        Some(ms(2_001)),
        "one link latency after the repair"
    );
    // The answer was written during the partition, waited at the store,
    // and left at the repair, in order.
    let answer: Vec<_> = frames(&trace, "store")
        .into_iter()
        .filter(|(_, _, fate)| *fate == Fate::Partitioned)
        .collect();
    let names: Vec<FrameType> = answer.iter().map(|(_, f, _)| *f).collect();
    assert_eq!(
        names,
        [FrameType::Headers, FrameType::Data, FrameType::Headers],
        "{answer:?}"
    );
    assert!(answer.iter().all(|(t, ..)| *t > ms(100) && *t < ms(2_000)));
    assert_eq!(releases(&trace, "store"), [ms(2_000); 3]);
    // One connection, never redialled.
    assert_eq!(connected(&trace, "player"), [(ms(1), 1, 1, false)]);
    let render = trace.render();
    assert!(
        render.contains("c1 s1 HEADERS :status=200 [held: partitioned until repair]"),
        "{render}"
    );
    assert!(
        render.contains("c1 s1 DATA released after 1498ms"),
        "{render}"
    );
    Ok(())
}

#[test]
fn the_tcp_like_partition_works_with_the_wire_tap_off() -> grpc_chaos::Result {
    let mut sim = Sim::builder()
        .seed(1)
        .duration(ms(5_000))
        .wire_tap(false)
        .build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(500)).into_server())
    });
    sim.fault(Fault::partition("player", "store").at(ms(100)));
    sim.fault(Fault::repair("player", "store").at(ms(2_000)));
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store")).save(save(1)).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let call = trace.calls_from("player").next().expect("the Save");
    assert!(call.outcome().is_some_and(|o| o.is_ok()), "{call:?}");
    assert_eq!(
        call.ended_at,
        Some(ms(2_001)),
        "the answer waited for the repair"
    );
    assert!(
        frames(&trace, "store").is_empty(),
        "no frames with the tap off"
    );
    Ok(())
}

#[test]
fn a_connect_during_a_partition_waits_and_completes_after_the_repair() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(5_000));
    sim.fault(Fault::partition("player", "store").at(Duration::ZERO));
    sim.fault(Fault::repair("player", "store").at(ms(1_500)));
    sim.client("player", |c| async move {
        let channel = c.channel_with("store", |e| e.connect_timeout(Duration::from_secs(5)));
        StoreClient::new(channel)
            .load(LoadRequest::default())
            .await?;
        Ok(())
    });
    let trace = sim.run()?;
    let call = trace.calls_from("player").next().expect("the Load");
    assert!(call.outcome().is_some_and(|o| o.is_ok()), "{call:?}");
    // The connector's SYN goes out one tick after the repair reached the
    // player, and its answer one link latency later.
    assert_eq!(connected(&trace, "player"), [(ms(1_501), 1, 1, true)]);
    let render = trace.render();
    assert!(
        render.contains("connect attempt 1 waits: partitioned, the SYN is retried until repair"),
        "{render}"
    );
    assert!(
        render.contains("c1 connected after 1501ms, once the link opened (attempt 1)"),
        "{render}"
    );
    // A dial that did not wait is routine: shown only with `connections`.
    let quiet = store_sim(ms(1_000));
    let trace = run_one_load(quiet)?;
    assert!(!trace.render().contains("connect"), "{}", trace.render());
    let mut options = RenderOptions::default();
    options.connections = true;
    let all = trace.render_with(&options);
    assert!(
        all.contains("player→store         connect attempt 1"),
        "{all}"
    );
    assert!(all.contains("c1 connected after 1ms (attempt 1)"), "{all}");
    Ok(())
}

fn run_one_load(mut sim: Sim) -> grpc_chaos::Result<Trace> {
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await?;
        Ok(())
    });
    sim.run()
}

#[test]
fn a_connect_timeout_ends_the_wait_when_the_repair_is_later() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(5_000));
    sim.fault(Fault::partition("player", "store").at(Duration::ZERO));
    sim.fault(Fault::repair("player", "store").at(ms(3_000)));
    sim.client("player", |c| async move {
        let channel = c.channel_with("store", |e| e.connect_timeout(Duration::from_secs(1)));
        let mut store = StoreClient::new(channel);
        let err = store.load(LoadRequest::default()).await.unwrap_err();
        assert_eq!(
            grpc_chaos::spec_code(&err),
            tonic::Code::Unavailable,
            "{err:?}"
        );
        tokio::time::sleep(ms(2_500)).await;
        store.load(LoadRequest::default()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let abandoned: Vec<_> = trace
        .events_on("player")
        .filter_map(|e| match e.kind {
            EventKind::ConnectAbandoned {
                attempt,
                after,
                waited,
                ..
            } => Some((e.at(), attempt, after, waited)),
            _ => None,
        })
        .collect();
    assert_eq!(abandoned, [(ms(1_000), 1, ms(1_000), true)]);
    // The redial after the repair connects at once.
    assert_eq!(connected(&trace, "player"), [(ms(3_501), 1, 2, false)]);
    let render = trace.render();
    assert!(
        render.contains(
            "connect attempt 1 given up by the caller after 1000ms (its connect timeout)"
        ),
        "{render}"
    );
    Ok(())
}

#[test]
fn reset_after_cuts_the_connection_and_the_next_call_redials() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(5_000));
    sim.fault(
        Fault::partition("player", "store")
            .reset_after(ms(1_000))
            .at(ms(100)),
    );
    sim.fault(Fault::repair("player", "store").at(ms(2_000)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        let err = store.save(save(1)).await.unwrap_err();
        assert_eq!(
            grpc_chaos::spec_code(&err),
            tonic::Code::Unavailable,
            "{err:?}"
        );
        tokio::time::sleep(ms(1_000)).await;
        store.save(save(1)).await?;
        Ok(())
    });
    let trace = sim.run()?;
    // The answer, written at 502ms, waits 1s: then c1 is reset.
    let resets: Vec<_> = trace
        .events_on("store")
        .filter_map(|e| match e.kind {
            EventKind::ConnReset {
                conn,
                waited,
                discarded,
                ..
            } => Some((e.at(), conn, waited, discarded)),
            _ => None,
        })
        .collect();
    assert_eq!(resets, [(ms(1_502), 1, ms(1_000), 3)]);
    let first = trace.calls_from("player").next().expect("first Save");
    assert_eq!(first.ended_at, Some(ms(1_502)), "failed at the reset");
    assert!(
        releases(&trace, "store").is_empty(),
        "nothing that waited left"
    );
    let dials = connected(&trace, "player");
    assert_eq!(dials.len(), 2, "{dials:?}");
    assert_eq!(
        (dials[1].1, dials[1].2),
        (2, 2),
        "a new connection, attempt 2"
    );
    assert!(dials[1].0 > ms(2_000), "after the repair: {dials:?}");
    let render = trace.render();
    assert!(
        render.contains(
            "c1 reset at both ends: bytes waited 1000ms for the partition (reset_after); 3 frames discarded"
        ),
        "{render}"
    );
    assert!(
        render.contains("partitioned: bytes wait at their senders until repair; a connection resets after 1000ms of waiting"),
        "{render}"
    );
    Ok(())
}

#[test]
fn a_black_hole_loses_frames_for_good_and_the_trace_says_so() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(5_000));
    sim.fault(Fault::black_hole("player", "store").at(ms(100)));
    sim.fault(Fault::repair("player", "store").at(ms(1_000)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        // Answered into the black hole at ~502ms.
        let err = store
            .save(with_timeout(save(1), ms(3_000)))
            .await
            .unwrap_err();
        assert_eq!(grpc_chaos::spec_code(&err), tonic::Code::DeadlineExceeded);
        Ok(())
    });
    let trace = sim.run()?;
    let store = frames(&trace, "store");
    let fates: Vec<Fate> = store
        .iter()
        .filter(|(t, ..)| *t > ms(100))
        .map(|(_, _, f)| *f)
        .collect();
    assert_eq!(fates[0], Fate::Lost, "{store:?}");
    // turmoil never retransmits: everything after it on that direction is
    // lost too, after the repair as well (the RST_STREAM answer, if any).
    assert!(
        fates[1..].iter().all(|f| *f == Fate::LostBehind),
        "{store:?}"
    );
    let render = trace.render();
    assert!(
        render.contains("c1 s1 HEADERS :status=200 [lost in the black hole]"),
        "{render}"
    );
    assert!(
        render.contains("[lost behind a frame the black hole dropped]"),
        "{render}"
    );
    assert!(
        render.contains("black hole: bytes sent across are lost"),
        "{render}"
    );
    Ok(())
}

#[test]
fn a_connect_into_a_black_hole_is_refused_at_once() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(2_000));
    sim.fault(Fault::black_hole("player", "store").at(Duration::ZERO));
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await
            .unwrap_err();
        assert_eq!(grpc_chaos::spec_code(&err), tonic::Code::Unavailable);
        Ok(())
    });
    let trace = sim.run()?;
    let failed: Vec<_> = trace
        .events_on("player")
        .filter_map(|e| match e.kind {
            EventKind::ConnectFailed { reason, took, .. } => Some((reason, took)),
            _ => None,
        })
        .collect();
    assert_eq!(failed, [(ConnectFailure::Refused, Duration::ZERO)]);
    let mut options = RenderOptions::default();
    options.connections = true;
    let all = trace.render_with(&options);
    assert!(
        all.contains("connect attempt 1 failed: refused after 0ms"),
        "{all}"
    );
    Ok(())
}

#[test]
fn a_connect_to_a_crashed_host_is_given_up_at_the_connect_timeout() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(3_000));
    sim.fault(Fault::crash("store").at(Duration::ZERO));
    sim.client("player", |c| async move {
        let channel = c.channel_with("store", |e| e.connect_timeout(ms(700)));
        let _ = StoreClient::new(channel).load(LoadRequest::default()).await;
        Ok(())
    });
    let trace = sim.run()?;
    let abandoned = trace.events_on("player").find_map(|e| match e.kind {
        EventKind::ConnectAbandoned { after, waited, .. } => Some((after, waited)),
        _ => None,
    });
    // A crashed turmoil host does not refuse: the SYN waits unanswered.
    assert_eq!(abandoned, Some((ms(700), false)));
    assert!(
        !trace.render().contains("connect attempt"),
        "routine for the default render"
    );
    Ok(())
}

#[test]
fn a_paused_server_lets_the_clients_deadline_fire() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(5_000));
    sim.fault(Fault::pause("store").at(ms(100)));
    sim.fault(Fault::resume("store").at(ms(3_000)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        store.load(LoadRequest::default()).await?;
        let err = store
            .save(with_timeout(save(1), ms(1_000)))
            .await
            .unwrap_err();
        assert_eq!(grpc_chaos::spec_code(&err), tonic::Code::DeadlineExceeded);
        // Past the resume, so that what waited leaves.
        tokio::time::sleep(ms(2_500)).await;
        Ok(())
    });
    let trace = sim.run()?;
    let save = trace.calls_from("player").nth(1).expect("the Save");
    assert_eq!(
        save.ended_at,
        Some(save.started + ms(1_000)),
        "its own deadline"
    );
    // The request left before the pause; the player's RST_STREAM waits for
    // the resume, as does the store's answer (its handler ran on: the
    // emulation cannot stop its code).
    let rst = frames(&trace, "player")
        .into_iter()
        .find(|(_, f, _)| *f == FrameType::RstStream)
        .expect("the player cancelled");
    assert_eq!(rst.2, Fate::Paused);
    assert!(releases(&trace, "player").contains(&ms(3_000)));
    assert!(frames(&trace, "store")
        .iter()
        .any(|(_, f, fate)| *f == FrameType::Headers && *fate == Fate::Paused));
    let render = trace.render();
    assert!(
        render.contains("store                host paused: bytes to and from it wait until resume"),
        "{render}"
    );
    assert!(
        render.contains("store                host resumed"),
        "{render}"
    );
    assert!(render.contains("[held: paused until resume]"), "{render}");
    Ok(())
}

#[test]
fn keepalive_closes_the_connection_to_a_paused_server() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(6_000));
    sim.fault(Fault::handler("store").hang());
    sim.fault(Fault::pause("store").at(ms(100)));
    sim.fault(Fault::resume("store").at(ms(5_000)));
    sim.client("player", |c| async move {
        let channel = c.channel_with("store", |e| {
            e.http2_keep_alive_interval(ms(1_000))
                .keep_alive_timeout(ms(1_000))
        });
        let err = StoreClient::new(channel)
            .load(LoadRequest::default())
            .await
            .unwrap_err();
        assert_eq!(
            grpc_chaos::spec_code(&err),
            tonic::Code::Unavailable,
            "{err:?}"
        );
        Ok(())
    });
    let trace = sim.run()?;
    let ping = frames(&trace, "player")
        .into_iter()
        .find(|(_, f, _)| *f == FrameType::Ping)
        .expect("keepalive pinged");
    assert_eq!(ping.2, Fate::Paused, "the PING waits for the resume");
    let call = trace.calls_from("player").next().expect("the Load");
    assert_eq!(
        call.ended_at,
        Some(ping.0 + ms(1_000)),
        "closed by the keepalive timeout, long before the resume"
    );
    Ok(())
}

#[test]
fn bad_partition_and_pause_faults_are_misconfigurations() {
    let cases: [(Vec<Fault>, &str); 6] = [
        (
            vec![Fault::black_hole("store", "store").at(ms(5))],
            "black hole between store and store: a link joins two different hosts",
        ),
        (
            vec![Fault::partition("player", "player").at(ms(5))],
            "partition between player and player: a link joins two different hosts",
        ),
        (
            vec![Fault::partition("player", "store")
                .reset_after(Duration::ZERO)
                .at(ms(5))],
            "reset_after(0) would reset every connection at the first byte",
        ),
        (
            vec![Fault::resume("store").at(ms(5))],
            "resume of store at 5ms: store is not paused then",
        ),
        (
            vec![
                Fault::resume("store").at(ms(5)),
                Fault::pause("store").at(ms(10)),
            ],
            "resume of store at 5ms: store is not paused then",
        ),
        (
            vec![
                Fault::pause("store").at(ms(5)),
                Fault::pause("store").at(ms(10)),
            ],
            "pause of store at 10ms: store is already paused",
        ),
    ];
    for (faults, says) in cases {
        let mut sim = store_sim(ms(1_000));
        for f in faults {
            sim.fault(f);
        }
        sim.client("player", |_| async { Ok(()) });
        let err = sim.run().expect_err("misconfigured");
        assert!(err.is_misconfigured(), "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
    let mut sim = store_sim(ms(1_000));
    sim.fault(Fault::pause("stroe").at(ms(5)));
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().expect_err("unknown host");
    assert!(err.is_unknown_host(), "{err}");
    assert!(
        err.to_string().contains("known hosts: player, store"),
        "{err}"
    );
}

/// What a partition held that never left is reported at the end of the
/// run, with why: no repair came, or the sender crashed with it.
#[test]
fn frames_a_partition_held_that_never_left_say_why() -> grpc_chaos::Result {
    for (crash, lost_with_sender) in [(false, false), (true, true)] {
        let says = WaitingFor::Link {
            link: LinkHold::Partition,
            lost_with_sender,
        };
        let mut sim = store_sim(ms(3_000));
        sim.fault(Fault::partition("player", "store").at(ms(100)));
        if crash {
            sim.fault(Fault::crash("store").at(ms(1_000)));
            sim.fault(Fault::repair("player", "store").at(ms(1_200)));
        }
        sim.client("player", |c| async move {
            let _ = StoreClient::new(c.channel("store"))
                .save(with_timeout(save(1), ms(1_500)))
                .await;
            Ok(())
        });
        let trace = sim.run()?;
        let never: Vec<WaitingFor> = trace
            .events_on("store")
            .filter_map(|e| match &e.kind {
                EventKind::FrameNeverLeft(frame_never_left) => {
                    let event::FrameNeverLeft { waiting_for, .. } = &**frame_never_left;
                    Some(waiting_for.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(never.len(), 3, "the answer's three frames: {never:?}");
        assert!(never.iter().all(|w| *w == says), "{never:?}");
        // In the trace's words.
        let words = if crash {
            "held by the partition, then lost with its sender's connection"
        } else {
            "held by the partition, never repaired"
        };
        assert_eq!(says.to_string(), words);
        let ended = trace.calls_from("player").next().and_then(|c| c.ended_at);
        if crash {
            // The crash's resets wait for the repair like every other
            // segment: the player learns of it then, not at the crash.
            assert_eq!(ended, Some(ms(1_200)));
        } else {
            // Its deadline, counted from the connect (tonic starts the
            // timer once the channel is ready).
            assert_eq!(ended, Some(ms(1_501)));
        }
    }
    Ok(())
}

/// A repair with nothing to mend is a misconfiguration: a typo in a host
/// name, or a repair meant to end a pause.
#[test]
fn a_repair_without_a_partition_is_a_misconfiguration() {
    let mut sim = store_sim(ms(3_000));
    sim.fault(Fault::pause("store").at(ms(100)));
    sim.fault(Fault::repair("player", "store").at(ms(200)));
    sim.client("player", |_| async { Ok(()) });
    let err = sim.run().expect_err("nothing to repair");
    assert!(err.is_misconfigured(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("repair between player and store at 200ms: no partition or black hole cuts that link then"),
        "{msg}"
    );
    assert!(msg.contains("a pause ends with Fault::resume"), "{msg}");
}

/// Connection backoff (grpc's `doc/connection-backoff.md`; #30): with the
/// store unreachable (a black hole refuses each SYN at once) for 5 s and
/// the player calling every 100 ms, tonic's channel (0.14.9,
/// `transport/channel/service/reconnect.rs`) dials once per call: the
/// failed attempt's error goes to the call that waited, and the next call
/// dials again at once, with no delay between attempts and none growing.
/// connection-backoff.md would start its attempts at 0 s, ~1 s, ~2.6 s and
/// ~5.2 s (INITIAL_BACKOFF 1 s, MULTIPLIER 1.6, JITTER ±20%): 4 in the
/// window, not 50. Measured here in the sim; read in tonic's code.
#[test]
fn tonic_redials_on_every_call_with_no_backoff() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(6_000));
    sim.fault(Fault::black_hole("player", "store").at(Duration::ZERO));
    sim.fault(Fault::repair("player", "store").at(ms(5_000)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        for _ in 0..50 {
            let failed = store.load(LoadRequest::default()).await;
            assert!(failed.is_err(), "the store is unreachable: {failed:?}");
            tokio::time::sleep(ms(100)).await;
        }
        store.load(LoadRequest::default()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let started: Vec<(Duration, u32)> = trace
        .events_on("player")
        .filter_map(|e| match e.kind {
            EventKind::ConnectStarted { attempt, .. } => Some((e.at(), attempt)),
            _ => None,
        })
        .collect();
    let failed = trace
        .events_on("player")
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::ConnectFailed {
                    reason: ConnectFailure::Refused,
                    ..
                }
            )
        })
        .count();
    assert_eq!(failed, 50, "one refused dial per failed call");
    assert_eq!(
        started.len(),
        51,
        "and one more that connects after the repair"
    );
    // Attempt n starts with call n, (n - 1) × 100 ms in: the call's own
    // rhythm, nothing of the channel's.
    let rhythm: Vec<(Duration, u32)> = (1..=51).map(|n| (ms(100 * u64::from(n - 1)), n)).collect();
    assert_eq!(started, rhythm);
    // The summary says so, at the first redial.
    let render = trace.render_summary(None);
    assert!(
        render.contains(
            "redialled sooner than connection backoff allows: 50 of 50 redials after a failed \
             connect (shortest 100ms after the failed attempt began; connection-backoff.md \
             allows 800ms"
        ),
        "{render}"
    );
    let json: serde_json::Value = serde_json::from_str(&trace.to_json()).expect("JSON");
    assert_eq!(
        json["quick_redials"],
        serde_json::json!([{"host": "player", "to": "store", "redials": 50, "too_soon": 50,
            "first_us": 100_000, "shortest_us": 100_000, "allowed_us": 800_000}])
    );
    // The same finding, typed.
    let quick = trace.quick_redials();
    assert_eq!(quick.len(), 1);
    let q = &quick[0];
    assert_eq!((q.host.as_str(), q.to.as_str()), ("player", "store"));
    assert_eq!((q.redials, q.too_soon), (50, 50));
    assert_eq!(
        (q.first, q.shortest, q.allowed),
        (ms(100), ms(100), ms(800))
    );
    Ok(())
}

/// A caller that waits as connection-backoff.md says before each new call
/// (1 s, then ×1.6) redials no sooner than allowed: no finding.
#[test]
fn redials_spaced_as_connection_backoff_says_are_not_a_finding() -> grpc_chaos::Result {
    let mut sim = store_sim(ms(8_000));
    sim.fault(Fault::black_hole("player", "store").at(Duration::ZERO));
    sim.fault(Fault::repair("player", "store").at(ms(4_500)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        for wait in [1_000, 1_600, 2_560] {
            let failed = store.load(LoadRequest::default()).await;
            assert!(failed.is_err(), "the store is unreachable: {failed:?}");
            tokio::time::sleep(ms(wait)).await;
        }
        store.load(LoadRequest::default()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let summary = trace.render_summary(None);
    assert!(!summary.contains("redialled"), "{summary}");
    assert!(!trace.to_json().contains("quick_redials"));
    assert!(trace.quick_redials().is_empty());
    // The same run with one wait cut to 1 s is flagged at that redial.
    let mut sim = store_sim(ms(8_000));
    sim.fault(Fault::black_hole("player", "store").at(Duration::ZERO));
    sim.fault(Fault::repair("player", "store").at(ms(4_500)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        for wait in [1_000, 1_000, 2_560] {
            let _ = store.load(LoadRequest::default()).await;
            tokio::time::sleep(ms(wait)).await;
        }
        store.load(LoadRequest::default()).await?;
        Ok(())
    });
    let summary = sim.run()?.render_summary(None);
    assert!(
        summary.contains(
            "redialled sooner than connection backoff allows: 1 of 3 redials after a failed \
             connect (shortest 1000ms after the failed attempt began; connection-backoff.md \
             allows 1280ms"
        ),
        "{summary}"
    );
    Ok(())
}
