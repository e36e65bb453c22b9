//! Seed 000 §5 / gRFC A6 "Pushback": a `grpc-retry-pushback-ms` of 500
//! replaces the backoff (next attempt exactly 500 ms later); a negative one
//! stops retrying.

use grpc_chaos::{Fault, Sim, Trace};
use tonic::Code;

use super::retry_world::{self as rw, seed_policy, SEED_POLICY};
use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::LoadRequest;
use crate::services::{LOAD, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-pushback",
    source: "gRFC A6 (server pushback, grpc-retry-pushback-ms)",
    story: "A server's pushback sets when the next attempt starts, or forbids it.",
    checks: "pushback 500ms: attempt 2 starts 500ms later; pushback -1: no retry",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .pushback_ms(500)
            .fail_first(1, Code::Unavailable),
    );
    sim.fault(
        Fault::handler("store")
            .method(LOAD)
            .pushback_ms(-1)
            .abort(Code::Unavailable, "overloaded"),
    );
    sim.client("player", |player| async move {
        let mut store = rw::retrying_store(&player, SEED_POLICY)?;
        store.save(rw::save()).await?;
        let load = LoadRequest {
            match_id: "final".into(),
        };
        let err = store.load(load).await.expect_err("UNAVAILABLE");
        tracing::info!(code = ?err.code(), "load gave up");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls = trace.retried_calls();
    let save = calls.iter().find(|c| c.path == SAVE);
    let load = calls.iter().find(|c| c.path == LOAD);
    let save_delays = save.map(|c| c.delays()).unwrap_or_default();
    let load_attempts = load.map_or(0, |c| c.attempts.len());
    let load_stop = load.and_then(rw::stop);
    let (conforms, why) = rw::conforms(trace, &seed_policy());
    let waited = save_delays.first().copied();
    Report::from_checks(
        format!(
            "Save: {} attempts, attempt 2 started {} after attempt 1 ended; Load: {load_attempts} attempt, stopped ({})",
            save.map_or(0, |c| c.attempts.len()),
            waited.map_or_else(|| "never".to_owned(), grpc_chaos::trace::fmt_duration),
            load_stop.unwrap_or("no decision")
        ),
        &[
            (
                save.is_some_and(|c| c.attempts.len() == 2),
                "Save did not take 2 attempts".into(),
            ),
            (
                waited.is_some_and(|d| d >= ms(500) && d <= ms(501)),
                format!("Save's retry waited {waited:?}, not the 500ms pushback"),
            ),
            (load_attempts == 1, format!("Load took {load_attempts} attempts, not 1")),
            (load_stop == Some("pushback_stop"), format!("Load stop rule {load_stop:?}")),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
