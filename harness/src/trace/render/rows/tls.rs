//! The rows of a TLS handshake ([`crate::tls`]): what it negotiated, or
//! why it failed and the alerts by their RFC 8446 names; and its messages
//! (the hellos, the certificates, octets that are not a hello: the
//! words are in [`super::tls_message`]).

use super::tls_message;
use crate::recorder::event::{
    alert_name, suite_name, version_name, Event, EventKind, TlsFailure, TlsOutcome, TlsSide,
};

/// The `where` column and text of a TLS event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    if let EventKind::TlsMessage(m) = &e.kind {
        return Some((format!("{}→{}", e.host, m.peer), tls_message::text(m)));
    }
    let EventKind::TlsHandshake(h) = &e.kind else {
        return None;
    };
    let side = side_name(h.side);
    let text = match &h.outcome {
        TlsOutcome::Done {
            version,
            cipher_suite,
            h2,
            resumed,
            client_certificate,
        } => format!(
            "c{} TLS handshake done ({side}): {} {}, ALPN {}{}{}",
            h.conn,
            version_name(*version),
            suite_name(*cipher_suite),
            if *h2 { "h2" } else { "none" },
            if *resumed { ", resumed" } else { "" },
            if *client_certificate {
                ", client certificate"
            } else {
                ""
            },
        ),
        TlsOutcome::Failed {
            failure,
            alert_sent,
            alert_received,
        } => {
            let mut text = format!(
                "c{} TLS handshake failed ({side}): {}",
                h.conn,
                failure_words(*failure)
            );
            if let Some(a) = alert_sent {
                text.push_str(&format!("; sent alert {}", alert_name(*a)));
            }
            if let Some(a) = alert_received {
                text.push_str(&format!("; received alert {}", alert_name(*a)));
            }
            text
        }
    };
    Some((format!("{}→{}", e.host, h.peer), text))
}

/// An end's name in a TLS row.
pub(super) fn side_name(side: TlsSide) -> &'static str {
    match side {
        TlsSide::Client => "client",
        TlsSide::Server => "server",
    }
}

fn failure_words(f: TlsFailure) -> &'static str {
    match f {
        TlsFailure::CertificateExpired => "the peer's certificate has expired",
        TlsFailure::CertificateNotYetValid => "the peer's certificate is not valid yet",
        TlsFailure::WrongName => "the server's certificate is not for the name asked for",
        TlsFailure::UnknownCa => "the peer's certificate is signed by an unknown CA",
        TlsFailure::BadCertificate => "the peer's certificate is invalid",
        TlsFailure::NoClientCertificate => "the client sent no certificate",
        TlsFailure::NoApplicationProtocol => "no ALPN protocol in common",
        TlsFailure::AlertReceived => "the peer refused the handshake",
        TlsFailure::NotTls => "the peer's octets are not TLS records: it does not speak TLS",
        TlsFailure::Undecodable => "the peer sent a TLS message this end cannot decode",
        TlsFailure::NotTls13 => "the peer speaks TLS, but no version this end accepts",
        TlsFailure::Incompatible => {
            "the peer speaks TLS, but offers nothing this end accepts (cipher suites, key exchange groups, signature schemes or a required extension)"
        }
        TlsFailure::Closed => "the connection closed during the handshake",
        TlsFailure::Abandoned => {
            "given up by the caller mid-handshake (a connect timeout, or the channel dropped)"
        }
        TlsFailure::Other => "rustls refused the handshake",
    }
}
