//! One TLS handshake on a simulated TCP connection, below the wire tap,
//! and the event that records how it ended.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use rustls::{
    AlertDescription, CertificateError, CommonState, Error as RustlsError, InvalidMessage,
    PeerIncompatible,
};
use tokio_rustls::{TlsAcceptor, TlsConnector};
use turmoil::net::TcpStream;

use super::cert_fields::certificate_fields;
use super::rotation::Chosen;
use super::seeded::{Seeded, Stream};
use super::watch::{Sink, Watch};
use super::writev::{Gate, Writev};
use crate::recorder::event::{TlsFailure, TlsMessageKind, TlsOutcome, TlsSide};

/// A TLS connection over turmoil's TCP (with gathering writes, see
/// [`Writev`]).
pub(crate) type TlsStream = tokio_rustls::TlsStream<Writev>;

/// One end's TLS, built once per channel or per start of a server host
/// (so a channel's session cache lives as long as the channel, as with
/// tonic's `ClientTlsConfig`).
#[derive(Clone)]
pub(crate) enum TlsEnd {
    Client {
        connector: TlsConnector,
        name: ServerName<'static>,
        /// Where its identity's resolver leaves the certificate it sends.
        chosen: Chosen,
        /// The run's seed, which its random bytes come from.
        seed: u64,
    },
    Server {
        acceptor: TlsAcceptor,
        /// Where its certificate resolver leaves its choice.
        chosen: Chosen,
        /// How long the server holds its first flight, *simulated* time.
        stall: Duration,
        /// The run's seed, which its random bytes come from.
        seed: u64,
    },
}

impl TlsEnd {
    pub(crate) fn client(
        config: Arc<rustls::ClientConfig>,
        name: ServerName<'static>,
        chosen: Chosen,
        seed: u64,
    ) -> Self {
        Self::Client {
            connector: TlsConnector::from(config),
            name,
            chosen,
            seed,
        }
    }

    pub(crate) fn server(
        config: Arc<rustls::ServerConfig>,
        chosen: Chosen,
        stall: Duration,
        seed: u64,
    ) -> Self {
        Self::Server {
            acceptor: TlsAcceptor::from(config),
            chosen,
            stall,
            seed,
        }
    }

    /// Which end this is.
    pub(crate) fn side(&self) -> TlsSide {
        match self {
            Self::Client { .. } => TlsSide::Client,
            Self::Server { .. } => TlsSide::Server,
        }
    }

    /// Runs the handshake on `stream`: the TLS stream and how it went, or
    /// the error (tokio-rustls's `io::Error`, rustls's `Error` inside) and
    /// how it failed. Its hellos, the certificates sent and received, and
    /// octets that are not a hello are recorded to `sink` as they cross.
    /// Its writes wait while `gate`'s link holds bytes (a partition, a
    /// pause).
    pub(crate) async fn handshake(
        &self,
        stream: TcpStream,
        sink: Sink,
        gate: Gate,
    ) -> (Result<TlsStream, io::Error>, TlsOutcome) {
        let recorder = &sink.recorder;
        if let Self::Server { stall, .. } = self {
            if !stall.is_zero() {
                // The ClientHello waits unread in the socket: the server's
                // whole first flight (ServerHello … Finished, RFC 8446 §2)
                // leaves `stall` later.
                let until = recorder.now().saturating_add(*stall);
                recorder.timer_at(until);
                tokio::time::sleep(*stall).await;
            }
        }
        let (chosen, seed) = match self {
            Self::Server { chosen, seed, .. } | Self::Client { chosen, seed, .. } => {
                (chosen.clone(), *seed)
            }
        };
        // This end's random bytes: drawn while rustls runs the handshake
        // (its hello, key share, session id, tickets), from its own stream.
        let random = Stream::new(seed, &sink.host, sink.side, sink.conn);
        let stream = Writev::new(stream, Watch::new(sink, chosen), gate);
        let done = Seeded::new(random, async {
            match self {
                Self::Client {
                    connector, name, ..
                } => connector
                    .connect(name.clone(), stream)
                    .await
                    .map(tokio_rustls::TlsStream::Client),
                Self::Server { acceptor, .. } => acceptor
                    .accept(stream)
                    .await
                    .map(tokio_rustls::TlsStream::Server),
            }
        })
        .await;
        match done {
            Ok(mut tls) => {
                // From here the wire tap holds the connection's frames.
                tls.get_mut().0.gate = None;
                let outcome = done_outcome(tls.get_ref().1, self.side());
                if let Some(watch) = tls.get_mut().0.watch.take() {
                    certificate_received(tls.get_ref().1, &outcome, watch.sink());
                }
                (Ok(tls), outcome)
            }
            Err(e) => {
                let outcome = failed_outcome(&e);
                (Err(e), outcome)
            }
        }
    }
}

