//! The wire-level stories of the catalog (issue 3): keepalive against a dead
//! peer (unary and streaming), a receiver that holds back its
//! WINDOW_UPDATEs, an upload cancelled by its deadline, and injected
//! RST_STREAM / GOAWAY frames. Each test pins the times, codes and frames
//! the story must show, then snapshots the trace.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{DebugData, Fate, FrameDetail, FrameFlags, GoAway};
use grpc_chaos::trace::{RunEnd, StallEnd, Window};
use grpc_chaos::wire::{ErrorCode, FrameType};
use grpc_chaos::Trace;
use grpc_chaos_scenarios::catalog::Report;
use grpc_chaos_scenarios::services::{LOAD, SAVE, UPLOAD, WATCH};
use grpc_chaos_tests::{ms, story};

/// What a story's snapshot shows: its trace, then its verdict line (with
/// the numbers, e.g. the stall the trace revealed).
fn snapshot(render: &str, report: &Report) -> String {
    let mut text = render.to_owned();
    text.push_str(&format!("\nhappened: {}\n", report.happened));
    for finding in &report.findings {
        text.push_str(&format!("finding: {finding}\n"));
    }
    text
}

/// One recorded frame, flattened for assertions.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    at: Duration,
    from: String,
    conn: u32,
    stream: u32,
    flags: FrameFlags,
    detail: FrameDetail,
    fate: Fate,
}

/// The frames of type `kind` (PING, RST_STREAM …) `from` wrote.
fn frames(trace: &Trace, from: &str, kind: FrameType) -> Vec<Seen> {
    trace
        .events_on(from)
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                conn,
                stream,
                frame,
                flags,
                detail,
                fate,
                ..
            } if *frame == kind => Some(Seen {
                at: e.at(),
                from: e.host.to_string(),
                conn: *conn,
                stream: *stream,
                flags: *flags,
                detail: detail.clone(),
                fate: fate.get(),
            }),
            _ => None,
        })
        .collect()
}

/// DATA octets `from` sent on connection `conn`, stream `stream`.
fn data_bytes(trace: &Trace, from: &str, conn: u32, stream: u32) -> u64 {
    frames(trace, from, FrameType::Data)
        .iter()
        .filter(|f| f.conn == conn && f.stream == stream)
        .filter_map(|f| match f.detail {
            FrameDetail::Data { len, .. } => Some(u64::from(len)),
            _ => None,
        })
        .sum()
}

/// The error code of a RST_STREAM.
fn reset_code(f: &Seen) -> Option<ErrorCode> {
    match f.detail {
        FrameDetail::RstStream { code } => Some(code),
        _ => None,
    }
}

/// The `(code, message, spec code)` a call ended with.
fn ended(trace: &Trace, call: usize, host: &str) -> (&'static str, String, &'static str) {
    let call = trace.calls_from(host).nth(call).expect("call made");
    let o = call.outcome().expect("call ended with a status");
    (o.code, o.message.clone(), o.spec_code)
}

#[test]
fn dead_peer_closes_the_connection_a_second_after_the_unanswered_ping() {
    let (trace, report) = story("dead-peer");
    // The player pings 10 s after the last frame it received (the store's
    // SETTINGS ack at 10 ms); the store's ACK is dropped.
    let pings = frames(&trace, "player", FrameType::Ping);
    assert_eq!(pings.len(), 1, "{pings:?}");
    assert_eq!((pings[0].at, pings[0].conn), (ms(10_010), 1));
    let acks = frames(&trace, "store", FrameType::Ping);
    assert_eq!(acks.len(), 1);
    assert_eq!((acks[0].at, acks[0].fate), (ms(10_020), Fate::Dropped));
    assert!(acks[0].flags.ack(), "{:?}", acks[0]);
    // keep_alive_timeout (1 s) later the waiting Load fails: UNAVAILABLE
    // from tonic, as the spec requires (FACTS.md).
    assert_eq!(
        ended(&trace, 0, "player"),
        ("UNAVAILABLE", "http2 error".to_owned(), "UNAVAILABLE")
    );
    let first = trace.calls_from("player").next().expect("first call");
    assert_eq!(first.ended_at, Some(ms(11_010)));
    assert_eq!(first.timeout, None, "only keepalive could end it");
    // The store's handler goes with the connection.
    let hung = trace.runs_on("store").next().expect("store ran");
    assert_eq!(
        (hung.end.clone(), hung.ended_at),
        (RunEnd::Dropped, Some(ms(11_020)))
    );
    // The next call dials c2 by itself and succeeds.
    let second = trace.calls_from("player").nth(1).expect("second call");
    assert_eq!(second.path, LOAD);
    assert!(second.outcome().is_some_and(|o| o.is_ok()));
    let c2: Vec<_> = frames(&trace, "player", FrameType::Headers);
    assert_eq!(c2.iter().map(|f| f.conn).collect::<Vec<_>>(), vec![1, 2]);
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert!(trace.stalls(Duration::ZERO).is_empty());
    insta::assert_snapshot!(snapshot(&trace.render(), &report));
}

