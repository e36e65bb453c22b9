//! The shop's method paths, spelt by hand in `methods`, are the ones its
//! generated clients send: a misspelt constant fails here, not as a fault
//! that never fires.

use grpc_chaos::client::method_path;
use grpc_chaos_examples::methods::{PLACE, RESERVE, WATCH_STOCK};
use grpc_chaos_examples::pb::inventory_client::InventoryClient;
use grpc_chaos_examples::pb::orders_client::OrdersClient;
use grpc_chaos_examples::pb::{PlaceRequest, ReserveRequest, WatchStockRequest};

#[test]
fn the_constants_are_the_generated_paths() -> grpc_chaos::Result {
    let reserve = method_path(|c| async move {
        InventoryClient::new(c).reserve(ReserveRequest::default()).await
    })?;
    let watch = method_path(|c| async move {
        InventoryClient::new(c).watch_stock(WatchStockRequest::default()).await
    })?;
    let place =
        method_path(|c| async move { OrdersClient::new(c).place(PlaceRequest::default()).await })?;
    assert_eq!([RESERVE, WATCH_STOCK, PLACE], [reserve.as_str(), &watch, &place]);
    Ok(())
}
