//! The words of a TLS handshake message's row
//! ([`EventKind::TlsMessage`](crate::recorder::event::EventKind::TlsMessage)):
//! the hellos' fields by their RFC 8446 names, a certificate's subject,
//! serial and validity in simulated seconds, and what is wrong with
//! octets that are not a hello.

use super::tls::side_name;
use crate::recorder::event::{
    suite_name, CertificateFields, ClientHelloFields, HelloProblem, ServerHelloFields, TlsMessage,
    TlsMessageKind, TlsSide, UnreadableHello,
};

/// The row's text: `c1 TLS ClientHello sent (client): …`.
pub(super) fn text(m: &TlsMessage) -> String {
    let side = side_name(m.side);
    let (what, body) = match &m.message {
        TlsMessageKind::ClientHello(h) => ("ClientHello sent", client_hello(h)),
        TlsMessageKind::ServerHello(h) => ("ServerHello sent", server_hello(h)),
        TlsMessageKind::HelloRetryRequest(h) => ("HelloRetryRequest sent", server_hello(h)),
        TlsMessageKind::CertificateSent(c) => ("certificate sent", certificate(c)),
        TlsMessageKind::CertificateReceived(c) => ("certificate received", certificate(c)),
        TlsMessageKind::Unreadable(u) => (unreadable_title(u), unreadable(u)),
    };
    format!("c{} TLS {what} ({side}): {body}", m.conn)
}

fn version(v: u16) -> String {
    crate::recorder::event::version_name(v)
}

fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(" ")
}

fn client_hello(h: &ClientHelloFields) -> String {
    let versions = if h.supported_versions.is_empty() {
        "no supported_versions".to_owned()
    } else {
        format!(
            "supported_versions {}",
            list(h.supported_versions.iter().map(|v| version(*v)))
        )
    };
    let sni = h
        .server_name
        .as_ref()
        .map_or("no SNI".to_owned(), |n| format!("SNI {n}"));
    let alpn = if h.alpn.is_empty() {
        "no ALPN".to_owned()
    } else {
        format!("ALPN {}", h.alpn.join(" "))
    };
    format!(
        "{versions} (legacy_version {}), cipher_suites {}, {sni}, {alpn}{}",
        version(h.legacy_version),
        list(h.cipher_suites.iter().map(|s| suite_name(*s))),
        if h.resumption_offered {
            ", offers a session to resume (pre_shared_key)"
        } else {
            ""
        }
    )
}

fn server_hello(h: &ServerHelloFields) -> String {
    let version = match h.selected_version {
        Some(v) => format!("{} (supported_versions)", version(v)),
        None => format!(
            "{} (legacy_version, no supported_versions)",
            version(h.legacy_version)
        ),
    };
    format!(
        "{version}, {}{}",
        suite_name(h.cipher_suite),
        if h.resumes {
            ", resumes the session (pre_shared_key)"
        } else {
            ""
        }
    )
}

fn certificate(c: &CertificateFields) -> String {
    format!(
        "{} (issuer {}), serial {}, notBefore t={} s, notAfter t={} s (simulated)",
        c.subject, c.issuer, c.serial, c.not_before_s, c.not_after_s
    )
}

fn hello_name(expected: TlsSide) -> &'static str {
    match expected {
        TlsSide::Client => "ClientHello",
        TlsSide::Server => "ServerHello",
    }
}

fn unreadable_title(u: &UnreadableHello) -> &'static str {
    match (u.expected, u.problem) {
        (TlsSide::Client, HelloProblem::Truncated) => "ClientHello cut short",
        (TlsSide::Server, HelloProblem::Truncated) => "ServerHello cut short",
        (TlsSide::Client, _) => "ClientHello unreadable",
        (TlsSide::Server, _) => "ServerHello unreadable",
    }
}

fn unreadable(u: &UnreadableHello) -> String {
    let hello = hello_name(u.expected);
    let n = u.octets;
    match u.problem {
        HelloProblem::NotTlsRecord { content_type } => format!(
            "the first octet, {content_type:#04x}{}, is no TLS record type (a handshake record is 22, RFC 8446 §5.1); {n} octets read",
            printable(content_type)
        ),
        HelloProblem::RecordTooLong { length } => format!(
            "a record of {length} octets, over TLS's 16640 (RFC 8446 §5.2); {n} octets read"
        ),
        HelloProblem::NotAHello { msg_type } => {
            format!("handshake message type {msg_type} where a {hello} should be; {n} octets read")
        }
        HelloProblem::Malformed { at } => {
            format!("its fields do not parse (at octet {at} of its body); {n} octets read")
        }
        HelloProblem::Truncated if n == 0 => {
            format!("the connection ended before any octet of a {hello}")
        }
        HelloProblem::Truncated => format!("the connection ended after {n} octets of it"),
    }
}

/// ` ('P')` for a printable ASCII octet, which names what a plaintext
/// peer sent (an HTTP/2 preface begins `PRI`).
fn printable(octet: u8) -> String {
    if octet.is_ascii_graphic() {
        format!(" ('{}')", octet as char)
    } else {
        String::new()
    }
}
