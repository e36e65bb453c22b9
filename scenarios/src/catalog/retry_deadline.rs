//! Seed 000 §5: the call's own deadline bounds every retry. A 500 ms
//! deadline against the seed's policy and a store that is always
//! UNAVAILABLE: the backoffs (≈100, 200, 400 ms) do not fit, so the call
//! ends DEADLINE_EXCEEDED at 500 ms without starting an attempt it cannot
//! finish.

use grpc_chaos::{Fault, Sim, Trace};
use tonic::Code;

use super::retry_world::{self as rw, seed_policy, SEED_POLICY};
use super::world::{ms, with_timeout};
use super::{Report, Scenario};
use crate::services::SAVE;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-deadline",
    source: "gRFC A6 (client retries and deadlines)",
    story: "Retries stop at the call's deadline: the deadline covers every attempt, not each one.",
    checks:
        "500ms deadline, always UNAVAILABLE: 3 attempts, DEADLINE_EXCEEDED at 500ms, none after",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .abort(Code::Unavailable, "store down"),
    );
    sim.client("player", |player| async move {
        let mut store = rw::retrying_store(&player, SEED_POLICY)?;
        let err = store
            .save(with_timeout(rw::save(), ms(500)))
            .await
            .expect_err("deadline");
        tracing::info!(code = ?err.code(), "player gave up");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls = trace.retried_calls();
    let call = calls.first();
    let attempts = call.map_or(0, |c| c.attempts.len());
    let stop = call.and_then(rw::stop);
    let last_start = call.and_then(|c| c.attempts.last()).map(|a| a.started);
    let player = trace.calls_from("player").last();
    let first = trace.calls_from("player").next();
    let (conforms, why) = rw::conforms(trace, &seed_policy());
    // The player logs the code it got when it gives up.
    let gave_up = trace.events_on("player").find_map(|e| match &e.kind {
        grpc_chaos::recorder::event::EventKind::Log(log)
            if log.message.starts_with("player gave up") =>
        {
            Some((e.at(), log.message.clone()))
        }
        _ => None,
    });
    let ended = gave_up.as_ref().map(|g| g.0);
    let deadline_exceeded = gave_up
        .as_ref()
        .is_some_and(|g| g.1.ends_with("code=DeadlineExceeded"));
    Report::from_checks(
        format!(
            "{attempts} attempts (last at {}), the layer stopped ({}), the caller gave up at {}",
            last_start.map_or_else(|| "-".to_owned(), grpc_chaos::trace::fmt_duration),
            stop.unwrap_or("no decision"),
            ended.map_or_else(|| "-".to_owned(), grpc_chaos::trace::fmt_duration),
        ),
        &[
            (attempts == 3, format!("{attempts} attempts, not 3")),
            (stop == Some("deadline"), format!("stop rule {stop:?}")),
            (
                first.and_then(|c| c.timeout) == Some(ms(500)),
                "the first attempt did not carry the 500ms deadline".into(),
            ),
            (
                ended.is_some_and(|t| t >= ms(500) && t <= ms(501)),
                format!("the caller gave up at {ended:?}, not at the 500ms deadline"),
            ),
            (player.is_some(), "no call recorded".into()),
            (
                deadline_exceeded,
                format!("the caller did not get DEADLINE_EXCEEDED: {gave_up:?}"),
            ),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
