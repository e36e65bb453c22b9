//! The hello reader on the octets rustls writes (the harness's own
//! configs), cut at every length, changed, and on octets that are not
//! TLS: every outcome a [`Found`], never a panic.

use std::sync::Arc;

use rustls::pki_types::ServerName;
use rustls::{ClientConnection, ServerConnection};

use super::*;
use crate::recorder::event::TlsSide;
use crate::recorder::Recorder;
use crate::tls::clock::SimClock;
use crate::tls::seeded::{with_stream, Stream};
use crate::tls::{Ca, ClientTls, ServerTls};

/// A ClientHello rustls writes with the harness's client config, and the
/// server's first flight in answer (ServerHello, ChangeCipherSpec, then
/// encrypted records).
fn flights() -> (Vec<u8>, Vec<u8>) {
    let ca = Ca::new(3);
    let clock = SimClock(Arc::new(Recorder::default()));
    let (server, _) = ServerTls::new(ca.leaf("store").identity().unwrap())
        .config(&clock)
        .unwrap();
    let (client, _) = ClientTls::new()
        .ca_certificate(ca.certificate())
        .config(&clock, "store")
        .unwrap();
    let name = ServerName::try_from("store").unwrap();
    // Each end's random bytes from its seeded stream, as in a run.
    let mut client_random = Some(Stream::new(3, "player", TlsSide::Client, 1));
    let mut server_random = Some(Stream::new(3, "store", TlsSide::Server, 1));
    let mut c = with_stream(&mut client_random, || ClientConnection::new(client, name)).unwrap();
    let mut hello = Vec::new();
    c.write_tls(&mut hello).unwrap();
    let mut s = ServerConnection::new(server).unwrap();
    s.read_tls(&mut hello.as_slice()).unwrap();
    with_stream(&mut server_random, || s.process_new_packets()).unwrap();
    let mut answer = Vec::new();
    while s.wants_write() {
        s.write_tls(&mut answer).unwrap();
    }
    (hello, answer)
}

fn hellos(found: &[Found]) -> Vec<&TlsMessageKind> {
    found
        .iter()
        .filter_map(|f| match f {
            Found::Hello(h) => Some(h),
            Found::Problem(..) => None,
        })
        .collect()
}

#[test]
fn rustls_hellos_read_as_their_fields() {
    let (hello, answer) = flights();
    let found = Flight::sent().feed(&hello);
    let [TlsMessageKind::ClientHello(ch)] = hellos(&found)[..] else {
        panic!("{found:?}");
    };
    assert_eq!(ch.legacy_version, 0x0303);
    assert_eq!(ch.supported_versions, vec![0x0304]);
    assert_eq!(ch.server_name.as_deref(), Some("store"));
    assert_eq!(ch.alpn, vec!["h2".to_owned()]);
    assert!(ch.cipher_suites.contains(&0x1302));
    assert!(!ch.resumption_offered);
    let found = Flight::sent().feed(&answer);
    let [TlsMessageKind::ServerHello(sh)] = hellos(&found)[..] else {
        panic!("{found:?}");
    };
    assert_eq!(sh.selected_version, Some(0x0304));
    assert!(ch.cipher_suites.contains(&sh.cipher_suite));
    assert!(!sh.resumes);
    // The readers: each sees the hello it waits for, and no problem.
    assert_eq!(
        Flight::received(true).feed(&hello),
        Flight::sent().feed(&hello)
    );
    let mut reader = Flight::received(false);
    assert_eq!(hellos(&reader.feed(&answer)).len(), 1);
    assert_eq!(reader.end(), None);
}

#[test]
fn one_octet_at_a_time_reads_the_same() {
    let (hello, _) = flights();
    let mut flight = Flight::sent();
    let found: Vec<Found> = hello.iter().flat_map(|b| flight.feed(&[*b])).collect();
    assert_eq!(found, Flight::sent().feed(&hello));
}

