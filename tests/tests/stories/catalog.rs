//! Every catalog story, run against the reference services: the behaviour
//! each one must show, pinned with numbers, plus a snapshot of its trace.

use std::time::Duration;

use grpc_chaos::trace::{CallEnd, RenderOptions, RunEnd};
use grpc_chaos::Trace;
use grpc_chaos_scenarios::catalog;
use grpc_chaos_scenarios::services::{HIT, LOAD, SAVE};
use grpc_chaos_tests::{ms, story, SEED};

#[test]
fn deadline_chain_store_sees_the_remaining_380ms() {
    let (trace, report) = story("deadline-chain");
    let gateway = trace.runs_on("gateway").next().expect("gateway ran");
    let store = trace.runs_on("store").next().expect("store ran");
    assert_eq!(gateway.timeout, Some(ms(500)));
    assert_eq!(
        store.timeout,
        Some(ms(380)),
        "500ms minus the gateway's 120ms"
    );
    assert!(matches!(store.end, RunEnd::Finished { code: "OK", .. }));
    assert!(trace
        .calls_from("player")
        .all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn fresh_request_leaves_the_store_working_after_the_player_gave_up() {
    let (trace, report) = story("fresh-request");
    let store = trace.runs_on("store").next().expect("store ran");
    assert_eq!(store.timeout, None, "the fresh request carries no deadline");
    assert!(matches!(store.end, RunEnd::Finished { code: "OK", .. }));
    let gateway = trace.runs_on("gateway").next().expect("gateway ran");
    assert_eq!(gateway.end, RunEnd::Dropped);
    let orphans = trace.orphans();
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert_eq!(orphans[0].run.host, "store");
    assert_eq!(orphans[0].abandoned_at, ms(500), "the player's deadline");
    assert!(orphans[0].ran_on > ms(1500), "{:?}", orphans[0].ran_on);
    let violation = trace.assert_no_orphan_work().expect_err("orphan work");
    assert!(violation.detail().contains("store"), "{violation}");
    assert!(trace
        .assert_deadline_propagated(["player", "gateway", "store"])
        .is_err());
    assert_eq!(
        report.findings.len(),
        1,
        "CANCELLED for an expired deadline"
    );
    insta::assert_snapshot!(trace.render());
}

#[test]
fn store_restart_fails_calls_then_recovers() {
    let (trace, _) = story("store-restart");
    let crash_to_restart = ms(1000)..ms(3000);
    let ended_in_outage: Vec<_> = trace
        .calls_from("player")
        .filter(|c| c.path == HIT && c.ended_at.is_some_and(|t| crash_to_restart.contains(&t)))
        .collect();
    assert!(ended_in_outage.len() >= 10, "{}", ended_in_outage.len());
    for call in &ended_in_outage {
        let o = call.outcome().expect("ended with a status");
        // A crashed turmoil host black-holes its connections: no reset, so
        // every call runs into its deadline.
        assert_eq!(
            (o.code, o.spec_code),
            ("CANCELLED", "DEADLINE_EXCEEDED"),
            "{}",
            call.id
        );
    }
    // The probe: a 300ms Load straight to the dead store, through a channel
    // with a 1s connect timeout, waits for the connect timeout (FACTS.md).
    let probe = trace
        .calls_from("player")
        .find(|c| c.path == LOAD)
        .expect("probe");
    assert_eq!(probe.timeout, Some(ms(300)));
    assert_eq!(probe.latency(), Some(ms(1000)));
    let o = probe.outcome().expect("probe ended");
    assert_eq!(
        (o.code, o.message.as_str(), o.spec_code),
        ("UNKNOWN", "transport error", "UNAVAILABLE")
    );
    // The store answers again right after the restart.
    let first_ok_after = trace
        .runs_on("store")
        .filter(|r| r.started >= ms(3000))
        .find(|r| matches!(r.end, RunEnd::Finished { code: "OK", .. }))
        .expect("store serves after the restart");
    assert!(
        first_ok_after.started < ms(3100),
        "{:?}",
        first_ok_after.started
    );
    // 50 calls: the frames would bury the story; the CLI writes them all.
    insta::assert_snapshot!(trace.render_with(&RenderOptions::rpc_only()));
}

/// Seed 003 #8: the gateway's 2 s upstream timeout ends the call before
/// the player's 3 s deadline, with the status the gateway got from tonic
/// passed on in trailers; the store handler is cancelled.
#[test]
fn proxy_timeout_ends_the_call_at_the_shorter_timeout() {
    let (trace, report) = story("proxy-timeout");
    let player = trace.calls_from("player").next().expect("player called");
    assert_eq!(player.timeout, Some(ms(3_000)));
    let o = player.outcome().expect("ended");
    // The gateway chose the code it sent (tonic's word for its own expired
    // timer, passed on): the player's status is the peer's, shown as sent,
    // not relabelled as if the player's tonic had made it.
    assert_eq!(
        (o.code, o.message.as_str(), o.spec_code),
        ("CANCELLED", "Timeout expired", "CANCELLED")
    );
    // The gateway's own call to the store is where tonic made that status.
    let upstream = trace.calls_from("gateway").next().expect("gateway called");
    let o = upstream.outcome().expect("ended");
    assert_eq!((o.code, o.spec_code), ("CANCELLED", "DEADLINE_EXCEEDED"));
    let ended = player.latency().expect("ended");
    assert!(ended >= ms(2_000) && ended < ms(2_050), "{ended:?}");
    // The store saw the gateway's 2 s, not the player's 3 s.
    let store = trace.runs_on("store").next().expect("store ran");
    assert_eq!(store.timeout, Some(ms(2_000)));
    assert_eq!(store.end, RunEnd::Dropped);
    // Not the player's own timer: the gateway sent the status in trailers.
    assert!(
        trace
            .render()
            .contains("gateway→player       c1 s1 HEADERS trailers-only grpc-status=1"),
        "{}",
        trace.render()
    );
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn slow_dependency_cancels_the_store_handler() {
    let (trace, _) = story("slow-dependency");
    let player = trace.calls_from("player").next().expect("player called");
    let o = player.outcome().expect("ended");
    assert_eq!(
        (o.code, o.message.as_str()),
        ("CANCELLED", "Timeout expired")
    );
    assert_eq!(o.spec_code, "DEADLINE_EXCEEDED");
    assert!(player
        .latency()
        .is_some_and(|l| l >= ms(500) && l <= ms(502)));
    let store = trace
        .runs_on("store")
        .find(|r| r.path == SAVE)
        .expect("store ran");
    assert_eq!(store.end, RunEnd::Dropped);
    assert!(
        store.ended_at.is_some_and(|t| t <= ms(505)),
        "{:?}",
        store.ended_at
    );
    let save = trace
        .calls_from("gateway")
        .next()
        .expect("gateway called the store");
    assert_eq!(
        save.end,
        CallEnd::Dropped,
        "the gateway's call was cancelled with it"
    );
    trace
        .assert_no_orphan_work()
        .expect("cancellation reached every handler");
    trace
        .assert_deadline_propagated(["player", "gateway", "store"])
        .expect("propagated");
    insta::assert_snapshot!(trace.render());
}

#[test]
fn queueing_runs_two_saves_at_a_time() {
    let (trace, report) = story("queueing");
    let saves: Vec<_> = trace.runs_on("store").filter(|r| r.path == SAVE).collect();
    assert_eq!(saves.len(), 20);
    assert_eq!(
        saves.iter().filter(|r| r.dequeued.is_some()).count(),
        18,
        "2 start at once"
    );
    for r in &saves {
        let busy = saves
            .iter()
            .filter(|o| o.began() <= r.began() && o.ended_at.is_some_and(|e| e > r.began()))
            .count();
        assert!(busy <= 2, "{} began with {busy} saves running", r.id);
    }
    assert!(
        report.happened.contains("p50 506ms p99 1006ms"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(trace.render_with(&RenderOptions::rpc_only()));
}

#[test]
fn connection_age_recycles_the_connection_with_goaways_and_a_redial() {
    let (trace, report) = story("connection-age");
    let render = trace.render();
    for line in [
        "store→player         c1 s0 GOAWAY NO_ERROR last-stream-id=2147483647",
        "store→player         c1 s0 PING 0b7ba2f08b9bfe54",
        "player→store         c2 s1 HEADERS POST /tt.v1.Store/Save",
    ] {
        assert!(render.contains(line), "{line}\n{render}");
    }
    // The calls in flight when the age came finished on the old connection.
    let in_flight_at_age: Vec<_> = trace
        .calls_from("player")
        .filter(|c| c.started < ms(1026) && c.ended_at.is_some_and(|t| t > ms(1026)))
        .collect();
    assert!(!in_flight_at_age.is_empty());
    assert!(in_flight_at_age
        .iter()
        .all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    // What these versions lose: calls made while the old connection drains.
    let lost: Vec<_> = trace
        .calls_from("player")
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect();
    for c in &lost {
        let o = c.outcome().expect("ended");
        assert_eq!(
            (o.code, o.message.as_str()),
            ("CANCELLED", "operation was canceled")
        );
    }
    assert_eq!(
        report.findings.len(),
        usize::from(!lost.is_empty()),
        "{:?}",
        report.findings
    );
    insta::assert_snapshot!(render);
}

#[test]
fn graceful_drain_finishes_the_saves_in_flight_and_serve_returns() {
    let (trace, report) = story("graceful-drain");
    let render = trace.render();
    assert!(
        render.contains("1025.000  store                graceful shutdown started (grace 5000ms)"),
        "{render}"
    );
    assert!(
        render.contains("serve returned: every connection closed"),
        "{render}"
    );
    assert!(
        !render.contains("host crashed"),
        "drained well inside the grace"
    );
    assert!(
        report.happened.contains("all finished OK"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(render);
}

#[test]
fn every_story_renders_the_same_twice_in_one_process() {
    for scenario in catalog::all() {
        let a = (scenario.simulate)(SEED).expect("first run");
        let b = (scenario.simulate)(SEED).expect("second run");
        assert_eq!(a.render(), b.render(), "{}", scenario.name);
        assert_eq!(a.to_json(), b.to_json(), "{}", scenario.name);
        assert!(a.render_html() == b.render_html(), "{}", scenario.name);
    }
}

/// The rows of the rpc-only render that tell a replica story, for a
/// snapshot a reviewer can read (the stories make hundreds of calls; the
/// CLI writes every row): the header, every membership, host-fault and
/// balancer row, every call that did not end OK, and every row at a time
/// in one of `windows` (`[from, until]`, *simulated*).
fn replica_story_rows(trace: &Trace, windows: &[(Duration, Duration)]) -> String {
    let render = trace.render_with(&RenderOptions::rpc_only());
    let mut lines = render.lines();
    let mut out = format!("{}\n", lines.next().unwrap_or_default());
    for line in lines {
        let at = line
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<f64>().ok())
            .map_or(Duration::ZERO, |t| Duration::from_secs_f64(t / 1000.0));
        let story = line.contains("balancer: ")
            || line.contains("replica set store")
            || line.contains("host crashed")
            || line.contains("host restarted")
            || (line.contains(" ended ") && !line.ends_with(" ended OK"));
        if story
            || windows
                .iter()
                .any(|(from, until)| (*from..=*until).contains(&at))
        {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Seed 002: one of three replicas crashes under a call every 10 ms.
#[test]
fn replica_crash_moves_traffic_off_the_crashed_replica() {
    let (trace, report) = story("replica-crash");
    let crash = ms(1000);
    let player: Vec<_> = trace.calls_from("player").collect();
    assert_eq!(player.len(), 300);
    // In flight on store-1 when it crashed (or sent there in that very
    // tick): they fail with tonic's UNKNOWN "transport error".
    let cut: Vec<_> = player
        .iter()
        .filter(|c| c.replica.as_deref() == Some("store-1") && c.ended_at == Some(crash))
        .collect();
    assert!(!cut.is_empty());
    for c in &cut {
        let o = c.outcome().expect("ended");
        assert_eq!((o.code, o.message.as_str()), ("UNKNOWN", "transport error"));
    }
    // After the crash's own tick, store-1 gets only the calls its failed
    // redials (1 s connect timeout) leave it ready for, and each fails
    // UNAVAILABLE at once.
    let later: Vec<_> = player
        .iter()
        .filter(|c| c.replica.as_deref() == Some("store-1") && c.started > crash)
        .collect();
    assert!(!later.is_empty() && later.len() <= 2, "{}", later.len());
    for c in &later {
        assert!(c.started >= crash + ms(1000), "{:?}", c.started);
        let o = c.outcome().expect("ended");
        assert_eq!(
            (o.code, o.message.as_str()),
            ("UNAVAILABLE", "connect to store-1 timed out after 1000ms")
        );
        assert_eq!(c.latency(), Some(Duration::ZERO), "fails without waiting");
    }
    // Every other call succeeds.
    let failed = player
        .iter()
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .count();
    assert_eq!(failed, cut.len() + later.len());
    assert!(trace.runs_on("store-1").all(|r| r.started < crash + ms(2)));
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    insta::assert_snapshot!(replica_story_rows(
        &trace,
        &[(ms(945), ms(1025)), (ms(2000), ms(2035))]
    ));
}

/// Field practice: a rolling restart drained through discovery.
#[test]
fn rolling_restart_moves_calls_between_replicas_without_a_failure() {
    let (trace, report) = story("rolling-restart");
    let player: Vec<_> = trace.calls_from("player").collect();
    assert_eq!(player.len(), 420);
    assert!(player
        .iter()
        .all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    for (i, left) in [ms(500), ms(1700), ms(2900)].into_iter().enumerate() {
        let replica = format!("store-{i}");
        let joined = left + ms(600);
        let runs: Vec<_> = trace.runs_on(&replica).collect();
        // Nothing reaches the replica between the leave and the join.
        assert!(
            runs.iter()
                .all(|r| r.started <= left || r.started >= joined),
            "{replica}"
        );
        // Its restart started its server again; calls came back to it.
        assert!(runs.iter().any(|r| r.started >= joined), "{replica}");
    }
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let windows: Vec<(Duration, Duration)> = [500u64, 1100, 1700, 2300, 2900, 3500]
        .iter()
        .map(|t| (ms(*t - 10), ms(*t + 15)))
        .collect();
    insta::assert_snapshot!(replica_story_rows(&trace, &windows));
}

/// RFC 9293 §3.8.1: a partition that heals. The plain channel's Save
/// resumes on its connection when the bytes that waited at the store leave
/// at the repair; the pinging channel's keepalive gives up first (its PING
/// waits too), and its redial waits for the repair.
#[test]
fn partition_heals_resumes_one_call_and_cuts_the_pinging_one() {
    use grpc_chaos::recorder::event::EventKind;
    use grpc_chaos::recorder::event::Fate;
    let (trace, report) = story("partition-heals");
    let calls: Vec<_> = trace.calls_from("player").collect();
    assert_eq!(calls.len(), 3);
    let (pinging, plain, redial) = (calls[0], calls[1], calls[2]);
    // The plain Save: answered at 502ms into the partition, delivered at
    // the repair, ended one link latency later, on its first connection.
    assert!(plain.outcome().is_some_and(|o| o.is_ok()));
    assert_eq!(plain.ended_at, Some(ms(3_001)));
    // The pinging one: PING at ~1s held, keepalive timeout 1s later.
    let o = pinging.outcome().expect("ended");
    assert_eq!((o.code, o.spec_code), ("UNAVAILABLE", "UNAVAILABLE"));
    assert_eq!(pinging.ended_at, Some(ms(2_001)));
    let ping = trace
        .events_on("player")
        .find_map(|e| match &e.kind {
            EventKind::Frame {
                frame: grpc_chaos::wire::FrameType::Ping,
                fate,
                ..
            } => Some((e.at(), fate.get())),
            _ => None,
        })
        .expect("keepalive pinged");
    assert_eq!(ping, (ms(1_001), Fate::Partitioned));
    // The redial: started at 2001ms, connected one tick after the repair.
    assert!(redial.outcome().is_some_and(|o| o.is_ok()));
    let dials: Vec<_> = trace
        .events_on("player")
        .filter_map(|e| match e.kind {
            EventKind::Connected {
                conn, took, waited, ..
            } => Some((e.at(), conn, took, waited)),
            _ => None,
        })
        .collect();
    assert_eq!(
        dials,
        [
            (ms(1), 1, ms(1), false),
            (ms(1), 2, ms(1), false),
            (ms(3_001), 3, ms(1_000), true)
        ]
    );
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    insta::assert_snapshot!(trace.render());
}
