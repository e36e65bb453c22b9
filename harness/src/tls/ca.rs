//! Certificates made for a run: a [`Ca`] whose key comes from the run's
//! seed, and leaf [`Identity`]s it signs ([`Leaf`]), valid over
//! *simulated* time.
//!
//! Byte-identical for a seed (read, and tested in `tls/tests.rs`): the
//! keys are Ed25519 (RFC 8032), whose private key is 32 seed bytes
//! (here SHA-256 of the seed and the certificate's role), wrapped in a
//! fixed PKCS#8 v1 prefix (RFC 8410 §7); Ed25519 signatures are
//! deterministic (RFC 8032 §5.1.6); rcgen derives the serial number
//! and the key identifiers from the public key (rcgen 0.14
//! `certificate.rs`, `serialize_der_with_signer`), and the validity
//! dates are the sim's epoch plus simulated offsets.

use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::{Certificate, Identity, TlsError};
use crate::units::EPOCH_SECS;

/// RFC 8410 §7's PKCS#8 v1 `OneAsymmetricKey` for an Ed25519 key, up to
/// its 32 key bytes: SEQUENCE, version 0, AlgorithmIdentifier
/// id-Ed25519 (1.3.101.112), OCTET STRING { OCTET STRING (32) }.
const PKCS8_ED25519_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// How long before the run's start a [`Leaf`] is valid by default,
/// *simulated* time: a day, so a certificate made "now" is not "not yet
/// valid" at t = 0.
pub const DEFAULT_VALID_BEFORE: Duration = Duration::from_secs(24 * 3600);

/// How long after the run's start a [`Leaf`] stays valid by default,
/// *simulated* time: 365 days, longer than any run.
pub const DEFAULT_VALID_AFTER: Duration = Duration::from_secs(365 * 24 * 3600);

/// A certificate authority for one run: a self-signed CA certificate
/// (`CN=grpc-chaos test CA <seed>`, valid from a day before the run's
/// start for 10 years) whose Ed25519 key is made from `seed`. Two `Ca`s
/// of one seed are byte-identical, and so is every [`Leaf`] they sign.
///
/// ```
/// use grpc_chaos::tls::Ca;
/// let ca = Ca::new(7);
/// let store = ca.leaf("store").identity()?;
/// assert_eq!(Ca::new(7).leaf("store").identity()?.certificate(), store.certificate());
/// # Ok::<(), grpc_chaos::tls::TlsError>(())
/// ```
pub struct Ca {
    seed: u64,
    params: CertificateParams,
    key: KeyPair,
    certificate: Certificate,
}

impl Ca {
    /// The CA of `seed` (pass the run's: [`Sim::seed`](crate::Sim::seed)).
    /// Another seed gives another key, so [`ClientTls`](super::ClientTls)
    /// trusting `Ca::new(1)` rejects a server whose identity `Ca::new(2)`
    /// signed: the unknown-CA fault.
    pub fn new(seed: u64) -> Self {
        let key = key_pair(seed, "ca");
        let mut params = CertificateParams::default();
        params.distinguished_name = common_name(&format!("grpc-chaos test CA {seed}"));
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before = sim_date(-(DEFAULT_VALID_BEFORE.as_secs() as i64));
        params.not_after = sim_date(10 * 365 * 24 * 3600);
        // Fixed parameters and an Ed25519 key: rcgen refuses an
        // unsupported key or a bad name, neither of which this is.
        let der: CertificateDer<'static> = params
            .self_signed(&key)
            .expect("rcgen signs a fixed Ed25519 CA certificate")
            .der()
            .clone();
        Self {
            seed,
            params,
            key,
            certificate: Certificate(der),
        }
    }

    /// The CA's certificate, for a client's or server's trust roots.
    pub fn certificate(&self) -> Certificate {
        self.certificate.clone()
    }

