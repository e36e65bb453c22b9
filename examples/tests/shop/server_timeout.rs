//! The production setup's own 2 s server timeout, with no deadline from
//! the caller: it is Orders' timeout, not Inventory's, that ends the
//! chain, and the reservation it abandons is cancelled on the wire.

use std::time::Duration;

use grpc_chaos::{Fault, Sim};
use grpc_chaos_examples::pb::orders_client::OrdersClient;
use grpc_chaos_examples::{methods::RESERVE, production, Inventory, Orders};

#[test]
fn the_server_timeout_ends_a_call_without_a_deadline() -> grpc_chaos::Result {
    let inventory = Inventory::with_stock("sku-1", 10);
    let mut sim = Sim::builder().seed(7).build();
    let stock = inventory.clone();
    sim.server("inventory", move |s| {
        s.configure(production).add_service(stock.clone().into_server())
    });
    sim.server("orders", |s| {
        let inventory = s.channel("inventory");
        s.configure(production).add_service(Orders::new(inventory).into_server())
    });
    // A slow database inside the server's layers: the timeout layer sees it.
    sim.fault(
        Fault::handler("inventory").method(RESERVE).inside_layers().delay(Duration::from_secs(3)),
    );
    sim.client("checkout", |checkout| async move {
        let mut orders = OrdersClient::new(checkout.channel("orders"));
        // No deadline set: the caller would wait forever.
        let err = orders.place(super::order("o-1", 1)).await.unwrap_err();
        // tonic's TimeoutLayer answers CANCELLED "Timeout expired".
        assert_eq!(err.code(), tonic::Code::Cancelled);
        assert_eq!(err.message(), "Timeout expired");
        Ok(())
    });
    let trace = sim.run()?;
    trace.assert_no_orphan_work()?;
    assert_eq!(inventory.left("sku-1"), 10);
    insta::assert_snapshot!(trace.render());
    Ok(())
}
