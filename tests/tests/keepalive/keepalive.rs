//! Keepalive enforcement (issue 4): a sim server host enforcing a strict
//! server's keepalive policy against real tonic clients, in the wire tap.
//!
//! Every story runs with a 10 ms tick, so ten simulated minutes cost about a
//! second of wall time in a debug build; link latency is the default 1 ms,
//! so a message takes one tick and a PING's round trip two. Times pinned
//! below are simulated.

use grpc_chaos::recorder::event;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use grpc_chaos::policy::KeepalivePolicy;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{
    Fate, FrameDetail, FrameFlags, GoAway, HeaderFields, KeepaliveVerdict, ShownHeader,
};
use grpc_chaos::wire::{BlockKind, ErrorCode, FrameType};
use grpc_chaos::{spec_code, Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{LoadRequest, Rally, SaveRequest};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use grpc_chaos_tests::{ms, secs};
use tonic::transport::Endpoint;
use tonic::Code;

fn save() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 1,
    }
}

fn load() -> LoadRequest {
    LoadRequest {
        match_id: "m1".into(),
    }
}

/// The kube-apiserver's etcd client settings (seed 000 §6.1): PING every
/// `interval`, 10 s to answer.
fn pinger(interval: Duration) -> impl FnOnce(Endpoint) -> Endpoint {
    move |e| {
        e.http2_keep_alive_interval(interval)
            .keep_alive_timeout(secs(10))
    }
}

/// A `store` host enforcing `policy`, whose Save takes ten minutes of
/// silence (a long call with nothing on the wire), in a 10 ms-tick world.
fn store_world(policy: KeepalivePolicy) -> Sim {
    let mut sim = Sim::builder()
        .seed(4)
        .tick(ms(10))
        .duration(secs(700))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).delay(secs(600)));
    sim.keepalive_policy("store", policy);
    sim
}

/// One judged PING: when the server read it, on which connection, and the
/// verdict.
#[derive(Debug, Clone, PartialEq)]
struct Judged {
    at: Duration,
    conn: u32,
    verdict: KeepaliveVerdict,
    gap: Option<Duration>,
    open_calls: usize,
}

fn judged(trace: &Trace) -> Vec<Judged> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::KeepalivePing(keepalive_ping) => {
                let event::KeepalivePing {
                    conn,
                    verdict,
                    gap,
                    open_calls,
                    ..
                } = &**keepalive_ping;
                Some(Judged {
                    at: e.at(),
                    conn: *conn,
                    verdict: *verdict,
                    gap: *gap,
                    open_calls: *open_calls,
                })
            }
            _ => None,
        })
        .collect()
}

fn verdicts(trace: &Trace, conn: u32) -> Vec<KeepaliveVerdict> {
    judged(trace)
        .into_iter()
        .filter(|j| j.conn == conn)
        .map(|j| j.verdict)
        .collect()
}

/// Frames the tap injected: (time, conn, stream, frame, flags, detail).
fn injected(trace: &Trace) -> Vec<(Duration, u32, u32, FrameType, FrameFlags, FrameDetail)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                conn,
                stream,
                frame,
                flags,
                detail,
                fate,
                ..
            } if *fate == Fate::Injected => {
                Some((e.at(), *conn, *stream, *frame, *flags, detail.clone()))
            }
            _ => None,
        })
        .collect()
}

fn goaways(trace: &Trace) -> Vec<(Duration, u32, FrameDetail)> {
    injected(trace)
        .into_iter()
        .filter(|(_, _, _, frame, _, _)| *frame == FrameType::GoAway)
        .map(|(at, conn, _, _, _, detail)| (at, conn, detail))
        .collect()
}

fn closes(trace: &Trace) -> Vec<(Duration, u32)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::KeepaliveClosed { conn, .. } => Some((e.at(), *conn)),
            _ => None,
        })
        .collect()
}

/// (tonic's code, message, the spec's code) of every call that ended.
fn endings(trace: &Trace) -> Vec<(&'static str, String, &'static str)> {
    trace
        .calls()
        .iter()
        .filter_map(|c| c.outcome())
        .map(|o| (o.code, o.message.clone(), o.spec_code))
        .collect()
}

