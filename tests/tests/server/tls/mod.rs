//! TLS between simulated hosts (`grpc_chaos::tls`): calls over TLS with
//! their frames still decoded, certificate faults on simulated time, and
//! what tonic reports for each.
//!
//! A folder of the `server` area, a module per file: `cargo test -p
//! grpc-chaos-tests --test server tls::`.

mod alpn;
mod balanced;
mod certificate_faults;
mod handshake;
mod link_faults;
mod retry_raw;
mod rotation;
mod stall;
mod versions;
