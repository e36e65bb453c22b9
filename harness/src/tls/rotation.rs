//! A server identity that changes at simulated instants
//! ([`ServerTls::rotate_at`](super::ServerTls::rotate_at)): rustls asks a
//! `ResolvesServerCert` for the certificate of each handshake (rustls 0.23
//! `server/server_conn.rs`), and this one answers by the simulated clock.
//! A connection already up keeps the certificate it was made with: TLS
//! authenticates once, at the handshake (RFC 8446 §4.4).

use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use super::clock::SimClock;
use super::Identity;

/// The identities of a server host, each from its instant on.
#[derive(Debug)]
pub(crate) struct Rotation {
    clock: SimClock,
    /// From each simulated instant on, ascending; the first is from 0.
    keys: Vec<(Duration, Arc<CertifiedKey>)>,
}

impl Rotation {
    /// `first` from the start, then each of `later` from its instant.
    pub(crate) fn new(
        clock: SimClock,
        first: &Identity,
        later: &[(Duration, Identity)],
        provider: &CryptoProvider,
    ) -> Result<Self, String> {
        let load = |id: &Identity| {
            CertifiedKey::from_der(id.chain.clone(), id.key.clone_key(), provider)
                .map(Arc::new)
                .map_err(|e| format!("rustls refused the server identity: {e}"))
        };
        let mut keys = vec![(Duration::ZERO, load(first)?)];
        for (at, id) in later {
            keys.push((*at, load(id)?));
        }
        // Stable: of two rotations at one instant, the later call wins.
        keys.sort_by_key(|(at, _)| *at);
        Ok(Self { clock, keys })
    }
}

impl ResolvesServerCert for Rotation {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let now = self.clock.0.now();
        self.keys
            .iter()
            .rev()
            .find(|(at, _)| *at <= now)
            .map(|(_, key)| key.clone())
    }
}
