//! Deadline propagation for handlers: the helper tonic does not have.
//!
//! gRPC carries a call's deadline as the `grpc-timeout` request header
//! (`PROTOCOL-HTTP2.md`, "Requests": 1–8 ASCII digits and a unit `H M S m u
//! n`). grpc-go derives each outgoing call's timeout from the incoming
//! context, so the budget shrinks hop by hop; tonic does not, and a handler
//! that calls downstream with `Request::new` sends no deadline at all
//! (seed 000 §4, the `context.Background()` trap). [`Deadline`] reads the
//! incoming budget and puts what is left on an outgoing request.
//!
//! Time is `tokio::time`, which inside the simulation is *simulated* time.

use std::time::Duration;

use tokio::time::Instant;

/// When the harness received a request, stored in the request's extensions
/// by the handler layer so that [`Deadline::from_request`] measures the
/// budget from arrival, not from when the handler got to it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival(pub(crate) Instant);

/// A point in (simulated) time by which a call must finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline {
    at: Instant,
}

impl Deadline {
    /// A deadline `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self {
            at: Instant::now() + timeout,
        }
    }

    /// The deadline of an incoming request: its `grpc-timeout`, measured from
    /// the moment the request reached the server (when served by the
    /// harness) or from now. `None` when the caller sent no `grpc-timeout`
    /// or an unparsable one.
    pub fn from_request<T>(request: &tonic::Request<T>) -> Option<Self> {
        let timeout = request
            .metadata()
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout)?;
        let start = request
            .extensions()
            .get::<Arrival>()
            .map_or_else(Instant::now, |a| a.0);
        Some(Self {
            at: start + timeout,
        })
    }

    /// Budget left, saturating at zero.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// True once the deadline has passed.
    pub fn is_expired(&self) -> bool {
        self.remaining().is_zero()
    }

    /// Sets the remaining budget as the timeout of `outgoing` (tonic then
    /// sends it as `grpc-timeout` and enforces it on the response headers).
    pub fn apply<U>(&self, outgoing: &mut tonic::Request<U>) {
        outgoing.set_timeout(self.remaining());
    }
}

/// Copies the incoming request's remaining budget onto `outgoing`; does
/// nothing when the incoming request carried no deadline. Returns the
/// deadline it applied.
///
/// ```
/// # async fn handler(incoming: tonic::Request<()>) {
/// let mut downstream = tonic::Request::new(());
/// grpc_chaos::deadline::propagate(&incoming, &mut downstream);
/// # }
/// ```
pub fn propagate<T, U>(
    incoming: &tonic::Request<T>,
    outgoing: &mut tonic::Request<U>,
) -> Option<Deadline> {
    let deadline = Deadline::from_request(incoming)?;
    deadline.apply(outgoing);
    Some(deadline)
}