#[test]
fn a_hello_cut_anywhere_is_truncated_never_a_panic() {
    let (hello, answer) = flights();
    for (bytes, server) in [(&hello, true), (&answer, false)] {
        // The ServerHello record's end: past it, the hello is whole.
        let whole = 5 + usize::from(u16::from_be_bytes([bytes[3], bytes[4]]));
        for cut in 0..whole {
            let mut reader = Flight::received(server);
            assert_eq!(reader.feed(&bytes[..cut]), vec![], "cut at {cut}");
            assert_eq!(
                reader.end(),
                Some(Found::Problem(HelloProblem::Truncated, cut as u32)),
                "cut at {cut}"
            );
        }
        let mut reader = Flight::received(server);
        reader.feed(&bytes[..whole]);
        assert_eq!(reader.end(), None);
    }
}

#[test]
fn a_hello_whose_lengths_lie_is_malformed() {
    let (hello, _) = flights();
    // The handshake message says it is 3 octets shorter, and the record
    // too: its cipher suites, extensions … now run past its end.
    let mut short = hello.clone();
    let record = u16::from_be_bytes([short[3], short[4]]) - 3;
    short[3..5].copy_from_slice(&record.to_be_bytes());
    let message = u32::from_be_bytes([0, short[6], short[7], short[8]]) - 3;
    short[6..9].copy_from_slice(&message.to_be_bytes()[1..]);
    short.truncate(5 + usize::from(record));
    let found = Flight::received(true).feed(&short);
    assert!(
        matches!(
            found[..],
            [Found::Problem(HelloProblem::Malformed { .. }, _)]
        ),
        "{found:?}"
    );
    // Every octet changed in turn: whatever it reads as, no panic.
    for i in 0..hello.len() {
        let mut bad = hello.clone();
        bad[i] ^= 0xff;
        let mut reader = Flight::received(true);
        let _ = reader.feed(&bad);
        let _ = reader.end();
    }
}

#[test]
fn octets_that_are_not_tls_say_so() {
    let preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    assert_eq!(
        Flight::received(true).feed(preface),
        vec![Found::Problem(
            HelloProblem::NotTlsRecord { content_type: b'P' },
            24
        )]
    );
    // One octet is enough to tell.
    assert_eq!(
        Flight::received(false).feed(&[0x00]),
        vec![Found::Problem(
            HelloProblem::NotTlsRecord { content_type: 0 },
            1
        )]
    );
    assert_eq!(
        Flight::received(true).feed(&[22, 3, 1, 0xff, 0xff]),
        vec![Found::Problem(
            HelloProblem::RecordTooLong { length: 0xffff },
            5
        )]
    );
    // A ServerHello where a ClientHello should be.
    let (_, answer) = flights();
    let found = Flight::received(true).feed(&answer);
    assert_eq!(
        found,
        vec![Found::Problem(
            HelloProblem::NotAHello { msg_type: 2 },
            answer.len() as u32
        )]
    );
}

#[test]
fn an_alert_where_a_hello_should_be_is_not_a_problem() {
    // An alert (21): handshake_failure, fatal (RFC 8446 §6); the
    // handshake's own event records it.
    let mut reader = Flight::received(false);
    assert_eq!(reader.feed(&[21, 3, 3, 0, 2, 2, 40]), vec![]);
    assert_eq!(reader.end(), None);
}

#[test]
fn a_hello_retry_request_is_told_from_a_server_hello() {
    let (_, answer) = flights();
    let record = 5 + usize::from(u16::from_be_bytes([answer[3], answer[4]]));
    let mut hrr = answer[..record].to_vec();
    // The random: after the record header (5), the message header (4) and
    // legacy_version (2).
    hrr[11..43].copy_from_slice(&HRR_RANDOM);
    let found = Flight::sent().feed(&hrr);
    assert!(
        matches!(hellos(&found)[..], [TlsMessageKind::HelloRetryRequest(_)]),
        "{found:?}"
    );
}