#[test]
fn dead_peer_under_a_stream_is_unknown_from_tonic_and_unavailable_by_the_spec() {
    let (trace, report) = story("dead-peer-stream");
    // One score at 20 ms, then the stream is silent (next score due at
    // 12 s): the player pings at 10.03 s, the ACK is dropped.
    let scores = frames(&trace, "gateway", FrameType::Data);
    assert_eq!(scores.iter().filter(|f| f.conn == 1).count(), 1);
    let pings = frames(&trace, "player", FrameType::Ping);
    assert_eq!(pings.len(), 1);
    assert_eq!(pings[0].at, ms(10_030));
    assert_eq!(
        frames(&trace, "gateway", FrameType::Ping)[0].fate,
        Fate::Dropped
    );
    // 1 s later the open stream fails: UNKNOWN from tonic, UNAVAILABLE by
    // the spec (FACTS.md).
    assert_eq!(
        ended(&trace, 0, "player"),
        (
            "UNKNOWN",
            "h2 protocol error: error reading a body from connection".to_owned(),
            "UNAVAILABLE"
        )
    );
    let watch = trace.calls_from("player").next().expect("watch");
    assert_eq!(
        (watch.path.as_str(), watch.ended_at),
        (WATCH, Some(ms(11_030)))
    );
    let handler = trace.runs_on("gateway").next().expect("gateway ran");
    assert_eq!(handler.end, RunEnd::Dropped);
    assert_eq!(handler.ended_at, Some(ms(11_040)));
    // The next Watch redials (c2) and completes.
    let again = trace.calls_from("player").nth(1).expect("second watch");
    assert!(again.outcome().is_some_and(|o| o.is_ok()));
    assert!(frames(&trace, "player", FrameType::Headers)
        .iter()
        .any(|f| f.conn == 2));
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert!(
        report.findings[0].contains("UNKNOWN"),
        "{}",
        report.findings[0]
    );
    assert!(trace.stalls(Duration::ZERO).is_empty());
    insta::assert_snapshot!(snapshot(&trace.render(), &report));
}

#[test]
fn receiver_decides_speed_stalls_the_sender_without_failing_anything() {
    let (trace, report) = story("receiver-decides-speed");
    // The player's stream WINDOW_UPDATEs are held to 10 s; every later byte
    // it writes waits behind the first (TCP order): the connection
    // WINDOW_UPDATE it writes at 70 ms, which the rule does not match, is
    // recorded then as waiting behind it.
    let updates = frames(&trace, "player", FrameType::WindowUpdate);
    let held: Vec<_> = updates
        .iter()
        .filter(|f| f.fate != Fate::Passed)
        .map(|f| (f.at, f.stream, f.fate))
        .collect();
    let until = Fate::Delayed { until: ms(10_000) };
    let behind = Fate::Behind { until: ms(10_000) };
    assert_eq!(
        held,
        [(ms(50), 1, until), (ms(70), 0, behind), (ms(70), 1, until)],
        "{updates:?}"
    );
    assert!(updates.iter().all(|f| f.at <= ms(70) || f.at >= ms(10_000)));
    // The gateway stops after exactly one stream window (hyper's client
    // advertises 2 MiB) and stays stopped until the release.
    let stalls = trace.stalls(ms(1_000));
    assert_eq!(stalls.len(), 1, "{stalls:?}");
    let stall = &stalls[0];
    assert_eq!(
        (
            stall.sender.as_str(),
            stall.receiver.as_str(),
            stall.conn,
            stall.stream
        ),
        ("gateway", "player", 1, 1)
    );
    assert_eq!((stall.since, stall.until), (ms(80), ms(10_000)));
    assert_eq!(stall.sent, 2 * 1024 * 1024);
    assert_eq!(stall.window, Window::Stream);
    assert_eq!((stall.end, stall.held_updates), (StallEnd::Reopened, 3));
    assert_eq!(
        trace.stalls(Duration::ZERO).len(),
        1,
        "no other stall, however short"
    );
    assert!(
        report.happened.starts_with(&stall.to_string()),
        "{}",
        report.happened
    );
    // Nothing happens at the 5 s deadline: no status, no RST_STREAM.
    assert!(frames(&trace, "player", FrameType::RstStream).is_empty());
    assert!(frames(&trace, "gateway", FrameType::RstStream).is_empty());
    assert!(trace.render().contains(
        "5000.000  player               log INFO grpc_chaos_scenarios::catalog::receiver_speed: deadline passed, stream still open received=127"
    ));
    // After the release all 400 scores arrive and the call ends OK, 5.14 s
    // past its deadline.
    let watch = trace.calls_from("player").next().expect("watch");
    assert_eq!(watch.timeout, Some(ms(5_000)));
    assert!(watch.outcome().is_some_and(|o| o.is_ok()));
    assert_eq!(watch.ended_at, Some(ms(10_140)));
    // 400 messages: 5-octet gRPC prefix + Score (16,384 padding, match id,
    // home 1..=400).
    assert_eq!(
        data_bytes(&trace, "gateway", 1, 1),
        127 * 16_402 + 273 * 16_403
    );
    assert!(trace.render().contains("watch ended received=400"));
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    insta::assert_snapshot!(snapshot(&trace.render(), &report));
}

