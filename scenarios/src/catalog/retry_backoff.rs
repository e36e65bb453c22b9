//! Seed 000 §5: the seed's policy (4 attempts, 0.1 s ×2 up to 1 s,
//! UNAVAILABLE) against a store that fails the first 3 attempts.

use grpc_chaos::{Fault, Sim, Trace};
use tonic::Code;

use super::retry_world::{self as rw, seed_policy, SEED_POLICY};
use super::{Report, Scenario};
use crate::services::SAVE;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-backoff",
    source: "gRFC A6 (client retries: exponential backoff)",
    story: "Transient UNAVAILABLE answers retried with jittered exponential backoff until one succeeds.",
    checks: "3 UNAVAILABLE then OK: 4 attempts, each delay inside its backoff window",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .fail_first(3, Code::Unavailable),
    );
    sim.client("player", |player| async move {
        let mut store = rw::retrying_store(&player, SEED_POLICY)?;
        store.save(rw::save()).await?;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls = trace.retried_calls();
    let attempts = calls.first().map_or(0, |c| c.attempts.len());
    let ok = trace
        .calls_from("player")
        .last()
        .and_then(|c| c.outcome())
        .is_some_and(|o| o.is_ok());
    let (conforms, why) = rw::conforms(trace, &seed_policy());
    Report::from_checks(
        format!(
            "{attempts} attempts, store saw {} Saves, delays {}; the call ended {}",
            rw::store_saves(trace),
            rw::delays(trace),
            if ok { "OK" } else { "with an error" }
        ),
        &[
            (
                calls.len() == 1,
                format!("{} logical calls, not 1", calls.len()),
            ),
            (attempts == 4, format!("{attempts} attempts, not 4")),
            (
                rw::store_saves(trace) == 4,
                "the store did not see 4 Saves".into(),
            ),
            (ok, "the call did not end OK".into()),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
