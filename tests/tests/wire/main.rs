//! The wire: frames as sent and read, frame faults and rules, RFC 9113 and
//! grpc's protocol rules, and peers that break them on purpose.
//!
//! One test binary, a module per file: `cargo test -p grpc-chaos-tests --test wire`.

mod frame_faults;
mod frame_rules;
mod hardening;
mod headers_as_sent;
mod hostile_peers;
mod invalid_injections;
mod negative_interop;
mod preface_settings;
mod spec_rules;
