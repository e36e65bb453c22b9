//! Faults and misuse: handler faults and panics, partitions and paused
//! hosts, runs that stop making progress, and the typed errors a
//! misconfigured scenario gets.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test faults`.

mod bad_input;
mod bounds;
mod codes;
mod handler_faults;
mod handler_panics;
mod limits;
mod method_path;
mod no_progress;
mod partitions;
mod reconnect_storm;
