//! The reference services of seed 000: a Scoreboard gateway in front of a
//! Store, generated from `proto/tt.proto`.

mod backoff;
mod gateway;
mod inventory;
mod store;

pub use backoff::ConnectBackoff;
pub use gateway::{DeadlineMode, Gateway};
pub use inventory::Inventory;
pub use store::Store;

/// Code generated from `proto/tt.proto` (package `tt.v1`).
#[allow(missing_docs, unreachable_pub, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("tt.v1");
}

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
