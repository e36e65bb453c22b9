//! The shop's failure stories, as a team would write them in its own
//! crate: its services ([`grpc_chaos_examples`]) and its production server
//! setup on grpc-chaos's simulated network. One test binary, a module per
//! story (grpc-chaos is a dev-dependency only).

mod deadline;
mod explore;
mod methods;
mod middlebox;
mod readme;
mod replicas;
mod server_timeout;

use grpc_chaos_examples::pb::PlaceRequest;

/// An order of `quantity` units of `sku-1`.
fn order(id: &str, quantity: u32) -> PlaceRequest {
    PlaceRequest { order_id: id.into(), sku: "sku-1".into(), quantity }
}