fn done_outcome(state: &CommonState, side: TlsSide) -> TlsOutcome {
    TlsOutcome::Done {
        version: state.protocol_version().map_or(0, u16::from),
        cipher_suite: state
            .negotiated_cipher_suite()
            .map_or(0, |s| u16::from(s.suite())),
        h2: state.alpn_protocol() == Some(super::config::ALPN_H2),
        resumed: state.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
        // Seen by the server only (its peer's certificates are the
        // client's); the client records `false`.
        client_certificate: side == TlsSide::Server
            && state.peer_certificates().is_some_and(|c| !c.is_empty()),
    }
}

/// The peer's end-entity certificate, once a handshake that sent one is
/// done (a resumed one sent none: rustls then keeps the first's).
fn certificate_received(state: &CommonState, outcome: &TlsOutcome, sink: &Sink) {
    let TlsOutcome::Done { resumed: false, .. } = outcome else {
        return;
    };
    let fields = state
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|der| certificate_fields(der));
    if let Some(fields) = fields {
        sink.push(TlsMessageKind::CertificateReceived(fields));
    }
}

/// How a failed handshake failed, from the error tokio-rustls returned
/// (`io::ErrorKind::InvalidData` around rustls's `Error`; an EOF or a
/// reset of turmoil's stream otherwise). The alert this end sent is
/// rustls's choice for the error, read in rustls 0.23 `error.rs`
/// (`impl From<CertificateError> for AlertDescription`) and
/// `common_state.rs` / `server/tls13.rs` (`NoCertificatesPresented` →
/// `certificate_required`), `impl From<InvalidMessage> for
/// AlertDescription` (a record that is not TLS → `decode_error`) and
/// `server/hs.rs` (`NoApplicationProtocol` → `no_application_protocol`).
/// Sent is what rustls queued: whether it reached the peer is the peer's
/// own event (`alert_received`).
fn failed_outcome(e: &io::Error) -> TlsOutcome {
    let rustls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<RustlsError>());
    let (failure, sent, received) = match rustls {
        Some(RustlsError::InvalidCertificate(c)) => (
            cert_failure(c),
            Some(AlertDescription::from(c.clone())),
            None,
        ),
        Some(RustlsError::NoCertificatesPresented) => (
            TlsFailure::NoClientCertificate,
            Some(AlertDescription::CertificateRequired),
            None,
        ),
        Some(RustlsError::AlertReceived(alert)) => (TlsFailure::AlertReceived, None, Some(*alert)),
        Some(RustlsError::InvalidMessage(m)) => {
            (invalid_message(m), Some(AlertDescription::from(*m)), None)
        }
        Some(RustlsError::NoApplicationProtocol) => (
            TlsFailure::NoApplicationProtocol,
            Some(AlertDescription::NoApplicationProtocol),
            None,
        ),
        Some(RustlsError::PeerIncompatible(p)) => incompatible(p),
        Some(_) => (TlsFailure::Other, None, None),
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe => (TlsFailure::Closed, None, None),
            _ => (TlsFailure::Other, None, None),
        },
    };
    TlsOutcome::Failed {
        failure,
        alert_sent: sent.map(u8::from),
        alert_received: received.map(u8::from),
    }
}

