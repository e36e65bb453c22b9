//! Retry checks that cannot see anything say so: a trace with no call
//! through a recording retry layer fails `assert_retries_conform`, and a
//! retry policy that matched no call is reported in the trace.

use tonic::Code;

use grpc_chaos::retry::RetryConfig;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};

/// Up to 4 attempts of any `tt.v1.Store` method, UNAVAILABLE only.
const STORE_POLICY: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

fn policy(json: &str) -> RetryConfig {
    json.parse().expect("valid policy")
}

/// A store whose first `failures` Saves fail UNAVAILABLE.
fn failing_store(failures: u32) -> Sim {
    let mut sim = Sim::builder().seed(9).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .fail_first(failures, Code::Unavailable),
    );
    sim
}

/// Eight attempts without backoff, by a loop of the caller's own: plain
/// calls the check cannot see as retries. It must not pass them.
#[test]
fn a_retry_loop_of_your_own_is_not_a_pass() -> grpc_chaos::Result {
    let mut sim = failing_store(7);
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        for _ in 0..8 {
            if store.save(SaveRequest::default()).await.is_ok() {
                break;
            }
        }
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(trace.attempts("store", SAVE), 8);
    let v = trace
        .assert_retries_conform(&policy(STORE_POLICY))
        .expect_err("nothing to check is not a pass");
    assert_eq!(v.rule(), "retry policy");
    assert!(
        v.detail()
            .starts_with("no call in this trace went through a recording retry layer")
            && v.detail().contains("Host::retry_channel"),
        "{v}"
    );
    Ok(())
}