/// GOAWAY(ENHANCE_YOUR_CALM, last-stream-id 1, `too_many_pings`).
fn goaway_too_many_pings() -> FrameDetail {
    FrameDetail::GoAway(Box::new(GoAway {
        last_stream_id: 1,
        code: ErrorCode::EnhanceYourCalm,
        debug: b"too_many_pings".to_vec().into(),
    }))
}

/// The PING verdicts of a connection cut by grpc-go or C-core defaults.
const STRIKE_OUT: [KeepaliveVerdict; 4] = [OK, STRIKE_1, STRIKE_2, TOO_MANY];
const OK: KeepaliveVerdict = KeepaliveVerdict::Ok;
const STRIKE_1: KeepaliveVerdict = KeepaliveVerdict::Strike { n: 1, of: 2 };
const STRIKE_2: KeepaliveVerdict = KeepaliveVerdict::Strike { n: 2, of: 2 };
const TOO_MANY: KeepaliveVerdict = KeepaliveVerdict::TooManyPings;

/// Scenario 1 (seed 000 §6): a 30 s pinger holding a long silent call
/// against grpc-go's defaults (MinTime 5 min). The first PING never counts;
/// the 2nd, 3rd and 4th are strikes 1/2, 2/2, 3/2; the GOAWAY follows the
/// 4th, about 120 s in, and grpc-go closes the connection right away. tonic
/// does not back off after too_many_pings (gRFC A8 and grpc-go double the
/// interval), so every new connection is cut the same way.
#[test]
fn grpc_go_cuts_a_30s_pinger_after_its_4th_ping_every_time() -> grpc_chaos::Result {
    let mut sim = store_world(KeepalivePolicy::grpc_go());
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel_with("store", pinger(secs(30))));
        let start = tokio::time::Instant::now();
        while start.elapsed() < secs(600) {
            let err = store.save(save()).await.expect_err("cut by the GOAWAY");
            assert_eq!(spec_code(&err), Code::Unavailable, "{err:?}");
        }
        Ok(())
    });
    let trace = sim.run()?;

    let first: Vec<Judged> = judged(&trace).into_iter().filter(|j| j.conn == 1).collect();
    assert_eq!(
        first
            .iter()
            .map(|j| (j.at, j.verdict, j.gap, j.open_calls))
            .collect::<Vec<_>>(),
        [
            (ms(30_020), OK, None, 1),
            (ms(60_040), STRIKE_1, Some(ms(30_020)), 1),
            (ms(90_060), STRIKE_2, Some(ms(30_020)), 1),
            (ms(120_080), TOO_MANY, Some(ms(30_020)), 1),
        ],
        "{}",
        trace.render()
    );
    let cut = goaways(&trace);
    assert_eq!(cut[0], (ms(120_080), 1, goaway_too_many_pings()));
    // grpc-go sends nothing per call: the GOAWAY is the only injected frame
    // on each connection, and the close follows it at once.
    assert_eq!(injected(&trace).len(), cut.len());
    assert_eq!(closes(&trace)[0], (ms(120_080), 1));

    // The call in flight: tonic and the spec.
    assert_eq!(
        endings(&trace)[0],
        ("UNKNOWN", "transport error".to_owned(), "UNAVAILABLE")
    );
    assert_eq!(trace.calls()[0].ended_at, Some(ms(120_090)));

    // The channel redials for the next call, and is cut again: every
    // connection gets the same four PINGs and the same GOAWAY.
    let conns: Vec<u32> = cut.iter().map(|(_, c, _)| *c).collect();
    assert_eq!(conns, [1, 2, 3, 4, 5]);
    for conn in conns {
        assert_eq!(verdicts(&trace, conn), STRIKE_OUT, "c{conn}");
    }
    let cut_at: Vec<Duration> = cut.iter().map(|(at, _, _)| *at).collect();
    assert_eq!(
        cut_at,
        [
            ms(120_080),
            ms(240_170),
            ms(360_260),
            ms(480_350),
            ms(600_440)
        ]
    );
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// Scenario 2: the same client against gRPC C-core's defaults. As measured
/// against grpcio 1.85 (FACTS.md): the 4th PING is acked, then GOAWAY
/// (last-stream-id = the open call), a trailers-only UNAVAILABLE "Too many
/// pings" and RST_STREAM(NO_ERROR) for the open call, then the close; tonic
/// reports the call as UNAVAILABLE "Too many pings". The next call redials.
#[test]
fn c_core_ends_the_open_call_unavailable_too_many_pings() -> grpc_chaos::Result {
    let mut sim = store_world(KeepalivePolicy::c_core());
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel_with("store", pinger(secs(30))));
        let err = store.save(save()).await.expect_err("cut by the GOAWAY");
        assert_eq!(
            (err.code(), err.message()),
            (Code::Unavailable, "Too many pings")
        );
        store.load(load()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(verdicts(&trace, 1), STRIKE_OUT);
    let t = ms(120_080);
    assert_eq!(
        injected(&trace),
        [
            (
                t,
                1,
                0,
                FrameType::GoAway,
                FrameFlags::NONE,
                goaway_too_many_pings()
            ),
            (
                t,
                1,
                1,
                FrameType::Headers,
                FrameFlags::END_STREAM | FrameFlags::END_HEADERS,
                FrameDetail::Headers(HeaderFields::new(
                    BlockKind::TrailersOnly,
                    [
                        (ShownHeader::Status, "200"),
                        (ShownHeader::ContentType, "application/grpc"),
                        (ShownHeader::GrpcStatus, "14"),
                        (ShownHeader::GrpcMessage, "Too many pings")
                    ]
                ))
            ),
            (
                t,
                1,
                1,
                FrameType::RstStream,
                FrameFlags::NONE,
                FrameDetail::RstStream {
                    code: ErrorCode::NoError
                }
            ),
        ]
    );
    assert_eq!(closes(&trace), [(t, 1)]);
    assert_eq!(
        endings(&trace),
        [
            ("UNAVAILABLE", "Too many pings".to_owned(), "UNAVAILABLE"),
            ("OK", String::new(), "OK"),
        ]
    );
    // The handler of the cut call is gone with the connection.
    let runs = trace.handler_runs();
    assert_eq!(runs.len(), 2);
    assert!(runs[0].ended_at.is_some_and(|t| t < secs(121)), "{runs:?}");
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// Scenario 3 (seed 000 §6.1): the etcd pairing. The same 30 s pinger
/// against a 5 s minimum, PINGs permitted without calls: every PING is ok
/// and the ten-minute call ends OK on the first connection.
#[test]
fn the_etcd_pairing_runs_ten_minutes_without_a_goaway() -> grpc_chaos::Result {
    let policy = KeepalivePolicy {
        permit_without_calls: true,
        ..KeepalivePolicy::etcd()
    };
    let mut sim = store_world(policy);
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel_with("store", pinger(secs(30))));
        store.save(save()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let all = judged(&trace);
    assert_eq!(all.len(), 19, "{all:?}");
    assert!(all.iter().all(|j| j.verdict == OK && j.conn == 1));
    assert!(all[1..].iter().all(|j| j.gap == Some(STEADY_GAP)));
    assert!(goaways(&trace).is_empty());
    assert_eq!(endings(&trace), [("OK", String::new(), "OK")]);
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// Scenario 4: an idle channel with `keep_alive_while_idle(true)` and no
/// call open, against grpc-go's defaults (no PINGs without calls): the
/// allowed gap is 2 h, so even a 10 s interval is cut after the 4th PING.
/// The next call redials.
#[test]
fn an_idle_pinger_is_cut_even_at_10s_without_permit() -> grpc_chaos::Result {
    let mut sim = store_world(KeepalivePolicy::grpc_go());
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(
            c.channel_with("store", |e| pinger(secs(10))(e).keep_alive_while_idle(true)),
        );
        store.load(load()).await?; // opens the connection
        tokio::time::sleep(secs(60)).await;
        store.load(load()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let first: Vec<Judged> = judged(&trace).into_iter().filter(|j| j.conn == 1).collect();
    assert_eq!(
        first
            .iter()
            .map(|j| (j.at, j.verdict, j.gap, j.open_calls))
            .collect::<Vec<_>>(),
        [
            (ms(10_040), OK, None, 0),
            (ms(20_060), STRIKE_1, Some(ms(10_020)), 0),
            (ms(30_080), STRIKE_2, Some(ms(10_020)), 0),
            (ms(40_100), TOO_MANY, Some(ms(10_020)), 0),
        ],
        "{}",
        trace.render()
    );
    assert_eq!(goaways(&trace), [(ms(40_100), 1, goaway_too_many_pings())]);
    // Both calls succeeded; the second on a new connection.
    assert_eq!(
        endings(&trace),
        [("OK", String::new(), "OK"), ("OK", String::new(), "OK")]
    );
    assert!(verdicts(&trace, 2).iter().all(|v| *v == OK));
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// Scenario 4, the other way round: the same idle 10 s pinger against a
/// policy that permits PINGs without calls at a 10 s minimum is never cut.
#[test]
fn an_idle_pinger_is_fine_when_pings_without_calls_are_permitted() -> grpc_chaos::Result {
    let policy = KeepalivePolicy {
        min_time: secs(10),
        permit_without_calls: true,
        ..KeepalivePolicy::grpc_go()
    };
    let mut sim = store_world(policy);
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(
            c.channel_with("store", |e| pinger(secs(10))(e).keep_alive_while_idle(true)),
        );
        store.load(load()).await?;
        tokio::time::sleep(secs(60)).await;
        store.load(load()).await?;
        Ok(())
    });
    let trace = sim.run()?;
    let all = judged(&trace);
    assert_eq!(all.len(), 5, "{all:?}");
    assert!(all.iter().all(|j| j.verdict == OK && j.conn == 1));
    assert!(goaways(&trace).is_empty());
    Ok(())
}

/// The gap a steady 30 s pinger shows in this world: 30 s after the last
/// frame it received (the previous ACK), plus the ACK's round trip.
const STEADY_GAP: Duration = Duration::from_millis(30_020);

/// Scenario 5: a client interval equal to the minimum gives no strike. The
/// measured gap is the interval plus a round trip, so the edge is pinned at
/// the measured gap: a minimum exactly equal is allowed (grpc-go strikes
/// only when `lastPingAt + MinTime` is *after* now); one tick more strikes.
#[test]
fn a_gap_equal_to_the_minimum_is_no_strike() -> grpc_chaos::Result {
    let run = |min_time: Duration| -> grpc_chaos::Result<Trace> {
        let mut sim = store_world(KeepalivePolicy {
            min_time,
            ..KeepalivePolicy::grpc_go()
        });
        sim.client("player", |c| async move {
            let mut store = StoreClient::new(c.channel_with("store", pinger(secs(30))));
            tokio::select! {
                _ = store.save(save()) => {}
                () = tokio::time::sleep(secs(200)) => {}
            }
            Ok(())
        });
        sim.run()
    };
    // The client's interval as the minimum, and the measured gap itself.
    for min_time in [secs(30), STEADY_GAP] {
        let trace = run(min_time)?;
        let v = verdicts(&trace, 1);
        assert_eq!(v.len(), 6, "{v:?}");
        assert!(v.iter().all(|v| *v == OK), "min {min_time:?}: {v:?}");
        assert!(goaways(&trace).is_empty());
        if min_time == STEADY_GAP {
            insta::assert_snapshot!(trace.render());
        }
    }
    // One tick over the gap: every PING after the first strikes.
    let trace = run(STEADY_GAP + ms(10))?;
    assert_eq!(verdicts(&trace, 1), STRIKE_OUT);
    Ok(())
}

/// A stream of rallies fed from a channel, so the client paces its sends in
/// simulated time.
struct Rallies(tokio::sync::mpsc::Receiver<Rally>);

impl tonic::codegen::tokio_stream::Stream for Rallies {
    type Item = Rally;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Rally>> {
        self.0.poll_recv(cx)
    }
}

/// A `gateway` host enforcing `policy`; a 30 s pinger holds one Rally
/// stream open for ten minutes and sends a rally every 50 s, which the
/// gateway answers at once: server DATA between the client's PINGs. The
/// client stops at the first error; the trace has the stream's status.
fn rally_world(policy: KeepalivePolicy) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(4)
        .tick(ms(10))
        .duration(secs(700))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.keepalive_policy("gateway", policy);
    sim.client("player", |c| async move {
        let mut gateway = ScoreboardClient::new(c.channel_with("gateway", pinger(secs(30))));
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let mut scores = gateway.rally(Rallies(rx)).await?.into_inner();
        for _ in 0..12 {
            let rally = Rally {
                match_id: "m1".into(),
                player: "p".into(),
                shots: 1,
            };
            // A send fails once the connection is gone; the response
            // stream then says how the call ended.
            let _ = tx.send(rally).await;
            if !matches!(scores.message().await, Ok(Some(_))) {
                return Ok(());
            }
            tokio::time::sleep(secs(50)).await;
        }
        drop(tx);
        while let Ok(Some(_)) = scores.message().await {}
        Ok(())
    });
    sim.run()
}

/// Scenario 5, flowing data: grpc-go resets its strikes whenever it sends
/// HEADERS or DATA, so a PING after a server message is never a strike and
/// a 30 s pinger on a stream the server answers every 50 s is never cut.
#[test]
fn server_data_between_pings_resets_strikes() -> grpc_chaos::Result {
    let trace = rally_world(KeepalivePolicy::grpc_go())?;
    let all = judged(&trace);
    assert_eq!(all.len(), 12, "{all:?}");
    assert!(
        all.iter()
            .all(|j| j.verdict == OK && j.gap.is_none() && j.open_calls == 1),
        "{all:?}"
    );
    assert!(goaways(&trace).is_empty());
    assert_eq!(endings(&trace), [("OK", String::new(), "OK")]);
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// The control for the previous story: the same traffic against a policy
/// whose strikes nothing resets is cut after the 4th PING (gaps of 50 s),
/// and the flowing stream fails the way a dropped connection fails it.
#[test]
fn without_resets_the_same_stream_is_cut() -> grpc_chaos::Result {
    let trace = rally_world(KeepalivePolicy {
        reset_on: grpc_chaos::policy::ResetOn::NEVER,
        ..KeepalivePolicy::grpc_go()
    })?;
    assert_eq!(verdicts(&trace, 1), STRIKE_OUT);
    assert_eq!(goaways(&trace), [(ms(180_120), 1, goaway_too_many_pings())]);
    // Read at the client's next receive (it sleeps between rallies).
    assert_eq!(
        endings(&trace),
        [(
            "UNKNOWN",
            "h2 protocol error: error reading a body from connection".to_owned(),
            "UNAVAILABLE"
        )]
    );
    insta::assert_snapshot!(trace.render());
    Ok(())
}

/// A grpc-java server measures from the connection's open time and from the
/// last accepted PING, and a reset goes back to the open time: here each
/// PING in the first 5 min strikes (strike 1/2) and the next server message
/// clears it again; from 5 min on the gap from the open time is long enough
/// and PINGs are ok. The stream is never cut.
#[test]
fn grpc_java_strikes_are_cleared_by_server_data() -> grpc_chaos::Result {
    let trace = rally_world(KeepalivePolicy::grpc_java_netty())?;
    let cleared: Vec<u32> = trace
        .events()
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::KeepaliveStrikesReset { cleared, .. } => Some(cleared),
            _ => None,
        })
        .collect();
    assert_eq!(cleared, [1; 6], "{}", trace.render());
    let v = verdicts(&trace, 1);
    assert_eq!(v.len(), 12);
    assert!(v[..6].iter().all(|v| *v == STRIKE_1), "{v:?}");
    assert!(v[6..].iter().all(|v| *v == OK), "{v:?}");
    assert!(goaways(&trace).is_empty());
    insta::assert_snapshot!(trace.render());
    Ok(())
}

