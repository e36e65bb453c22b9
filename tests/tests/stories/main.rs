//! The catalog's stories (grpc-chaos-scenarios), each run against the
//! reference services: what it must show, pinned with numbers, and a
//! snapshot of its trace.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test stories`.

mod catalog;
mod catalog_middleboxes;
mod catalog_tls;
mod wire_stories;
