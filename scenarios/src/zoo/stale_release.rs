//! Work released by a healed partition after its caller gave up: the
//! inventory runs each reservation in a task of its own, so that a
//! cancelled caller cannot leave it half done (the usual cure for a
//! handler that is not cancel-safe, [`super::cancel_unsafe`]; tokio's
//! `spawn` docs: a spawned task runs on when its handle is dropped). A
//! partition of the `orders` → `inventory` link holds an order's request
//! back; when the link heals it reaches the inventory late, the caller's
//! 300 ms deadline passes while the reservation runs, the caller's cancel
//! drops the handler but not the task, and the task commits stock for an
//! order the caller already counts as failed (issue #26's orders →
//! inventory: 13 of 30 units taken for orders whose callers gave up;
//! tokio's docs read, not measured).
//!
//! The fix keeps the reservation in the handler, given back when the
//! handler is dropped: the cancel drops it before it commits. The
//! invariant is the user's own: no reservation commits after its caller's
//! call ended (one hop of tolerance: the cancel on its way), read from the
//! inventory's log lines and the trace's calls. The space is generic: the
//! link cut for up to a second, the inventory crashed or slowed.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::explore::Space;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::{Sim, Trace};
use tonic::{Request, Response, Status};

use super::Bug;
use crate::services::pb::inventory_client::InventoryClient;
use crate::services::pb::inventory_server::InventoryServer;
use crate::services::pb::{ReserveReply, ReserveRequest};

/// The zoo entry.
pub const BUG: Bug = Bug {
    name: "stale-release",
    source: "issue #26 (orders → inventory after a healed partition); tokio::spawn docs; gRPC deadlines guide",
    story: "Reservations run in tasks of their own: a request a healed partition releases late is committed after its caller gave up.",
    scenario,
    space,
    invariant: (NO_STALE_COMMIT, no_stale_commit),
};

/// The invariant's name.
pub const NO_STALE_COMMIT: &str = "no commit after its caller gave up";

const STOCK: u32 = 100;
const UNITS: u32 = 2;
const ORDERS: u32 = 5;
const WORK: Duration = Duration::from_millis(50);
const DEADLINE: Duration = Duration::from_millis(300);
/// One hop of the link (`grpc_chaos::defaults::LATENCY`): a commit up to
/// this long after the call ended is the cancel still on its way to the
/// inventory, not stale work (issue #26's tolerance for orphan work).
const HOP: Duration = grpc_chaos::defaults::LATENCY;

/// The inventory: each reservation in a spawned task (the bug), or in
/// the handler, given back when the handler is dropped (`fixed`).
#[derive(Clone)]
struct Ledger {
    stock: Arc<Mutex<u32>>,
    fixed: bool,
}

/// Stock taken for `item` and not committed: given back when dropped so
/// (the fixed inventory's reservation dropped with its handler).
struct Held {
    stock: Arc<Mutex<u32>>,
    item: String,
    units: u32,
    committed: bool,
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.committed {
            *lock(&self.stock) += self.units;
            tracing::info!(units = self.units, "released item={}", self.item);
        }
    }
}

fn lock(stock: &Mutex<u32>) -> std::sync::MutexGuard<'_, u32> {
    stock.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes `units` for `item`, writes the order down, commits.
async fn reserve(stock: Arc<Mutex<u32>>, item: String, units: u32) -> Result<u32, Status> {
    let left = {
        let mut stock = lock(&stock);
        if *stock < units {
            return Err(Status::failed_precondition("out of stock"));
        }
        *stock -= units;
        *stock
    };
    tracing::info!(units, left, "reserved item={item}");
    let mut held = Held {
        stock,
        item,
        units,
        committed: false,
    };
    tokio::time::sleep(WORK).await;
    held.committed = true;
    tracing::info!(units, "committed item={}", held.item);
    Ok(left)
}

#[tonic::async_trait]
impl crate::services::pb::inventory_server::Inventory for Ledger {
    async fn reserve(
        &self,
        request: Request<ReserveRequest>,
    ) -> Result<Response<ReserveReply>, Status> {
        let ReserveRequest { item, units } = request.into_inner();
        let stock = self.stock.clone();
        let left = if self.fixed {
            reserve(stock, item, units).await?
        } else {
            // Runs to its end even when this handler is dropped.
            match tokio::spawn(reserve(stock, item, units)).await {
                Ok(left) => left?,
                Err(e) => return Err(Status::internal(format!("reservation task: {e}"))),
            }
        };
        Ok(Response::new(ReserveReply { left }))
    }
}

/// The scenario: `orders` reserves for five orders in turn, the inventory
/// spawning (the bug) or cancel-safe (`fixed`).
pub fn scenario(seed: u64, fixed: bool) -> Sim {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(Duration::from_secs(4))
        .build();
    sim.server("inventory", move |s| {
        s.add_service(InventoryServer::new(Ledger {
            stock: Arc::new(Mutex::new(STOCK)),
            fixed,
        }))
    });
    sim.client("orders", |c| async move {
        let mut inventory = InventoryClient::new(c.channel("inventory"));
        for order in 0..ORDERS {
            let mut req = Request::new(ReserveRequest {
                item: format!("order-{order}"),
                units: UNITS,
            });
            req.set_timeout(DEADLINE);
            // A failed order is given up; its stock must not be taken.
            let _ = inventory.reserve(req).await;
        }
        Ok(())
    });
    sim
}

/// What may break: the link cut for up to a second, the inventory
/// crashed or slowed, while the orders run.
pub fn space() -> Space {
    Space::new()
        .partition("orders", "inventory")
        .crash("inventory")
        .handler_delay("inventory", Duration::from_millis(400))
        .outage(Duration::from_secs(1))
        .window(Duration::ZERO, Duration::from_millis(600))
}

/// Every reservation committed while its caller still waited: order `k`
/// is `orders`' call `k` (one at a time, no retries); its commit (the
/// inventory's `committed item=order-k` line) must come before that call
/// ended, or within one hop of it (the cancel still on its way).
///
/// # Errors
/// The orders committed after their callers gave up, with how late.
pub fn no_stale_commit(trace: &Trace) -> Result<(), String> {
    let calls: Vec<_> = trace.calls_from("orders").collect();
    let mut stale = Vec::new();
    for e in trace.events_on("inventory") {
        let EventKind::Log(log) = &e.kind else {
            continue;
        };
        if !log.message.starts_with("committed") {
            continue;
        }
        let Some(order) = log
            .message
            .split_whitespace()
            .find_map(|w| w.strip_prefix("item=order-"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let ended = calls.get(order).and_then(|c| c.ended_at);
        if let Some(ended) = ended.filter(|&end| e.at() > end + HOP) {
            stale.push(format!(
                "order-{order} {:?} after its call ended",
                e.at() - ended
            ));
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} committed after the caller gave up: {}",
            stale.len(),
            stale.join(", ")
        ))
    }
}
