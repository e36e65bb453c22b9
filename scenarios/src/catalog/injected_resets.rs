//! RFC 9113 §8.7 and §6.8: two ways a server says "I did not process that
//! stream", injected on the wire between the player and the store (each Save
//! takes 100 ms):
//! - RST_STREAM(REFUSED_STREAM) on a new call (stream 1, 20 ms in);
//! - GOAWAY(NO_ERROR, last-stream-id=3) while streams 3 and 5 are open:
//!   stream 3 may finish, stream 5 was never processed.
//!
//! The trace shows the code tonic reports for each next to the spec's, and
//! that the player dials a new connection after the GOAWAY. The injected
//! frames are lies the store's own HTTP/2 stack does not know about, so its
//! handlers still run and answer; the trace shows what the player's stack
//! does with those answers.

use std::time::Duration;

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::Call;
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::{Fault, Sim, Trace};

use super::dead_peer::connections;
use super::world::{ms, with_timeout};
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::Store;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "injected-resets",
    source: "RFC 9113 §8.7, §6.8; PROTOCOL-HTTP2.md (errors)",
    story: "A server that refuses a stream or says GOAWAY: the codes tonic reports against the ones the spec requires.",
    checks: "injected RST_STREAM(REFUSED_STREAM) and GOAWAY(NO_ERROR) below an open stream: tonic's codes vs the spec's UNAVAILABLE, redial after GOAWAY",
    simulate,
    judge,
};

const WORK: Duration = ms(100);
/// The RST_STREAM(REFUSED_STREAM) on stream 1 (the first call).
const REFUSE_AT: Duration = ms(20);
/// Two calls start here, on streams 3 and 5 …
const PAIR_AT: Duration = ms(200);
/// … and the GOAWAY(NO_ERROR, last-stream-id=3) comes while both are open.
const GOAWAY_AT: Duration = ms(250);
/// The call after the GOAWAY.
const AFTER_AT: Duration = ms(400);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).duration(ms(2_000)).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(WORK).into_server())
    });
    sim.fault(
        Fault::inject("store", "player")
            .rst_stream(1, ErrorCode::RefusedStream)
            .at(REFUSE_AT),
    );
    sim.fault(
        Fault::inject("store", "player")
            .goaway(ErrorCode::NoError, 3, b"")
            .at(GOAWAY_AT),
    );
    sim.client("player", |player| async move {
        let start = tokio::time::Instant::now();
        let store = StoreClient::new(player.channel("store"));
        let save = |points| {
            with_timeout(
                SaveRequest {
                    match_id: "final".into(),
                    points,
                },
                ms(1_000),
            )
        };
        let _ = store.clone().save(save(1)).await;
        tokio::time::sleep_until(start + PAIR_AT).await;
        let (mut a, mut b) = (store.clone(), store.clone());
        let first = tokio::spawn(async move { a.save(save(2)).await });
        tokio::time::sleep(ms(1)).await;
        let second = tokio::spawn(async move { b.save(save(3)).await });
        let _ = first.await;
        let _ = second.await;
        tokio::time::sleep_until(start + AFTER_AT).await;
        store.clone().save(save(4)).await?;
        Ok(())
    });
    sim.run()
}

fn said(call: Option<&Call>) -> String {
    match call.and_then(Call::outcome) {
        Some(o) if o.code == o.spec_code => o.code.to_owned(),
        Some(o) => format!("{} {:?} (spec {})", o.code, o.message, o.spec_code),
        None => "no status".to_owned(),
    }
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<&Call> = trace.calls_from("player").collect();
    let [refused, below, above, after] = [0, 1, 2, 3].map(|i| calls.get(i).copied());
    let spec = |c: Option<&Call>| c.and_then(Call::outcome).map_or("none", |o| o.spec_code);
    let conns = connections(trace, "player", "store");
    let happened = format!(
        "REFUSED_STREAM on s1: {} at {}; GOAWAY last-stream-id=3: s3 {}, s5 {} at {}; the next call {} on c{}",
        said(refused),
        refused.and_then(|c| c.ended_at).map_or("never".into(), fmt_duration),
        said(below),
        said(above),
        above.and_then(|c| c.ended_at).map_or("never".into(), fmt_duration),
        said(after),
        conns.get(1).map_or("?".into(), |c| c.to_string()),
    );
    Report::from_checks(
        happened,
        &[
            (calls.len() == 4, format!("{} calls, not 4", calls.len())),
            (
                spec(refused) == "UNAVAILABLE",
                "the refused stream did not end UNAVAILABLE".into(),
            ),
            (
                spec(below) == "OK",
                "the stream at last-stream-id did not complete".into(),
            ),
            (
                spec(above) == "UNAVAILABLE",
                "the stream above last-stream-id did not end UNAVAILABLE (by the spec)".into(),
            ),
            (
                conns.len() == 2,
                format!("{} connections, not 2", conns.len()),
            ),
            (
                spec(after) == "OK",
                "the call after the GOAWAY failed".into(),
            ),
        ],
    )
    .with_findings(trace)
}
