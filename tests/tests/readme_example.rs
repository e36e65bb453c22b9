//! The README's example, as a user would paste it into `tests/chaos.rs`;
//! the guide's first page (`harness/src/guide/own_services.md`) shows it
//! too. `the_readme_shows_this_file` keeps both and this file the same.

use grpc_chaos::{spec_code, Fault, Sim};
use grpc_chaos_scenarios::services::pb::{scoreboard_client::ScoreboardClient, Rally};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use std::time::Duration;

#[test]
fn store_slowness_cancels_the_whole_chain() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::from_millis(120)).into_server(),
        )
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .delay(Duration::from_secs(2)),
    );
    sim.client("player", |player| async move {
        let mut req = tonic::Request::new(Rally::default());
        req.set_timeout(Duration::from_millis(500));
        let err = ScoreboardClient::new(player.channel("gateway"))
            .hit(req)
            .await
            .unwrap_err();
        assert_eq!(spec_code(&err), tonic::Code::DeadlineExceeded);
        Ok(())
    });
    let trace = sim.run()?;
    trace.assert_deadline_propagated(["player", "gateway", "store"])?;
    trace.assert_no_orphan_work()?;
    insta::assert_snapshot!(trace.render());
    Ok(())
}

#[test]
fn the_readme_shows_this_file() {
    let example = grpc_chaos_tests::readme_example(include_str!("readme_example.rs"));
    assert!(
        include_str!("../../README.md").contains(example),
        "README.md's example differs from tests/tests/readme_example.rs"
    );
    assert!(
        include_str!("../../harness/src/guide/own_services.md").contains(example),
        "harness/src/guide/own_services.md's example differs from tests/tests/readme_example.rs"
    );
}