#[test]
fn a_policy_on_an_unknown_or_client_host_is_an_error() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.keepalive_policy("stroe", KeepalivePolicy::grpc_go());
    let err = sim.run().expect_err("unknown host");
    assert!(err.is_unknown_host(), "{err}");
    assert!(err.to_string().contains("stroe"), "{err}");

    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.keepalive_policy("player", KeepalivePolicy::grpc_go());
    let err = sim.run().expect_err("client host");
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.to_string().contains("client host"), "{err}");

    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.keepalive_policy("store", KeepalivePolicy::grpc_go());
    sim.keepalive_policy("store", KeepalivePolicy::etcd());
    let err = sim.run().expect_err("two policies");
    assert!(err.is_misconfigured(), "{err}");
}

/// The helper of issue 4: one line per pairing, the check a team puts next
/// to its channel configuration.
#[test]
fn check_keepalive_answers_compatible_or_goaway_after_n_s() -> grpc_chaos::Result {
    use grpc_chaos::check::{check_keepalive, Traffic};

    let apiserver = || pinger(secs(30));
    let cases = [
        (KeepalivePolicy::grpc_go(), Traffic::LongCall),
        (KeepalivePolicy::c_core(), Traffic::LongCall),
        (KeepalivePolicy::etcd(), Traffic::LongCall),
        (
            KeepalivePolicy::grpc_go(),
            Traffic::Streaming { every: secs(50) },
        ),
    ];
    let mut lines = Vec::new();
    for (policy, traffic) in cases {
        let report = check_keepalive(apiserver(), policy, traffic)?;
        lines.push(format!("{traffic:?}: {report}"));
    }
    let idle = check_keepalive(
        |e| pinger(secs(10))(e).keep_alive_while_idle(true),
        KeepalivePolicy::grpc_go(),
        Traffic::Idle,
    )?;
    assert_eq!(idle.goaway_after(), Some(ms(40_100)));
    // Debug is the verdict and a line about the trace, not the trace.
    let debug = format!("{idle:?}");
    assert!(debug.len() < 400, "{} octets: {debug}", debug.len());
    assert!(debug.contains("goaways: 1,"), "{debug}");
    let events = idle.trace.events().len();
    assert!(
        debug.contains(&format!("trace: seed 0, {events} events, ended at 600")),
        "{debug}"
    );
    lines.push(format!("Idle: {idle}"));
    assert_eq!(
        lines,
        [
            "LongCall: GOAWAY after 120.08s (PING #4 on the connection), calls end with UNAVAILABLE (tonic: UNKNOWN \"transport error\"); 4 GOAWAYs in 600s",
            "LongCall: GOAWAY after 120.08s (PING #4 on the connection), calls end with UNAVAILABLE \"Too many pings\"; 4 GOAWAYs in 600s",
            "LongCall: compatible (19 PINGs in 600s, 0 strikes)",
            "Streaming { every: 50s }: compatible (11 PINGs in 600s, 0 strikes)",
            "Idle: GOAWAY after 40.1s (PING #4 on the connection), no call was open; 1 GOAWAY in 600s",
        ]
    );
    Ok(())
}

