//! Seed 000 §5, gRFC A6 "Throttling": a per-target token bucket
//! (`maxTokens` 10, `tokenRatio` 0.1) stops retries when the store is down.
//! A player saves once a second for 40 s; the store is UNAVAILABLE from
//! 5 s to 35 s. The first failing call spends 4 tokens on its attempts; the
//! next failure brings the bucket to half and every later call gets one
//! attempt, until the store is back.

use std::time::Duration;

use grpc_chaos::trace::RetriedCall;
use grpc_chaos::{Fault, Sim, Trace};
use tonic::Code;

use super::retry_world::{self as rw, parse};
use super::world::ms;
use super::{Report, Scenario};
use crate::services::SAVE;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-throttling",
    source: "gRFC A6 (retry throttling, token bucket)",
    story: "A token bucket stops retries once most calls fail, so a long outage is not multiplied.",
    checks: "store down 5s–35s under 1 call/s: retries stop once the token bucket is at half",
    simulate,
    judge,
};

/// The seed's policy with retry throttling.
pub(crate) const POLICY: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}],
  "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}"#;

/// When the store is down, *simulated* time since the start of the run.
const DOWN: (Duration, Duration) = (ms(5_000), ms(35_000));
/// Player calls, one per second from 0 s.
const CALLS: u32 = 40;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed).duration(ms(45_000)));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .during(DOWN.0, DOWN.1)
            .abort(Code::Unavailable, "store down"),
    );
    sim.client("player", |player| async move {
        let mut store = rw::retrying_store(&player, POLICY)?;
        let start = tokio::time::Instant::now();
        for i in 0..CALLS {
            tokio::time::sleep_until(start + ms(1_000) * i).await;
            // Failures are the story; the caller keeps going.
            let _ = store.save(rw::save()).await;
        }
        Ok(())
    });
    sim.run()
}

fn during_outage(c: &RetriedCall) -> bool {
    c.attempts
        .first()
        .is_some_and(|a| a.started >= DOWN.0 && a.started < DOWN.1)
}

fn judge(trace: &Trace) -> Report {
    let calls = trace.retried_calls();
    let outage: Vec<&RetriedCall> = calls.iter().filter(|c| during_outage(c)).collect();
    let attempts: usize = outage.iter().map(|c| c.attempts.len()).sum();
    let first = outage.first().map_or(0, |c| c.attempts.len());
    let throttled = outage
        .iter()
        .filter(|c| rw::stop(c) == Some("throttled"))
        .count();
    let later_single = outage.iter().skip(1).all(|c| c.attempts.len() == 1);
    let ratio = if outage.is_empty() {
        0.0
    } else {
        attempts as f64 / outage.len() as f64
    };
    let (conforms, why) = rw::conforms(trace, &parse(POLICY));
    Report::from_checks(
        format!(
            "during the outage {} calls made {attempts} attempts ({ratio:.2} per call): the first {first}, \
             then 1 each ({throttled} stopped as throttled); unthrottled it would be {}",
            outage.len(),
            outage.len() * 4
        ),
        &[
            (outage.len() == 30, format!("{} calls during the outage, not 30", outage.len())),
            (first == 4, format!("the first failing call made {first} attempts, not 4")),
            (later_single, "a later call during the outage was retried".into()),
            (throttled == 29, format!("{throttled} calls stopped as throttled, not 29")),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}
