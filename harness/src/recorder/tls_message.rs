//! The payload of a TLS handshake message's event
//! ([`EventKind::TlsMessage`](super::event::EventKind::TlsMessage)): a
//! ClientHello or ServerHello as it crossed the wire (read from the
//! connection's first plaintext records, RFC 8446 §5.1), a certificate
//! sent or received, or bytes where a hello should have been that are
//! not one. Only the fields a seed fixes: never the random, the session
//! id, key shares or any key material.

use serde::Serialize;

use super::host_name::HostName;
use super::tls::TlsSide;

/// One TLS handshake message of a connection, recorded at the end that
/// sent it (a hello, when its bytes are written; the server's
/// certificate, when rustls chose it) or received it (a peer's
/// certificate, once the handshake is done; bytes that are not a hello,
/// when read).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TlsMessage {
    /// The connection (`c1` is 1).
    #[serde(serialize_with = "super::event::conn_id")]
    pub conn: u32,
    /// The host at the other end.
    pub peer: HostName,
    /// Which end recorded it.
    pub side: TlsSide,
    /// The message.
    pub message: TlsMessageKind,
}

/// Which handshake message, and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TlsMessageKind {
    /// This end (the client) sent a ClientHello (RFC 8446 §4.1.2); a
    /// second one answers a HelloRetryRequest.
    ClientHello(ClientHelloFields),
    /// This end (the server) sent a ServerHello (RFC 8446 §4.1.3).
    ServerHello(ServerHelloFields),
    /// This end (the server) sent a HelloRetryRequest: a ServerHello whose
    /// random is the fixed value of RFC 8446 §4.1.3, asking for another
    /// key share. Not reachable with the configs the harness builds (both
    /// ends use rustls's ring provider, whose first key share group,
    /// X25519, the server accepts); parsed and recorded if it comes.
    HelloRetryRequest(ServerHelloFields),
    /// This end sent this certificate (RFC 8446 §4.4.2): a server, the
    /// one its `ResolvesServerCert` chose, after a ServerHello that
    /// resumes no session; a client under mTLS, its identity, when the
    /// server asked for one (§4.3.2). Recorded for a failed handshake
    /// too: the certificate the peer refused.
    CertificateSent(CertificateFields),
    /// This end received the peer's certificate (its end-entity
    /// certificate, rustls's `peer_certificates`), recorded once the
    /// handshake is done and not resumed.
    CertificateReceived(CertificateFields),
    /// This end read bytes where the peer's hello should be, and they are
    /// not one (or the connection ended inside it).
    Unreadable(UnreadableHello),
}

/// What a ClientHello offers (RFC 8446 §4.1.2, §4.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientHelloFields {
    /// `legacy_version`: 0x0303 (TLS 1.2) in every TLS 1.3 hello.
    pub legacy_version: u16,
    /// The `supported_versions` extension's list, in order (0x0304 is
    /// TLS 1.3); empty without the extension (a TLS 1.2 client).
    pub supported_versions: Vec<u16>,
    /// `cipher_suites`, IANA code points in order.
    pub cipher_suites: Vec<u16>,
    /// The `server_name` extension's host name (SNI, RFC 6066 §3).
    pub server_name: Option<String>,
    /// The ALPN protocols offered (RFC 7301 §3.1), in order.
    pub alpn: Vec<String>,
    /// Whether it offers a session to resume (`pre_shared_key`, §4.2.11).
    pub resumption_offered: bool,
}

/// What a ServerHello (or HelloRetryRequest) selects (RFC 8446 §4.1.3).
/// The ALPN protocol is not here: TLS 1.3 sends it encrypted, in
/// EncryptedExtensions (§4.3.1); the handshake's done event has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ServerHelloFields {
    /// `legacy_version`: 0x0303.
    pub legacy_version: u16,
    /// The `supported_versions` extension's selected version (0x0304 is
    /// TLS 1.3); `None` without it (a TLS 1.2 server).
    pub selected_version: Option<u16>,
    /// The cipher suite selected, its IANA code point.
    pub cipher_suite: u16,
    /// Whether it resumes the session offered (`pre_shared_key`).
    pub resumes: bool,
}

/// A certificate, its end-entity fields (RFC 5280 §4.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CertificateFields {
    /// The subject's distinguished name, RFC 4514 style (`CN=store`),
    /// attributes in the certificate's order.
    pub subject: String,
    /// The issuer's distinguished name, written as `subject` is: the CA
    /// that signed it (for a [`Ca`](crate::tls::Ca),
    /// `CN=grpc-chaos test CA <seed>`).
    pub issuer: String,
    /// The serial number, lowercase hex.
    pub serial: String,
    /// `notBefore`, in seconds of *simulated* time from the run's start
    /// (the sim's epoch): negative before it.
    pub not_before_s: i64,
    /// `notAfter` (the last second it is valid, RFC 5280 §4.1.2.5), in
    /// seconds of simulated time from the run's start.
    pub not_after_s: i64,
}

/// Bytes read where a hello should be that are not one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadableHello {
    /// Which hello this end waited for: [`TlsSide::Client`] is a
    /// ClientHello (what a server reads first), [`TlsSide::Server`] a
    /// ServerHello.
    pub expected: TlsSide,
    /// What is wrong with them.
    pub problem: HelloProblem,
    /// How many octets this end had read when it saw it.
    pub octets: u32,
}

/// What is wrong with the bytes where a hello should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HelloProblem {
    /// The first record's content type is not handshake (22, RFC 8446
    /// §5.1): the peer does not speak TLS (an HTTP/2 preface begins with
    /// `P`, 0x50).
    NotTlsRecord {
        /// The first octet.
        content_type: u8,
    },
    /// A record length over 2^14 + 256 (§5.1, §5.2's bound).
    RecordTooLong {
        /// The length field.
        length: u16,
    },
    /// A handshake message that is not the hello expected.
    NotAHello {
        /// Its `msg_type` (§4: 1 is client_hello, 2 server_hello).
        msg_type: u8,
    },
    /// The hello's fields do not parse: a length runs past its end, or
    /// a field is shorter than the RFC's minimum.
    Malformed {
        /// The offset in the hello's body where parsing stopped.
        at: u32,
    },
    /// The connection ended (EOF or an error) inside the hello, or before
    /// any octet of it when `octets` is 0.
    Truncated,
}
