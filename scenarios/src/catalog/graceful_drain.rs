//! A server drains under load: its `main` got SIGTERM and tonic's
//! `serve_with_incoming_shutdown` signal fires (`Fault::shutdown`). The
//! player calls the store every 50 ms, each save taking 200 ms; the store
//! shuts down at 1025 ms with a 5 s grace. tonic drops the listener and hyper
//! sends GOAWAY(NO_ERROR, 2³¹−1), a PING, and GOAWAY with the last stream it
//! took; the saves in flight finish; serve returns once the connection has
//! closed. The calls made meanwhile fail: on the draining connection hyper
//! refuses them (CANCELLED "operation was canceled", where the spec asks
//! UNAVAILABLE of a server shutting down), and once it is closed the redial
//! is refused (UNAVAILABLE).

use std::collections::BTreeMap;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::Store;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "graceful-drain",
    source: "tonic serve_with_incoming_shutdown; RFC 9113 §6.8 (GOAWAY)",
    story: "A server shut down under load drains what it has and refuses what comes later.",
    checks: "store shut down at 1025ms under a call every 50ms (200ms each): GOAWAYs, the saves in flight finish, later calls fail, serve returns",
    simulate,
    judge,
};

/// Off the 50 ms grid of arrivals and answers, so no two things the
/// server's `select!`s choose between are ready at once (see
/// `tests/tests/server/connection_age.rs`).
const SHUTDOWN: Duration = ms(1025);
const GRACE: Duration = ms(5000);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(200)).into_server())
    });
    sim.fault(Fault::shutdown("store").grace(GRACE).at(SHUTDOWN));
    sim.client("player", |player| async move {
        let store = StoreClient::new(player.channel("store"));
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..30u32 {
            let mut store = store.clone();
            calls.spawn(async move {
                let req = SaveRequest {
                    match_id: "final".into(),
                    points: n,
                };
                let _ = store.save(req).await;
            });
            tokio::time::sleep(ms(50)).await;
        }
        while calls.join_next().await.is_some() {}
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    // Calls whose request reached a handler before the shutdown.
    let in_flight: Vec<_> = trace
        .runs_on("store")
        .filter(|r| r.started < SHUTDOWN && r.ended_at.is_none_or(|t| t > SHUTDOWN))
        .collect();
    let in_flight_ok = in_flight.iter().all(|r| {
        matches!(
            r.end,
            grpc_chaos::trace::RunEnd::Finished { code: "OK", .. }
        )
    });
    let after: Vec<_> = calls.iter().filter(|c| c.started > SHUTDOWN).collect();
    let mut codes: BTreeMap<String, usize> = BTreeMap::new();
    for c in &after {
        let code = c
            .outcome()
            .map_or("open".to_owned(), |o| format!("{} {:?}", o.code, o.message));
        *codes.entry(code).or_default() += 1;
    }
    let returned = trace.events_on("store").find_map(|e| match e.kind {
        EventKind::ServeReturned { drained } => Some((e.at(), drained)),
        _ => None,
    });
    let last_finish = in_flight.iter().filter_map(|r| r.ended_at).max();
    let happened = format!(
        "{} saves in flight at the shutdown, {}; {} calls after it: {}; serve returned {}",
        in_flight.len(),
        if in_flight_ok {
            "all finished OK"
        } else {
            "not all finished OK"
        },
        after.len(),
        codes
            .iter()
            .map(|(c, n)| format!("{n}× {c}"))
            .collect::<Vec<_>>()
            .join(", "),
        returned.map_or("never".to_owned(), |(at, d)| format!(
            "at {} ({} after the shutdown)",
            fmt_duration(at),
            fmt_duration(d)
        )),
    );
    Report::from_checks(
        happened,
        &[
            (
                !in_flight.is_empty(),
                "no save was in flight at the shutdown".into(),
            ),
            (
                in_flight_ok,
                "a save in flight at the shutdown did not finish OK".into(),
            ),
            (
                !after.is_empty()
                    && after
                        .iter()
                        .all(|c| c.outcome().is_some_and(|o| !o.is_ok())),
                "a call made after the shutdown succeeded".into(),
            ),
            (
                returned.is_some_and(|(at, _)| last_finish.is_some_and(|f| at >= f)),
                "serve did not return after the saves in flight finished".into(),
            ),
        ],
    )
    .with_findings(trace)
}
