use std::time::Duration;

use tokio::time::Instant;

/// connection-backoff.md's INITIAL_BACKOFF, MULTIPLIER, MAX_BACKOFF and
/// JITTER.
const INITIAL: Duration = Duration::from_secs(1);
const MULTIPLIER: f64 = 1.6;
const MAX: Duration = Duration::from_secs(120);
const JITTER: f64 = 0.2;

/// One client's backoff state: consult [`ConnectBackoff::allows`] before
/// each call, report its end with [`ConnectBackoff::ended`].
#[derive(Debug, Clone)]
pub struct ConnectBackoff {
    /// Failed attempts in a row.
    failures: u32,
    /// No call before this instant (tokio's clock: simulated in a run).
    wait_until: Option<Instant>,
    /// SplitMix64 state for the jitter, from the caller's seed.
    rng: u64,
}

impl ConnectBackoff {
    /// A backoff whose jitter comes from `seed` (give each client its own).
    pub fn new(seed: u64) -> Self {
        Self {
            failures: 0,
            wait_until: None,
            rng: seed,
        }
    }

    /// Whether a call may go at `now` (`tokio::time::Instant::now()`);
    /// `false` while backing off.
    pub fn allows(&self, now: Instant) -> bool {
        self.wait_until.is_none_or(|t| now >= t)
    }

    /// Reports how a call that went ended: a connect failure (tonic's
    /// UNAVAILABLE "connect to …" or UNKNOWN "transport error") starts or
    /// grows the backoff; anything else means the connection was up and
    /// resets it.
    /// `started` is when the call went: the wait counts from the failed
    /// attempt's start, as the document's does.
    pub fn ended(&mut self, started: Instant, status: Option<&tonic::Status>) {
        if status.is_some_and(is_connect_failure) {
            let wait = self.next_wait();
            self.failures += 1;
            self.wait_until = Some(started + wait);
        } else {
            self.failures = 0;
            self.wait_until = None;
        }
    }

    /// The backoff for the next failure: `min(1 s × 1.6^failures, 120 s)`,
    /// times a uniform draw in [0.8, 1.2).
    fn next_wait(&mut self) -> Duration {
        let exponent = i32::try_from(self.failures.min(30)).unwrap_or(30);
        let base = (INITIAL.as_secs_f64() * MULTIPLIER.powi(exponent)).min(MAX.as_secs_f64());
        let unit = (splitmix(&mut self.rng) >> 11) as f64 / (1u64 << 53) as f64;
        Duration::from_secs_f64(base * (1.0 - JITTER + 2.0 * JITTER * unit))
    }
}

/// tonic's answers for a call whose connection could not be made.
fn is_connect_failure(status: &tonic::Status) -> bool {
    match status.code() {
        tonic::Code::Unavailable => status.message().starts_with("connect to"),
        tonic::Code::Unknown => status.message() == "transport error",
        _ => false,
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a seeded, portable stream.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_grow_by_1_6_within_the_jitter_and_a_success_resets() {
        let mut b = ConnectBackoff::new(7);
        let refused = tonic::Status::unavailable("connect to store: connection refused");
        let mut now = Instant::now();
        let mut base = 1.0;
        for _ in 0..5 {
            assert!(b.allows(now));
            b.ended(now, Some(&refused));
            let wait = (b.wait_until.unwrap() - now).as_secs_f64();
            assert!(
                (base * 0.8..base * 1.2).contains(&wait),
                "{wait} for base {base}"
            );
            assert!(!b.allows(now + Duration::from_secs_f64(wait * 0.99)));
            now += Duration::from_secs_f64(wait);
            base *= 1.6;
        }
        b.ended(now, None);
        assert!(b.allows(now));
        assert_eq!(b.failures, 0);
        // A failure that is not a connect failure does not back off.
        b.ended(now, Some(&tonic::Status::deadline_exceeded("late")));
        assert!(b.allows(now));
    }

    #[test]
    fn the_cap_is_120_seconds_plus_jitter() {
        let mut b = ConnectBackoff::new(1);
        b.failures = 40;
        let wait = b.next_wait().as_secs_f64();
        assert!((96.0..144.0).contains(&wait), "{wait}");
    }
}
