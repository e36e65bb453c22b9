use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::pb::inventory_server::InventoryServer;
use super::pb::{ReserveReply, ReserveRequest};

/// The stock keeper.
#[derive(Debug, Clone)]
pub struct Inventory {
    stock: Arc<Mutex<u32>>,
    work: Duration,
    cancel_safe: bool,
}

impl Inventory {
    /// `stock` units, each `Reserve` taking `work` (*simulated* time)
    /// between taking the units and replying; not cancel-safe.
    pub fn new(stock: u32, work: Duration) -> Self {
        Self {
            stock: Arc::new(Mutex::new(stock)),
            work,
            cancel_safe: false,
        }
    }

    /// The fixed service: a reservation whose handler is dropped before
    /// it replies puts its units back (a guard's `Drop`).
    pub fn cancel_safe(mut self) -> Self {
        self.cancel_safe = true;
        self
    }

    /// The generated tonic server for this inventory.
    pub fn into_server(self) -> InventoryServer<Self> {
        InventoryServer::new(self)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, u32> {
        self.stock.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Units taken out of stock and not yet committed: puts them back when
/// dropped uncommitted (the fixed service only).
struct Reservation {
    stock: Arc<Mutex<u32>>,
    units: u32,
    committed: bool,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.committed {
            *self.stock.lock().unwrap_or_else(|p| p.into_inner()) += self.units;
            tracing::info!(units = self.units, "released");
        }
    }
}

#[tonic::async_trait]
impl super::pb::inventory_server::Inventory for Inventory {
    async fn reserve(
        &self,
        request: Request<ReserveRequest>,
    ) -> Result<Response<ReserveReply>, Status> {
        let units = request.into_inner().units;
        let left = {
            let mut stock = self.lock();
            if *stock < units {
                return Err(Status::failed_precondition("out of stock"));
            }
            *stock -= units;
            *stock
        };
        tracing::info!(units, left, "reserved");
        let mut guard = self.cancel_safe.then(|| Reservation {
            stock: self.stock.clone(),
            units,
            committed: false,
        });
        // Writing the order down: the await a cancellation lands in.
        tokio::time::sleep(self.work).await;
        if let Some(g) = guard.as_mut() {
            g.committed = true;
        }
        tracing::info!(units, "committed");
        Ok(Response::new(ReserveReply { left }))
    }
}
