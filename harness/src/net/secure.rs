//! A connection's TLS handshake, between its TCP connect (or accept) and
//! its wrapping, recorded under the connection's id.

use std::io;

use super::conn::Opened;
use super::socket::Socket;
use super::SimConn;
use crate::recorder::event::{EventKind, TlsHandshake};
use crate::tls::TlsEnd;

/// Runs `tls`'s handshake on `stream` (the TCP stream `opened` was opened
/// on), records how it ended at this end's host, and wraps the TLS stream;
/// a failed handshake returns tokio-rustls's error (the TCP stream is
/// dropped, which closes it).
pub(super) async fn handshake(
    opened: Opened,
    stream: turmoil::net::TcpStream,
    tls: &TlsEnd,
) -> io::Result<SimConn> {
    let (done, outcome) = tls.handshake(stream).await;
    let end = opened.end();
    end.wiring.tap.recorder.push(
        &end.me,
        EventKind::TlsHandshake(Box::new(TlsHandshake {
            conn: opened.conn(),
            peer: (&end.peer).into(),
            side: tls.side(),
            outcome,
        })),
    );
    Ok(opened.finish(Socket::Tls(Box::new(done?))))
}
