//! Seed 000 §3: the receiver decides the speed. The player watches 400
//! scores of 16 KiB each with a 5 s deadline, and its WINDOW_UPDATEs are
//! held until 10 s. The gateway sends one stream window (hyper's client
//! advertises 2 MiB) and stops: no error, no RST_STREAM, and nothing fails
//! at 5 s, because tonic's deadline bounds only the wait for response
//! headers. At 10 s the updates leave and the rest of the stream flows.
//!
//! The wire tap keeps TCP order, so holding the player's WINDOW_UPDATE also
//! holds every later byte the player writes on that connection (that is what
//! a real receiver's stuck send queue would do too).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::{Stall, StallEnd};
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{ms, with_timeout};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::pb::WatchRequest;
use crate::services::{DeadlineMode, Gateway, Store, WATCH};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "receiver-decides-speed",
    source: "RFC 9113 §5.2, §6.9 (flow control)",
    story: "A reader that does not grant credit stalls the sender without any error or timeout.",
    checks: "Watch 400×16KiB, player WINDOW_UPDATEs held to 10s, 5s deadline: sender stalls after one stream window, nothing fails at 5s, all 400 arrive",
    simulate,
    judge,
};

const SCORES: u32 = 400;
const PADDING: u32 = 16 * 1024;
const DEADLINE: Duration = ms(5_000);
const RELEASE: Duration = ms(10_000);
/// Stalls shorter than this are ordinary flow control, not a story.
pub(super) const STALL_THRESHOLD: Duration = ms(1_000);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    // 10 s of waiting: 10 ms steps keep it cheap (every time is a multiple
    // of 10 ms).
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(ms(15_000))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    // Only the Watch stream's updates (stream 1): the connection-level
    // WINDOW_UPDATE hyper sends in the handshake is written before the
    // request, so holding it would hold the request's HEADERS too and the
    // call would never start. Later connection-level updates are written
    // after the first held one and wait behind it anyway (TCP order).
    sim.fault(
        Fault::frames()
            .from("player")
            .kind(FrameType::WindowUpdate)
            .stream(1)
            .hold_until(RELEASE),
    );
    sim.client("player", |player| async move {
        let start = tokio::time::Instant::now();
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let req = WatchRequest {
            match_id: "final".into(),
            count: SCORES,
            padding: PADDING,
        };
        let mut scores = scoreboard
            .watch(with_timeout(req, DEADLINE))
            .await?
            .into_inner();
        let received = Arc::new(AtomicU32::new(0));
        // Say how far the stream got when its deadline passed.
        let at_deadline = received.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(start + DEADLINE).await;
            let received = at_deadline.load(Ordering::Relaxed);
            tracing::info!(received, "deadline passed, stream still open");
        });
        while let Some(score) = scores.next().await {
            score?;
            received.fetch_add(1, Ordering::Relaxed);
        }
        tracing::info!(received = received.load(Ordering::Relaxed), "watch ended");
        Ok(())
    });
    sim.run()
}

/// The stall of the Watch stream, as the verdict line shows it.
pub(super) fn watch_stall(trace: &Trace) -> Option<Stall> {
    trace
        .stalls(STALL_THRESHOLD)
        .into_iter()
        .find(|s| s.sender == "gateway" && s.receiver == "player")
}

/// How many scores the player counted, from its `watch ended` log line.
fn received(trace: &Trace) -> Option<u32> {
    trace.events_on("player").find_map(|e| match &e.kind {
        EventKind::Log(log) if log.message.starts_with("watch ended") => log
            .message
            .split_once("received=")
            .and_then(|(_, n)| n.parse().ok()),
        _ => None,
    })
}

fn judge(trace: &Trace) -> Report {
    let Some(watch) = trace.calls_from("player").find(|c| c.path == WATCH) else {
        return Report::failed("the player made no Watch call");
    };
    let outcome = watch.outcome().map_or("no status", |o| o.spec_code);
    let stall = watch_stall(trace);
    let resets = super::cancel_upload::resets(trace, "player").len()
        + super::cancel_upload::resets(trace, "gateway").len();
    let received = received(trace);
    let happened = format!(
        "{}; {} scores arrived, the Watch ended {outcome} at {} ({} past its {} deadline), {resets} RST_STREAM",
        stall
            .as_ref()
            .map_or("no stall".to_owned(), ToString::to_string),
        received.map_or("?".to_owned(), |n| n.to_string()),
        watch.ended_at.map_or("never".into(), fmt_duration),
        watch.ended_at.map_or("-".into(), |t| fmt_duration(
            t.saturating_sub(watch.started + DEADLINE)
        )),
        fmt_duration(DEADLINE),
    );
    Report::from_checks(
        happened,
        &[
            (stall.is_some(), "no stall of the Watch stream".into()),
            (
                stall
                    .as_ref()
                    .is_some_and(|s| s.since < DEADLINE && s.until >= RELEASE),
                "the stall did not span the deadline up to the release".into(),
            ),
            (
                stall
                    .as_ref()
                    .is_some_and(|s| s.end == StallEnd::Reopened && s.held_updates > 0),
                "the stall was not ended by the held WINDOW_UPDATEs".into(),
            ),
            (
                outcome == "OK",
                format!("the Watch ended {outcome}, not OK"),
            ),
            (
                received == Some(SCORES),
                format!("{received:?} scores arrived, not {SCORES}"),
            ),
            (
                resets == 0,
                format!("{resets} RST_STREAM frames: something gave up"),
            ),
        ],
    )
    .with_findings(trace)
}
