// The reference services: a Scoreboard gateway in front of a Store, and an
// Inventory, from `proto/tt.proto` (package `tt.v1`). This folder is part of
// the grpc-chaos package but not of its library: the scenarios crate mounts
// it as `grpc_chaos_scenarios::services` (scenarios/src/services/mod.rs), and
// the guide's doctests mount it under the same path in a hidden first line,
// so they run from the published package alone. It is `include!`d, so it has
// no inner attributes and names its own files relative to itself.

/// Code generated from `proto/tt.proto` (package `tt.v1`) by
/// tonic-prost-build, checked in so the package needs no build script; the
/// scenarios crate's build regenerates it and its test
/// `the_checked_in_code_is_what_the_proto_generates` compares the two.
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
pub mod pb {
    include!("tt_v1.rs");
}

/// A client's own connection backoff, as grpc's `doc/connection-backoff.md`
/// (read) describes it and tonic's channel does not do: after a failed
/// connection attempt the next one waits INITIAL_BACKOFF = 1 s, ×1.6 per
/// failure in a row, up to MAX_BACKOFF = 120 s, each jittered by ±20%; a
/// call made while waiting fails at once without dialling (grpc's
/// TRANSIENT_FAILURE), and a call that gets through resets it. This is the
/// wrapper a team puts around tonic's channel to stop a reconnect storm.
mod backoff {
    include!("backoff.rs");
}

/// `tt.v1.Scoreboard`: the gateway players call; it saves into the store.
mod gateway {
    include!("gateway.rs");
}

/// `tt.v1.Inventory`: keeps stock, with a `Reserve` that is not cancel-safe
/// unless built with [`Inventory::cancel_safe`].
///
/// `Reserve` takes the units out of stock (the side effect), writes the
/// order down (an await of `work`, *simulated* time), then replies. A
/// handler future dropped at that await (its caller cancelled, or its
/// deadline passed: hyper drops the handler on RST_STREAM) never gives the
/// units back: they leak. This is quickwit #4675's shape, and what the
/// tokio docs call a future that is not cancellation safe
/// (`tokio::select!`, "Cancellation safety"; read, not measured).
///
/// Every change to the stock is a log line the trace records on the
/// `inventory` host (`reserved units=… left=…`, `committed units=…`,
/// `released units=…`), so a test's stock accounting can read it.
mod inventory {
    include!("inventory.rs");
}

/// `tt.v1.Store`: keeps each match's points.
mod store {
    include!("store.rs");
}

pub use backoff::ConnectBackoff;
pub use gateway::{DeadlineMode, Gateway};
pub use inventory::Inventory;
pub use store::Store;

/// `/tt.v1.Scoreboard/Hit`
pub const HIT: &str = "/tt.v1.Scoreboard/Hit";
/// `/tt.v1.Scoreboard/Watch`
pub const WATCH: &str = "/tt.v1.Scoreboard/Watch";
/// `/tt.v1.Scoreboard/Upload`
pub const UPLOAD: &str = "/tt.v1.Scoreboard/Upload";
/// `/tt.v1.Inventory/Reserve`
pub const RESERVE: &str = "/tt.v1.Inventory/Reserve";
/// `/tt.v1.Store/Save`
pub const SAVE: &str = "/tt.v1.Store/Save";
/// `/tt.v1.Store/Load`
pub const LOAD: &str = "/tt.v1.Store/Load";
