//! `client::method_path`: a method's path read from the generated client,
//! the same string the bundled constants spell by hand, and a fault aimed
//! with it fires.

use std::time::Duration;

use grpc_chaos::client::method_path;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{Rally, SaveRequest, WatchRequest};
use grpc_chaos_scenarios::services::{Store, HIT, SAVE, UPLOAD, WATCH};

#[test]
fn every_kind_of_method_gives_the_path_its_call_sends() -> grpc_chaos::Result {
    let hit = method_path(|c| async move { ScoreboardClient::new(c).hit(Rally::default()).await })?;
    let watch = method_path(|c| async move {
        ScoreboardClient::new(c)
            .watch(WatchRequest::default())
            .await
    })?;
    let upload = method_path(|c| async move {
        ScoreboardClient::new(c)
            .upload(futures_util::stream::empty::<Rally>())
            .await
    })?;
    let rally = method_path(|c| async move {
        ScoreboardClient::new(c)
            .rally(futures_util::stream::empty::<Rally>())
            .await
    })?;
    assert_eq!(
        [hit.as_str(), &watch, &upload, &rally],
        [HIT, WATCH, UPLOAD, "/tt.v1.Scoreboard/Rally"]
    );
    Ok(())
}

#[test]
fn a_fault_aimed_with_it_fires() -> grpc_chaos::Result {
    let save =
        method_path(|c| async move { StoreClient::new(c).save(SaveRequest::default()).await })?;
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(save)
            .delay(Duration::from_millis(40)),
    );
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .save(SaveRequest::default())
            .await?;
        Ok(())
    });
    let trace = sim.run().expect("run");
    let fired: Vec<_> = trace
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::FaultFired(_)))
        .collect();
    assert_eq!(fired.len(), 1, "{}", trace.render());
    assert_eq!(trace.attempts("store", SAVE), 1);
    Ok(())
}

#[test]
fn a_closure_that_calls_nothing_is_told_what_to_change() {
    let err = method_path(|_probe| async {}).unwrap_err();
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("made no call through the probe on its first poll"),
        "{err}"
    );
}
