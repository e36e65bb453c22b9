//! The rows of a TLS handshake ([`crate::tls`]): what it negotiated, or
//! why it failed and the alerts by their RFC 8446 names.

use crate::recorder::event::{Event, EventKind, TlsFailure, TlsOutcome, TlsSide};

/// The `where` column and text of a TLS event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    let EventKind::TlsHandshake(h) = &e.kind else {
        return None;
    };
    let side = match h.side {
        TlsSide::Client => "client",
        TlsSide::Server => "server",
    };
    let text = match &h.outcome {
        TlsOutcome::Done {
            cipher_suite,
            h2,
            resumed,
            client_certificate,
        } => format!(
            "c{} TLS handshake done ({side}): TLS 1.3 {}, ALPN {}{}{}",
            h.conn,
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
        TlsFailure::NotTls => "the peer does not speak TLS 1.3",
        TlsFailure::Closed => "the connection closed during the handshake",
        TlsFailure::Abandoned => "given up by the caller mid-handshake (its connect timeout)",
        TlsFailure::Other => "rustls refused the handshake",
    }
}

/// The IANA name of a TLS 1.3 cipher suite (RFC 8446 §B.4).
fn suite_name(code: u16) -> String {
    match code {
        0x1301 => "TLS_AES_128_GCM_SHA256".to_owned(),
        0x1302 => "TLS_AES_256_GCM_SHA384".to_owned(),
        0x1303 => "TLS_CHACHA20_POLY1305_SHA256".to_owned(),
        other => format!("cipher suite {other:#06x}"),
    }
}

/// An alert's name as RFC 8446 §6 writes it (the alert registry,
/// `enum { close_notify(0), … }` in §6).
fn alert_name(code: u8) -> String {
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
