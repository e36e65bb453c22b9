//! The retry decision after a failed attempt, as a pure function: [`decide`], whose docs give the rules.

use std::fmt;
use std::time::Duration;

use http::HeaderMap;
use rand::Rng;
use tonic::Code;

use super::backoff::{jittered_delay, Jitter};
use super::config::RetryPolicy;
use super::throttle::Throttler;

/// grpc-go's default retry buffer per call: 256 KiB (`rpc_util.go`
/// `defaultMaxRetryRPCBufferSize`, `stream.go` `bufferForRetryLocked`). A
/// call that has sent more request bytes than this is committed.
pub const DEFAULT_BUFFER_LIMIT: u64 = 256 * 1024;

/// The trailer (or trailers-only header) with which a server overrides the
/// client's backoff (gRFC A6 "Pushback").
pub const PUSHBACK_HEADER: &str = "grpc-retry-pushback-ms";

/// What the server said in `grpc-retry-pushback-ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pushback {
    /// No pushback header: the client's backoff applies.
    Absent,
    /// A value ≥ 0: retry after exactly this long (milliseconds on the wire).
    Wait(Duration),
    /// A negative or unparsable value, or more than one value: do not retry.
    Stop,
}

impl Pushback {
    /// Parses one header value as grpc-go does (`strconv.Atoi`: optional
    /// sign, decimal digits, 64-bit range).
    pub fn parse(value: &[u8]) -> Self {
        let ms = std::str::from_utf8(value)
            .ok()
            .and_then(|s| s.parse::<i64>().ok());
        match ms.and_then(|ms| u64::try_from(ms).ok()) {
            Some(ms) => Pushback::Wait(Duration::from_millis(ms)),
            None => Pushback::Stop,
        }
    }

    /// Reads [`PUSHBACK_HEADER`] from trailers (or a trailers-only response's
    /// headers): absent, one value, or — as grpc-go treats it — several
    /// values meaning stop.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let mut values = headers.get_all(PUSHBACK_HEADER).iter();
        match (values.next(), values.next()) {
            (None, _) => Pushback::Absent,
            (Some(v), None) => Pushback::parse(v.as_bytes()),
            (Some(_), Some(_)) => Pushback::Stop,
        }
    }
}

/// Everything [`decide`] needs to know about the call so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecideInput {
    /// Status code of the attempt that just ended.
    pub code: Code,
    /// Whether that attempt received response headers (not trailers-only):
    /// the server began answering, so the call is committed.
    pub headers_received: bool,
    /// Request bytes (gRPC-framed DATA) sent so far by the call.
    pub buffered_bytes: u64,
    /// The retry buffer limit in bytes; above it the call is committed.
    /// [`DEFAULT_BUFFER_LIMIT`] unless configured.
    pub buffer_limit: u64,
    /// The attempt's `grpc-retry-pushback-ms`.
    pub pushback: Pushback,
    /// Attempts made so far, including the one that just ended (≥ 1).
    pub attempts: u32,
    /// Backoff exponent for the next backoff: retries since the last
    /// pushback (grpc-go `numRetriesSincePushback`); 0 at the start.
    pub backoff_n: u32,
    /// Time left until the call's deadline (`grpc-timeout`), or `None` for no
    /// deadline. Simulated time in the harness.
    pub remaining: Option<Duration>,
}

/// The verdict on a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// Start another attempt after `delay`.
    Retry {
        /// How long to wait before the next attempt.
        delay: Duration,
        /// Where the delay came from.
        reason: RetryReason,
    },
    /// End the call; the rule that ended it.
    Stop(StopReason),
}

/// Where a retry's delay came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetryReason {
    /// Jittered exponential backoff with exponent `n`.
    Backoff {
        /// The exponent used (retries since the last pushback).
        n: u32,
    },
    /// The server's `grpc-retry-pushback-ms`.
    Pushback {
        /// The pushback value, in milliseconds.
        ms: u64,
    },
}

