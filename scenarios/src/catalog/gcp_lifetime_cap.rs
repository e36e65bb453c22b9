//! A long Watch stream behind a Google Cloud external load balancer, whose
//! backend service `timeoutSec` (30 s by default) caps how long a stream
//! may stay open: scores come every 10 s and the cap cuts the stream at
//! 30 s, RST_STREAM(CANCEL) to both ends. The player sees CANCELLED after
//! three scores, the gateway's handler is reset too — no one did anything
//! wrong, the stream was just older than the box allows.

use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::pb::WatchRequest;
use crate::services::{DeadlineMode, Gateway, Store, WATCH};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "gcp-lifetime-cap",
    source: "Google Cloud BackendService.timeoutSec (default 30 s; for long-lived streams the longest a stream may stay open); RFC 9113 §6.4",
    story: "A load balancer's stream lifetime cap ends a healthy long-lived stream, whatever keepalive and traffic say.",
    checks: "Watch with a score every 10s behind a GCP external LB (timeoutSec 30s): RST_STREAM(CANCEL) both ways at 30s, the player sees CANCELLED after 3 scores, the gateway's Watch handler is dropped",
    simulate,
    judge,
};

/// Gap between two scores.
const SCORE_EVERY: Duration = ms(10_000);
/// The backend service's default `timeoutSec`.
const CAP: u64 = 30_000;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(ms(60_000))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let gateway = Gateway::new(s.channel("store"), DeadlineMode::Propagate, Duration::ZERO);
        s.add_service(gateway.with_watch_interval(SCORE_EVERY).into_server())
    });
    sim.middlebox(
        "gateway",
        Middlebox::gcp_external_lb().for_clients(["player"]),
    );
    sim.client("player", |player| async move {
        let request = WatchRequest {
            match_id: "final".into(),
            count: 10,
            padding: 0,
        };
        let mut scores = ScoreboardClient::new(player.channel("gateway"))
            .watch(request)
            .await?
            .into_inner();
        let mut received = 0;
        let status = loop {
            match scores.message().await {
                Ok(Some(_)) => received += 1,
                Ok(None) => break None,
                Err(status) => break Some(status),
            }
        };
        tracing::info!(received, code = ?status.map(|s| s.code()), "player's Watch ended");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let player = trace.calls_from("player").next();
    let ended = player.and_then(|c| c.ended_at);
    let code = player.and_then(|c| c.outcome()).map_or("none", |o| o.code);
    let watch = trace.runs_on("gateway").find(|r| r.path == WATCH);
    let dropped = watch.is_some_and(|r| r.end == RunEnd::Dropped);
    let text = trace.render();
    let cut = text.contains(
        "GCP external LB: RST_STREAM(CANCEL) on s1 both ways: stream lifetime 30000ms reached",
    );
    let happened = format!(
        "the Watch ended {code} at {}; the gateway's Watch handler {}",
        ended.map_or("never".to_owned(), fmt_duration),
        if dropped { "dropped" } else { "not dropped" }
    );
    let at_cap = ended.is_some_and(|t| t >= ms(CAP) && t < ms(CAP + 100));
    Report::from_checks(
        happened,
        &[
            (
                cut,
                "the box's lifetime cap did not reset the stream".into(),
            ),
            (at_cap, format!("the Watch did not end at the {CAP}ms cap")),
            (
                code == "CANCELLED",
                format!("the player saw {code}, not CANCELLED"),
            ),
            (
                dropped,
                "the gateway's Watch handler was not dropped".into(),
            ),
        ],
    )
    .with_findings(trace)
}
