//! A connection's TLS handshake, between its TCP connect (or accept) and
//! its wrapping, recorded under the connection's id.

use std::io;
use std::sync::Arc;

use super::conn::Opened;
use super::socket::Socket;
use super::SimConn;
use crate::recorder::event::{EventKind, TlsFailure, TlsHandshake, TlsOutcome, TlsSide};
use crate::recorder::Recorder;
use crate::tls::{Gate, Sink, TlsEnd};

/// Runs `tls`'s handshake on `stream` (the TCP stream `opened` was opened
/// on), records how it ended at this end's host, and wraps the TLS stream;
/// a failed handshake returns tokio-rustls's error (the TCP stream is
/// dropped, which closes it). Dropped mid-handshake (tonic's
/// `connect_timeout` around the connector), it records the handshake as
/// abandoned.
pub(super) async fn handshake(
    opened: Opened,
    stream: turmoil::net::TcpStream,
    tls: &TlsEnd,
) -> io::Result<SimConn> {
    let end = opened.end();
    let mut record = Record {
        recorder: end.wiring.tap.recorder.clone(),
        host: end.me.clone(),
        event: Some(TlsHandshake {
            conn: opened.conn(),
            peer: (&end.peer).into(),
            side: tls.side(),
            outcome: TlsOutcome::Failed {
                failure: TlsFailure::Abandoned,
                alert_sent: None,
                alert_received: None,
            },
        }),
    };
    let sink = Sink {
        recorder: record.recorder.clone(),
        host: record.host.clone(),
        conn: opened.conn(),
        peer: (&end.peer).into(),
        side: tls.side(),
    };
    let gate = Gate::new(
        end.wiring.tap.links.clone(),
        end.me.clone(),
        end.peer.clone(),
    );
    let (done, outcome) = tls.handshake(stream, sink, gate).await;
    record.push(outcome);
    Ok(opened.finish(Socket::Tls(Box::new(done?))))
}

/// The handshake's event, pushed once: with its outcome, or as abandoned
/// when the handshake's future is dropped first.
struct Record {
    recorder: Arc<Recorder>,
    host: Arc<str>,
    event: Option<TlsHandshake>,
}

impl Record {
    fn push(&mut self, outcome: TlsOutcome) {
        if let Some(mut event) = self.event.take() {
            event.outcome = outcome;
            self.recorder
                .push(&self.host, EventKind::TlsHandshake(Box::new(event)));
        }
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        // A client's dial given up by its caller. A server's handshake is
        // dropped only with its host (a crash, a restart), which the trace
        // already says.
        if let Some(event) = self.event.take().filter(|e| e.side == TlsSide::Client) {
            self.recorder
                .push(&self.host, EventKind::TlsHandshake(Box::new(event)));
        }
    }
}
