//! A partition that heals (RFC 9293 §3.8.1, retransmission): the player is
//! cut off from the store from 100 ms to 3 s while two Saves are in flight,
//! one per channel. TCP keeps the bytes of both connections waiting at
//! their senders and delivers them at the repair, so a call on a plain
//! channel resumes on the same connection and succeeds. The other channel
//! pings every 1 s with a 1 s keepalive timeout (gRFC A8): its PING waits
//! behind the partition like every other byte, no ACK comes, and keepalive
//! closes the connection at ~2 s, before the repair; its call fails, and
//! the redial for the next call waits for the repair (a SYN is
//! retransmitted until it gets through), then connects on a new
//! connection.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::Call;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::Store;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "partition-heals",
    source: "RFC 9293 §3.8.1 (retransmission); gRFC A8",
    story: "A partition that heals as TCP does: a waiting call resumes, unless keepalive closed its connection first.",
    checks: "player↔store partitioned 100ms–3s with a Save in flight on each of two channels: the plain one resumes on the same connection at the repair; the one with 1s keepalive is closed first, and its redial waits for the repair",
    simulate,
    judge,
};

const CUT: Duration = ms(100);
const HEAL: Duration = ms(3_000);
/// The store's time per Save: both answers are written during the cut.
const WORK: Duration = ms(500);
/// The pinging channel's keepalive interval and timeout.
const KEEPALIVE: Duration = ms(1_000);

fn save(channel: &str) -> SaveRequest {
    SaveRequest {
        match_id: channel.into(),
        points: 1,
    }
}

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).duration(ms(10_000)).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(WORK).into_server())
    });
    sim.fault(Fault::partition("player", "store").at(CUT));
    sim.fault(Fault::repair("player", "store").at(HEAL));
    sim.client("player", |player| async move {
        let mut plain = StoreClient::new(player.channel("store"));
        let mut pinging = StoreClient::new(player.channel_with("store", |e| {
            e.http2_keep_alive_interval(KEEPALIVE)
                .keep_alive_timeout(KEEPALIVE)
        }));
        let resumed = tokio::spawn(async move { plain.save(save("plain")).await });
        let cut = pinging.save(save("pinging")).await;
        // The keepalive closed the connection: the next call redials, and
        // the dial waits for the repair.
        let redialled = pinging.save(save("pinging")).await;
        let resumed = resumed.await?;
        resumed?;
        redialled?;
        if cut.is_ok() {
            return Err("the pinging channel's first Save survived the partition".into());
        }
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<&Call> = trace.calls_from("player").collect();
    let ok = |c: &&Call| c.outcome().is_some_and(|o| o.is_ok());
    let resumed = calls.iter().find(|c| ok(c) && c.started < CUT);
    let cut = calls.iter().find(|c| !ok(c));
    let redialled = calls.iter().find(|c| ok(c) && c.started >= CUT);
    let released_at_repair = trace
        .events_on("store")
        .filter(|e| matches!(e.kind, EventKind::FrameReleased { .. }) && e.at() == HEAL)
        .count();
    let held = trace
        .events()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Frame { fate, .. } if *fate == Fate::Partitioned))
        .count();
    let waited_dial = trace.events_on("player").find_map(|e| match e.kind {
        EventKind::Connected {
            conn,
            waited: true,
            took,
            ..
        } => Some((e.at(), conn, took)),
        _ => None,
    });
    let connections = trace
        .events_on("player")
        .filter(|e| matches!(e.kind, EventKind::Connected { .. }))
        .count();
    let happened = format!(
        "{held} frames waited for the repair at {}; the plain channel's Save {}; the pinging channel's Save ended {} at {}; its redial {}",
        fmt_duration(HEAL),
        resumed
            .and_then(|c| c.ended_at)
            .map_or("never ended OK".to_owned(), |t| format!("resumed and ended OK at {}", fmt_duration(t))),
        cut.and_then(|c| c.outcome()).map_or("?", |o| o.spec_code),
        cut.and_then(|c| c.ended_at).map_or("?".to_owned(), fmt_duration),
        waited_dial.map_or("never waited".to_owned(), |(at, conn, took)| format!(
            "waited {} and connected c{conn} at {}",
            fmt_duration(took),
            fmt_duration(at)
        )),
    );
    Report::from_checks(
        happened,
        &[
            (
                resumed.is_some_and(|c| c.ended_at.is_some_and(|t| t > HEAL)),
                "the plain channel's Save did not end OK after the repair".into(),
            ),
            (
                released_at_repair >= 3,
                format!("{released_at_repair} store frames released at the repair, expected the answer's 3"),
            ),
            (
                cut.is_some_and(|c| c.ended_at.is_some_and(|t| t < HEAL)),
                "keepalive did not end the pinging channel's Save before the repair".into(),
            ),
            (
                waited_dial.is_some_and(|(at, ..)| at > HEAL),
                "the redial did not wait for the repair".into(),
            ),
            (
                connections == 3,
                format!("{connections} connections, expected 3 (the plain one, the cut one, the redial)"),
            ),
            (
                redialled.is_some(),
                "the call after the redial did not succeed".into(),
            ),
        ],
    )
    .with_findings(trace)
}