/// Parses a `grpc-timeout` value (`500m`, `2S`, `100000u`): 1 to 8 ASCII
/// digits and a unit, `H` hours, `M` minutes, `S` seconds, `m` ms, `u` µs,
/// `n` ns (`PROTOCOL-HTTP2.md`, "Requests").
///
/// Returns `None` for anything the spec does not allow: no digits, more than
/// 8 digits, or an unknown unit. The wire tap reads request headers with it
/// too ([`HeaderBlock::grpc_timeout_duration`](crate::wire::HeaderBlock::grpc_timeout_duration)).
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let unit = value.chars().last()?;
    // `unit` is the last char, so this cut is on a char boundary.
    let digits = &value[..value.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // At most 8 digits, so this fits u64 and the multiplications below cannot
    // overflow (99,999,999 h is about 3.6e14 s).
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

/// What tonic 0.14.9's server makes of a `grpc-timeout` value (read in
/// `transport/service/grpc_timeout.rs`, `try_parse_grpc_timeout`): the
/// header must be visible ASCII and non-empty; its last octet is the unit,
/// the rest at most 8 octets that Rust's `u64::from_str` accepts. That is
/// the spec's rule with one difference: a leading `+` passes (`+5m` is
/// 5 ms to tonic, malformed to the spec). `None`: tonic ignores the header
/// and runs the call with no deadline of its own (it logs at TRACE).
pub(crate) fn tonic_reads_grpc_timeout(raw: &[u8]) -> Option<Duration> {
    let value = std::str::from_utf8(raw).ok()?;
    // `HeaderValue::to_str`: visible ASCII (and tab) only.
    if value.is_empty() || !value.bytes().all(|b| b == b'\t' || (32..127).contains(&b)) {
        return None;
    }
    let (digits, unit) = value.split_at(value.len() - 1);
    if digits.len() > 8 {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tonic_reads_what_the_spec_reads_and_a_leading_plus() {
        for ok in ["500m", "1S", "99999999n", "0u"] {
            assert_eq!(
                tonic_reads_grpc_timeout(ok.as_bytes()),
                parse_grpc_timeout(ok)
            );
        }
        assert_eq!(parse_grpc_timeout("+5m"), None);
        assert_eq!(
            tonic_reads_grpc_timeout(b"+5m"),
            Some(Duration::from_millis(5))
        );
        for bad in ["5x", "m", "", "123456789m", "-5m", "5 m", "\u{e9}5m"] {
            assert_eq!(tonic_reads_grpc_timeout(bad.as_bytes()), None, "{bad:?}");
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
        assert_eq!(tonic_reads_grpc_timeout(&[0xff, b'm']), None);
    }

    #[test]
    fn tonic_reads_every_unit_as_the_spec_does() {
        // `tonic_reads_what_the_spec_reads_and_a_leading_plus` covers S m u n
        // through values that agree; the hour and minute arms and their
        // multiplications need values of their own.
        for (value, want) in [
            ("1H", Duration::from_secs(3600)),
            ("2H", Duration::from_secs(7200)),
            ("3M", Duration::from_secs(180)),
            ("2S", Duration::from_secs(2)),
            ("7n", Duration::from_nanos(7)),
        ] {
            assert_eq!(
                tonic_reads_grpc_timeout(value.as_bytes()),
                Some(want),
                "{value:?}"
            );
            assert_eq!(parse_grpc_timeout(value), Some(want), "{value:?}");
        }
    }

    #[test]
    fn tonic_refuses_a_value_that_ends_in_a_non_ascii_char() {
        // The visible-ASCII check is what keeps the unit cut (one octet
        // from the end) off the middle of `é`: without it this would panic.
        assert_eq!(tonic_reads_grpc_timeout("5\u{e9}".as_bytes()), None);
        // A tab is visible to `HeaderValue::to_str`, and then not a digit.
        assert_eq!(tonic_reads_grpc_timeout(b"5\tm"), None);
    }

    #[test]
    fn parses_every_unit() {
        assert_eq!(parse_grpc_timeout("500m"), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_grpc_timeout("500000u"),
            Some(Duration::from_millis(500))
        );
        assert_eq!(parse_grpc_timeout("2S"), Some(Duration::from_secs(2)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("3M"), Some(Duration::from_secs(180)));
        assert_eq!(parse_grpc_timeout("7n"), Some(Duration::from_nanos(7)));
        assert_eq!(
            parse_grpc_timeout("99999999n"),
            Some(Duration::from_nanos(99_999_999)),
            "8 digits, the most allowed"
        );
    }

    #[test]
    fn rejects_what_the_spec_forbids() {
        for bad in ["", "m", "123456789m", "12x", "5x", "-1m", "1.5S", "5é"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_deadline_expires_once_its_budget_is_spent() {
        let deadline = Deadline::after(Duration::from_millis(10));
        assert!(!deadline.is_expired());
        tokio::time::advance(Duration::from_millis(9)).await;
        assert!(!deadline.is_expired(), "1ms left");
        assert_eq!(deadline.remaining(), Duration::from_millis(1));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert!(deadline.is_expired(), "at the instant");
        tokio::time::advance(Duration::from_millis(5)).await;
        assert!(deadline.is_expired(), "and after it");
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn remaining_budget_shrinks_with_time() {
        let mut incoming = tonic::Request::new(());
        incoming.set_timeout(Duration::from_millis(500));
        incoming.extensions_mut().insert(Arrival(Instant::now()));
        tokio::time::sleep(Duration::from_millis(120)).await;
        let mut out = tonic::Request::new(());
        let d = propagate(&incoming, &mut out).expect("incoming has a deadline");
        assert_eq!(d.remaining(), Duration::from_millis(380));
        let sent = out.metadata().get("grpc-timeout").expect("timeout set");
        assert_eq!(
            parse_grpc_timeout(sent.to_str().unwrap()),
            Some(Duration::from_millis(380))
        );
    }

    #[test]
    fn no_incoming_deadline_means_none() {
        let incoming = tonic::Request::new(());
        let mut out = tonic::Request::new(());
        assert!(propagate(&incoming, &mut out).is_none());
        assert!(out.metadata().get("grpc-timeout").is_none());
    }
}
