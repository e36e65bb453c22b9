//! Seed 000 §5: the code must be in `retryableStatusCodes`. The seed's
//! policy retries UNAVAILABLE only; a store failing with INTERNAL gets one
//! attempt.

use grpc_chaos::{Fault, Sim, Trace};
use tonic::Code;

use super::retry_world::{self as rw, seed_policy, SEED_POLICY};
use super::{Report, Scenario};
use crate::services::SAVE;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-not-retryable",
    source: "gRFC A6 (retryableStatusCodes)",
    story: "A code outside retryableStatusCodes reaches the caller after one attempt.",
    checks: "INTERNAL is not in retryableStatusCodes: 1 attempt, the caller sees INTERNAL",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .fail_first(3, Code::Internal),
    );
    sim.client("player", |player| async move {
        let mut store = rw::retrying_store(&player, SEED_POLICY)?;
        let err = store.save(rw::save()).await.expect_err("INTERNAL");
        tracing::info!(code = ?err.code(), "player gave up");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls = trace.retried_calls();
    let attempts = calls.first().map_or(0, |c| c.attempts.len());
    let stop = calls.first().and_then(rw::stop);
    let code = rw::caller_code(trace, "player");
    let (conforms, why) = rw::conforms(trace, &seed_policy());
    Report::from_checks(
        format!(
            "{attempts} attempt, store saw {} Save, the layer stopped ({}), the caller saw {}",
            rw::store_saves(trace),
            stop.unwrap_or("no decision"),
            code.unwrap_or("nothing")
        ),
        &[
            (attempts == 1, format!("{attempts} attempts, not 1")),
            (
                stop == Some("not_retryable_code"),
                format!("stop rule {stop:?}"),
            ),
            (code == Some("INTERNAL"), format!("the caller saw {code:?}")),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
