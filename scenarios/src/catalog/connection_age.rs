//! gRFC A9: a server recycles its connections (`max_connection_age`). The
//! store is configured as in production with a 1025 ms connection age; the
//! player keeps calling it, one call every 50 ms, each save taking 80 ms,
//! so calls are in flight when the age comes. tonic 0.14.9 sleeps exactly
//! the age from the accept (no ±10% jitter, `transport/server/mod.rs`
//! `connection_timeout_future`), then hyper/h2 shut the connection down
//! gracefully: GOAWAY(NO_ERROR, 2³¹−1) without A9's `max_age` debug data, a
//! PING, GOAWAY with the last stream taken. The calls in flight finish on
//! the old connection; the channel redials for the next ones. The trace
//! shows the GOAWAYs, the redial and each call; the story counts the calls
//! lost to the recycling (A9's promise is none). Seen with these versions:
//! a call made while the old connection drains is refused by hyper's
//! client on that connection (CANCELLED "operation was canceled") instead
//! of going to a new one; the story reports such calls as a finding.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::Store;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "connection-age",
    source: "gRFC A9 (max_connection_age)",
    story: "A server that ages out its connections: GOAWAY, the calls in flight finish, the channel redials.",
    checks: "store max_connection_age 1025ms under a call every 50ms: GOAWAY NO_ERROR, PING, GOAWAY last-stream-id; the calls in flight finish; the channel redials; calls lost counted",
    simulate,
    judge,
};

/// The store's connection age. Off the 50 ms grid of arrivals and answers:
/// at an instant where the age timer and a request are both ready, tonic's
/// `select!` picks one at random (tokio's RNG is not seeded without
/// `tokio_unstable`), and the trace would differ between runs.
const AGE: Duration = ms(1025);
/// How often the player calls, and how many times.
const EVERY: Duration = ms(50);
const CALLS: u32 = 30;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| {
        s.configure(|b| b.max_connection_age(AGE))
            .add_service(Store::with_work(ms(80)).into_server())
    });
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.channel("store"));
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..CALLS {
            let mut store = store.clone();
            calls.spawn(async move {
                let req = SaveRequest {
                    match_id: "final".into(),
                    points: n,
                };
                let _ = store.save(req).await;
            });
            tokio::time::sleep(EVERY).await;
        }
        while calls.join_next().await.is_some() {}
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let goaways: Vec<(Duration, u32, String)> = trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                conn,
                frame: FrameType::GoAway,
                detail,
                ..
            } => Some((e.at(), *conn, detail.to_string())),
            _ => None,
        })
        .collect();
    let mut conns: Vec<u32> = trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Frame { conn, .. } => Some(*conn),
            _ => None,
        })
        .collect();
    conns.dedup();
    let calls: Vec<_> = trace.calls_from("player").collect();
    let lost: Vec<_> = calls
        .iter()
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .collect();
    let first = goaways.first();
    let happened = format!(
        "{} GOAWAYs from the store (first at {} on c{}: {}); the player used {} connections; {} of {} calls lost{}",
        goaways.len(),
        first.map_or("never".to_owned(), |g| fmt_duration(g.0)),
        first.map_or(0, |g| g.1),
        first.map_or("", |g| g.2.as_str()),
        conns.len(),
        lost.len(),
        calls.len(),
        lost.first()
            .and_then(|c| c.outcome().map(|o| format!(" (first: {} at {} {:?})", c.id, fmt_duration(c.started), o.message)))
            .unwrap_or_default(),
    );
    let first_at_age = first.is_some_and(|g| g.0 >= AGE && g.0 < AGE + ms(10));
    let mut report = Report::from_checks(
        happened,
        &[
            (
                first_at_age,
                "no GOAWAY from the store at its connection age".into(),
            ),
            (
                first.is_some_and(|g| g.2 == "NO_ERROR last-stream-id=2147483647"),
                "the first GOAWAY is not hyper's graceful NO_ERROR 2^31-1".into(),
            ),
            (
                conns.len() >= 2,
                "the channel never redialled after the GOAWAY".into(),
            ),
        ],
    )
    .with_findings(trace);
    if !lost.is_empty() {
        let ids: Vec<String> = lost.iter().map(|c| c.id.to_string()).collect();
        let (n, them) = match lost.len() {
            1 => ("1 call".to_owned(), "it"),
            n => (format!("{n} calls"), "them"),
        };
        report.findings.push(format!(
            "{n} lost to the connection's recycling ({}): hyper refused {them} on the connection that had received the GOAWAY, and tonic's channel did not send {them} on a new one (gRFC A9 expects none lost)",
            ids.join(", ")
        ));
    }
    report
}
