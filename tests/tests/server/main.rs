//! The server side: a server configured as in production, a serve fn,
//! graceful shutdown, connection age, connection policies a test
//! writes, and TLS between hosts (`tls/`).
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test server`.

mod connection_age;
mod connection_policies;
mod serve_fn;
mod server_config;
mod shutdown;
mod tls;
