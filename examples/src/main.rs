//! The shop as deployed: Inventory on 127.0.0.1:50061 and Orders on
//! 127.0.0.1:50062, each on tonic's builder with [`production`]'s options,
//! the same setup the tests run in the simulation.
//!
//! `cargo run -p grpc-chaos-examples` starts both (Ctrl-C stops them).

use grpc_chaos_examples::{production, Inventory, Orders};
use tonic::transport::{Channel, Server};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let inventory_addr = "127.0.0.1:50061".parse()?;
    let orders_addr = "127.0.0.1:50062".parse()?;
    let inventory = production(Server::builder())
        .add_service(Inventory::with_stock("sku-1", 100).into_server())
        .serve(inventory_addr);
    let channel = Channel::from_static("http://127.0.0.1:50061").connect_lazy();
    let orders = production(Server::builder())
        .add_service(Orders::new(channel).into_server())
        .serve(orders_addr);
    println!("inventory on {inventory_addr}, orders on {orders_addr}");
    tokio::try_join!(inventory, orders)?;
    Ok(())
}
