//! Every random byte rustls draws, from the run's seed: the crypto
//! provider's `secure_random` and its one key exchange group, X25519, read
//! one stream per connection end, so the ciphertext on the simulated TCP
//! is the same for a seed.
//!
//! rustls draws through its provider (rustls 0.23 `client/hs.rs`: the
//! ClientHello random, legacy session id and GREASE value;
//! `server/hs.rs`, `server/tls12.rs`, `server/tls13.rs`: the ServerHello
//! random, the TLS 1.2 session id, each TLS 1.3 ticket's nonce, age_add
//! and id; read). ring's key exchange draws from ring's system RNG
//! (`crypto/ring/kx.rs`, `EphemeralPrivateKey::generate(.., &SystemRandom)`;
//! ring's `SecureRandom` is sealed), so X25519 here is x25519-dalek's, its
//! private key drawn from the same stream. P-256 and P-384 are not
//! offered: no seeded key for them, and both ends are this provider's.
//!
//! A provider's `secure_random` and groups are `&'static`: the stream is
//! a thread's current one, set by [`Seeded`] around each poll of a
//! handshake (turmoil runs every host on the thread that runs the sim).
//! A connection end owns its stream, keyed by the run's seed, its host,
//! its side and its connection id: handshakes at one instant draw from
//! their own streams, whatever order they are polled in. A draw outside a
//! handshake fails (`GetRandomFailed`, which fails that handshake), so no
//! unseeded byte goes unnoticed. The stream is SHA-256 of its key and a
//! block counter: predictable from the seed by design, never secret.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ring::digest::{digest, SHA256};
use rustls::crypto::{
    ActiveKeyExchange, CryptoProvider, GetRandomFailed, SecureRandom, SharedSecret,
    SupportedKxGroup,
};
use rustls::{Error, NamedGroup, PeerMisbehaved};
use x25519_dalek::{PublicKey, StaticSecret};

use crate::recorder::event::TlsSide;

thread_local! {
    /// The stream of the handshake being polled on this thread.
    static CURRENT: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// rustls's ring provider (its cipher suites, signature algorithms and
/// key loading, rustls 0.23 `crypto/ring/mod.rs`) with the seeded random
/// source and the seeded X25519 as its only key exchange group.
pub(crate) fn provider() -> CryptoProvider {
    CryptoProvider {
        secure_random: &SeededRandom,
        kx_groups: vec![&SeededX25519],
        ..rustls::crypto::ring::default_provider()
    }
}

/// One connection end's random bytes: SHA-256(key ‖ block counter).
pub(crate) struct Stream {
    key: [u8; 32],
    block: u64,
    left: Vec<u8>,
}

impl Stream {
    /// The stream of `host`'s `side` of connection `conn` in the run of
    /// `seed`.
    pub(crate) fn new(seed: u64, host: &str, side: TlsSide, conn: u32) -> Self {
        let mut input = b"grpc-chaos tls random\0".to_vec();
        input.extend_from_slice(&seed.to_be_bytes());
        input.extend_from_slice(&(host.len() as u64).to_be_bytes());
        input.extend_from_slice(host.as_bytes());
        input.push(match side {
            TlsSide::Client => 0,
            TlsSide::Server => 1,
        });
        input.extend_from_slice(&conn.to_be_bytes());
        let mut key = [0; 32];
        key.copy_from_slice(digest(&SHA256, &input).as_ref());
        Self {
            key,
            block: 0,
            left: Vec::new(),
        }
    }

    fn fill(&mut self, out: &mut [u8]) {
        for byte in out {
            if self.left.is_empty() {
                let mut input = self.key.to_vec();
                input.extend_from_slice(&self.block.to_be_bytes());
                self.block += 1;
                self.left = digest(&SHA256, &input).as_ref().to_vec();
                self.left.reverse();
            }
            *byte = self.left.pop().unwrap_or_default();
        }
    }
}

/// Runs `f` with `stream` as this thread's current stream (the one before
/// is put back after, also if `f` panics).
pub(crate) fn with_stream<R>(stream: &mut Option<Stream>, f: impl FnOnce() -> R) -> R {
    struct Restore<'a> {
        slot: &'a mut Option<Stream>,
        before: Option<Stream>,
    }
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            *self.slot = CURRENT.with(|c| c.replace(self.before.take()));
        }
    }
    let before = CURRENT.with(|c| c.replace(stream.take()));
    let _restore = Restore {
        slot: stream,
        before,
    };
    f()
}

