//! The reference services, the scenario catalog and the `grpc-chaos` CLI.

pub mod catalog;
pub mod services;
pub mod zoo;
