//! What a TLS end presents and trusts: an [`Identity`] (a certificate
//! chain and its private key) and a [`Certificate`] (a CA to trust),
//! from PEM text or from a [`Ca`](super::Ca).

use rustls::pki_types::pem::{PemObject, SectionKind};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::TlsError;

/// A certificate, DER inside: a CA's, to trust
/// ([`ClientTls::ca_certificate`](super::ClientTls::ca_certificate),
/// [`ServerTls::client_ca_root`](super::ServerTls::client_ca_root)), or
/// the leaf of an [`Identity`]. As tonic's `Certificate`, which takes PEM.
#[derive(Clone, PartialEq, Eq)]
pub struct Certificate(pub(crate) CertificateDer<'static>);

impl Certificate {
    /// The first `CERTIFICATE` block of `pem`.
    ///
    /// # Errors
    ///
    /// [`TlsError::is_not_pem`] when `pem` has no PEM block or a broken
    /// one; [`TlsError::is_missing_part`] when it has blocks but no
    /// certificate.
    pub fn from_pem(pem: impl AsRef<[u8]>) -> Result<Self, TlsError> {
        let mut chain = certificates(pem.as_ref(), "the certificate PEM")?;
        Ok(Self(chain.swap_remove(0)))
    }

    /// The certificate's DER bytes (RFC 5280 §4.1).
    pub fn der(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for Certificate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Certificate({} bytes of DER)", self.0.len())
    }
}

/// What one TLS end presents: a certificate chain (the leaf first) and
/// the leaf's private key, as tonic's `Identity`. From PEM
/// ([`Identity::from_pem`]) or made by a [`Ca`](super::Ca) for a run.
/// Its `Debug` shows no key material.
pub struct Identity {
    pub(crate) chain: Vec<CertificateDer<'static>>,
    pub(crate) key: PrivateKeyDer<'static>,
}

impl Identity {
    /// `cert_pem`'s `CERTIFICATE` blocks (the leaf first, then its
    /// intermediates) and the first private key of `key_pem` (PKCS#8
    /// `PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY` or SEC1 `EC PRIVATE KEY`;
    /// rustls-pki-types' `PrivateKeyDer` PEM reading). Whether the key
    /// fits the certificate is rustls's to say, when the host's
    /// [`ServerTls`](super::ServerTls) or channel is built: the run then
    /// fails as misconfigured with rustls's reason.
    ///
    /// # Errors
    ///
    /// [`TlsError::is_not_pem`] when either text has no PEM block or a
    /// broken one; [`TlsError::is_missing_part`] when `cert_pem` holds no
    /// certificate or `key_pem` no private key.
    pub fn from_pem(
        cert_pem: impl AsRef<[u8]>,
        key_pem: impl AsRef<[u8]>,
    ) -> Result<Self, TlsError> {
        let chain = certificates(cert_pem.as_ref(), "the certificate PEM")?;
        let sections = sections(key_pem.as_ref(), "the key PEM")?;
        let key = sections
            .into_iter()
            .find_map(|(kind, der)| PrivateKeyDer::from_pem(kind, der))
            .ok_or_else(TlsError::no_key)?;
        Ok(Self { chain, key })
    }

    /// The leaf certificate.
    pub fn certificate(&self) -> Certificate {
        Certificate(self.chain[0].clone())
    }

    /// The leaf's private key, DER (for the determinism tests of the
    /// certificates a [`Ca`](super::Ca) makes).
    #[cfg(test)]
    pub(crate) fn key_der(&self) -> &[u8] {
        self.key.secret_der()
    }
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Self {
            chain: self.chain.clone(),
            key: self.key.clone_key(),
        }
    }
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Identity")
            .field("certificates", &self.chain.len())
            .finish_non_exhaustive()
    }
}

/// The PEM sections of `pem`, at least one.
fn sections(pem: &[u8], what: &str) -> Result<Vec<(SectionKind, Vec<u8>)>, TlsError> {
    let mut out = Vec::new();
    for section in <(SectionKind, Vec<u8>)>::pem_slice_iter(pem) {
        out.push(section.map_err(|e| TlsError::not_pem(what, e))?);
    }
    if out.is_empty() {
        return Err(TlsError::not_pem(what, "no `-----BEGIN` line"));
    }
    Ok(out)
}

/// The certificates of `pem`, at least one.
fn certificates(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain: Vec<_> = sections(pem, what)?
        .into_iter()
        .filter(|(kind, _)| *kind == SectionKind::Certificate)
        .map(|(_, der)| CertificateDer::from(der))
        .collect();
    if chain.is_empty() {
        return Err(TlsError::no_certificate(what));
    }
    Ok(chain)
}
