//! The server side: a server configured as in production, a serve fn,
//! graceful shutdown, connection age, and connection policies a test
//! writes.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test server`.

mod connection_age;
mod connection_policies;
mod serve_fn;
mod server_config;
mod shutdown;
