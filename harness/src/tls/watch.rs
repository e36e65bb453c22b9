//! What a connection's handshake messages say, read from the octets its
//! TLS end writes and reads ([`Flight`]) and recorded as
//! [`EventKind::TlsMessage`] at that end's host, as they cross the socket.

use std::sync::Arc;

use super::hello::{Flight, Found};
use super::rotation::Chosen;
use crate::recorder::event::{
    EventKind, HostName, TlsMessage, TlsMessageKind, TlsSide, UnreadableHello,
};
use crate::recorder::Recorder;

/// Where one end's handshake messages are recorded.
#[derive(Clone)]
pub(crate) struct Sink {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) host: Arc<str>,
    pub(crate) conn: u32,
    pub(crate) peer: HostName,
    pub(crate) side: TlsSide,
}

impl Sink {
    pub(crate) fn push(&self, message: TlsMessageKind) {
        let event = TlsMessage {
            conn: self.conn,
            peer: self.peer,
            side: self.side,
            message,
        };
        self.recorder
            .push(&*self.host, EventKind::TlsMessage(Box::new(event)));
    }
}

/// One end's two directions during its handshake. The hellos this end
/// writes are recorded; of what it reads, only what is not the hello it
/// waits for (the peer records its own hellos).
pub(crate) struct Watch {
    sink: Sink,
    sent: Flight,
    received: Flight,
    /// The resolver's choice: a server's, taken at its ServerHello that
    /// resumes nothing; a client's, at the write that follows it (its
    /// encrypted Certificate).
    chosen: Chosen,
}

impl Watch {
    pub(crate) fn new(sink: Sink, chosen: Chosen) -> Self {
        let server = sink.side == TlsSide::Server;
        Self {
            sink,
            sent: Flight::sent(),
            received: Flight::received(server),
            chosen,
        }
    }

    /// The sink, for what is recorded once the handshake ends.
    pub(crate) fn sink(&self) -> &Sink {
        &self.sink
    }

    /// `bytes` were written to the socket.
    pub(crate) fn wrote(&mut self, bytes: &[u8]) {
        for found in self.sent.feed(bytes) {
            match found {
                Found::Hello(hello) => {
                    let fresh = matches!(&hello, TlsMessageKind::ServerHello(h) if !h.resumes);
                    self.sink.push(hello);
                    if fresh {
                        self.certificate_sent();
                    }
                }
                // Not expected of rustls: recorded as what it is.
                Found::Problem(problem, octets) => self.unreadable(self.sink.side, problem, octets),
            }
        }
        if self.sink.side == TlsSide::Client {
            self.certificate_sent();
        }
    }

    /// `bytes` were read from the socket; empty at its end.
    pub(crate) fn read(&mut self, bytes: &[u8]) {
        let found = if bytes.is_empty() {
            self.received.end().into_iter().collect()
        } else {
            self.received.feed(bytes)
        };
        let expected = match self.sink.side {
            TlsSide::Server => TlsSide::Client,
            TlsSide::Client => TlsSide::Server,
        };
        for found in found {
            match found {
                Found::Problem(problem, octets) => self.unreadable(expected, problem, octets),
                // The client's next flight is TLS 1.2's: its Finished is
                // encrypted, behind its ChangeCipherSpec.
                Found::Hello(hello) if super::hello::chooses_tls12(&hello) => self.sent.tls12(),
                Found::Hello(_) => {}
            }
        }
    }

    /// Reading failed: the same as its end, for a hello cut short.
    pub(crate) fn read_failed(&mut self) {
        self.read(&[]);
    }

    fn unreadable(
        &self,
        expected: TlsSide,
        problem: crate::recorder::event::HelloProblem,
        octets: u32,
    ) {
        self.sink.push(TlsMessageKind::Unreadable(UnreadableHello {
            expected,
            problem,
            octets,
        }));
    }

    fn certificate_sent(&self) {
        let fields = self.chosen.lock().ok().and_then(|mut c| c.take());
        if let Some(fields) = fields {
            self.sink.push(TlsMessageKind::CertificateSent(fields));
        }
    }
}
