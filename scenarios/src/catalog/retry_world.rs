//! What the retry stories (seed 000 §5, §8) share: the seed's policy, a
//! store, and a player that saves through a retrying channel.

use grpc_chaos::retry::RetryConfig;
use grpc_chaos::trace::{DecisionRecord, RetriedCall};
use grpc_chaos::{Host, Sim, SimBuilder, Trace};

use super::world::ms;
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::{Store, SAVE};

/// Seed 000 §5's retry policy (A6 service config), for `tt.v1.Store`:
/// up to 4 attempts, backoff 0.1 s × 2^n capped at 1 s, UNAVAILABLE only.
pub(crate) const SEED_POLICY: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

/// The parsed [`SEED_POLICY`].
pub(crate) fn seed_policy() -> RetryConfig {
    parse(SEED_POLICY)
}

/// Parses a policy the catalog wrote; a typo is a bug in the catalog.
pub(crate) fn parse(json: &str) -> RetryConfig {
    json.parse()
        .unwrap_or_else(|e| panic!("catalog retry policy: {e}"))
}

/// A sim with a `store` host whose Save takes 10 ms (*simulated*).
pub(crate) fn store_sim(builder: SimBuilder) -> Sim {
    let mut sim = builder.build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(10)).into_server())
    });
    sim
}

/// A store client on `host` behind the seed's retry policy.
pub(crate) fn retrying_store(
    host: &Host,
    policy: &str,
) -> Result<
    StoreClient<grpc_chaos::retry::Retry<grpc_chaos::Channel>>,
    grpc_chaos::retry::ConfigError,
> {
    Ok(StoreClient::new(host.retry_channel("store", policy)?))
}

/// A Save of one point for the final.
pub(crate) fn save() -> SaveRequest {
    SaveRequest {
        match_id: "final".into(),
        points: 1,
    }
}

/// `100.2ms, 215ms` — the delays measured between attempts of the first
/// retried call.
pub(crate) fn delays(trace: &Trace) -> String {
    trace
        .retried_calls()
        .first()
        .map(|c| {
            c.delays()
                .into_iter()
                .map(grpc_chaos::trace::fmt_duration)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The Save attempts the store saw.
pub(crate) fn store_saves(trace: &Trace) -> usize {
    trace.attempts("store", SAVE)
}

/// `Ok` or the violation's text, as a check.
pub(crate) fn conforms(trace: &Trace, policy: &RetryConfig) -> (bool, String) {
    match trace.assert_retries_conform(policy) {
        Ok(()) => (true, String::new()),
        Err(v) => (false, v.to_string()),
    }
}

/// The decision the retry layer took after `call`'s last attempt.
pub(crate) fn last_decision(call: &RetriedCall) -> Option<&DecisionRecord> {
    call.attempts.last()?.decision.as_ref()
}

/// The rule that stopped `call`'s retries (`committed`,
/// `not_retryable_code`, …), if the layer stopped it.
pub(crate) fn stop(call: &RetriedCall) -> Option<&'static str> {
    last_decision(call)?.stop
}

/// The code `host`'s last call ended with, as its caller saw it.
pub(crate) fn caller_code(trace: &Trace, host: &str) -> Option<&'static str> {
    trace
        .calls_from(host)
        .last()
        .and_then(|c| c.outcome())
        .map(|o| o.code)
}
