use grpc_chaos::{spec_code, Fault, Sim};
use grpc_chaos_examples::pb::{orders_client::OrdersClient, PlaceRequest};
use grpc_chaos_examples::{methods::RESERVE, production, Inventory, Orders};
use std::time::Duration;

#[test]
fn a_slow_inventory_cancels_the_whole_order() -> grpc_chaos::Result {
    let inventory = Inventory::with_stock("sku-1", 10);
    let stock = inventory.clone();
    let mut sim = Sim::builder().seed(7).build();
    sim.server("inventory", move |s| {
        s.configure(production).add_service(stock.clone().into_server())
    });
    sim.server("orders", |s| {
        let inventory = s.channel("inventory");
        s.configure(production).add_service(Orders::new(inventory).into_server())
    });
    sim.fault(Fault::handler("inventory").method(RESERVE).delay(Duration::from_secs(1)));
    sim.client("checkout", |checkout| async move {
        let order = PlaceRequest { sku: "sku-1".into(), quantity: 1, ..Default::default() };
        let mut req = tonic::Request::new(order);
        req.set_timeout(Duration::from_millis(300));
        let err = OrdersClient::new(checkout.channel("orders")).place(req).await.unwrap_err();
        assert_eq!(spec_code(&err), tonic::Code::DeadlineExceeded);
        Ok(())
    });
    let trace = sim.run()?;
    trace.assert_deadline_propagated(["checkout", "orders", "inventory"])?;
    trace.assert_no_orphan_work()?;
    assert_eq!(inventory.left("sku-1"), 10, "a cancelled order took stock");
    insta::assert_snapshot!(trace.render());
    Ok(())
}