/// A future polled with its own stream current: a handshake.
pub(crate) struct Seeded<F> {
    stream: Option<Stream>,
    inner: Pin<Box<F>>,
}

impl<F: Future> Seeded<F> {
    pub(crate) fn new(stream: Stream, inner: F) -> Self {
        Self {
            stream: Some(stream),
            inner: Box::pin(inner),
        }
    }
}

impl<F: Future> Future for Seeded<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let inner = &mut this.inner;
        with_stream(&mut this.stream, || inner.as_mut().poll(cx))
    }
}

/// The provider's random source: the current stream.
#[derive(Debug)]
struct SeededRandom;

impl SecureRandom for SeededRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        CURRENT.with(|c| match c.borrow_mut().as_mut() {
            Some(stream) => {
                stream.fill(buf);
                Ok(())
            }
            None => Err(GetRandomFailed),
        })
    }
}

/// X25519 (RFC 7748 §5, RFC 8446 §4.2.8.2), the private key 32 bytes of
/// the current stream (clamped by x25519-dalek).
#[derive(Debug)]
struct SeededX25519;

impl SupportedKxGroup for SeededX25519 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, Error> {
        let mut bytes = [0; 32];
        SeededRandom.fill(&mut bytes)?;
        let secret = StaticSecret::from(bytes);
        let public = PublicKey::from(&secret);
        Ok(Box::new(X25519Exchange { secret, public }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

struct X25519Exchange {
    secret: StaticSecret,
    public: PublicKey,
}

impl ActiveKeyExchange for X25519Exchange {
    /// A share that is not 32 octets, or whose shared secret is all zero
    /// (a small-order point, RFC 7748 §6.1; ring refuses it too), is the
    /// peer's error.
    fn complete(self: Box<Self>, peer: &[u8]) -> Result<SharedSecret, Error> {
        let peer: [u8; 32] = peer
            .try_into()
            .map_err(|_| PeerMisbehaved::InvalidKeyShare)?;
        let shared = self.secret.diffie_hellman(&PublicKey::from(peer));
        if !shared.was_contributory() {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        Ok(SharedSecret::from(&shared.as_bytes()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        self.public.as_bytes()
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawn(stream: Stream, n: usize) -> Vec<u8> {
        let mut slot = Some(stream);
        let mut out = vec![0; n];
        with_stream(&mut slot, || SeededRandom.fill(&mut out)).unwrap();
        out
    }

    #[test]
    fn a_stream_is_its_key_and_draws_go_on_where_they_stopped() {
        let a = drawn(Stream::new(7, "store", TlsSide::Server, 1), 80);
        assert_eq!(a, drawn(Stream::new(7, "store", TlsSide::Server, 1), 80));
        assert_ne!(a, drawn(Stream::new(8, "store", TlsSide::Server, 1), 80));
        assert_ne!(a, drawn(Stream::new(7, "store", TlsSide::Client, 1), 80));
        assert_ne!(a, drawn(Stream::new(7, "store", TlsSide::Server, 2), 80));
        let mut slot = Some(Stream::new(7, "store", TlsSide::Server, 1));
        let (mut x, mut y) = (vec![0; 30], vec![0; 50]);
        with_stream(&mut slot, || SeededRandom.fill(&mut x)).unwrap();
        with_stream(&mut slot, || SeededRandom.fill(&mut y)).unwrap();
        assert_eq!([x, y].concat(), a);
    }

    #[test]
    fn a_draw_outside_a_handshake_fails() {
        assert!(SeededRandom.fill(&mut [0; 4]).is_err());
        assert!(SeededX25519.start().is_err());
    }

    #[test]
    fn both_ends_agree_and_a_zero_share_is_refused() {
        let mut a = Some(Stream::new(1, "a", TlsSide::Client, 1));
        let mut b = Some(Stream::new(1, "b", TlsSide::Server, 1));
        let ka = with_stream(&mut a, || SeededX25519.start()).unwrap();
        let kb = with_stream(&mut b, || SeededX25519.start()).unwrap();
        let pa = ka.pub_key().to_vec();
        let sa = ka.complete(kb.pub_key()).unwrap();
        let sb = kb.complete(&pa).unwrap();
        assert_eq!(sa.secret_bytes(), sb.secret_bytes());
        let kc = with_stream(&mut a, || SeededX25519.start()).unwrap();
        assert!(kc.complete(&[0; 32]).is_err());
        let kd = with_stream(&mut a, || SeededX25519.start()).unwrap();
        assert!(kd.complete(&[9; 31]).is_err());
    }
}
