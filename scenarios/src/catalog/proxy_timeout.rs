//! Seed 003 #8: timeouts that do not agree. The player gives the call 3 s;
//! the gateway in front of the store cuts its upstream call at 2 s, as a
//! proxy's route timeout would; the store takes 5 s. The call fails at the
//! gateway's 2 s, a second before the deadline the player set: the gateway
//! answers with the status tonic gave its store call, `CANCELLED "Timeout
//! expired"` in trailers (a spec-conforming gateway would pass on
//! DEADLINE_EXCEEDED). The player's trace shows that status as sent (the
//! gateway chose it); the finding is on the gateway's own call, where its
//! tonic made it. The store's handler is cancelled at 2 s: no orphan work.

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{self, ms, rally, with_timeout, Setup};
use super::{Report, Scenario};
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::{DeadlineMode, SAVE};

/// The player's deadline.
const DEADLINE: u64 = 3_000;
/// The gateway's upstream timeout, shorter than the player's deadline.
const UPSTREAM: u64 = 2_000;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "proxy-timeout",
    source: "Envoy route timeout (route.RouteAction.timeout); grpc.io Deadlines guide",
    story: "A proxy's upstream timeout shorter than the client's deadline decides how the call ends, with the proxy's status.",
    checks: "player deadline 3s, gateway upstream timeout 2s, store 5s slow: the call fails at 2s with the gateway's status, not at 3s; store handler cancelled",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let setup = Setup {
        mode: DeadlineMode::Capped(ms(UPSTREAM)),
        think: ms(0),
        work: ms(10),
    };
    let mut sim = world::sim(Sim::builder().seed(seed), setup);
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(5_000)));
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let status = scoreboard
            .hit(with_timeout(rally(1), ms(DEADLINE)))
            .await
            .expect_err("the store is slower than either timeout");
        tracing::info!(code = ?status.code(), grpc_message = status.message(), "player's call failed");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let player = trace.calls_from("player").next();
    let ended = player.and_then(|c| c.latency());
    let code = player
        .and_then(|c| c.outcome())
        .map_or("none".to_owned(), |o| format!("{} {:?}", o.code, o.message));
    let store = trace.runs_on("store").find(|r| r.path == SAVE);
    let dropped = store.filter(|r| r.end == RunEnd::Dropped);
    let happened = format!(
        "player's call ended {code} after {}; store handler {}",
        ended.map_or("never".to_owned(), fmt_duration),
        if dropped.is_some() {
            "dropped"
        } else {
            "not dropped"
        }
    );
    let early = ended.is_some_and(|t| t >= ms(UPSTREAM) && t < ms(UPSTREAM + 50));
    let orphans = trace.assert_no_orphan_work();
    Report::from_checks(
        happened,
        &[
            (
                early,
                format!("the call did not end at the gateway's {UPSTREAM}ms timeout"),
            ),
            (
                dropped.is_some(),
                "the gateway's timeout did not cancel the store handler".into(),
            ),
            (
                orphans.is_ok(),
                orphans.err().map(|e| e.to_string()).unwrap_or_default(),
            ),
        ],
    )
    .with_findings(trace)
}
