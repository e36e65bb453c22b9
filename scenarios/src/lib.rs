//! The reference services, the scenario catalog and the `grpc-chaos` CLI.

pub mod catalog;
pub mod services;

// The README's examples compile and run as doctests of this crate, which
// has both the harness and the reference services.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