#[test]
fn cancel_during_upload_resets_the_stream_and_drops_the_handler() {
    let (trace, report) = story("cancel-during-upload");
    let upload = trace.calls_from("player").next().expect("upload");
    assert_eq!(
        (upload.path.as_str(), upload.timeout),
        (UPLOAD, Some(ms(500)))
    );
    assert_eq!(upload.ended_at, Some(ms(501)));
    assert_eq!(
        ended(&trace, 0, "player"),
        (
            "CANCELLED",
            "Timeout expired".to_owned(),
            "DEADLINE_EXCEEDED"
        )
    );
    // Rallies went out at 1, 101 … 501 ms; then the stream was reset.
    let sent: Vec<_> = frames(&trace, "player", FrameType::Data)
        .into_iter()
        .map(|f| f.at)
        .collect();
    assert_eq!(
        sent,
        [1, 101, 201, 301, 401, 501].map(ms).to_vec(),
        "the 20-rally upload was cut after 6"
    );
    let resets = frames(&trace, "player", FrameType::RstStream);
    assert_eq!(resets.len(), 1);
    assert_eq!(
        (resets[0].at, resets[0].stream, reset_code(&resets[0])),
        (ms(501), 1, Some(ErrorCode::Cancel))
    );
    let handler = trace.runs_on("gateway").next().expect("gateway ran");
    assert_eq!(handler.end, RunEnd::Dropped);
    assert_eq!(handler.ended_at, Some(ms(502)));
    // The gateway never answered: no HEADERS from it at all.
    assert!(frames(&trace, "gateway", FrameType::Headers).is_empty());
    trace.assert_no_orphan_work().expect("nothing ran on");
    assert_eq!(
        report.findings.len(),
        1,
        "CANCELLED for an expired deadline"
    );
    assert!(trace.stalls(Duration::ZERO).is_empty());
    insta::assert_snapshot!(snapshot(&trace.render(), &report));
}

