//! The TLS a host asks for: [`ServerTls`] for a server host, [`ClientTls`]
//! for a channel; and the rustls configs the harness builds from them,
//! on the simulated clock ([`SimClock`]).

use std::sync::Arc;
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::ServerName;
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use super::clock::SimClock;
use super::handshake::TlsEnd;
use super::rotation::{Chosen, ClientCaRotation, ClientIdentity, Rotation};
use super::{Certificate, Identity};

/// The ALPN protocol id of HTTP/2 over TLS (RFC 9113 §3.2), the only one
/// both ends offer: tonic's own TLS offers it too
/// (`transport/service/tls.rs`, `ALPN_H2`).
pub(crate) const ALPN_H2: &[u8] = b"h2";

/// TLS on a server host ([`ServerHost::tls`](crate::ServerHost::tls)), as
/// tonic's `ServerTlsConfig`: the identity it presents, and optionally the
/// CA whose client certificates it requires (mTLS).
///
/// The handshake is TLS 1.3 (RFC 8446; TLS 1.2 too with
/// `tls_versions`), rustls with the ring provider,
/// ALPN `h2`, certificates checked against *simulated* time. Defaults:
/// no client certificate asked for; with [`ServerTls::client_ca_root`],
/// one is required unless [`ServerTls::client_auth_optional`].
#[derive(Clone, Debug)]
pub struct ServerTls {
    pub(crate) identity: Identity,
    pub(crate) rotations: Vec<(Duration, Identity)>,
    pub(crate) client_ca: Vec<Certificate>,
    pub(crate) client_ca_rotations: Vec<(Duration, Certificate)>,
    pub(crate) client_auth_optional: bool,
    pub(crate) alpn: Option<Vec<Vec<u8>>>,
    pub(crate) stall: Duration,
    pub(crate) versions: Option<Vec<TlsVersion>>,
}

impl ServerTls {
    /// Presents `identity` (its chain and key) to every client.
    pub fn new(identity: Identity) -> Self {
        Self {
            identity,
            rotations: Vec::new(),
            client_ca: Vec::new(),
            client_ca_rotations: Vec::new(),
            client_auth_optional: false,
            alpn: None,
            stall: Duration::ZERO,
            versions: None,
        }
    }

    /// Holds the server's first flight (ServerHello up to its Finished,
    /// RFC 8446 §2) for `stall`, *simulated* time, on every connection:
    /// the handshake that stalls. The ClientHello waits unread, so a
    /// client's `Endpoint::connect_timeout` shorter than `stall` gives the
    /// dial up mid-handshake (the trace says so at the client). Default
    /// none.
    pub fn stall_handshake(mut self, stall: Duration) -> Self {
        self.stall = stall;
        self
    }

    /// From simulated time `at` on, presents `identity` instead: a
    /// certificate rotation. Each handshake picks the identity of its
    /// instant (a rustls `ResolvesServerCert` on the simulated clock);
    /// a connection made before `at` keeps the certificate it was made
    /// with, since TLS authenticates once, at the handshake (RFC 8446
    /// §4.4). More calls rotate again; of two at one instant, the later
    /// call wins.
    pub fn rotate_at(mut self, at: Duration, identity: Identity) -> Self {
        self.rotations.push((at, identity));
        self
    }

    /// The ALPN protocols the server selects from, in its order of
    /// preference (RFC 7301 §3.2); default `["h2"]`, as tonic's server.
    /// A list without `h2` (`&["http/1.1"]`) fails every handshake of a
    /// client that offers only `h2`: the server sends
    /// `no_application_protocol` (rustls `server/hs.rs`). An empty list
    /// turns ALPN off: the handshake succeeds with no protocol agreed,
    /// and tonic then speaks HTTP/2 anyway (measured; grpc-go 1.67 and
    /// later reject such a connection, grpc-go #7535).
    pub fn alpn_protocols(mut self, protocols: &[&str]) -> Self {
        self.alpn = Some(protocols.iter().map(|p| p.as_bytes().to_vec()).collect());
        self
    }

    /// The TLS versions the server accepts; default `[TlsVersion::Tls13]`
    /// (TLS 1.3 only, RFC 8446). With both, a client that offers TLS 1.3
    /// gets it (rustls prefers it, `server/hs.rs`). A client that offers
    /// none of them fails the handshake: the server sends
    /// `protocol_version` (RFC 8446 §4.2.1, RFC 5246 §E.1). An empty
    /// list is a misconfiguration of the host, reported by the run.
    pub fn tls_versions(mut self, versions: &[TlsVersion]) -> Self {
        self.versions = Some(versions.to_vec());
        self
    }

    /// Asks every client for a certificate signed by `ca` (more calls
    /// trust more CAs), as tonic's `ServerTlsConfig::client_ca_root`. A
    /// client without one fails the handshake: the server sends
    /// `certificate_required` (RFC 8446 §4.4.2.4; rustls's alert for
    /// `NoCertificatesPresented`).
    pub fn client_ca_root(mut self, ca: Certificate) -> Self {
        self.client_ca.push(ca);
        self
    }