impl RetryReason {
    /// The backoff exponent to use after this retry: `n + 1` after a
    /// backoff, 0 after a pushback (grpc-go resets `numRetriesSincePushback`).
    pub fn next_backoff_n(&self) -> u32 {
        match self {
            RetryReason::Backoff { n } => n.saturating_add(1),
            RetryReason::Pushback { .. } => 0,
        }
    }
}

/// The rule that ended a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The attempt succeeded (OK).
    Succeeded,
    /// The method has no retry policy.
    NoPolicy,
    /// The code is not in `retryableStatusCodes`.
    NotRetryableCode,
    /// Response headers were received (not trailers-only): committed.
    Committed,
    /// More request bytes were sent than the retry buffer holds: committed.
    BufferLimit,
    /// `maxAttempts` attempts were made.
    MaxAttempts,
    /// The server's pushback was negative, unparsable or repeated.
    PushbackStop,
    /// The retry token bucket is at or below half.
    Throttled,
    /// The next attempt could not start before the deadline; the call ends
    /// with DEADLINE_EXCEEDED.
    Deadline,
}

impl StopReason {
    /// A fixed snake_case word for traces (`"not_retryable_code"`).
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::Succeeded => "succeeded",
            StopReason::NoPolicy => "no_policy",
            StopReason::NotRetryableCode => "not_retryable_code",
            StopReason::Committed => "committed",
            StopReason::BufferLimit => "buffer_limit",
            StopReason::MaxAttempts => "max_attempts",
            StopReason::PushbackStop => "pushback_stop",
            StopReason::Throttled => "throttled",
            StopReason::Deadline => "deadline",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Decision {
    /// `retry after 93.117ms (backoff n=1)`, `retry after 0ms (pushback 0ms)`,
    /// `stop: max_attempts`. Delays in milliseconds with 3 decimals.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Retry { delay, reason } => {
                write!(f, "retry after {}", crate::units::fmt_duration(*delay))?;
                match reason {
                    RetryReason::Backoff { n } => write!(f, " (backoff n={n})"),
                    RetryReason::Pushback { ms } => write!(f, " (pushback {ms}ms)"),
                }
            }
            Decision::Stop(r) => write!(f, "stop: {r}"),
        }
    }
}