#[test]
fn injected_resets_refused_stream_and_goaway() {
    let (trace, report) = story("injected-resets");
    // RST_STREAM(REFUSED_STREAM) on s1 at 20 ms: UNAVAILABLE, as the spec
    // requires.
    let rst = frames(&trace, "store", FrameType::RstStream);
    assert_eq!(rst.len(), 1);
    assert_eq!(
        (rst[0].at, rst[0].stream, reset_code(&rst[0]), rst[0].fate),
        (ms(20), 1, Some(ErrorCode::RefusedStream), Fate::Injected)
    );
    assert_eq!(
        ended(&trace, 0, "player"),
        (
            "UNAVAILABLE",
            "h2 protocol error: http2 error".to_owned(),
            "UNAVAILABLE"
        )
    );
    let calls: Vec<_> = trace.calls_from("player").collect();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0].ended_at, Some(ms(21)));
    // The store never refused anything: its handler saved and answered, and
    // the player's stack reset the stream it had already closed.
    let h1 = trace.runs_on("store").next().expect("h1");
    assert!(matches!(h1.end, RunEnd::Finished { code: "OK", .. }));
    let closed = frames(&trace, "player", FrameType::RstStream);
    assert_eq!(closed.len(), 1);
    assert_eq!(
        (closed[0].at, closed[0].stream, reset_code(&closed[0])),
        (ms(103), 1, Some(ErrorCode::StreamClosed))
    );
    // GOAWAY(NO_ERROR, last-stream-id=3) at 250 ms with s3 and s5 open: s3
    // completes, s5 fails at once. tonic says INTERNAL (the h2 reason
    // NO_ERROR); the spec says UNAVAILABLE (RFC 9113 §6.8: not processed).
    let goaway = frames(&trace, "store", FrameType::GoAway);
    assert_eq!(goaway.len(), 1);
    assert_eq!(
        (goaway[0].at, &goaway[0].detail, goaway[0].fate),
        (
            ms(250),
            &FrameDetail::GoAway(Box::new(GoAway {
                last_stream_id: 3,
                code: ErrorCode::NoError,
                debug: DebugData::default()
            })),
            Fate::Injected
        )
    );
    assert_eq!(
        (calls[1].path.as_str(), calls[1].ended_at),
        (SAVE, Some(ms(302)))
    );
    assert!(calls[1].outcome().is_some_and(|o| o.is_ok()));
    assert_eq!(
        ended(&trace, 2, "player"),
        (
            "INTERNAL",
            "h2 protocol error: http2 error".to_owned(),
            "UNAVAILABLE"
        )
    );
    assert_eq!(calls[2].ended_at, Some(ms(251)));
    let o = calls[2].outcome().expect("ended");
    assert_eq!(o.rule, Some(grpc_chaos::spec::rules::GOAWAY));
    // After the GOAWAY the player closes c1 once s3 is done and dials c2.
    let player_goaway = frames(&trace, "player", FrameType::GoAway);
    assert_eq!(
        player_goaway
            .iter()
            .map(|f| (f.at, f.conn))
            .collect::<Vec<_>>(),
        vec![(ms(302), 1), (ms(503), 2)]
    );
    assert!(calls[3].outcome().is_some_and(|o| o.is_ok()));
    assert_eq!(
        frames(&trace, "player", FrameType::Headers)
            .iter()
            .map(|f| (f.conn, f.stream))
            .collect::<Vec<_>>(),
        vec![(1, 1), (1, 3), (1, 5), (2, 1)]
    );
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    assert!(trace.stalls(Duration::ZERO).is_empty());
    insta::assert_snapshot!(snapshot(&trace.render(), &report));
}

/// Four Watch streams on one connection that the player never reads: the
/// first three use up the connection window hyper's client advertises
/// (5 MiB; 2 MiB a stream), so the fourth, opened last, is starved with
/// 0 bytes sent. The player cancels every stream at 10 s: the starvation
/// happened and is reported, ended with its stream (issue #28).
#[test]
fn a_starved_stream_cancelled_by_its_client_is_still_reported() -> grpc_chaos::Result {
    use grpc_chaos::Sim;
    use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
    use grpc_chaos_scenarios::services::pb::WatchRequest;
    use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};

    let mut sim = Sim::builder()
        .seed(1)
        .duration(ms(12_000))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.client("player", |player| async move {
        let channel = player.channel("gateway");
        let mut streams = Vec::new();
        for _ in 0..4 {
            let req = WatchRequest {
                match_id: "final".into(),
                count: 400,
                padding: 16 * 1024,
            };
            let mut scoreboard = ScoreboardClient::new(channel.clone());
            streams.push(scoreboard.watch(req).await?.into_inner());
            tokio::time::sleep(ms(100)).await;
        }
        tokio::time::sleep(ms(9_600)).await;
        drop(streams);
        tokio::time::sleep(ms(100)).await;
        Ok(())
    });
    let trace = sim.run()?;
    let stalls = trace.stalls(ms(1_000));
    let starved: Vec<_> = stalls.iter().filter(|s| !s.held_by.is_empty()).collect();
    assert_eq!(starved.len(), 1, "{stalls:#?}");
    let s7 = starved[0];
    assert_eq!((s7.sender.as_str(), s7.stream, s7.sent), ("gateway", 7, 0));
    assert_eq!(s7.end, StallEnd::Closed, "{s7}");
    assert!(s7.until <= ms(10_100) && s7.until >= ms(10_000), "{s7}");
    Ok(())
}
