//! Replica sets and balanced channels, health checking (gRFC A17), pod
//! termination, retries and hedging (gRFC A6), and the retry checks.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test balance`.

mod dns;
mod health;
mod hedging;
mod hedging_rules;
mod outlier;
mod pod_termination;
mod replicas;
mod retries;
mod retry_misuse;