/// A message rustls could not decode: octets that are no TLS record at
/// all (a content type or record version TLS never writes, RFC 8446
/// §5.1), or a TLS message it cannot parse.
fn invalid_message(m: &InvalidMessage) -> TlsFailure {
    match m {
        InvalidMessage::InvalidContentType | InvalidMessage::UnknownProtocolVersion => {
            TlsFailure::NotTls
        }
        _ => TlsFailure::Undecodable,
    }
}

/// A peer that speaks TLS without what this end requires, and the alert
/// rustls 0.23 sends for it (`server/hs.rs`, `server/tls13.rs`,
/// `client/hs.rs`: `send_fatal_alert(ProtocolVersion, …)` for the
/// versions, `HandshakeFailure` or `IllegalParameter` for the rest; read).
fn incompatible(
    p: &PeerIncompatible,
) -> (
    TlsFailure,
    Option<AlertDescription>,
    Option<AlertDescription>,
) {
    use PeerIncompatible as P;
    match p {
        P::SupportedVersionsExtensionRequired
        | P::Tls12NotOffered
        | P::Tls12NotOfferedOrEnabled
        | P::Tls13RequiredForQuic => (
            TlsFailure::NotTls13,
            Some(AlertDescription::ProtocolVersion),
            None,
        ),
        P::ServerDoesNotSupportTls12Or13 | P::ServerTlsVersionIsDisabledByOurConfig => {
            (TlsFailure::NotTls13, None, None)
        }
        P::NullCompressionRequired | P::UncompressedEcPointsRequired => (
            TlsFailure::Incompatible,
            Some(AlertDescription::IllegalParameter),
            None,
        ),
        P::ExtendedMasterSecretExtensionRequired
        | P::IncorrectCertificateTypeExtension
        | P::KeyShareExtensionRequired
        | P::NoSignatureSchemesInCommon
        | P::SignatureAlgorithmsExtensionRequired => (
            TlsFailure::Incompatible,
            Some(AlertDescription::HandshakeFailure),
            None,
        ),
        _ => (TlsFailure::Incompatible, None, None),
    }
}

fn cert_failure(c: &CertificateError) -> TlsFailure {
    match c {
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            TlsFailure::CertificateExpired
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            TlsFailure::CertificateNotYetValid
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            TlsFailure::WrongName
        }
        CertificateError::UnknownIssuer => TlsFailure::UnknownCa,
        _ => TlsFailure::BadCertificate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(e: RustlsError) -> TlsOutcome {
        failed_outcome(&io::Error::new(io::ErrorKind::InvalidData, e))
    }

    fn failed(failure: TlsFailure, sent: Option<AlertDescription>) -> TlsOutcome {
        TlsOutcome::Failed {
            failure,
            alert_sent: sent.map(u8::from),
            alert_received: None,
        }
    }

    #[test]
    fn octets_that_are_not_tls_are_told_from_a_tls_peer_of_another_version() {
        use AlertDescription as A;
        // What rustls says of an HTTP/2 preface or SETTINGS frame (measured
        // in tests/tests/server/tls/certificate_faults.rs).
        assert_eq!(
            outcome(RustlsError::InvalidMessage(
                InvalidMessage::InvalidContentType
            )),
            failed(TlsFailure::NotTls, Some(A::DecodeError))
        );
        assert_eq!(
            outcome(RustlsError::InvalidMessage(InvalidMessage::MessageTooShort)),
            failed(TlsFailure::Undecodable, Some(A::DecodeError))
        );
        // A TLS 1.2-only client at a TLS 1.3 server: no supported_versions.
        assert_eq!(
            outcome(RustlsError::PeerIncompatible(
                PeerIncompatible::SupportedVersionsExtensionRequired
            )),
            failed(TlsFailure::NotTls13, Some(A::ProtocolVersion))
        );
        assert_eq!(
            outcome(RustlsError::PeerIncompatible(
                PeerIncompatible::NoSignatureSchemesInCommon
            )),
            failed(TlsFailure::Incompatible, Some(A::HandshakeFailure))
        );
    }
}