    /// From simulated time `at` on, trusts `ca` for client certificates
    /// *instead of* the CAs trusted before (more calls with the same `at`
    /// trust more CAs): an mTLS CA rotation. Each handshake is checked
    /// with the CAs of its instant; a connection made before `at` keeps
    /// the client it authenticated (RFC 8446 §4.4: once, at the
    /// handshake). A client whose certificate the new CAs did not sign is
    /// locked out of new connections: the server sends `unknown_ca`.
    pub fn rotate_client_ca_at(mut self, at: Duration, ca: Certificate) -> Self {
        self.client_ca_rotations.push((at, ca));
        self
    }

    /// With [`ServerTls::client_ca_root`]: a client may also send no
    /// certificate (one it sends is still checked). Default `false`, as
    /// tonic's `client_auth_optional`.
    pub fn client_auth_optional(mut self, optional: bool) -> Self {
        self.client_auth_optional = optional;
        self
    }

    /// rustls-webpki's client verifier for `cas`; `None` for no CA.
    fn client_verifier(
        &self,
        cas: &[Certificate],
        provider: &Arc<CryptoProvider>,
    ) -> Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>, String> {
        if cas.is_empty() {
            return Ok(None);
        }
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots(cas)?), provider.clone());
        let verifier = if self.client_auth_optional {
            verifier.allow_unauthenticated()
        } else {
            verifier
        };
        verifier.build().map(Some).map_err(|e| e.to_string())
    }

    /// The rustls config: its versions (default TLS 1.3), ALPN `h2`, the
    /// simulated clock.
    pub(crate) fn config(&self, clock: &SimClock) -> Result<(Arc<ServerConfig>, Chosen), String> {
        let versions = rustls_versions(self.versions.as_deref())?;
        let provider = provider(&versions);
        let builder = ServerConfig::builder_with_details(provider.clone(), Arc::new(clock.clone()))
            .with_protocol_versions(&versions)
            .map_err(|e| e.to_string())?;
        let mut periods = vec![(
            Duration::ZERO,
            self.client_verifier(&self.client_ca, &provider)?,
        )];
        let mut ats: Vec<Duration> = self.client_ca_rotations.iter().map(|(at, _)| *at).collect();
        ats.sort();
        ats.dedup();
        for at in ats {
            let cas: Vec<Certificate> = self
                .client_ca_rotations
                .iter()
                .filter(|(a, _)| *a == at)
                .map(|(_, ca)| ca.clone())
                .collect();
            periods.push((at, self.client_verifier(&cas, &provider)?));
        }
        let builder = match ClientCaRotation::new(clock.clone(), periods) {
            None => builder.with_no_client_auth(),
            Some(rotation) => builder.with_client_cert_verifier(Arc::new(rotation)),
        };
        let rotation = Rotation::new(clock.clone(), &self.identity, &self.rotations, &provider)?;
        let chosen = rotation.chosen();
        let mut config = builder.with_cert_resolver(Arc::new(rotation));
        config.alpn_protocols = self.alpn.clone().unwrap_or_else(|| vec![ALPN_H2.to_vec()]);
        Ok((Arc::new(config), chosen))
    }
}

/// TLS on a channel ([`Host::channel_tls`](crate::Host::channel_tls)), as
/// tonic's `ClientTlsConfig`: the CAs it trusts, the name it expects in
/// the server's certificate, and optionally the identity it presents
/// (mTLS).
///
/// The handshake is TLS 1.3 (RFC 8446; TLS 1.2 too with
/// `tls_versions`), rustls with the ring provider,
/// ALPN `h2`, the server's certificate checked by rustls-webpki against
/// *simulated* time. Defaults: no CA trusted (every server is then
/// rejected: `unknown_ca`), the name is the host dialled, no client
/// certificate. rustls's session resumption is on, as in tonic (rustls's
/// default: an in-memory cache of 256 sessions per channel), so a redial
/// of a channel may resume (RFC 8446 §2.2) and its server sends no
/// certificate then: the trace says `resumed`.
#[derive(Clone, Debug, Default)]
pub struct ClientTls {
    pub(crate) cas: Vec<Certificate>,
    pub(crate) domain: Option<String>,
    pub(crate) identity: Option<Identity>,
    pub(crate) alpn: Option<Vec<Vec<u8>>>,
    pub(crate) versions: Option<Vec<TlsVersion>>,
}

impl ClientTls {
    /// No CA trusted yet, the host's name expected, no identity.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts `ca` (more calls trust more CAs), as tonic's
    /// `ClientTlsConfig::ca_certificate`.
    pub fn ca_certificate(mut self, ca: Certificate) -> Self {
        self.cas.push(ca);
        self
    }

    /// Expects `name` in the server's certificate (SNI, and the name
    /// checked, RFC 6125) instead of the host dialled, as tonic's
    /// `ClientTlsConfig::domain_name`. A certificate without it fails the
    /// handshake: the client sends `bad_certificate` (rustls's alert for
    /// `CertificateError::NotValidForName`).
    pub fn domain_name(mut self, name: impl Into<String>) -> Self {
        self.domain = Some(name.into());
        self
    }

