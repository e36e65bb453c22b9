//! Seed 000 §5: a committed call is not retried. The store sends response
//! headers, then UNAVAILABLE in the trailers: the code is retryable, but the
//! server had begun answering.

use grpc_chaos::{Fault, Sim, Trace};
use tonic::Code;

use super::retry_world::{self as rw, seed_policy, SEED_POLICY};
use super::{Report, Scenario};
use crate::services::SAVE;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-committed",
    source: "gRFC A6 (client retries: commit)",
    story:
        "Once response headers arrived the call is committed and a later failure is not retried.",
    checks: "UNAVAILABLE after response headers (committed): no retry, 1 attempt",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .after_headers()
            .fail_first(3, Code::Unavailable),
    );
    sim.client("player", |player| async move {
        let mut store = rw::retrying_store(&player, SEED_POLICY)?;
        let err = store.save(rw::save()).await.expect_err("UNAVAILABLE");
        tracing::info!(code = ?err.code(), "player gave up");
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls = trace.retried_calls();
    let attempts = calls.first().map_or(0, |c| c.attempts.len());
    let decision = calls.first().and_then(rw::last_decision);
    let committed = decision.is_some_and(|d| d.committed);
    let stop = decision.and_then(|d| d.stop);
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
                committed && stop == Some("committed"),
                format!("decision {decision:?}"),
            ),
            (
                code == Some("UNAVAILABLE"),
                format!("the caller saw {code:?}"),
            ),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
