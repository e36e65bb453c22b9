//! The `grpc-timeout` request header (grpc `doc/PROTOCOL-HTTP2.md`):
//! `TimeoutValue TimeoutUnit`, at most 8 digits, units `H M S m u n`.

use std::time::Duration;

use http::{HeaderMap, HeaderValue};

/// The request header that carries the call's deadline as a timeout.
pub(crate) const GRPC_TIMEOUT: &str = "grpc-timeout";

/// The largest 8-digit value.
const MAX_VALUE: u128 = 99_999_999;

/// Reads `grpc-timeout`; `None` when absent or malformed (tonic's
/// `GrpcTimeout` also ignores a malformed value).
pub(crate) fn parse(headers: &HeaderMap) -> Option<Duration> {
    let s = headers.get(GRPC_TIMEOUT)?.to_str().ok()?;
    let unit = s.chars().last()?;
    let digits = &s[..s.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let v: u64 = digits.parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(v * 3600),
        'M' => Duration::from_secs(v * 60),
        'S' => Duration::from_secs(v),
        'm' => Duration::from_millis(v),
        'u' => Duration::from_micros(v),
        'n' => Duration::from_nanos(v),
        _ => return None,
    })
}

/// Encodes a remaining budget in the finest unit that fits 8 digits, as
/// tonic does, but rounding *up* as grpc-go's `encodeTimeout` does, so the
/// server's and the inner channel's timers never fire before the deadline.
pub(crate) fn encode(d: Duration) -> HeaderValue {
    let ns = d.as_nanos();
    let units: [(u128, char); 6] = [
        (1, 'n'),
        (1_000, 'u'),
        (1_000_000, 'm'),
        (1_000_000_000, 'S'),
        (60_000_000_000, 'M'),
        (3_600_000_000_000, 'H'),
    ];
    for (per, unit) in units {
        let v = ns.div_ceil(per);
        if v <= MAX_VALUE {
            return HeaderValue::from_str(&format!("{v}{unit}"))
                .unwrap_or_else(|_| HeaderValue::from_static("99999999H"));
        }
    }
    HeaderValue::from_static("99999999H")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(s: &str) -> Option<Duration> {
        let mut h = HeaderMap::new();
        h.insert(GRPC_TIMEOUT, HeaderValue::from_str(s).unwrap());
        parse(&h)
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_str("500000u"), Some(Duration::from_millis(500)));
        assert_eq!(parse_str("2H"), Some(Duration::from_secs(7200)));
        assert_eq!(parse_str("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_str("4S"), Some(Duration::from_secs(4)));
        assert_eq!(parse_str("5m"), Some(Duration::from_millis(5)));
        assert_eq!(parse_str("6n"), Some(Duration::from_nanos(6)));
    }

    #[test]
    fn rejects_malformed() {
        for s in ["", "m", "123456789m", "1x", "-1m", "1.5S", "+1m"] {
            assert_eq!(parse_str(s), None, "{s}");
        }
        assert_eq!(parse(&HeaderMap::new()), None);
    }

    #[test]
    fn encodes_like_tonic_but_rounds_up() {
        assert_eq!(encode(Duration::from_millis(500)), "500000u");
        assert_eq!(encode(Duration::from_millis(380)), "380000u");
        assert_eq!(encode(Duration::from_nanos(99_999_999)), "99999999n");
        assert_eq!(encode(Duration::from_nanos(499_999_999)), "500000u");
        assert_eq!(encode(Duration::from_secs(3600)), "3600000m");
        assert_eq!(encode(Duration::ZERO), "0n");
    }

    #[test]
    fn round_trips_within_a_unit() {
        for ms in [1, 77, 499, 10_000, 86_400_000] {
            let d = Duration::from_millis(ms);
            let mut h = HeaderMap::new();
            h.insert(GRPC_TIMEOUT, encode(d));
            assert_eq!(parse(&h), Some(d));
        }
    }
}
