//! The caller's deadline, passed on to the next hop: tonic sends a call's
//! timeout as `grpc-timeout` but does not hand it to the handler, so a
//! service that calls another reads it back itself.

use std::time::Duration;

/// What is left of the caller's `grpc-timeout` (`PROTOCOL-HTTP2.md`,
/// "Requests": 1–8 digits and a unit, `H M S m u n`), measured from when
/// the request arrived, `received` (tokio's clock: simulated time in a
/// grpc-chaos run). `None` when the caller sent no deadline or an invalid
/// one; `Some(Duration::ZERO)` once it has passed.
pub fn remaining<T>(
    request: &tonic::Request<T>,
    received: tokio::time::Instant,
) -> Option<Duration> {
    let value = request.metadata().get("grpc-timeout")?.to_str().ok()?;
    let timeout = parse(value)?;
    Some(timeout.saturating_sub(received.elapsed()))
}

fn parse(value: &str) -> Option<Duration> {
    let unit = value.chars().last()?;
    let digits = &value[..value.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(n * 3600),
        'M' => Duration::from_secs(n * 60),
        'S' => Duration::from_secs(n),
        'm' => Duration::from_millis(n),
        'u' => Duration::from_micros(n),
        'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;
    use std::time::Duration;

    #[test]
    fn units_and_bad_values() {
        assert_eq!(parse("500m"), Some(Duration::from_millis(500)));
        assert_eq!(parse("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse("99999999n"), Some(Duration::from_nanos(99_999_999)));
        assert_eq!(parse("123456789m"), None, "more than 8 digits");
        assert_eq!(parse("m"), None, "no digits");
        assert_eq!(parse("5x"), None, "unknown unit");
        assert_eq!(parse(""), None);
        assert_eq!(parse("5é"), None, "a unit that is not ASCII");
    }
}
