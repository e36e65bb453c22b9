//! Retry throttling, gRFC A6's per-target token bucket: [`Throttler`], whose docs give the rules.

use std::sync::{Arc, Mutex, MutexGuard};

use super::config::ThrottlingPolicy;

/// A token bucket shared by every clone of a handle: one per target.
///
/// # The bucket
///
/// Retry throttling: the per-target token bucket of gRFC A6 "Throttling
/// Retry Attempts and Hedged RPCs".
///
/// Source: grpc-go `clientconn.go` (`retryThrottler.throttle`,
/// `retryThrottler.successfulRPC`, and its construction in
/// `applyServiceConfigAndBalancer`), and where it is called from in
/// `stream.go`:
///
/// - the bucket starts full, at `maxTokens`; the threshold is `maxTokens / 2`;
/// - `throttle()` is called for a failed attempt whose code is retryable, and
///   for a server pushback that says "stop" (negative or unparsable): it
///   takes 1 token (not below 0) and reports *throttled* when the level is
///   then ≤ the threshold — so the failure that brings the bucket down to
///   exactly half is already throttled;
/// - `successfulRPC()` is called once per call that ends with OK: it adds
///   `tokenRatio`, capped at `maxTokens`;
/// - non-retryable failures and committed calls do not touch the bucket.
///
/// grpc-go keeps the level in an `f64`; here it is an integer count of
/// thousandths of a token, the representation gRFC A6 suggests and C-core
/// uses, so that repeated `+0.1` steps cannot drift and the half-way
/// comparison is exact. For ratios with at most 3 decimals the two agree.
#[derive(Clone, Debug)]
pub struct Throttler {
    bucket: Arc<Mutex<Bucket>>,
}

#[derive(Debug)]
struct Bucket {
    /// Current level, in thousandths of a token, in `0..=max`.
    tokens: u64,
    max: u64,
    ratio: u64,
}

impl Throttler {
    /// A full bucket for `policy`.
    pub fn new(policy: &ThrottlingPolicy) -> Self {
        Throttler {
            bucket: Arc::new(Mutex::new(Bucket {
                tokens: policy.max_milli_tokens(),
                max: policy.max_milli_tokens(),
                ratio: policy.token_ratio_milli(),
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Bucket> {
        // No code path panics while holding the lock; recover rather than propagate.
        self.bucket.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records a failure: takes one token (the level never goes below 0) and
    /// returns `true` when retries are now throttled, i.e. the level is
    /// ≤ `maxTokens / 2` (grpc-go `retryThrottler.throttle`).
    pub fn throttle(&self) -> bool {
        let mut b = self.lock();
        b.tokens = b.tokens.saturating_sub(1000);
        // tokens ≤ max/2, without losing the half of an odd milli count.
        2 * b.tokens <= b.max
    }

    /// Records a call that ended with OK: adds `tokenRatio`, capped at
    /// `maxTokens` (grpc-go `retryThrottler.successfulRPC`).
    pub fn successful_rpc(&self) {
        let mut b = self.lock();
        b.tokens = (b.tokens + b.ratio).min(b.max);
    }

    /// Whether a retry would be refused right now without taking a token:
    /// level ≤ `maxTokens / 2`. For reports; [`Throttler::throttle`] decides.
    pub fn is_throttled(&self) -> bool {
        let b = self.lock();
        2 * b.tokens <= b.max
    }

    /// The current level, in tokens.
    pub fn tokens(&self) -> f64 {
        self.milli_tokens() as f64 / 1000.0
    }

    /// The current level, in thousandths of a token.
    pub fn milli_tokens(&self) -> u64 {
        self.lock().tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::config::RetryConfig;

    fn throttler(max_tokens: &str, ratio: &str) -> Throttler {
        let json =
            format!(r#"{{"retryThrottling":{{"maxTokens":{max_tokens},"tokenRatio":{ratio}}}}}"#);
        Throttler::new(RetryConfig::from_json(&json).unwrap().throttling().unwrap())
    }

    #[test]
    fn starts_full() {
        let t = throttler("10", "0.1");
        assert_eq!(t.tokens(), 10.0);
        assert!(!t.is_throttled());
    }

    #[test]
    fn reaching_exactly_half_is_already_throttled() {
        let t = throttler("10", "0.1");
        // 10 → 9, 8, 7, 6: above half, not throttled.
        for level in [9, 8, 7, 6] {
            assert!(!t.throttle());
            assert_eq!(t.milli_tokens(), level * 1000);
        }
        // 6 → 5 = 10 / 2: throttled.
        assert!(t.throttle());
        assert_eq!(t.tokens(), 5.0);
    }

    #[test]
    fn odd_max_tokens_half_is_fractional() {
        let t = throttler("3", "1");
        assert!(!t.throttle()); // 2 > 1.5
        assert!(t.throttle()); // 1 ≤ 1.5
    }

    #[test]
    fn never_below_zero() {
        let t = throttler("1", "0.5");
        assert!(t.throttle());
        assert!(t.throttle());
        assert_eq!(t.milli_tokens(), 0);
        t.successful_rpc();
        assert_eq!(t.tokens(), 0.5);
    }

    #[test]
    fn success_adds_ratio_capped_at_max() {
        let t = throttler("10", "0.1");
        t.successful_rpc();
        assert_eq!(t.tokens(), 10.0);
        for _ in 0..5 {
            t.throttle();
        }
        assert_eq!(t.tokens(), 5.0);
        // Ten successes of 0.1 make exactly one token (no float drift).
        for _ in 0..10 {
            t.successful_rpc();
        }
        assert_eq!(t.milli_tokens(), 6000);
        assert!(!t.is_throttled());
    }

    #[test]
    fn is_throttled_reports_without_taking_a_token() {
        let t = throttler("4", "0.5");
        assert!(!t.is_throttled(), "full");
        t.throttle(); // 3
        assert!(!t.is_throttled(), "3 > 2");
        t.throttle(); // 2 = half
        assert!(t.is_throttled(), "at half");
        assert_eq!(t.milli_tokens(), 2000, "asking takes no token");
        assert!(t.is_throttled(), "still, asked twice");
        t.successful_rpc(); // 2.5
        assert!(!t.is_throttled(), "2.5 > 2");
    }

    #[test]
    fn recovery_from_throttled_needs_successes() {
        let t = throttler("4", "0.5");
        assert!(!t.throttle()); // 3
        assert!(t.throttle()); // 2 = half
        t.successful_rpc(); // 2.5
        assert!(!t.is_throttled());
        assert!(t.throttle()); // 1.5
    }

    #[test]
    fn clones_share_the_bucket() {
        let t = throttler("10", "0.1");
        let u = t.clone();
        u.throttle();
        assert_eq!(t.tokens(), 9.0);
    }
}
