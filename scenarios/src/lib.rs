//! The reference services, the scenario catalog and the `grpc-chaos` CLI.

pub mod catalog;
pub mod services;

// The README's example compiles as a doctest of this crate, which has both
// the harness and the reference services (its test runs in
// tests/tests/guide/readme_example.rs; the guide's examples are the harness's
// doctests).
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