/// The catalog's keepalive stories (seed 000 §6 and §6.1) pass their
/// verdicts, with the numbers in their one-line summary.
#[test]
fn catalog_keepalive_stories_pass() {
    use grpc_chaos_scenarios::catalog;

    let mismatch = catalog::find("keepalive-mismatch").expect("in the catalog");
    let (report, trace) = mismatch.run(0);
    assert!(report.passed(), "{:?}", report.verdict);
    assert_eq!(
        report.happened,
        "GOAWAY ENHANCE_YOUR_CALM last-stream-id=1 \"too_many_pings\" after 120.08s, at PING #4; \
         the call ended UNAVAILABLE (tonic: UNKNOWN \"transport error\"); 5 connections cut in 600.56s"
    );
    assert_eq!(report.findings.len(), 2, "{:?}", report.findings);
    assert!(report.findings[1].contains("does not back off"));
    insta::assert_snapshot!(
        "catalog_keepalive_mismatch",
        trace
            .expect("a trace")
            .render_with(&grpc_chaos::trace::RenderOptions::rpc_only())
    );

    let etcd = catalog::find("etcd-keepalive").expect("in the catalog");
    let (report, _) = etcd.run(0);
    assert!(report.passed(), "{:?}", report.verdict);
    assert_eq!(
        report.happened,
        "19 of 19 PINGs ok, 0 GOAWAY(s); the call ended OK"
    );
}