    /// A leaf certificate for `name` (a host name: the DNS name in its
    /// subjectAltName and its CN), to set up and then sign with
    /// [`Leaf::identity`].
    pub fn leaf(&self, name: &str) -> Leaf<'_> {
        Leaf {
            ca: self,
            names: vec![name.to_owned()],
            valid_from: None,
            expires_at: None,
        }
    }
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// A leaf certificate a [`Ca`] is about to sign. Its validity is given in
/// *simulated* time since the run's start (the sim's clock starts at its
/// epoch, [`defaults::EPOCH_SECS`](crate::defaults::EPOCH_SECS)), which is
/// what the harness's TLS checks it against: by default from a day before
/// the start ([`DEFAULT_VALID_BEFORE`]) to 365 days after
/// ([`DEFAULT_VALID_AFTER`]). X.509 times have a resolution of one second
/// (RFC 5280 §4.1.2.5), and rustls-webpki rejects a certificate when the
/// time's whole seconds are past notAfter (`verify_cert.rs`,
/// `check_validity`: `time > not_after`); [`Leaf::expires_at`] and
/// [`Leaf::valid_from`] take that into account.
#[derive(Debug)]
pub struct Leaf<'a> {
    ca: &'a Ca,
    names: Vec<String>,
    valid_from: Option<Duration>,
    expires_at: Option<Duration>,
}

impl Leaf<'_> {
    /// One more DNS name in the subjectAltName (a replica's own name
    /// beside its set's, say).
    pub fn name(mut self, name: &str) -> Self {
        self.names.push(name.to_owned());
        self
    }

    /// The certificate is rejected from simulated time `at` on (rounded
    /// up to a whole second): a handshake at `at` or later fails with
    /// `certificate_expired` (RFC 8446 §6.2). Its notAfter is `at` − 1 s.
    /// `Duration::ZERO`: expired from the start.
    pub fn expires_at(mut self, at: Duration) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// The certificate is accepted from simulated time `at` on (rounded up
    /// to a whole second): a handshake before it fails with
    /// `certificate_expired` too (RFC 8446 §6.2: "or is not currently
    /// valid"; rustls's alert for `CertificateError::NotValidYet`).
    pub fn valid_from(mut self, at: Duration) -> Self {
        self.valid_from = Some(at);
        self
    }

    /// The signed certificate and its key: an [`Identity`] for a server
    /// ([`ServerTls::new`](super::ServerTls::new)) or a client
    /// ([`ClientTls::identity`](super::ClientTls::identity)); its extended
    /// key usage allows both.
    ///
    /// # Errors
    ///
    /// [`TlsError::is_bad_name`] for a name a certificate cannot hold
    /// (rcgen's check: not ASCII).
    pub fn identity(self) -> Result<Identity, TlsError> {
        let label = format!("leaf {}", self.names.join(","));
        let key = key_pair(self.ca.seed, &label);
        let mut params = CertificateParams::new(self.names.clone())
            .map_err(|e| TlsError::bad_name(&self.names.join(", "), e))?;
        params.distinguished_name = common_name(&self.names[0]);
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        params.use_authority_key_identifier_extension = true;
        params.not_before = match self.valid_from {
            Some(at) => sim_date(ceil_secs(at) as i64),
            None => sim_date(-(DEFAULT_VALID_BEFORE.as_secs() as i64)),
        };
        params.not_after = match self.expires_at {
            Some(at) => sim_date(ceil_secs(at) as i64 - 1),
            None => sim_date(DEFAULT_VALID_AFTER.as_secs() as i64),
        };
        let issuer = Issuer::from_params(&self.ca.params, &self.ca.key);
        let cert = params
            .signed_by(&key, &issuer)
            .map_err(|e| TlsError::bad_name(&self.names.join(", "), e))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        Ok(Identity {
            chain: vec![cert.der().clone()],
            key,
        })
    }
}

/// Whole seconds of `d`, rounded up.
fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// The date `offset` seconds after the sim's epoch.
fn sim_date(offset: i64) -> time::OffsetDateTime {
    let at = EPOCH_SECS as i64 + offset;
    time::OffsetDateTime::from_unix_timestamp(at).unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}

/// The Ed25519 key of `role` in the CA of `seed`: its 32 bytes are
/// SHA-256 of a fixed label, the seed (big-endian) and the role.
fn key_pair(seed: u64, role: &str) -> KeyPair {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"grpc-chaos tls key\0");
    ctx.update(&seed.to_be_bytes());
    ctx.update(role.as_bytes());
    let mut pkcs8 = PKCS8_ED25519_PREFIX.to_vec();
    pkcs8.extend_from_slice(ctx.finish().as_ref());
    // A well-formed Ed25519 PKCS#8 v1 document, which ring's
    // `Ed25519KeyPair::from_pkcs8_maybe_unchecked` (what rcgen calls)
    // reads for any 32 bytes.
    KeyPair::from_pkcs8_der_and_sign_algo(&PrivatePkcs8KeyDer::from(pkcs8), &rcgen::PKCS_ED25519)
        .expect("ring reads an RFC 8410 Ed25519 key")
}
