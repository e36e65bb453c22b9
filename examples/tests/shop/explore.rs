//! The shop explored: nobody scripts the fault. The explorer tries
//! crashes, partitions, slow reservations and cancels at instants of its
//! own choosing, checks the team's invariant on every run, and hands back
//! the smallest schedule that breaks it, as lines to paste into a test.
//!
//! The invariant is the shop's own: every unit Inventory takes out of
//! stock belongs to an order Checkout saw placed. What the explorer finds
//! (seed 0, schedule 6 of 100) is that a cancelled order keeps its stock:
//! Checkout cancels a Place while Orders' Reserve is on its way, Inventory
//! commits the Reserve as it arrives, and the cancel Orders passes on
//! (tonic drops its handler, and with it the Reserve call: RST_STREAM
//! CANCEL) comes one hop too late to stop anything. A cancel is not a
//! rollback.

use std::time::Duration;

use grpc_chaos::explore::{Explorer, Space, Target};
use grpc_chaos::trace::{CallEnd, RunEnd};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_examples::methods::{PLACE, RESERVE};
use grpc_chaos_examples::pb::orders_client::OrdersClient;
use grpc_chaos_examples::{Inventory, Orders};

const STOCK_SOLD: &str = "every unit taken was sold";

/// Checkout places five orders of 2 units, each with a 300 ms deadline
/// (*simulated* time), one after the other, and shrugs off failures.
fn shop(seed: u64) -> Sim {
    let mut sim = Sim::builder().seed(seed).duration(Duration::from_secs(5)).build();
    sim.server("inventory", |s| s.add_service(Inventory::with_stock("sku-1", 100).into_server()));
    sim.server("orders", |s| {
        let inventory = s.channel("inventory");
        s.add_service(Orders::new(inventory).into_server())
    });
    sim.client("checkout", |checkout| async move {
        let mut orders = OrdersClient::new(checkout.channel("orders"));
        for n in 0..5 {
            let mut place = tonic::Request::new(super::order(&format!("o-{n}"), 2));
            place.set_timeout(Duration::from_millis(300));
            let _ = orders.place(place).await;
        }
        Ok(())
    });
    sim
}

/// Reservations Inventory answered OK against orders Checkout saw placed.
fn stock_sold(trace: &Trace) -> Result<(), String> {
    let reserved = trace
        .runs_on("inventory")
        .filter(|r| r.path == RESERVE)
        .filter(|r| matches!(&r.end, RunEnd::Finished { code: "OK", .. }))
        .count();
    let placed = trace
        .calls_from("checkout")
        .filter(|c| c.path == PLACE)
        .filter(|c| matches!(&c.end, CallEnd::Status(o) if o.code == "OK"))
        .count();
    if reserved == placed {
        Ok(())
    } else {
        Err(format!("{reserved} reservations committed for {placed} orders placed"))
    }
}

/// What may go wrong between the shop's three hosts, while the orders run.
fn space() -> Space {
    Space::new()
        .crash("inventory")
        .partition("orders", "inventory")
        .handler_delay("inventory", Duration::from_millis(400))
        .cancel("checkout", "orders")
        .window(Duration::ZERO, Duration::from_millis(1500))
}

#[test]
fn a_cancelled_order_keeps_its_stock() -> grpc_chaos::Result {
    let explorer = Explorer::new(shop).space(space()).invariant(STOCK_SOLD, stock_sold);
    let report = explorer.explore()?;
    let broken = report.broken(STOCK_SOLD).expect("the explorer finds the leak");
    let minimal = &broken.shrunk.as_ref().expect("shrinking is on").schedule;
    // One fault is enough, and it is Checkout cancelling a Place.
    assert_eq!(minimal.faults.len(), 1, "{}", report.summary());
    let cancel = &minimal.faults[0].target;
    assert!(
        matches!(cancel, Target::Cancel { caller, .. } if caller == "checkout"),
        "{}",
        report.summary()
    );
    // The minimal schedule, replayed, breaks the invariant again: the lines
    // the summary prints are a regression test.
    assert!(stock_sold(&explorer.run(minimal)?).is_err());
    Ok(())
}
