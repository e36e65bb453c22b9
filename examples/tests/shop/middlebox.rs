//! An AWS ALB in front of Inventory: a stock watch whose levels come 90 s
//! apart is cut at the ALB's 60 s idle timeout.

use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::{spec_code, Sim};
use grpc_chaos_examples::pb::inventory_client::InventoryClient;
use grpc_chaos_examples::pb::WatchStockRequest;
use grpc_chaos_examples::{production, Inventory};

#[test]
fn an_alb_cuts_a_quiet_stock_watch() -> grpc_chaos::Result {
    let mut sim = Sim::builder()
        .seed(7)
        .duration(Duration::from_secs(120))
        .tick(Duration::from_millis(10))
        .build();
    sim.server("inventory", |s| {
        s.configure(production).add_service(Inventory::with_stock("sku-1", 10).into_server())
    });
    sim.middlebox("inventory", Middlebox::aws_alb());
    sim.client("dashboard", |dashboard| async move {
        let watch = WatchStockRequest { sku: "sku-1".into(), interval_ms: 90_000 };
        let mut levels = InventoryClient::new(dashboard.channel("inventory"))
            .watch_stock(watch)
            .await?
            .into_inner();
        assert_eq!(levels.message().await?.map(|l| l.left), Some(10));
        let err = levels.message().await.unwrap_err();
        // tonic says UNKNOWN ("h2 protocol error"); the spec, UNAVAILABLE.
        assert_eq!(err.code(), tonic::Code::Unknown);
        assert_eq!(spec_code(&err), tonic::Code::Unavailable);
        Ok(())
    });
    let trace = sim.run()?;
    insta::assert_snapshot!(trace.render());
    Ok(())
}