/// The policy's reaction waits behind a held PING ACK like any later byte
/// (TCP keeps order): the GOAWAY is written when the server judges the
/// PING, leaves when the ACK in front of it does, and the connection closes
/// only then.
#[test]
fn the_goaway_waits_behind_a_delayed_ping_ack() -> grpc_chaos::Result {
    let mut sim = store_world(KeepalivePolicy::grpc_go());
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(grpc_chaos::wire::FrameType::Ping)
            .ack(true)
            .delay(ms(500)),
    );
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel_with("store", pinger(secs(30))));
        store.save(save()).await.expect_err("cut by the GOAWAY");
        Ok(())
    });
    let trace = sim.run()?;
    let cut = judged(&trace)
        .into_iter()
        .find(|j| j.verdict == TOO_MANY)
        .expect("the 4th PING is too many");
    assert_eq!(goaways(&trace)[0].0, cut.at, "written when judged");
    let released: Vec<(Duration, FrameType, Duration)> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FrameReleased {
                conn: 1,
                frame,
                kept,
                ..
            } if e.at() >= cut.at => Some((e.at(), *frame, *kept)),
            _ => None,
        })
        .collect();
    let leaves = cut.at + ms(500);
    assert_eq!(
        released,
        [
            (leaves, FrameType::Ping, ms(500)),
            (leaves, FrameType::GoAway, ms(500)),
        ],
        "{}",
        trace.render()
    );
    assert_eq!(closes(&trace)[0], (leaves, 1));
    Ok(())
}

