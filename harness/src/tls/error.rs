//! The one error of [`crate::tls`]: what was wrong with a certificate, a
//! key or a name a test handed it, and what to change.

/// A certificate, key or name [`crate::tls`] could not use. Ask it what
/// went wrong ([`TlsError::is_not_pem`], [`TlsError::is_bad_name`]); its
/// `Display` says what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsError {
    kind: Kind,
    detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    NotPem,
    NoCertificate,
    NoKey,
    BadName,
}

impl TlsError {
    pub(crate) fn not_pem(what: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(
            Kind::NotPem,
            format!(
                "{what} is not PEM ({detail}): pass the text of a `-----BEGIN {}-----` block",
                pem_label(what)
            ),
        )
    }

    pub(crate) fn no_certificate(what: &str) -> Self {
        Self::new(
            Kind::NoCertificate,
            format!("{what} holds no `-----BEGIN CERTIFICATE-----` block"),
        )
    }

    pub(crate) fn no_key() -> Self {
        Self::new(
            Kind::NoKey,
            "the key PEM holds no private key (`-----BEGIN PRIVATE KEY-----`, PKCS#8; \
             or `RSA PRIVATE KEY` / `EC PRIVATE KEY`)",
        )
    }

    pub(crate) fn bad_name(name: &str, detail: impl std::fmt::Display) -> Self {
        Self::new(
            Kind::BadName,
            format!("`{name}` is not a DNS name a certificate can hold ({detail}); use a host name such as `store`"),
        )
    }

    fn new(kind: Kind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }

    /// The text given was not PEM.
    pub fn is_not_pem(&self) -> bool {
        self.kind == Kind::NotPem
    }

    /// The PEM held no certificate, or no private key.
    pub fn is_missing_part(&self) -> bool {
        matches!(self.kind, Kind::NoCertificate | Kind::NoKey)
    }

    /// A name is not a DNS name (or IP address) a certificate or a server
    /// name can hold.
    pub fn is_bad_name(&self) -> bool {
        self.kind == Kind::BadName
    }
}

fn pem_label(what: &str) -> &'static str {
    if what.contains("key") {
        "PRIVATE KEY"
    } else {
        "CERTIFICATE"
    }
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for TlsError {}
