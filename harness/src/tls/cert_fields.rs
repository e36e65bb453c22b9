//! A certificate's subject, serial and validity, read from its DER
//! (RFC 5280 §4.1) for the trace: a small reader of the few fields
//! needed, not a validator (rustls-webpki validates). Any octets are read
//! without a panic: what does not parse gives `None`. x509-parser (in the
//! lock already, as rcgen's optional feature) would read the same fields;
//! it is not used because it brings about nine crates, proc macros among
//! them, into every build of the harness, its fuzz targets and the MSRV
//! check, for four fields of a trace row, and CI is near its 20-minute
//! budget. Revisit it when a trace row needs more of a certificate.

use crate::recorder::event::CertificateFields;
use crate::units::EPOCH_SECS;

/// The end-entity fields of `der`, the validity in seconds of simulated
/// time from the run's start; `None` where the DER does not parse as
/// a certificate.
pub(crate) fn certificate_fields(der: &[u8]) -> Option<CertificateFields> {
    let (cert, _) = Der::new(der).next(0x30)?;
    let (tbs, _) = Der::new(cert).next(0x30)?;
    let mut tbs = Der::new(tbs);
    if tbs.peek() == Some(0xa0) {
        tbs.next(0xa0)?; // version [0] EXPLICIT
    }
    let (serial, _) = tbs.next(0x02)?;
    tbs.next(0x30)?; // signature AlgorithmIdentifier
    let (issuer, _) = tbs.next(0x30)?;
    let (validity, _) = tbs.next(0x30)?;
    let (subject, _) = tbs.next(0x30)?;
    let mut validity = Der::new(validity);
    let since_start = |t: i64| t - EPOCH_SECS as i64;
    Some(CertificateFields {
        subject: name(subject)?,
        issuer: name(issuer)?,
        serial: serial.iter().map(|b| format!("{b:02x}")).collect(),
        not_before_s: since_start(time(&mut validity)?),
        not_after_s: since_start(time(&mut validity)?),
    })
}

/// A Name (RFC 5280 §4.1.2.4) as RFC 4514 writes it, in the order of the
/// certificate: `CN=store`, `O=…, CN=…`.
fn name(der: &[u8]) -> Option<String> {
    let mut rdns = Der::new(der);
    let mut parts = Vec::new();
    while !rdns.is_empty() {
        let (set, _) = rdns.next(0x31)?;
        let mut set = Der::new(set);
        while !set.is_empty() {
            let (pair, _) = set.next(0x30)?;
            let mut pair = Der::new(pair);
            let (oid, _) = pair.next(0x06)?;
            let (value, _) = pair.any()?;
            let value = String::from_utf8_lossy(value);
            parts.push(format!("{}={value}", attribute(oid)));
        }
    }
    Some(parts.join(", "))
}

/// The short name of an attribute type (RFC 4514 §3), or its OID dotted.
fn attribute(oid: &[u8]) -> String {
    match oid {
        [0x55, 0x04, 0x03] => "CN".to_owned(),
        [0x55, 0x04, 0x06] => "C".to_owned(),
        [0x55, 0x04, 0x07] => "L".to_owned(),
        [0x55, 0x04, 0x08] => "ST".to_owned(),
        [0x55, 0x04, 0x0a] => "O".to_owned(),
        [0x55, 0x04, 0x0b] => "OU".to_owned(),
        _ => oid
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join("."),
    }
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime
/// (`YYYYMMDDHHMMSSZ`) as Unix seconds (RFC 5280 §4.1.2.5).
fn time(der: &mut Der<'_>) -> Option<i64> {
    let (text, tag) = der.any()?;
    let digits = std::str::from_utf8(text.strip_suffix(b"Z")?).ok()?;
    let (year, rest) = match (tag, digits.len()) {
        (0x17, 12) => {
            let yy: i64 = digits.get(..2)?.parse().ok()?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &digits[2..])
        }
        (0x18, 14) => (digits.get(..4)?.parse().ok()?, &digits[4..]),
        _ => return None,
    };
    let field = |i: usize| -> Option<i64> { rest.get(i..i + 2)?.parse().ok() };
    let days = days_from_civil(year, field(0)?, field(2)?);
    Some(days * 86400 + field(4)? * 3600 + field(6)? * 60 + field(8)?)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

/// DER TLVs (X.690 §8.1), each read checked.
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self(bytes)
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn peek(&self) -> Option<u8> {
        self.0.first().copied()
    }

    /// The next TLV if its tag is `tag`.
    fn next(&mut self, tag: u8) -> Option<(&'a [u8], u8)> {
        (self.peek()? == tag).then_some(())?;
        self.any()
    }

    /// The next TLV's contents and tag (one-octet tags only).
    fn any(&mut self) -> Option<(&'a [u8], u8)> {
        let (&tag, rest) = self.0.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = match first {
            0..=0x7f => (usize::from(first), rest),
            0x81..=0x84 => {
                let n = usize::from(first & 0x7f);
                let (bytes, rest) = (rest.get(..n)?, rest.get(n..)?);
                let len = bytes.iter().fold(0usize, |a, b| (a << 8) | usize::from(*b));
                (len, rest)
            }
            _ => return None,
        };
        let value = rest.get(..len)?;
        self.0 = rest.get(len..)?;
        Some((value, tag))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::tls::Ca;

    #[test]
    fn a_leaf_reads_as_its_name_and_simulated_validity() {
        let ca = Ca::new(7);
        let leaf = ca
            .leaf("store")
            .expires_at(Duration::from_secs(30))
            .identity()
            .unwrap();
        let f = certificate_fields(leaf.certificate().der()).unwrap();
        assert_eq!(f.subject, "CN=store");
        assert_eq!(f.issuer, "CN=grpc-chaos test CA 7");
        // `expires_at(30 s)`: rejected from t = 30 s, so notAfter (the
        // last valid second, RFC 5280 §4.1.2.5) is 29 s.
        assert_eq!(f.not_after_s, 29);
        assert_eq!(f.not_before_s, -24 * 3600);
        assert!(!f.serial.is_empty() && f.serial.chars().all(|c| c.is_ascii_hexdigit()));
        let root = certificate_fields(ca.certificate().der()).unwrap();
        assert_eq!(root.subject, "CN=grpc-chaos test CA 7");
        assert_eq!(root.not_after_s, 10 * 365 * 24 * 3600);
    }

    #[test]
    fn cut_or_changed_der_is_none_never_a_panic() {
        let leaf = Ca::new(7).leaf("store").identity().unwrap();
        let der = leaf.certificate().der().to_vec();
        for cut in 0..der.len() {
            assert_eq!(certificate_fields(&der[..cut]), None, "cut at {cut}");
        }
        for i in 0..der.len() {
            let mut bad = der.clone();
            bad[i] ^= 0xff;
            let _ = certificate_fields(&bad);
        }
    }

    #[test]
    fn civil_days_match_known_dates() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2026, 1, 1) * 86400, EPOCH_SECS as i64);
        assert_eq!(days_from_civil(2000, 3, 1), 11017);
    }
}
