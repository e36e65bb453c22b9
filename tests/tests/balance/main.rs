//! Replica sets and balanced channels, retries and hedging (gRFC A6), and
//! the retry checks.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test balance`.

mod hedging;
mod hedging_rules;
mod replicas;
mod retries;
mod retry_misuse;
