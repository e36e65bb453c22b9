//! The invariants on codes and hangs (`assert_codes_as_spec`,
//! `assert_no_masked_unavailable`, `assert_no_hang`), on catalog stories
//! that break them and runs that keep them.

use std::time::Duration;

use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::Rally;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};
use grpc_chaos_tests::{ms, story};

#[test]
fn tonics_timeout_expired_breaks_codes_as_spec_and_a_clean_run_keeps_it() {
    // The deadline stories end in tonic's CANCELLED "Timeout expired".
    let (trace, _) = story("slow-dependency");
    let v = trace.assert_codes_as_spec().expect_err("a finding");
    assert_eq!(v.rule(), "codes");
    assert!(
        v.detail().contains(
            "ended CANCELLED \"Timeout expired\" where the spec requires DEADLINE_EXCEEDED"
        ),
        "{v}"
    );
    let (clean, _) = story("deadline-chain");
    clean
        .assert_codes_as_spec()
        .expect("every code as the spec says");
}

/// A player → gateway → store chain, the store's Saves 200 ms slow, and
/// `fault` on the store; the player makes one Hit at 0 ms.
fn chain(fault: Fault) -> grpc_chaos::Trace {
    let mut sim = Sim::builder().seed(5).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(200)).into_server())
    });
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, ms(5)).into_server())
    });
    sim.fault(fault);
    sim.client("player", |player| async move {
        let mut scoreboard = ScoreboardClient::new(player.channel("gateway"));
        let _ = scoreboard.hit(Rally::default()).await;
        Ok(())
    });
    sim.run().expect("run")
}

#[test]
fn a_gateway_that_passes_on_a_lost_connection_masks_it_from_retries() {
    // The store crashes with the Save in flight: the gateway's call fails
    // UNKNOWN "transport error" (UNAVAILABLE by the spec), and the
    // reference gateway hands that status on with `?`.
    let trace = chain(Fault::crash("store").at(ms(100)));
    let v = trace.assert_no_masked_unavailable().expect_err("masked");
    assert_eq!(v.rule(), "retryable failure masked");
    assert_eq!(
        v.detail(),
        "h1 /tt.v1.Scoreboard/Hit on gateway answered UNKNOWN \"transport error\" after its call r2 \
         to store failed UNKNOWN \"transport error\" (UNAVAILABLE by the spec): its callers will not \
         retry it"
    );
    // A store shut down before the Save: its connection is refused, which
    // is UNAVAILABLE already, and handed on as such.
    let refused = chain(Fault::shutdown("store").at(Duration::ZERO));
    let gateway = refused.runs_on("gateway").next().expect("the Hit ran");
    assert!(
        matches!(
            gateway.end,
            RunEnd::Finished {
                code: "UNAVAILABLE",
                ..
            }
        ),
        "{:?}",
        gateway.end
    );
    refused
        .assert_no_masked_unavailable()
        .expect("UNAVAILABLE passed on");
    let (clean, _) = story("deadline-chain");
    clean
        .assert_no_masked_unavailable()
        .expect("nothing failed");
}

#[test]
fn a_call_still_open_past_its_deadline_is_a_hang() {
    // A partition from the start, and a caller whose deadline the
    // channel does not enforce (tonic sends grpc-timeout and waits; no
    // server ever gets the request to time it out): the run ends with the
    // Save waiting for its dial, 1 s past its 200 ms deadline.
    let mut sim = Sim::builder().seed(4).duration(ms(1_200)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::partition("player", "store").at(Duration::ZERO));
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        let mut req = tonic::Request::new(SaveRequest::default());
        req.set_timeout(ms(200));
        let _ = store.save(req).await;
        Ok(())
    });
    let err = sim.run().expect_err("the run ends with the player waiting");
    let trace = err.trace().expect("a trace").clone();
    let v = trace.assert_no_hang().expect_err("hung");
    assert_eq!(v.rule(), "hang");
    assert!(
        v.detail().starts_with("r1 /tt.v1.Store/Save to store"),
        "{v}"
    );
    assert!(v.detail().contains("past its deadline at 200ms"), "{v}");
    // The same call with a deadline the server enforces ends in time.
    let (clean, _) = story("deadline-chain");
    clean.assert_no_hang().expect("nothing open");
}