/// PINGs the player sent on a Watch of two scores 90 s apart, through a
/// channel that PINGs every 20 s: with the client kept in a variable
/// (`keep`), or as a temporary dropped once the stream started.
fn watch_pings(keep: bool, while_idle: bool) -> grpc_chaos::Result<usize> {
    use grpc_chaos_scenarios::services::pb::WatchRequest;
    let mut sim = Sim::builder()
        .seed(4)
        .tick(ms(10))
        .duration(secs(200))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO)
                .with_watch_interval(secs(90))
                .into_server(),
        )
    });
    sim.client("player", move |player| async move {
        let channel = player.channel_with("gateway", move |e| {
            pinger(secs(20))(e).keep_alive_while_idle(while_idle)
        });
        let request = WatchRequest {
            match_id: "final".into(),
            count: 2,
            padding: 0,
        };
        let mut client = ScoreboardClient::new(channel);
        let mut scores = if keep {
            client.watch(request).await?.into_inner()
        } else {
            // The client and its channel go with the temporary.
            let scores = client.watch(request).await?.into_inner();
            drop(client);
            scores
        };
        while scores.message().await?.is_some() {}
        Ok(())
    });
    let trace = sim.run()?;
    Ok(trace
        .events_on("player")
        .filter(|e| {
            matches!(&e.kind, EventKind::Frame { frame: FrameType::Ping, flags, .. } if !flags.ack())
        })
        .count())
}

/// hyper counts a connection idle when nothing but its own two handles
/// hold its PING recorder (`proto/h2/ping.rs`, `is_idle`: strong count
/// ≤ 2). The client's request task holds one; an open response body
/// another. Drop the client (its last channel clone) while the stream is
/// open and the request task ends, so one open stream looks idle, and
/// without `keep_alive_while_idle` no PING is sent for the rest of it.
/// Measured here with hyper 1.12.
#[test]
fn dropping_the_client_stops_keepalive_pings_on_its_open_stream() -> grpc_chaos::Result {
    let kept = watch_pings(true, false)?;
    let dropped = watch_pings(false, false)?;
    let dropped_while_idle = watch_pings(false, true)?;
    assert!(kept >= 4, "20 s PINGs over a 90 s silence: {kept}");
    assert_eq!(dropped, 0, "no PING once the client is gone");
    assert!(
        dropped_while_idle >= 4,
        "keep_alive_while_idle pings anyway: {dropped_while_idle}"
    );
    Ok(())
}
