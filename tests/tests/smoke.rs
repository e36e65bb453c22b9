use std::time::Duration;

use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::Rally;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};

#[test]
fn smoke() -> grpc_chaos::Result {
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
    sim.client("player", |c| async move {
        let mut client = ScoreboardClient::new(c.channel("gateway"));
        let mut req = tonic::Request::new(Rally {
            match_id: "m1".into(),
            player: "a".into(),
            shots: 3,
        });
        req.set_timeout(Duration::from_millis(500));
        let err = client.hit(req).await.unwrap_err();
        println!("client got {err:?}");
        tokio::time::sleep(Duration::from_secs(3)).await;
        Ok(())
    });
    let trace = sim.run()?;
    println!("{}", trace.render());
    Ok(())
}
