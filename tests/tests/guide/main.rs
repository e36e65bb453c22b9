//! The README's and the guide's examples (harness/src/guide/), each a file
//! as a user would paste it; a test per file keeps the page and the file
//! the same.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test guide`.

mod readme_example;
mod readme_middleboxes;
mod readme_rules;
mod readme_serve_fn;
mod readme_server;
