// The scenario of the zoo's cancel-unsafe bug
// (scenarios/src/zoo/cancel_unsafe.rs, which mounts this file): kept in the
// grpc-chaos package beside the reference services, so the exploration
// guide's doctests can mount it too. `include!`d: no inner attributes, and
// the services are reached relative to the zoo (`super::super::services`),
// which is the crate root in the scenarios crate and the doctests' mount.

use std::time::Duration;

use grpc_chaos::explore::Space;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::{Sim, Trace};
use tonic::Request;

use super::super::services::pb::inventory_client::InventoryClient;
use super::super::services::pb::ReserveRequest;
use super::super::services::Inventory;

/// The invariant's name.
pub const STOCK_ACCOUNTING: &str = "stock accounting";

const STOCK: u32 = 100;
const UNITS: u32 = 2;
const CALLS: usize = 5;
/// How long a reservation takes to write down.
const WORK: Duration = Duration::from_millis(50);
const DEADLINE: Duration = Duration::from_millis(300);

/// The scenario: `orders` reserves from `inventory` five times, buggy or
/// `fixed`.
pub fn scenario(seed: u64, fixed: bool) -> Sim {
    scenario_with_calls(seed, fixed, CALLS)
}

/// [`scenario`] with `calls` reservations in place of five, one after
/// the other (for `Explorer::with_calls`, whose shrinking may lower it).
pub fn scenario_with_calls(seed: u64, fixed: bool, calls: usize) -> Sim {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(Duration::from_secs(3))
        .build();
    sim.server("inventory", move |s| {
        let inventory = Inventory::new(STOCK, WORK);
        let inventory = if fixed {
            inventory.cancel_safe()
        } else {
            inventory
        };
        s.add_service(inventory.into_server())
    });
    sim.client("orders", move |c| async move {
        let mut inventory = InventoryClient::new(c.channel("inventory"));
        for _ in 0..calls {
            let mut req = Request::new(ReserveRequest {
                item: "apple".into(),
                units: UNITS,
            });
            req.set_timeout(DEADLINE);
            // A failed reservation is the caller's to shrug off; the
            // stock must still add up.
            let _ = inventory.reserve(req).await;
        }
        Ok(())
    });
    sim
}

/// What may break: any call cancelled, the inventory crashed, the link
/// cut, the handlers slowed, while the calls run.
pub fn space() -> Space {
    Space::new()
        .cancel("orders", "inventory")
        .crash("inventory")
        .partition("orders", "inventory")
        .handler_delay("inventory", Duration::from_millis(400))
        .window(Duration::ZERO, Duration::from_millis(300))
}

/// Every unit reserved was committed or released again, by the
/// inventory's own log lines.
///
/// # Errors
/// How many units are held by reservations that neither committed nor
/// were released.
pub fn stock_accounting(trace: &Trace) -> Result<(), String> {
    let (mut reserved, mut committed, mut released) = (0i64, 0i64, 0i64);
    for e in trace.events_on("inventory") {
        let EventKind::Log(log) = &e.kind else {
            continue;
        };
        let mut words = log.message.split_whitespace();
        let verb = words.next().unwrap_or_default();
        let units: i64 = words
            .find_map(|w| w.strip_prefix("units="))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        match verb {
            "reserved" => reserved += units,
            "committed" => committed += units,
            "released" => released += units,
            _ => {}
        }
    }
    let held = reserved - committed - released;
    if held == 0 {
        Ok(())
    } else {
        Err(format!(
            "{held} units leaked: reserved {reserved}, committed {committed}, released {released}"
        ))
    }
}