#[test]
fn a_second_client_hello_is_read_too() {
    // After a HelloRetryRequest the client sends a ChangeCipherSpec
    // (§D.4) and another ClientHello (§4.1.4): both hellos are read.
    let (hello, _) = flights();
    let mut both = hello.clone();
    both.extend_from_slice(&[20, 3, 3, 0, 1, 1]);
    both.extend_from_slice(&hello);
    let found = Flight::sent().feed(&both);
    assert_eq!(hellos(&found).len(), 2, "{found:?}");
}

/// A whole TLS 1.2 handshake in memory between the harness's configs (both
/// ends set to TLS 1.2 only): every octet each end wrote, in order.
fn tls12_handshake() -> (Vec<u8>, Vec<u8>) {
    use crate::tls::TlsVersion;
    let ca = Ca::new(3);
    let clock = SimClock(Arc::new(Recorder::default()));
    let (server, _) = ServerTls::new(ca.leaf("store").identity().unwrap())
        .tls_versions(&[TlsVersion::Tls12])
        .config(&clock)
        .unwrap();
    let (client, _) = ClientTls::new()
        .ca_certificate(ca.certificate())
        .tls_versions(&[TlsVersion::Tls12])
        .config(&clock, "store")
        .unwrap();
    let mut client_random = Some(Stream::new(3, "player", TlsSide::Client, 1));
    let mut server_random = Some(Stream::new(3, "store", TlsSide::Server, 1));
    let name = ServerName::try_from("store").unwrap();
    let mut c = with_stream(&mut client_random, || ClientConnection::new(client, name)).unwrap();
    let mut s = ServerConnection::new(server).unwrap();
    let (mut by_client, mut by_server) = (Vec::new(), Vec::new());
    for _ in 0..10 {
        let start = by_client.len();
        while c.wants_write() {
            c.write_tls(&mut by_client).unwrap();
        }
        s.read_tls(&mut &by_client[start..]).unwrap();
        with_stream(&mut server_random, || s.process_new_packets()).unwrap();
        let start = by_server.len();
        while s.wants_write() {
            s.write_tls(&mut by_server).unwrap();
        }
        c.read_tls(&mut &by_server[start..]).unwrap();
        with_stream(&mut client_random, || c.process_new_packets()).unwrap();
        if !c.is_handshaking() && !s.is_handshaking() {
            break;
        }
    }
    assert!(!c.is_handshaking() && !s.is_handshaking());
    (by_client, by_server)
}

#[test]
fn a_tls12_handshake_reads_as_its_hellos_and_stops_at_each_change_cipher_spec() {
    let (by_client, by_server) = tls12_handshake();
    // The server's flight: ServerHello, Certificate, ServerKeyExchange,
    // ServerHelloDone in plaintext, then ChangeCipherSpec and its
    // encrypted Finished, a handshake record too (RFC 5246 §7.1).
    let mut server = Flight::sent();
    let found = server.feed(&by_server);
    let [TlsMessageKind::ServerHello(sh)] = hellos(&found)[..] else {
        panic!("{found:?}");
    };
    assert_eq!((sh.legacy_version, sh.selected_version), (0x0303, None));
    assert_eq!(sh.cipher_suite, 0xc02c);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(server.done && server.tls12);
    // The client's: its ClientHello; then, once its reader has seen the
    // TLS 1.2 ServerHello, ClientKeyExchange, ChangeCipherSpec, Finished.
    let mut client = Flight::sent();
    let hello_end = 5 + usize::from(u16::from_be_bytes([by_client[3], by_client[4]]));
    let found = client.feed(&by_client[..hello_end]);
    let [TlsMessageKind::ClientHello(ch)] = hellos(&found)[..] else {
        panic!("{found:?}");
    };
    assert_eq!(ch.supported_versions, vec![0x0303]);
    let mut reader = Flight::received(false);
    let seen = reader.feed(&by_server);
    assert!(
        matches!(hellos(&seen)[..], [h] if chooses_tls12(h)),
        "{seen:?}"
    );
    client.tls12();
    assert_eq!(client.feed(&by_client[hello_end..]), Vec::new());
    assert!(client.done);
}
