//! TLS between simulated hosts (`grpc_chaos::tls`): calls over TLS with
//! their frames still decoded, certificate faults on simulated time, and
//! what tonic reports for each.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test tls`.

mod alpn;
mod certificate_faults;
mod handshake;
mod rotation;
mod stall;
