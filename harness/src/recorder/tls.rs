//! The payload of a TLS handshake's event
//! ([`EventKind::TlsHandshake`](super::event::EventKind::TlsHandshake)):
//! what was negotiated, or why it failed and which alert crossed the wire.
//! Never key material, certificates or ciphertext.

use serde::Serialize;

use super::host_name::HostName;

/// A TLS handshake on a connection ended, seen from one end (each end
/// records its own): recorded at that end's host, once its handshake
/// completed or failed (RFC 8446 §4; rustls through tokio-rustls).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsHandshake {
    /// The connection (`c1` is 1).
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The host at the other end.
    pub peer: HostName,
    /// Which end recorded it.
    pub side: TlsSide,
    /// How it ended.
    pub outcome: TlsOutcome,
}

/// Which end of a TLS connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsSide {
    /// The end that dialled (sent the ClientHello).
    Client,
    /// The server host.
    Server,
}

/// How a TLS handshake ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum TlsOutcome {
    /// Both ends have keys: application data (HTTP/2) flows.
    Done {
        /// The protocol version agreed, its code point (`0x0304` TLS 1.3,
        /// `0x0303` TLS 1.2; [`version_name`]). JSON: its name.
        #[serde(serialize_with = "named_version")]
        version: u16,
        /// The TLS cipher suite, its IANA code point (RFC 8446 §B.4:
        /// `0x1301` is TLS_AES_128_GCM_SHA256; [`suite_name`]). JSON: its
        /// name.
        #[serde(serialize_with = "suite")]
        cipher_suite: u16,
        /// Whether the peers agreed on ALPN `h2` (RFC 7301, RFC 9113 §3.2).
        h2: bool,
        /// A resumed session (RFC 8446 §2.2): no certificate was sent.
        resumed: bool,
        /// Whether the client presented a certificate (mTLS).
        client_certificate: bool,
    },
    /// The handshake failed.
    Failed {
        /// Why, as this end saw it.
        failure: TlsFailure,
        /// The fatal alert this end sent (RFC 8446 §6.2 code: 45 is
        /// certificate_expired; [`alert_name`]), when it sent one: rustls's
        /// choice for the error (`None` too where that choice is not
        /// known to the harness: see [`TlsFailure`]). JSON: its name.
        #[serde(serialize_with = "alert")]
        alert_sent: Option<u8>,
        /// The fatal alert this end received from the peer. JSON: its name.
        #[serde(serialize_with = "alert")]
        alert_received: Option<u8>,
    },
}

/// Why a TLS handshake failed, as one end saw it (rustls's `Error`,
/// narrowed to what a test asserts on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TlsFailure {
    /// The peer's certificate is past its notAfter at the simulated time
    /// (rustls `CertificateError::Expired`).
    CertificateExpired,
    /// The peer's certificate is before its notBefore
    /// (`CertificateError::NotValidYet`).
    CertificateNotYetValid,
    /// The server's certificate does not name the server name asked for
    /// (`CertificateError::NotValidForName`).
    WrongName,
    /// The peer's certificate chains to no trusted CA
    /// (`CertificateError::UnknownIssuer`).
    UnknownCa,
    /// Another problem with the peer's certificate.
    BadCertificate,
    /// The server requires a client certificate and the client sent none
    /// (`Error::NoCertificatesPresented`).
    NoClientCertificate,
    /// The server selects ALPN protocols and none of them is one the
    /// client offered (RFC 7301 §3.2; `Error::NoApplicationProtocol`).
    NoApplicationProtocol,
    /// The peer sent a fatal alert (its code is in `alert_received`).
    AlertReceived,
    /// The peer's octets are not TLS records: it does not speak TLS (a
    /// plaintext HTTP/2 peer; `Error::InvalidMessage(InvalidContentType)`
    /// or `UnknownProtocolVersion`, a record header TLS never writes).
    NotTls,
    /// The peer speaks TLS but sent a message this end cannot decode
    /// (another `Error::InvalidMessage`).
    Undecodable,
    /// The peer speaks TLS, but no version this end accepts (TLS 1.3
    /// only unless `tls_versions` says otherwise;
    /// `Error::PeerIncompatible` of a version: no `supported_versions`,
    /// TLS 1.2 only, or TLS 1.3 only at a TLS 1.2 end). The name is from
    /// when TLS 1.3 was the only version.
    NotTls13,
    /// The peer speaks TLS 1.3 but has nothing in common with this end
    /// that it requires: cipher suites, key exchange groups, signature
    /// schemes or a required extension (any other
    /// `Error::PeerIncompatible`).
    Incompatible,
    /// The connection closed before the handshake ended.
    Closed,
    /// The caller gave the dial up mid-handshake: tonic's
    /// `connect_timeout`, which bounds the connector and so the handshake,
    /// or the channel dropped while it dialled.
    Abandoned,
    /// Anything else rustls reported.
    Other,
}

/// The IANA name of a cipher suite rustls's ring provider has: TLS 1.3's
/// (RFC 8446 §B.4), TLS 1.2's ECDHE AEAD suites (RFC 5289 §3.2, RFC 7905
/// §2) and the renegotiation SCSV a TLS 1.2 ClientHello lists (RFC 5746
/// §3.3).
pub fn suite_name(code: u16) -> String {
    let name = match code {
        0x1301 => "TLS_AES_128_GCM_SHA256",
        0x1302 => "TLS_AES_256_GCM_SHA384",
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256",
        0xc02b => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        0xc02c => "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        0xc02f => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        0xc030 => "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        0xcca8 => "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        0xcca9 => "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
        0x00ff => "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
        other => return format!("cipher suite {other:#06x}"),
    };
    name.to_owned()
}

/// A protocol version's name (RFC 8446 §4.2.1, and its predecessors').
pub fn version_name(code: u16) -> String {
    match code {
        0x0304 => "TLS 1.3".to_owned(),
        0x0303 => "TLS 1.2".to_owned(),
        0x0302 => "TLS 1.1".to_owned(),
        0x0301 => "TLS 1.0".to_owned(),
        other => format!("version {other:#06x}"),
    }
}

fn named_version<S: serde::Serializer>(code: &u16, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&version_name(*code))
}

/// An alert's name as RFC 8446 §6 writes it (the alert registry,
/// `enum { close_notify(0), … }` in §6).
pub fn alert_name(code: u8) -> String {
    let name = match code {
        0 => "close_notify",
        10 => "unexpected_message",
        20 => "bad_record_mac",
        22 => "record_overflow",
        40 => "handshake_failure",
        42 => "bad_certificate",
        43 => "unsupported_certificate",
        44 => "certificate_revoked",
        45 => "certificate_expired",
        46 => "certificate_unknown",
        47 => "illegal_parameter",
        48 => "unknown_ca",
        49 => "access_denied",
        50 => "decode_error",
        51 => "decrypt_error",
        70 => "protocol_version",
        71 => "insufficient_security",
        80 => "internal_error",
        86 => "inappropriate_fallback",
        90 => "user_canceled",
        109 => "missing_extension",
        110 => "unsupported_extension",
        112 => "unrecognized_name",
        113 => "bad_certificate_status_response",
        115 => "unknown_psk_identity",
        116 => "certificate_required",
        120 => "no_application_protocol",
        other => return format!("alert {other}"),
    };
    name.to_owned()
}

fn suite<S: serde::Serializer>(code: &u16, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&suite_name(*code))
}

fn alert<S: serde::Serializer>(code: &Option<u8>, s: S) -> Result<S::Ok, S::Error> {
    match code {
        Some(code) => s.serialize_str(&alert_name(*code)),
        None => s.serialize_none(),
    }
}
