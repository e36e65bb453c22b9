//! Exponential backoff with jitter between retry attempts: [`delay_window`] and its docs.

use std::time::Duration;

use rand::Rng;

use super::config::RetryPolicy;

/// How the base delay is randomised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Jitter {
    /// `base × uniform[0.8, 1.2)`: current grpc-go (`cur *= 0.8 +
    /// 0.4*rand.Float64()` in `stream.go`; v1.83 per seed 000 §5). The default.
    #[default]
    GrpcGo,
    /// `uniform[0, base)`: the original text of gRFC A6
    /// ("random(0, current_backoff)"), as older grpc-go releases did it.
    A6Uniform,
}

/// A half-open range `[lo, hi)` of delays, in simulated time when run in the
/// harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DelayWindow {
    /// Smallest allowed delay (inclusive).
    pub lo: Duration,
    /// Bound of the allowed delays (exclusive); always greater than `lo`.
    pub hi: Duration,
}

impl DelayWindow {
    /// Whether `d` lies in `[lo, hi)`.
    pub fn contains(&self, d: Duration) -> bool {
        self.lo <= d && d < self.hi
    }
}

/// `min(initialBackoff × backoffMultiplier^n, maxBackoff)`: the delay before
/// jitter for retry `n` (0-based, counted since the last pushback).
///
/// The product is computed in `f64` nanoseconds as grpc-go does, then
/// truncated to whole nanoseconds; an overflow saturates at `maxBackoff`.
pub fn base_delay(policy: &RetryPolicy, n: u32) -> Duration {
    Duration::from_nanos(base_nanos(policy, n))
}

fn base_nanos(policy: &RetryPolicy, n: u32) -> u64 {
    let max = duration_nanos(policy.max_backoff());
    let exp = i32::try_from(n).unwrap_or(i32::MAX);
    let cur =
        duration_nanos(policy.initial_backoff()) as f64 * policy.backoff_multiplier().powi(exp);
    // `min` with a finite bound also tames +inf; `as` saturates and maps NaN to 0.
    (cur.min(max as f64) as u64).min(max)
}

fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The window `[lo, hi)` that the jittered delay for retry `n` falls in.
///
/// [`Jitter::GrpcGo`]: `[⌊0.8·b⌋, ⌊1.2·b⌋)` ns with `b` = [`base_delay`];
/// [`Jitter::A6Uniform`]: `[0, b)`. When the window would be empty (a base
/// of a few nanoseconds), it is widened to hold exactly `lo`.
///
/// # The backoff
///
/// Exponential backoff with jitter between retry attempts.
///
/// For retry number `n` (0 for the first retry, counting since the last
/// server pushback) the base delay is `min(initialBackoff × backoffMultiplier^n,
/// maxBackoff)` (gRFC A6 "Exponential Backoff"; grpc-go `stream.go`
/// `csAttempt.shouldRetry`). Jitter then spreads it, as chosen by [`Jitter`].
///
/// All maths is done in integer nanoseconds after the power, so the window of
/// allowed delays ([`delay_window`]) is exact and a trace checker can test a
/// recorded delay against it without tolerances.
pub fn delay_window(policy: &RetryPolicy, jitter: Jitter, n: u32) -> DelayWindow {
    let (lo, hi) = window_nanos(base_nanos(policy, n), jitter);
    DelayWindow {
        lo: Duration::from_nanos(lo),
        hi: Duration::from_nanos(hi),
    }
}

fn window_nanos(base: u64, jitter: Jitter) -> (u64, u64) {
    let b = u128::from(base);
    let (lo, hi) = match jitter {
        Jitter::GrpcGo => (b * 4 / 5, b * 6 / 5),
        Jitter::A6Uniform => (0, b),
    };
    // base ≤ i64::MAX (config saturates durations there), so 1.2·base fits in u64.
    // Both fallbacks are therefore never taken, and `lo` (0.8·base) would fit
    // even for base = u64::MAX: cargo-mutants' `u64::MAX / 1` for
    // `u64::MAX - 1` is an equivalent mutant no test can kill.
    let lo = u64::try_from(lo).unwrap_or(u64::MAX - 1);
    let hi = u64::try_from(hi).unwrap_or(u64::MAX);
    (lo, hi.max(lo + 1))
}

