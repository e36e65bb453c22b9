//! Certificates made from a seed are byte-identical; PEM input is
//! checked; the clock is the simulation's.

use std::sync::Arc;
use std::time::Duration;

use rustls::time_provider::TimeProvider;

use super::clock::SimClock;
use super::{Ca, Certificate, ClientTls, Identity, ServerTls};
use crate::recorder::Recorder;

#[test]
fn one_seed_gives_the_same_der_bytes() {
    let (a, b) = (Ca::new(7), Ca::new(7));
    assert_eq!(a.certificate().der(), b.certificate().der());
    let leaf = |ca: &Ca| {
        ca.leaf("store")
            .expires_at(Duration::from_secs(30))
            .identity()
            .unwrap()
    };
    let (x, y) = (leaf(&a), leaf(&b));
    assert_eq!(x.certificate().der(), y.certificate().der());
    assert_eq!(x.key_der(), y.key_der());
    // PKCS#8 v1 Ed25519: 16 bytes of prefix, 32 of key (RFC 8410 §7).
    assert_eq!(x.key_der().len(), 48);
}

#[test]
fn another_seed_or_name_gives_other_keys() {
    let (a, b) = (Ca::new(7), Ca::new(8));
    assert_ne!(a.certificate().der(), b.certificate().der());
    let store = a.leaf("store").identity().unwrap();
    let gateway = a.leaf("gateway").identity().unwrap();
    assert_ne!(store.key_der(), gateway.key_der());
}

#[test]
fn made_certificates_round_trip_through_pem() {
    let ca = Ca::new(1);
    let id = ca.leaf("store").identity().unwrap();
    let pem = |label: &str, der: &[u8]| {
        let b64 = base64_encode(der);
        format!("-----BEGIN {label}-----\n{b64}\n-----END {label}-----\n")
    };
    let cert_pem = pem("CERTIFICATE", id.certificate().der());
    let key_pem = pem("PRIVATE KEY", id.key_der());
    let read = Identity::from_pem(&cert_pem, &key_pem).unwrap();
    assert_eq!(read.certificate(), id.certificate());
    assert_eq!(read.key_der(), id.key_der());
    assert_eq!(Certificate::from_pem(&cert_pem).unwrap(), id.certificate());
}

#[test]
fn text_that_is_not_pem_is_a_typed_error() {
    let e = Certificate::from_pem("not a certificate").unwrap_err();
    assert!(e.is_not_pem(), "{e}");
    assert!(e.to_string().contains("BEGIN CERTIFICATE"), "{e}");
    let key_only = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
    let e = Certificate::from_pem(key_only).unwrap_err();
    assert!(e.is_missing_part(), "{e}");
    let cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    let e = Identity::from_pem(cert, cert).unwrap_err();
    assert!(e.is_missing_part(), "{e}");
    let e = Identity::from_pem(cert, "-----BEGIN PRIVATE KEY-----\nAA").unwrap_err();
    assert!(e.is_not_pem(), "{e}");
}

#[test]
fn a_name_no_certificate_can_hold_is_a_typed_error() {
    let e = Ca::new(1).leaf("störe").identity().unwrap_err();
    assert!(e.is_bad_name(), "{e}");
}

#[test]
fn the_clock_is_the_sims_epoch_plus_simulated_time() {
    let recorder = Arc::new(Recorder::default());
    recorder.set_driver_clock(Duration::from_millis(2_500));
    let clock = SimClock(recorder);
    let now = clock.current_time().unwrap();
    assert_eq!(now.as_secs(), crate::units::EPOCH_SECS + 2);
}

#[test]
fn configs_build_from_made_certificates() {
    let ca = Ca::new(3);
    let clock = SimClock(Arc::new(Recorder::default()));
    let server =
        ServerTls::new(ca.leaf("store").identity().unwrap()).client_ca_root(ca.certificate());
    let (config, _) = server.config(&clock).unwrap();
    assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
    let client = ClientTls::new()
        .ca_certificate(ca.certificate())
        .identity(ca.leaf("player").identity().unwrap());
    let (config, name) = client.config(&clock, "store").unwrap();
    assert_eq!(config.alpn_protocols, vec![b"h2".to_vec()]);
    assert_eq!(name.to_str(), "store");
    let bad = ClientTls::new()
        .domain_name("not a name")
        .config(&clock, "store");
    assert!(bad.is_err());
}

/// Standard base64 with padding (RFC 4648 §4), for the PEM test.
fn base64_encode(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
