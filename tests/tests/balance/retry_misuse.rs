//! Retry checks that cannot see anything say so: a trace with no call
//! through a recording retry layer fails `assert_retries_conform`, and a
//! retry policy that matched no call is reported in the trace.

use tonic::codegen::http;
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

/// `STORE_POLICY` for one method of the store only.
fn policy_for_method(method: &str) -> String {
    STORE_POLICY.replace(
        r#"{"service": "tt.v1.Store"}"#,
        &format!(r#"{{"service": "tt.v1.Store", "method": "{method}"}}"#),
    )
}

/// A player that saves once through a retry channel to the store,
/// configured by `config`; the store's first Save fails UNAVAILABLE.
fn save_through(config: String) -> grpc_chaos::Result<grpc_chaos::Trace> {
    let mut sim = failing_store(1);
    sim.client("player", move |c| async move {
        let _ = StoreClient::new(c.retry_channel("store", &config)?)
            .save(SaveRequest::default())
            .await;
        Ok(())
    });
    sim.run()
}

/// The `fault never fired` lines of a trace.
fn never_fired(trace: &grpc_chaos::Trace) -> Vec<String> {
    trace
        .render()
        .lines()
        .filter_map(|l| {
            l.split_once("fault never fired: ")
                .map(|(_, f)| f.to_owned())
        })
        .collect()
}

#[test]
fn a_policy_for_a_method_with_a_typo_is_reported_as_matching_no_call() -> grpc_chaos::Result {
    let trace = save_through(policy_for_method("Sav"))?;
    assert_eq!(trace.attempts("store", SAVE), 1, "not retried");
    assert_eq!(
        never_fired(&trace),
        ["retry policy for /tt.v1.Store/Sav on player→store matched no call; calls through it: /tt.v1.Store/Save"]
    );
    Ok(())
}

#[test]
fn a_service_config_without_a_retry_policy_is_reported() -> grpc_chaos::Result {
    let trace = save_through("{}".to_owned())?;
    assert_eq!(trace.attempts("store", SAVE), 1, "not retried");
    assert_eq!(
        never_fired(&trace),
        ["retry channel player→store has no retryPolicy that a method name selects, so no call through it is retried; calls through it: /tt.v1.Store/Save"]
    );
    Ok(())
}

#[test]
fn a_method_config_without_a_name_is_reported_as_ignored() -> grpc_chaos::Result {
    let nameless = STORE_POLICY.replace(r#""name": [{"service": "tt.v1.Store"}],"#, "");
    assert_ne!(nameless, STORE_POLICY, "the name was taken out");
    let trace = save_through(nameless)?;
    assert_eq!(trace.attempts("store", SAVE), 1, "not retried");
    let said = never_fired(&trace);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains(r#"has no retryPolicy that a method name selects (ignored: methodConfig[0] (no "name"))"#),
        "{said:?}"
    );
    Ok(())
}

#[test]
fn a_policy_that_matched_says_nothing() -> grpc_chaos::Result {
    let trace = save_through(policy_for_method("Save"))?;
    assert_eq!(trace.attempts("store", SAVE), 2, "retried once");
    assert_eq!(never_fired(&trace), Vec::<String>::new());
    trace.assert_retries_conform(&policy(&policy_for_method("Save")))?;
    Ok(())
}

#[test]
fn a_policy_for_a_service_the_target_does_not_serve_is_misconfigured() {
    let config = STORE_POLICY.replace("tt.v1.Store", "tt.v1.Stroe");
    let err = save_through(config).expect_err("misconfigured");
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string().starts_with(
            "retry channel player→store: its service config names every method of tt.v1.Stroe, but `store` does not serve that service; it serves: tt.v1.Store"
        ),
        "{err}"
    );
}

/// Three attempts through `player.retry_layer` over a plain channel to a
/// store whose first two Saves fail UNAVAILABLE, with `rewrite` applied to
/// each attempt's request between the layer and the channel.
fn retried(
    rewrite: fn(http::Request<tonic::body::Body>) -> http::Request<tonic::body::Body>,
) -> grpc_chaos::Trace {
    let mut sim = failing_store(2);
    sim.client("player", move |player| async move {
        let channel = tower::ServiceBuilder::new()
            .layer(player.retry_layer("store", policy(STORE_POLICY)))
            .map_request(rewrite)
            .service(player.channel("store"));
        StoreClient::new(channel)
            .save(SaveRequest::default())
            .await?;
        Ok(())
    });
    sim.run().expect("run")
}

/// gRFC A6 "Exposed Retry Metadata": every retry carries
/// grpc-previous-rpc-attempts. A layer under the retry layer that drops
/// it fails the check, which names the attempt and the handler run.
#[test]
fn a_retry_that_reaches_the_server_without_its_attempt_count_fails_the_check() {
    let config = policy(STORE_POLICY);
    retried(|r| r)
        .assert_retries_conform(&config)
        .expect("conforms");
    let trace = retried(|mut r| {
        r.headers_mut().remove("grpc-previous-rpc-attempts");
        r
    });
    let v = trace
        .assert_retries_conform(&config)
        .expect_err("header dropped");
    assert!(
        v.detail()
            .contains("attempt 2 reached the server (h2) without grpc-previous-rpc-attempts"),
        "{}",
        v.detail()
    );
}