/// Draws the delay for retry `n`: uniform over [`delay_window`], one draw
/// from `rng` per call.
pub fn jittered_delay<R: Rng + ?Sized>(
    policy: &RetryPolicy,
    jitter: Jitter,
    n: u32,
    rng: &mut R,
) -> Duration {
    let (lo, hi) = window_nanos(base_nanos(policy, n), jitter);
    Duration::from_nanos(rng.random_range(lo..hi))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::config::RetryConfig;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn policy(initial: &str, max: &str, mult: f64) -> RetryPolicy {
        let json = format!(
            r#"{{"methodConfig":[{{"name":[{{}}],"retryPolicy":{{"maxAttempts":5,
            "initialBackoff":"{initial}","maxBackoff":"{max}","backoffMultiplier":{mult},
            "retryableStatusCodes":["UNAVAILABLE"]}}}}]}}"#
        );
        RetryConfig::from_json(&json)
            .unwrap()
            .policy_for("/a.B/C")
            .unwrap()
            .clone()
    }

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn base_grows_by_the_multiplier_then_hits_max_backoff() {
        let p = policy("0.1s", "1s", 2.0);
        let bases: Vec<_> = (0..6).map(|n| base_delay(&p, n)).collect();
        assert_eq!(
            bases,
            [ms(100), ms(200), ms(400), ms(800), ms(1000), ms(1000)]
        );
    }

    #[test]
    fn multiplier_below_one_shrinks_and_huge_n_saturates() {
        let p = policy("1s", "10s", 0.5);
        assert_eq!(base_delay(&p, 1), ms(500));
        let q = policy("0.1s", "1s", 10.0);
        assert_eq!(base_delay(&q, u32::MAX), ms(1000));
    }

    #[test]
    fn max_backoff_below_initial_caps_the_first_retry() {
        let p = policy("2s", "0.5s", 2.0);
        assert_eq!(base_delay(&p, 0), ms(500));
    }

    #[test]
    fn grpc_go_window_is_point_eight_to_one_point_two() {
        let p = policy("0.1s", "1s", 2.0);
        let w = delay_window(&p, Jitter::GrpcGo, 0);
        assert_eq!((w.lo, w.hi), (ms(80), ms(120)));
        let w = delay_window(&p, Jitter::GrpcGo, 9);
        assert_eq!((w.lo, w.hi), (ms(800), ms(1200)));
        assert!(w.contains(ms(800)) && !w.contains(ms(1200)));
    }

    #[test]
    fn a6_window_is_zero_to_base() {
        let p = policy("0.1s", "1s", 2.0);
        let w = delay_window(&p, Jitter::A6Uniform, 1);
        assert_eq!((w.lo, w.hi), (Duration::ZERO, ms(200)));
    }

    #[test]
    fn tiny_base_still_has_a_non_empty_window() {
        let p = policy("0.000000001s", "1s", 1.0);
        let w = delay_window(&p, Jitter::GrpcGo, 0);
        assert_eq!((w.lo, w.hi), (Duration::ZERO, Duration::from_nanos(1)));
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(
            jittered_delay(&p, Jitter::A6Uniform, 0, &mut rng),
            Duration::ZERO
        );
    }

    #[test]
    fn a_base_truncated_to_zero_still_has_a_one_nanosecond_window() {
        // 1 ns × 0.5 = 0.5 ns, truncated to 0: both jitters' windows would be
        // [0, 0), empty, and a draw from it would panic.
        let p = policy("0.000000001s", "1s", 0.5);
        assert_eq!(base_delay(&p, 1), Duration::ZERO);
        for jitter in [Jitter::GrpcGo, Jitter::A6Uniform] {
            let w = delay_window(&p, jitter, 1);
            assert_eq!(
                (w.lo, w.hi),
                (Duration::ZERO, Duration::from_nanos(1)),
                "{jitter:?}"
            );
            let mut rng = SmallRng::seed_from_u64(3);
            assert_eq!(
                jittered_delay(&p, jitter, 1, &mut rng),
                Duration::ZERO,
                "{jitter:?}"
            );
        }
    }

    #[test]
    fn draws_stay_in_the_window_and_spread() {
        let p = policy("0.1s", "1s", 2.0);
        let mut rng = SmallRng::seed_from_u64(7);
        for jitter in [Jitter::GrpcGo, Jitter::A6Uniform] {
            for n in 0..6 {
                let w = delay_window(&p, jitter, n);
                let draws: Vec<_> = (0..200)
                    .map(|_| jittered_delay(&p, jitter, n, &mut rng))
                    .collect();
                assert!(draws.iter().all(|d| w.contains(*d)), "{jitter:?} n={n}");
                let (min, max) = (draws.iter().min().unwrap(), draws.iter().max().unwrap());
                // 200 uniform draws cover most of the window.
                assert!(*max - *min > (w.hi - w.lo) * 3 / 4, "{jitter:?} n={n}");
            }
        }
    }

    #[test]
    fn same_seed_same_delays_other_seed_other_delays() {
        let p = policy("0.1s", "1s", 2.0);
        let run = |seed| {
            let mut rng = SmallRng::seed_from_u64(seed);
            (0..4)
                .map(|n| jittered_delay(&p, Jitter::GrpcGo, n, &mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(42), run(42));
        assert_ne!(run(42), run(43));
    }
}
