//! The trace: its queries, renders, HTML page, exports, Debug output, the
//! capture of user `tracing` events, and the artifacts a failing test
//! leaves.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test trace`.

mod artifacts;
mod debug_output;
mod exports;
mod html;
mod stale_work;
mod trace_queries;
mod tracing_capture;
