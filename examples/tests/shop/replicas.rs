//! Three inventory replicas behind Orders' balanced channel, sharing one
//! stock (their database); one crashes mid-run.

use std::time::Duration;

use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_examples::pb::orders_client::OrdersClient;
use grpc_chaos_examples::{production, Inventory, Orders};

#[test]
fn orders_survive_a_crashed_replica() -> grpc_chaos::Result {
    let inventory = Inventory::with_stock("sku-1", 100);
    let mut sim = Sim::builder().seed(7).build();
    let stock = inventory.clone();
    sim.servers("inventory", 3, move |s| {
        s.configure(production).add_service(stock.clone().into_server())
    });
    sim.server("orders", |s| {
        let inventory = s.balanced_channel("inventory");
        s.configure(production).add_service(Orders::new(inventory).into_server())
    });
    sim.fault(Fault::crash("inventory-1").at(Duration::from_millis(500)));
    sim.client("checkout", |checkout| async move {
        let mut orders = OrdersClient::new(checkout.channel("orders"));
        let mut placed = 0;
        for n in 0..20 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut req = tonic::Request::new(super::order(&format!("o-{n}"), 1));
            req.set_timeout(Duration::from_millis(500));
            if orders.place(req).await.is_ok() {
                placed += 1;
            }
        }
        // The crash is between calls: the balancer takes inventory-1 out
        // of rotation when its connection closes, and no order fails.
        assert_eq!(placed, 20);
        Ok(())
    });
    let trace = sim.run()?;
    let crash = Duration::from_millis(500);
    let reserves = trace.calls().iter().filter(|c| c.target == "inventory");
    let after_crash: Vec<_> = reserves.filter(|c| c.started > crash).collect();
    assert!(!after_crash.is_empty());
    assert!(
        after_crash.iter().all(|c| c.replica.as_deref() != Some("inventory-1")),
        "a reservation went to the crashed replica"
    );
    // Every placed order took one unit, and nothing else did.
    assert_eq!(inventory.left("sku-1"), 80);
    // Which replica took each reservation: inventory-1 drops out at 500 ms.
    let picks: Vec<String> = trace
        .calls()
        .iter()
        .filter(|c| c.target == "inventory")
        .map(|c| format!("{:>7} {}", fmt_duration(c.started), c.replica.as_deref().unwrap_or("-")))
        .collect();
    insta::assert_snapshot!(format!("{}\n{}", trace.render_summary(None), picks.join("\n")));
    Ok(())
}
