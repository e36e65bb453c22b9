//! TLS between simulated hosts: rustls on both ends, *below* the wire tap,
//! so the trace still shows every HTTP/2 frame and frame rules and
//! connection policies still act on them; certificates checked against
//! *simulated* time; the handshake recorded as typed events.
//!
//! ```text
//!   tonic / hyper / h2  ⇄  wire tap (frames)  ⇄  rustls  ⇄  turmoil TCP
//! ```
//!
//! A server host serves TLS with [`ServerHost::tls`](crate::ServerHost::tls)
//! and a [`ServerTls`] (its [`Identity`], optionally a client CA for
//! mTLS); a client dials it with [`Host::channel_tls`](crate::Host::channel_tls)
//! and a [`ClientTls`] (the CA it trusts, the name it expects, optionally
//! its own identity). Certificates come from a [`Ca`] made from the run's
//! seed (byte-identical for a seed) or from PEM ([`Identity::from_pem`],
//! [`Certificate::from_pem`]).
//!
//! ```
//! use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut sim = grpc_chaos::Sim::builder().seed(7).build();
//! let ca = Ca::new(sim.seed());
//! let store = ServerTls::new(ca.leaf("store").identity()?);
//! sim.server("store", move |s| s.tls(store.clone()) /* .add_service(..) */);
//! let trust = ClientTls::new().ca_certificate(ca.certificate());
//! sim.client("player", move |c| async move {
//!     let _channel = c.channel_tls("store", trust);
//!     Ok(())
//! });
//! # Ok(()) }
//! ```
//!
//! # Why not tonic's own TLS
//!
//! tonic's `Server::tls_config` and `Endpoint::tls_config` (features
//! `tls-ring` / `tls-aws-lc`, which this crate does not enable) wrap TLS
//! *around* the IO the harness hands them (tonic 0.14.9
//! `transport/server/io_stream.rs`, `ServerIoStream::new(incoming, tls)`;
//! `transport/channel/service/connector.rs`, `tls.connect(TokioIo::new(io))`,
//! only for an `https` URI, which the harness's `http://` endpoints are
//! not), and build their rustls configs themselves with the wall clock
//! (`ClientConfig::builder_with_provider`, `transport/channel/service/tls.rs`).
//! A server or channel set up so would put TLS *above* the wire tap: the
//! tap would read TLS records, not HTTP/2 frames, and certificate
//! validity would follow the wall clock. Use this module instead (read,
//! not measured: this crate does not build tonic's TLS). The tap names
//! the symptom on a plaintext server: `protocol error at byte 0:
//! connection preface mismatch (RFC 9113 §3.4): its first octet, 22,
//! begins a TLS handshake record (RFC 8446 §5.1): the client likely speaks
//! TLS to a plaintext end` (measured
//! with a [`Host::channel_tls`](crate::Host::channel_tls) channel to a
//! host without [`ServerHost::tls`](crate::ServerHost::tls)).
//!
//! # What the handshake does here (read, and measured by the tests in
//! `tests/tests/server/tls/`)
//!
//! - TLS 1.3 only (RFC 8446) unless an end's `tls_versions` adds TLS 1.2
//!   (RFC 5246; [`TlsVersion`]), rustls 0.23 with its ring provider; both
//!   ends offer ALPN `h2` only (RFC 9113 §3.2).
//! - Certificate validity is checked by rustls-webpki against the
//!   simulated clock: the sim's epoch (2026-01-01T00:00:00Z) plus the
//!   simulated time, in whole seconds.
//! - The handshake runs when the TCP connection is up, before the
//!   connection is handed to tonic: its bytes bypass the wire tap, so
//!   frame rules and connection policies do not act on them. Link faults
//!   do: while a partition or a pause holds the link, the handshake's
//!   writes wait at their sender and leave when it opens, as the tap's
//!   frames do (`tls/writev.rs`, `Gate`); a black hole loses them
//!   (turmoil's own partition). A partition's `reset_after` does not
//!   reset a handshake: the caller's connect timeout gives it up. A
//!   handshake that fails is never handed
//!   to tonic (on the server the connection is dropped, on the client the
//!   connector returns the error, which tonic reports for the call).
//! - Each end records [`EventKind::TlsHandshake`](crate::recorder::event::EventKind::TlsHandshake):
//!   the cipher suite and ALPN, or the failure and the alerts by name
//!   (RFC 8446 §6); and [`EventKind::TlsMessage`](crate::recorder::event::EventKind::TlsMessage)s:
//!   the hellos it writes (read from the first plaintext records below
//!   rustls, which has no message hook), the certificate each end sends
//!   (a server's; an mTLS client's when asked) and the one it receives
//!   (subject, issuer, serial, validity in simulated seconds), and octets
//!   read where a hello should be that
//!   are not one. Never key material, random bytes or ciphertext.
//! - Every random byte rustls draws comes from the run's seed, none from
//!   the system RNG or the wall clock: the provider is ring's with its
//!   `secure_random` replaced (the hello randoms, session ids, GREASE,
//!   ticket nonces, ids and `age_add`) and X25519, its one key exchange
//!   group, made from the same bytes (x25519-dalek; ring's own takes only
//!   its system RNG, so P-256 and P-384 are not offered). Each connection
//!   end draws from its own stream, keyed by the seed, its host, its side
//!   and the connection's id, so the ciphertext on the simulated TCP is
//!   byte-identical for a seed, whatever order handshakes at one instant
//!   run in. The harness's certificates are Ed25519, whose signatures
//!   take no random; a PEM identity with an ECDSA or RSA key signs with
//!   ring's system RNG (ring's signing takes no other), so its
//!   CertificateVerify differs between runs. The keys are predictable from
//!   the seed by design: this TLS protects nothing.
//! - What speaks TLS: [`Host::channel_tls`](crate::Host::channel_tls),
//!   [`Host::balanced_channel_tls`](crate::Host::balanced_channel_tls)
//!   and any balanced channel whose config has
//!   [`BalanceConfig::tls`](crate::balance::BalanceConfig::tls) (health
//!   checking included), [`Host::retry_channel_tls`](crate::Host::retry_channel_tls)
//!   (or [`Host::retry_layer`](crate::Host::retry_layer) around a
//!   `channel_tls`), [`Host::raw_connect_tls`](crate::Host::raw_connect_tls),
//!   [`ServerHost::tls`](crate::ServerHost::tls) hosts and
//!   [`Sim::server_fn_tls`](crate::Sim::server_fn_tls) hosts.
//!   [`Host::tonic_channel`](crate::Host::tonic_channel) is plaintext: for
//!   a plain tonic channel over TLS, take
//!   [`Channel::into_inner`](crate::Channel::into_inner) of a `channel_tls`
//!   channel.

mod ca;
mod cert_fields;
pub(crate) mod clock;
mod config;
mod error;
mod handshake;
mod hello;
mod pem;
mod rotation;
mod seeded;
#[cfg(test)]
mod tests;
mod watch;
mod writev;
#[cfg(test)]
pub(crate) use writev::take_written;

pub use ca::{Ca, Leaf, DEFAULT_VALID_AFTER, DEFAULT_VALID_BEFORE};
pub use config::{ClientTls, ServerTls, TlsVersion};
pub use error::TlsError;
pub(crate) use handshake::{TlsEnd, TlsStream};
pub use pem::{Certificate, Identity};
pub(crate) use watch::Sink;
pub(crate) use writev::Gate;
