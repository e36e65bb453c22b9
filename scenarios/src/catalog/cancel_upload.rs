//! Seed 000 §4, client streaming: the player uploads a rally every 100 ms
//! for 2 s, with a 500 ms deadline. tonic's timer bounds the wait for the
//! response headers, which an Upload only gets at the end, so the deadline
//! fires mid-upload: the player sends RST_STREAM(CANCEL) and the gateway's
//! handler is dropped.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::FrameDetail;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::{Sim, Trace};

use super::world::{self, ms, rally, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::{DeadlineMode, UPLOAD};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "cancel-during-upload",
    source: "grpc.io Deadlines guide; RFC 9113 §6.4 (RST_STREAM)",
    story: "A client stream still uploading when its deadline passes must be cancelled on both sides.",
    checks: "Upload streams for 2s under a 500ms deadline: DEADLINE_EXCEEDED at 500ms, RST_STREAM(CANCEL) sent, gateway handler dropped",
    simulate,
    judge,
};

const DEADLINE: Duration = ms(500);
const RALLIES: u32 = 20;
const EVERY: Duration = ms(100);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let setup = Setup {
        mode: DeadlineMode::Propagate,
        think: ms(0),
        work: ms(0),
    };
    let mut sim = world::sim(Sim::builder().seed(seed).duration(ms(5_000)), setup);
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let rallies = futures_util::stream::unfold(0u32, |n| async move {
            if n == RALLIES {
                return None;
            }
            if n > 0 {
                tokio::time::sleep(EVERY).await;
            }
            Some((rally(n), n + 1))
        });
        let mut req = tonic::Request::new(rallies);
        req.set_timeout(DEADLINE);
        let status = scoreboard
            .upload(req)
            .await
            .expect_err("the upload outlasts its deadline");
        tracing::info!(code = ?status.code(), "player gave up");
        // Stay a moment: the run's end must not be mistaken for the
        // cancellation reaching the gateway.
        tokio::time::sleep(ms(100)).await;
        Ok(())
    });
    sim.run()
}

/// The RST_STREAM frames `from` wrote, with their time and error code.
pub(super) fn resets(trace: &Trace, from: &str) -> Vec<(Duration, u32, ErrorCode)> {
    trace
        .events_on(from)
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                stream,
                detail: FrameDetail::RstStream { code },
                ..
            } => Some((e.at(), *stream, *code)),
            _ => None,
        })
        .collect()
}

/// DATA frames with a message in them (not the empty END_STREAM one) that
/// `from` wrote on stream `stream`.
fn messages(trace: &Trace, from: &str, stream: u32) -> usize {
    trace
        .events_on(from)
        .filter(|e| {
            matches!(&e.kind, EventKind::Frame { stream: s, detail: FrameDetail::Data { len, .. }, .. }
                if *s == stream && *len > 0)
        })
        .count()
}

fn judge(trace: &Trace) -> Report {
    let Some(upload) = trace.calls_from("player").find(|c| c.path == UPLOAD) else {
        return Report::failed("the player made no Upload call");
    };
    let spec = upload.outcome().map_or("no status", |o| o.spec_code);
    let cancel = resets(trace, "player")
        .into_iter()
        .find(|(_, _, code)| *code == ErrorCode::Cancel);
    let sent = messages(trace, "player", 1);
    let handler = trace.runs_on("gateway").find(|r| r.path == UPLOAD);
    let dropped = handler.filter(|r| r.end == RunEnd::Dropped);
    let happened = format!(
        "{sent} of {RALLIES} rallies sent; the Upload ended {spec} at {}; RST_STREAM {} at {}; gateway handler {}",
        upload.ended_at.map_or("never".into(), fmt_duration),
        cancel.as_ref().map_or("none".into(), |(_, _, c)| c.to_string()),
        cancel.as_ref().map_or("-".into(), |(t, _, _)| fmt_duration(*t)),
        match dropped {
            Some(r) => format!(
                "dropped after {}",
                fmt_duration(r.ended_at.unwrap_or_default().saturating_sub(r.started))
            ),
            None => "not dropped".into(),
        },
    );
    Report::from_checks(
        happened,
        &[
            (
                spec == "DEADLINE_EXCEEDED",
                format!("the upload ended {spec}, not DEADLINE_EXCEEDED"),
            ),
            (
                upload
                    .latency()
                    .is_some_and(|l| l >= DEADLINE && l <= DEADLINE + ms(5)),
                "the upload did not end at its deadline".into(),
            ),
            (
                sent > 0 && sent < RALLIES as usize,
                format!("{sent} rallies sent: the deadline did not cut the upload"),
            ),
            (
                cancel.is_some(),
                "the player sent no RST_STREAM(CANCEL)".into(),
            ),
            (
                dropped.is_some(),
                "the gateway's Upload handler was not dropped".into(),
            ),
        ],
    )
    .with_findings(trace)
}