    /// Presents `identity` when the server asks for a client certificate
    /// (mTLS), as tonic's `ClientTlsConfig::identity`.
    pub fn identity(mut self, identity: Identity) -> Self {
        self.identity = Some(identity);
        self
    }

    /// The ALPN protocols the client offers (RFC 7301 §3.1); default
    /// `["h2"]`, as tonic's channel. An empty list offers none: a server
    /// that has ALPN on then agrees on none (rustls selects only from
    /// what was offered), and tonic speaks HTTP/2 anyway.
    pub fn alpn_protocols(mut self, protocols: &[&str]) -> Self {
        self.alpn = Some(protocols.iter().map(|p| p.as_bytes().to_vec()).collect());
        self
    }

    /// The TLS versions the client offers; default `[TlsVersion::Tls13]`
    /// (TLS 1.3 only). A TLS 1.2-only client's ClientHello still lists
    /// TLS 1.2 in `supported_versions` (rustls sends it; RFC 8446 §4.2.1
    /// lets a TLS 1.2 server ignore it). At a server that accepts none of them the handshake
    /// fails: the client receives `protocol_version`. An empty list is a
    /// misconfiguration of the channel, reported by the run.
    pub fn tls_versions(mut self, versions: &[TlsVersion]) -> Self {
        self.versions = Some(versions.to_vec());
        self
    }

    /// The client end of a channel to `host`: its rustls config, the
    /// server name, and where its identity's resolver leaves the
    /// certificate it sends (for the trace's `certificate sent`).
    /// `seed` is the run's: the end's random bytes come from it
    /// ([`super::seeded`]).
    pub(crate) fn end(&self, clock: &SimClock, host: &str, seed: u64) -> Result<TlsEnd, String> {
        let (config, name, chosen) = self.build(clock, host)?;
        Ok(TlsEnd::client(config, name, chosen, seed))
    }

    /// The rustls config and the server name, for a channel to `host`.
    #[cfg(test)]
    pub(crate) fn config(
        &self,
        clock: &SimClock,
        host: &str,
    ) -> Result<(Arc<ClientConfig>, ServerName<'static>), String> {
        self.build(clock, host)
            .map(|(config, name, _)| (config, name))
    }

    fn build(
        &self,
        clock: &SimClock,
        host: &str,
    ) -> Result<(Arc<ClientConfig>, ServerName<'static>, Chosen), String> {
        let name = self.domain.as_deref().unwrap_or(host);
        let name = ServerName::try_from(name.to_owned())
            .map_err(|e| format!("`{name}` is not a server name ({e}); give a DNS name"))?;
        let versions = rustls_versions(self.versions.as_deref())?;
        let provider = provider(&versions);
        let builder = ClientConfig::builder_with_details(provider.clone(), Arc::new(clock.clone()))
            .with_protocol_versions(&versions)
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots(&self.cas)?);
        let chosen = Chosen::default();
        let mut config = match &self.identity {
            Some(id) => {
                let identity = ClientIdentity::new(id, &provider, chosen.clone())?;
                builder.with_client_cert_resolver(Arc::new(identity))
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = self.alpn.clone().unwrap_or_else(|| vec![ALPN_H2.to_vec()]);
        Ok((Arc::new(config), name, chosen))
    }
}

/// A TLS version an end may negotiate ([`ServerTls::tls_versions`],
/// [`ClientTls::tls_versions`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TlsVersion {
    /// TLS 1.2 (RFC 5246), with ECDHE key exchange, AEAD cipher suites
    /// and extended master secret (RFC 7627) only, as rustls has it.
    Tls12,
    /// TLS 1.3 (RFC 8446).
    Tls13,
}

impl TlsVersion {
    fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            Self::Tls12 => &rustls::version::TLS12,
            Self::Tls13 => &rustls::version::TLS13,
        }
    }
}

/// rustls's versions for `versions` (`None`: TLS 1.3 only).
fn rustls_versions(
    versions: Option<&[TlsVersion]>,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    match versions {
        None => Ok(vec![&rustls::version::TLS13]),
        Some([]) => Err("no TLS version: give `TlsVersion::Tls13`, `Tls12` or both".to_owned()),
        Some(v) => Ok(v.iter().map(|v| v.rustls()).collect()),
    }
}

/// rustls's ring provider with every random byte from the run's seed
/// ([`super::seeded::provider`]), with the cipher suites of `versions`
/// only: rustls offers every suite of its provider in a ClientHello
/// (rustls 0.23 `client/hs.rs`), so a TLS 1.3-only end would offer TLS
/// 1.2's suites too.
fn provider(versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<CryptoProvider> {
    let mut provider = super::seeded::provider();
    provider
        .cipher_suites
        .retain(|s| versions.contains(&s.version()));
    Arc::new(provider)
}

fn roots(cas: &[Certificate]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for ca in cas {
        roots
            .add(ca.0.clone())
            .map_err(|e| format!("rustls refused a CA certificate: {e}"))?;
    }
    Ok(roots)
}
