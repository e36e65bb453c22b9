//! Determinism and replay: the determinism check, the explorer and the bug zoo, seed sweeps and their
//! replay hints, a stalled wall clock, and slow polls reported outside the
//! trace.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test determinism`.

mod determinism_check;
mod explore;
mod explore_budget;
mod explore_shrink;
mod replay_hint;
mod slow_polls;
mod sweep_replay;
mod sweeps;
mod wall_clock;
mod zoo;
mod zoo_deadline;
mod zoo_retry;
mod zoo_stale;
mod zoo_upload;
