//! A server identity and client CAs that change at simulated instants
//! ([`ServerTls::rotate_at`](super::ServerTls::rotate_at),
//! [`ServerTls::rotate_client_ca_at`](super::ServerTls::rotate_client_ca_at)):
//! rustls asks a
//! `ResolvesServerCert` for the certificate of each handshake (rustls 0.23
//! `server/server_conn.rs`), and this one answers by the simulated clock.
//! A connection already up keeps the certificate it was made with: TLS
//! authenticates once, at the handshake (RFC 8446 §4.4).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::client::ResolvesClientCert;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::cert_fields::certificate_fields;
use super::clock::SimClock;
use super::Identity;
use crate::recorder::event::CertificateFields;

/// The certificate a server host's resolver chose last, for the trace's
/// "certificate sent": the handshake that asked takes it when its
/// ServerHello is written, in the same poll of rustls (which resolves
/// while it reads the ClientHello, then writes ServerHello … Finished,
/// rustls 0.23 `server/hs.rs`). Two handshakes of one host resolving at
/// one simulated instant get the same certificate, so which of them
/// takes it does not matter.
pub(crate) type Chosen = Arc<Mutex<Option<CertificateFields>>>;

/// The identities of a server host, each from its instant on.
#[derive(Debug)]
pub(crate) struct Rotation {
    clock: SimClock,
    /// From each simulated instant on, ascending; the first is from 0;
    /// with the end-entity certificate's fields where they parse.
    keys: Vec<(Duration, Arc<CertifiedKey>, Option<CertificateFields>)>,
    chosen: Chosen,
}

impl Rotation {
    /// `first` from the start, then each of `later` from its instant.
    pub(crate) fn new(
        clock: SimClock,
        first: &Identity,
        later: &[(Duration, Identity)],
        provider: &CryptoProvider,
    ) -> Result<Self, String> {
        let load = |at: Duration, id: &Identity| {
            let key = CertifiedKey::from_der(id.chain.clone(), id.key.clone_key(), provider)
                .map_err(|e| format!("rustls refused the server identity: {e}"))?;
            let fields = id.chain.first().and_then(|c| certificate_fields(c));
            Ok::<_, String>((at, Arc::new(key), fields))
        };
        let mut keys = vec![load(Duration::ZERO, first)?];
        for (at, id) in later {
            keys.push(load(*at, id)?);
        }
        // Stable: of two rotations at one instant, the later call wins.
        keys.sort_by_key(|(at, _, _)| *at);
        Ok(Self {
            clock,
            keys,
            chosen: Chosen::default(),
        })
    }

    /// Where the last chosen certificate is left for the trace.
    pub(crate) fn chosen(&self) -> Chosen {
        self.chosen.clone()
    }
}

impl ResolvesServerCert for Rotation {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let now = self.clock.0.now();
        let (_, key, fields) = self.keys.iter().rev().find(|(at, _, _)| *at <= now)?;
        if let Ok(mut chosen) = self.chosen.lock() {
            *chosen = fields.clone();
        }
        Some(key.clone())
    }
}

/// A client's identity under mTLS, as rustls's `AlwaysResolvesClientCert`
/// (what `with_client_auth_cert` installs: the one certificate, whenever
/// the server asks with a CertificateRequest, RFC 8446 §4.3.2), leaving
/// its fields where the handshake's trace takes them ([`Chosen`]): rustls
/// resolves while it reads the server's flight and writes the client's
/// Certificate in the same poll.
#[derive(Debug)]
pub(crate) struct ClientIdentity {
    key: Arc<CertifiedKey>,
    fields: Option<CertificateFields>,
    chosen: Chosen,
}

impl ClientIdentity {
    pub(crate) fn new(
        id: &Identity,
        provider: &CryptoProvider,
        chosen: Chosen,
    ) -> Result<Self, String> {
        let key = CertifiedKey::from_der(id.chain.clone(), id.key.clone_key(), provider)
            .map_err(|e| format!("rustls refused the client identity: {e}"))?;
        Ok(Self {
            key: Arc::new(key),
            fields: id.chain.first().and_then(|c| certificate_fields(c)),
            chosen,
        })
    }
}

impl ResolvesClientCert for ClientIdentity {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        if let Ok(mut chosen) = self.chosen.lock() {
            *chosen = self.fields.clone();
        }
        Some(self.key.clone())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// The client CAs of a server host, each set from its instant on
/// ([`ServerTls::rotate_client_ca_at`](super::ServerTls::rotate_client_ca_at)):
/// rustls asks the server config's `ClientCertVerifier` whether to ask
/// for a client certificate and whether a presented one is valid (rustls
/// 0.23 `verify.rs`); this one hands each question to the verifier of the
/// simulated instant (rustls-webpki's, `WebPkiClientVerifier`), or to none
/// where that instant trusts no CA (no client certificate asked for).
#[derive(Debug)]
pub(crate) struct ClientCaRotation {
    clock: SimClock,
    /// From each simulated instant on, ascending; the first is from 0.
    periods: Vec<(Duration, Option<Arc<dyn ClientCertVerifier>>)>,
    /// Any of them, for the signature checks (the provider's algorithms,
    /// the same in every period).
    any: Arc<dyn ClientCertVerifier>,
}

impl ClientCaRotation {
    pub(crate) fn new(
        clock: SimClock,
        periods: Vec<(Duration, Option<Arc<dyn ClientCertVerifier>>)>,
    ) -> Option<Self> {
        let any = periods.iter().find_map(|(_, v)| v.clone())?;
        Some(Self {
            clock,
            periods,
            any,
        })
    }

    fn now(&self) -> Option<&Arc<dyn ClientCertVerifier>> {
        let now = self.clock.0.now();
        self.periods
            .iter()
            .rev()
            .find(|(at, _)| *at <= now)
            .and_then(|(_, v)| v.as_ref())
    }
}

impl ClientCertVerifier for ClientCaRotation {
    fn offer_client_auth(&self) -> bool {
        self.now().is_some_and(|v| v.offer_client_auth())
    }

    fn client_auth_mandatory(&self) -> bool {
        self.now().is_some_and(|v| v.client_auth_mandatory())
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.now().map_or(&[], |v| v.root_hint_subjects())
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        match self.now() {
            Some(v) => v.verify_client_cert(end_entity, intermediates, now),
            // Not asked for, so not sent: rustls does not call this then.
            None => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            )),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.any.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.any.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.any.supported_verify_schemes()
    }
}
