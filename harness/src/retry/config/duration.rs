//! Protobuf-JSON durations (`google.protobuf.Duration` as a string), as the
//! backoff fields of a `retryPolicy` are written.

use std::time::Duration;

/// The largest `seconds` part of a protobuf-JSON duration
/// (`google.protobuf.Duration`: ±10,000 years), as grpc-go checks it.
const MAX_PROTO_SECONDS: u64 = 315_576_000_000;

/// Parses a protobuf-JSON duration (`"0.1s"`, `"1.5s"`, `".01s"`, `"-1s"`),
/// as grpc-go `internal/serviceconfig.Duration.UnmarshalJSON` does: an
/// optional `-`, whole seconds and/or up to 9 fractional digits, then `s`.
/// Values beyond Go's `time.Duration` (~292 years) saturate there, as in
/// grpc-go. A negative value is reported as an error here, since both
/// backoff fields must be positive.
pub(super) fn parse_proto_duration(s: &str) -> Result<Duration, &'static str> {
    let body = s.strip_suffix('s').ok_or("missing the \"s\" unit suffix")?;
    if body.starts_with('-') {
        return Err("must be greater than 0");
    }
    let (whole, frac) = match body.split_once('.') {
        Some((w, f)) => (w, f),
        None => (body, ""),
    };
    let all_digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !all_digits(frac) {
        return Err("only digits and one '.' may precede \"s\"");
    }
    if whole.is_empty() && frac.is_empty() {
        return Err("contains no digits");
    }
    if frac.len() > 9 {
        return Err("more than 9 digits after the decimal point");
    }
    let secs: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| "seconds out of range")?
    };
    if secs > MAX_PROTO_SECONDS {
        return Err("seconds out of range (at most 315576000000)");
    }
    let mut nanos: u32 = if frac.is_empty() {
        0
    } else {
        frac.parse().map_err(|_| "bad fraction")?
    };
    for _ in frac.len()..9 {
        nanos *= 10;
    }
    let d = Duration::new(secs, nanos);
    // Saturate at Go's time.Duration maximum, so the delay maths stays in u64 ns.
    Ok(d.min(Duration::from_nanos(i64::MAX as u64)))
}
