//! Keepalive enforcement (the servers' rules and C-core's) and the
//! middleboxes between a client and a server: their timeouts, limits,
//! chains and check.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test keepalive`.

mod calibration;
mod calibration_envoy;
mod calibration_nginx;
mod keepalive;
mod keepalive_c_core;
mod middlebox_chains;
mod middlebox_check;
mod middlebox_limits;
mod middlebox_nlb;
mod middlebox_timeouts;
mod middleboxes;