/// Decides whether to retry after an attempt that ended with `input.code`.
///
/// Side effects, in grpc-go's order: takes a token from `throttler` for a
/// pushback stop and for a retryable code (steps 2 and 4 of the module
/// docs); draws once from `rng` when the delay is a backoff. Nothing else.
///
/// # The rules
///
/// The retry decision after a failed attempt, as a pure function.
///
/// [`decide`] applies the rules of grpc-go `stream.go`
/// `csAttempt.shouldRetry`, in the same order (the order matters for the
/// token bucket, which only some stops touch):
///
/// 1. the call is committed — response headers received ([`StopReason::Committed`])
///    or more than the buffer limit of request bytes sent
///    ([`StopReason::BufferLimit`]) — stop, bucket untouched;
/// 2. a `grpc-retry-pushback-ms` that is negative, unparsable or repeated —
///    take a token, stop ([`StopReason::PushbackStop`]);
/// 3. no policy, or a code not in `retryableStatusCodes` — stop, bucket
///    untouched ([`StopReason::NoPolicy`], [`StopReason::NotRetryableCode`]);
/// 4. take a token; throttled — stop ([`StopReason::Throttled`]);
/// 5. `maxAttempts` reached — stop ([`StopReason::MaxAttempts`]);
/// 6. delay: the pushback exactly (resets the backoff exponent to 0), or the
///    jittered exponential backoff (raises it by 1);
/// 7. the delay reaches the call's deadline — stop ([`StopReason::Deadline`];
///    grpc-go sleeps into the deadline and fails with DEADLINE_EXCEEDED, this
///    names the rule up front).
///
/// An OK attempt is not a failure: [`StopReason::Succeeded`], bucket untouched
/// here (the caller reports the success to the bucket once per call).
pub fn decide<R: Rng + ?Sized>(
    input: &DecideInput,
    policy: Option<&RetryPolicy>,
    throttler: Option<&Throttler>,
    jitter: Jitter,
    rng: &mut R,
) -> Decision {
    use StopReason::*;
    if input.code == Code::Ok {
        return Decision::Stop(Succeeded);
    }
    if input.headers_received {
        return Decision::Stop(Committed);
    }
    if input.buffered_bytes > input.buffer_limit {
        return Decision::Stop(BufferLimit);
    }
    let take_token = || throttler.is_some_and(Throttler::throttle);
    if input.pushback == Pushback::Stop {
        // A pushback stop counts as a failure even for a non-retryable code.
        take_token();
        return Decision::Stop(PushbackStop);
    }
    let Some(policy) = policy else {
        return Decision::Stop(NoPolicy);
    };
    if !policy.is_retryable(input.code) {
        return Decision::Stop(NotRetryableCode);
    }
    if take_token() {
        return Decision::Stop(Throttled);
    }
    if input.attempts >= policy.max_attempts() {
        return Decision::Stop(MaxAttempts);
    }
    let (delay, reason) = match input.pushback {
        Pushback::Wait(d) => (
            d,
            RetryReason::Pushback {
                ms: d.as_millis() as u64,
            },
        ),
        _ => (
            jittered_delay(policy, jitter, input.backoff_n, rng),
            RetryReason::Backoff { n: input.backoff_n },
        ),
    };
    if input.remaining.is_some_and(|left| delay >= left) {
        return Decision::Stop(Deadline);
    }
    Decision::Retry { delay, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::backoff::delay_window;
    use crate::retry::config::RetryConfig;
    use http::HeaderValue;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    const POLICY: &str = r#"{"methodConfig":[{"name":[{}],"retryPolicy":{"maxAttempts":4,
        "initialBackoff":"0.1s","maxBackoff":"1s","backoffMultiplier":2,
        "retryableStatusCodes":["UNAVAILABLE","RESOURCE_EXHAUSTED"]}}],
        "retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}"#;

    struct Fixture {
        policy: RetryPolicy,
        throttler: Throttler,
        rng: SmallRng,
    }

    fn fixture() -> Fixture {
        let config = RetryConfig::from_json(POLICY).unwrap();
        Fixture {
            policy: config.policy_for("/a.B/C").unwrap().clone(),
            throttler: Throttler::new(config.throttling().unwrap()),
            rng: SmallRng::seed_from_u64(3),
        }
    }

    fn failed(code: Code) -> DecideInput {
        DecideInput {
            code,
            headers_received: false,
            buffered_bytes: 10,
            buffer_limit: DEFAULT_BUFFER_LIMIT,
            pushback: Pushback::Absent,
            attempts: 1,
            backoff_n: 0,
            remaining: None,
        }
    }

    impl Fixture {
        fn run(&mut self, input: DecideInput) -> Decision {
            decide(
                &input,
                Some(&self.policy),
                Some(&self.throttler),
                Jitter::GrpcGo,
                &mut self.rng,
            )
        }
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn retryable_code_backs_off_within_the_window() {
        let mut f = fixture();
        let Decision::Retry { delay, reason } = f.run(failed(Code::Unavailable)) else {
            panic!("expected a retry");
        };
        assert_eq!(reason, RetryReason::Backoff { n: 0 });
        assert!(
            delay_window(&f.policy, Jitter::GrpcGo, 0).contains(delay),
            "{delay:?}"
        );
        assert_eq!(f.throttler.tokens(), 9.0);
    }

    #[test]
    fn backoff_exponent_is_used() {
        let mut f = fixture();
        let input = DecideInput {
            backoff_n: 3,
            attempts: 3,
            ..failed(Code::Unavailable)
        };
        let Decision::Retry { delay, reason } = f.run(input) else {
            panic!()
        };
        assert_eq!(reason.next_backoff_n(), 4);
        assert!(delay >= ms(640) && delay < ms(960), "{delay:?}");
    }

    #[test]
    fn ok_is_success_and_touches_nothing() {
        let mut f = fixture();
        assert_eq!(
            f.run(failed(Code::Ok)),
            Decision::Stop(StopReason::Succeeded)
        );
        assert_eq!(f.throttler.tokens(), 10.0);
    }

    #[test]
    fn non_retryable_code_stops_without_a_token() {
        let mut f = fixture();
        assert_eq!(
            f.run(failed(Code::Internal)),
            Decision::Stop(StopReason::NotRetryableCode)
        );
        assert_eq!(f.throttler.tokens(), 10.0);
    }

    #[test]
    fn no_policy_stops() {
        let mut f = fixture();
        let d = decide(
            &failed(Code::Unavailable),
            None,
            Some(&f.throttler),
            Jitter::GrpcGo,
            &mut f.rng,
        );
        assert_eq!(d, Decision::Stop(StopReason::NoPolicy));
        assert_eq!(f.throttler.tokens(), 10.0);
    }

    #[test]
    fn headers_received_commits_before_anything_else() {
        let mut f = fixture();
        let input = DecideInput {
            headers_received: true,
            pushback: Pushback::Stop,
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::Committed));
        assert_eq!(f.throttler.tokens(), 10.0);
    }

    #[test]
    fn buffer_limit_is_strictly_greater_than() {
        let mut f = fixture();
        let at = DecideInput {
            buffered_bytes: DEFAULT_BUFFER_LIMIT,
            ..failed(Code::Unavailable)
        };
        assert!(matches!(f.run(at), Decision::Retry { .. }));
        let over = DecideInput {
            buffered_bytes: DEFAULT_BUFFER_LIMIT + 1,
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(over), Decision::Stop(StopReason::BufferLimit));
    }

    #[test]
    fn max_attempts_counts_the_first_attempt() {
        let mut f = fixture();
        let third = DecideInput {
            attempts: 3,
            ..failed(Code::Unavailable)
        };
        assert!(matches!(f.run(third), Decision::Retry { .. }));
        let fourth = DecideInput {
            attempts: 4,
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(fourth), Decision::Stop(StopReason::MaxAttempts));
        // grpc-go takes the token before checking maxAttempts.
        assert_eq!(f.throttler.tokens(), 8.0);
    }

    #[test]
    fn capped_policy_stops_at_five() {
        let json = POLICY.replace("\"maxAttempts\":4", "\"maxAttempts\":9");
        let config = RetryConfig::from_json(&json).unwrap();
        let policy = config.policy_for("/a.B/C").unwrap();
        let mut rng = SmallRng::seed_from_u64(0);
        let mut at = |attempts| {
            let input = DecideInput {
                attempts,
                ..failed(Code::Unavailable)
            };
            decide(&input, Some(policy), None, Jitter::GrpcGo, &mut rng)
        };
        assert!(matches!(at(4), Decision::Retry { .. }));
        assert_eq!(at(5), Decision::Stop(StopReason::MaxAttempts));
    }

    #[test]
    fn pushback_zero_retries_at_once_and_resets_the_exponent() {
        let mut f = fixture();
        let input = DecideInput {
            pushback: Pushback::Wait(ms(0)),
            backoff_n: 2,
            ..failed(Code::Unavailable)
        };
        let d = f.run(input);
        assert_eq!(
            d,
            Decision::Retry {
                delay: ms(0),
                reason: RetryReason::Pushback { ms: 0 }
            }
        );
        let Decision::Retry { reason, .. } = d else {
            unreachable!()
        };
        assert_eq!(reason.next_backoff_n(), 0);
    }

    #[test]
    fn pushback_is_used_exactly_even_above_max_backoff() {
        let mut f = fixture();
        let input = DecideInput {
            pushback: Pushback::Wait(ms(5000)),
            ..failed(Code::Unavailable)
        };
        assert_eq!(
            f.run(input),
            Decision::Retry {
                delay: ms(5000),
                reason: RetryReason::Pushback { ms: 5000 }
            }
        );
    }

    #[test]
    fn pushback_does_not_make_a_code_retryable() {
        let mut f = fixture();
        let input = DecideInput {
            pushback: Pushback::Wait(ms(10)),
            ..failed(Code::Internal)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::NotRetryableCode));
        assert_eq!(f.throttler.tokens(), 10.0);
    }

    #[test]
    fn negative_pushback_stops_and_takes_a_token_even_for_other_codes() {
        let mut f = fixture();
        let input = DecideInput {
            pushback: Pushback::Stop,
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::PushbackStop));
        let input = DecideInput {
            pushback: Pushback::Stop,
            ..failed(Code::Internal)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::PushbackStop));
        assert_eq!(f.throttler.tokens(), 8.0);
    }

    #[test]
    fn throttled_at_half() {
        let mut f = fixture();
        for _ in 0..4 {
            f.throttler.throttle();
        }
        // 6 tokens: this failure takes the bucket to 5 = half → throttled.
        assert_eq!(
            f.run(failed(Code::Unavailable)),
            Decision::Stop(StopReason::Throttled)
        );
    }

    #[test]
    fn deadline_stops_a_retry_whose_delay_reaches_it() {
        let mut f = fixture();
        let input = DecideInput {
            pushback: Pushback::Wait(ms(50)),
            remaining: Some(ms(50)),
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::Deadline));
        let input = DecideInput {
            pushback: Pushback::Wait(ms(50)),
            remaining: Some(ms(51)),
            ..failed(Code::Unavailable)
        };
        assert!(matches!(f.run(input), Decision::Retry { .. }));
        // Backoff for n=0 is at least 80 ms.
        let input = DecideInput {
            remaining: Some(ms(80)),
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::Deadline));
        let input = DecideInput {
            remaining: Some(ms(0)),
            pushback: Pushback::Wait(ms(0)),
            ..failed(Code::Unavailable)
        };
        assert_eq!(f.run(input), Decision::Stop(StopReason::Deadline));
    }

    #[test]
    fn pushback_parsing() {
        assert_eq!(Pushback::parse(b"0"), Pushback::Wait(ms(0)));
        assert_eq!(Pushback::parse(b"250"), Pushback::Wait(ms(250)));
        assert_eq!(Pushback::parse(b"+7"), Pushback::Wait(ms(7)));
        assert_eq!(Pushback::parse(b"-1"), Pushback::Stop);
        assert_eq!(Pushback::parse(b"1.5"), Pushback::Stop);
        assert_eq!(Pushback::parse(b" 5"), Pushback::Stop);
        assert_eq!(Pushback::parse(b""), Pushback::Stop);
        assert_eq!(Pushback::parse(b"99999999999999999999"), Pushback::Stop);
        let mut h = HeaderMap::new();
        assert_eq!(Pushback::from_headers(&h), Pushback::Absent);
        h.insert(PUSHBACK_HEADER, HeaderValue::from_static("30"));
        assert_eq!(Pushback::from_headers(&h), Pushback::Wait(ms(30)));
        h.append(PUSHBACK_HEADER, HeaderValue::from_static("30"));
        assert_eq!(Pushback::from_headers(&h), Pushback::Stop);
    }

    #[test]
    fn display_is_stable() {
        let d = Decision::Retry {
            delay: Duration::from_micros(93_117),
            reason: RetryReason::Backoff { n: 1 },
        };
        assert_eq!(d.to_string(), "retry after 93.117ms (backoff n=1)");
        let d = Decision::Retry {
            delay: ms(0),
            reason: RetryReason::Pushback { ms: 0 },
        };
        assert_eq!(d.to_string(), "retry after 0ms (pushback 0ms)");
        assert_eq!(
            Decision::Stop(StopReason::MaxAttempts).to_string(),
            "stop: max_attempts"
        );
    }
}
