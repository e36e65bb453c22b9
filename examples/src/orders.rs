//! The orders service: places an order by reserving its items with
//! Inventory, passing the caller's deadline on.

use tonic::codegen::{Body, Bytes, StdError};
use tonic::{Request, Response, Status};

use crate::pb::inventory_client::InventoryClient;
use crate::pb::orders_server::{self, OrdersServer};
use crate::pb::{PlaceReply, PlaceRequest, ReserveRequest};

/// What tonic's generated clients ask of a transport, plus what its server
/// asks of a service holding one (`Send + Sync + 'static`): met by
/// `tonic::transport::Channel` in production and by the harness's
/// recorded channel in tests (`grpc_chaos::GrpcChannel` is the same bound).
pub trait Transport:
    tonic::client::GrpcService<
        tonic::body::Body,
        Error: Into<StdError>,
        ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
        Future: Send,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<T> Transport for T where
    T: tonic::client::GrpcService<
            tonic::body::Body,
            Error: Into<StdError>,
            ResponseBody: Body<Data = Bytes, Error: Into<StdError> + Send> + Send + 'static,
            Future: Send,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// Places orders through an Inventory reached over `C`.
#[derive(Clone, Debug)]
pub struct Orders<C> {
    inventory: InventoryClient<C>,
}

impl<C: Transport> Orders<C> {
    /// Orders backed by the Inventory behind `channel`.
    pub fn new(channel: C) -> Self {
        Self { inventory: InventoryClient::new(channel) }
    }

    /// The tonic service, ready for `add_service`.
    pub fn into_server(self) -> OrdersServer<Self> {
        OrdersServer::new(self)
    }
}

#[tonic::async_trait]
impl<C: Transport> orders_server::Orders for Orders<C> {
    async fn place(&self, request: Request<PlaceRequest>) -> Result<Response<PlaceReply>, Status> {
        let received = tokio::time::Instant::now();
        let left_of_deadline = crate::remaining(&request, received);
        let PlaceRequest { order_id, sku, quantity } = request.into_inner();
        let mut reserve = Request::new(ReserveRequest { sku, quantity });
        if let Some(left) = left_of_deadline {
            reserve.set_timeout(left);
        }
        let reply = self.inventory.clone().reserve(reserve).await?.into_inner();
        Ok(Response::new(PlaceReply { order_id, left: reply.left }))
    }
}
