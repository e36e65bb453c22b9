//! The inventory service: stock per SKU, taken by `Reserve`.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::pb::inventory_server::{self, InventoryServer};
use crate::pb::{ReserveReply, ReserveRequest, StockLevel, WatchStockRequest};

/// Stock per SKU, shared by every call (and readable by a test after the
/// run, through a clone: the clones share one stock).
#[derive(Clone, Debug, Default)]
pub struct Inventory {
    stock: Arc<Mutex<HashMap<String, u32>>>,
}

impl Inventory {
    /// An inventory holding `units` of `sku`.
    pub fn with_stock(sku: &str, units: u32) -> Self {
        let inventory = Self::default();
        inventory.stock().insert(sku.to_owned(), units);
        inventory
    }

    /// What is left of `sku` (0 for a SKU never stocked).
    pub fn left(&self, sku: &str) -> u32 {
        self.stock().get(sku).copied().unwrap_or(0)
    }

    /// The tonic service, ready for `add_service`.
    pub fn into_server(self) -> InventoryServer<Self> {
        InventoryServer::new(self)
    }

    fn stock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        // A panic while holding the lock leaves the counts as they were.
        self.stock.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type StockStream = Pin<Box<dyn Stream<Item = Result<StockLevel, Status>> + Send>>;

#[tonic::async_trait]
impl inventory_server::Inventory for Inventory {
    async fn reserve(
        &self,
        request: Request<ReserveRequest>,
    ) -> Result<Response<ReserveReply>, Status> {
        let ReserveRequest { sku, quantity } = request.into_inner();
        let mut stock = self.stock();
        let units = stock.entry(sku).or_default();
        if *units < quantity {
            return Err(Status::failed_precondition(format!(
                "out of stock: {units} left, {quantity} asked"
            )));
        }
        *units -= quantity;
        Ok(Response::new(ReserveReply { left: *units }))
    }

    type WatchStockStream = StockStream;

    async fn watch_stock(
        &self,
        request: Request<WatchStockRequest>,
    ) -> Result<Response<Self::WatchStockStream>, Status> {
        let WatchStockRequest { sku, interval_ms } = request.into_inner();
        let interval = Duration::from_millis(interval_ms.max(1).into());
        let inventory = self.clone();
        // One level now, then one every `interval`, until the caller goes
        // away (tonic drops the stream then).
        let levels = tokio_stream::StreamExt::then(tokio_stream::iter(0u64..), move |n| {
            let (inventory, sku) = (inventory.clone(), sku.clone());
            async move {
                if n > 0 {
                    tokio::time::sleep(interval).await;
                }
                let left = inventory.left(&sku);
                Ok(StockLevel { sku, left })
            }
        });
        Ok(Response::new(Box::pin(levels)))
    }
}
