//! Seed 000 §6, on a stream: as `dead-peer`, but the player is reading a
//! Watch stream whose scores come 12 s apart. After the first score the
//! connection is silent for 10 s, the player's PING goes unanswered, and
//! keepalive closes the connection under the open stream. tonic reports that
//! as UNKNOWN (an I/O error on an open stream); the spec wants UNAVAILABLE.

use std::time::Duration;

use futures_util::StreamExt;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Fault, Sim, Trace};

use super::dead_peer::{connections, first_ping, Cut, KEEPALIVE, KEEPALIVE_TIMEOUT, TICK};
use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::pb::WatchRequest;
use crate::services::{DeadlineMode, Gateway, Store, WATCH};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "dead-peer-stream",
    source: "gRFC A8 (client-side keepalive); grpc doc/keepalive.md",
    story: "The same dead server under an open stream: the stream ends with a different code than a unary call.",
    checks: "keepalive 10s/1s, PING ACKs lost, Watch stream open: closed ~1s after the unanswered PING, tonic UNKNOWN vs spec UNAVAILABLE, next call redials",
    simulate,
    judge,
};

/// Gap between two scores of the Watch stream: longer than the keepalive
/// interval, so the player pings in the middle of the stream.
const SCORE_EVERY: Duration = ms(12_000);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(ms(20_000))
        .tick(TICK)
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO)
                .with_watch_interval(SCORE_EVERY)
                .into_server(),
        )
    });
    sim.fault(
        Fault::frames()
            .from("gateway")
            .kind(FrameType::Ping)
            .ack(true)
            .drop(),
    );
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel_with("gateway", |e| {
            e.http2_keep_alive_interval(KEEPALIVE)
                .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        }));
        let watch = |count| WatchRequest {
            match_id: "final".into(),
            count,
            padding: 0,
        };
        let mut scores = scoreboard.watch(watch(3)).await?.into_inner();
        let mut received = 0u32;
        while let Some(item) = scores.next().await {
            match item {
                Ok(_) => received += 1,
                Err(status) => {
                    tracing::info!(received, code = ?status.code(), "watch broke");
                    break;
                }
            }
        }
        drop(scores);
        // The next call dials a new connection by itself.
        let mut again = scoreboard.watch(watch(1)).await?.into_inner();
        while again.message().await?.is_some() {}
        Ok(())
    });
    sim.run()
}

/// How many DATA frames (one per score here) `from` wrote on connection `conn`, stream `stream`.
fn data_frames(trace: &Trace, from: &str, conn: u32, stream: u32) -> usize {
    trace
        .events_on(from)
        .filter(|e| {
            matches!(&e.kind, EventKind::Frame { conn: c, stream: s, frame: FrameType::Data, .. }
                if *c == conn && *s == stream)
        })
        .count()
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    let (Some(first), Some(second)) = (calls.first(), calls.get(1)) else {
        return Report::failed(format!("expected 2 calls, saw {}", calls.len()));
    };
    let conns = connections(trace, "player", "gateway");
    let ping = conns.first().and_then(|&c| first_ping(trace, "player", c));
    let scores = conns
        .first()
        .map_or(0, |&c| data_frames(trace, "gateway", c, 1));
    let outcome = first.outcome();
    let (code, spec) = outcome.map_or(("no status", "no status"), |o| (o.code, o.spec_code));
    let closed_after_ping = ping.zip(first.ended_at).map(|(p, e)| e.saturating_sub(p));
    let handler_dropped = trace
        .runs_on("gateway")
        .find(|r| r.path == WATCH)
        .is_some_and(|r| r.end == RunEnd::Dropped);
    let happened = format!(
        "the gateway sent {scores} score(s), then nothing; PING at {}, no ACK; the Watch ended {code} at {} ({} after the PING; spec {spec}); the next Watch {} on c{}",
        ping.map_or("never".into(), fmt_duration),
        first.ended_at.map_or("never".into(), fmt_duration),
        closed_after_ping.map_or("-".into(), fmt_duration),
        second.outcome().map_or("did not end", |o| o.spec_code),
        conns.get(1).map_or("?".into(), |c| c.to_string()),
    );
    let cut = Cut {
        ping,
        closed_after_ping,
        spec,
        handler_dropped,
        conns: conns.len(),
        next_ok: second.outcome().is_some_and(|o| o.is_ok()),
    };
    let mut checks = vec![(scores >= 1, "no score arrived before the PING".to_owned())];
    checks.extend(cut.checks("stream", "the gateway's Watch handler"));
    Report::from_checks(happened, &checks).with_findings(trace)
}
