//! A handler that is not cancel-safe: `Reserve` takes stock (side effect),
//! writes the order down (await), then replies ([`Inventory`]). When the
//! caller cancels at the await, hyper drops the handler and the stock it
//! took never comes back (quickwit #4675; grpc-rust #2288 and #1491 on
//! what a dropped handler means).
//!
//! The caller, `orders`, reserves 2 units five times in a row, each with a
//! 300 ms deadline (*simulated* time), and shrugs off failures. The stock
//! accounting (every unit reserved is committed or released) is the
//! user's own invariant, read from the inventory's log lines in the
//! trace. The space is generic: cancels of any `orders` → `inventory`
//! call, crashes of the inventory, partitions of that link, slow
//! inventory handlers.

use super::Bug;

/// The zoo entry.
pub const BUG: Bug = Bug {
    name: "cancel-unsafe-reserve",
    source: "quickwit #4675; tokio::select! \"Cancellation safety\"; grpc-rust #2288, #1491",
    story: "A handler takes stock, awaits, then replies: a caller that cancels at the await leaks the stock.",
    scenario,
    space,
    invariant: (STOCK_ACCOUNTING, stock_accounting),
};

include!("../../../harness/reference/cancel_unsafe.rs");
