//! Outlier detection's algorithm (gRFC A50, "Outlier Detection"), I/O-free:
//! replicas' calls are counted as they end ([`Detector::count`]), and at
//! every interval the caller runs [`Detector::sweep`] with the simulated
//! time, which says whom to eject and whom to return.
//!
//! Read from A50 and grpc-go's `xds/internal/balancer/outlierdetection/
//! balancer.go` (`intervalTimerAlgorithm`, `successRateAlgorithm`,
//! `failurePercentageAlgorithm`, `meanAndStdDev`):
//! - each sweep swaps the call counters: it judges the interval just ended;
//! - success rate: only when `minimum_hosts` replicas have `request_volume`
//!   calls; the mean and the population standard deviation of their
//!   success fractions; a replica below `mean − stdev × stdev_factor/1000`
//!   is ejected if a draw in 0..100 is below `enforcement_percentage`;
//! - failure percentage: the same gate; a replica with more than
//!   `threshold` % failures is ejected on the same draw;
//! - before each ejection: none while `ejected / replicas × 100 ≥
//!   max_ejection_percent`;
//! - an ejection stamps the sweep's time and adds 1 to the replica's
//!   multiplier; afterwards each replica not ejected loses 1 of its
//!   multiplier, and an ejected one returns once `now ≥ stamp +
//!   min(base × multiplier, max(base, max_ejection_time))` (grpc-go: `now`
//!   after; the sim's clock can land on it exactly, so ≥ here).
//!
//! Where it differs: a replica already ejected is not judged again in the
//! same sweep (grpc-go would count it twice against the percentage; it
//! only arises when both algorithms flag it, since an ejected replica gets
//! no calls). The replicas are the set's, fixed when the channel is made:
//! one that left the set ([`Fault::leave`](crate::Fault::leave)) keeps its
//! place and counts in `max_ejection_percent`'s denominator, where grpc-go
//! drops an address the resolver no longer lists.

use std::time::Duration;

use tower::util::rng::Rng;

use super::outlier::OutlierDetection;
use super::rng::SplitMix64;
use crate::recorder::event::Ejection;

/// Calls of one interval.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Bucket {
    successes: u32,
    failures: u32,
}

impl Bucket {
    fn calls(&self) -> u32 {
        self.successes + self.failures
    }

    fn success_rate(&self) -> f64 {
        f64::from(self.successes) / f64::from(self.calls())
    }
}

#[derive(Debug, Default)]
struct Replica {
    /// This interval's calls.
    active: Bucket,
    /// The last interval's, which the sweep judges.
    judged: Bucket,
    /// When it was ejected, while it is.
    ejected_at: Option<Duration>,
    multiplier: u32,
}

/// What a sweep decided about one replica (by index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Decision {
    Eject {
        replica: usize,
        why: Ejection,
        successes: u32,
        calls: u32,
        /// How long it stays out, as things stand.
        ejected_for: Duration,
    },
    Return {
        replica: usize,
        /// How long it was out.
        after: Duration,
    },
}

/// Outlier detection over the replicas of one balanced channel.
#[derive(Debug)]
pub(super) struct Detector {
    config: OutlierDetection,
    replicas: Vec<Replica>,
    rng: SplitMix64,
}

impl Detector {
    pub(super) fn new(config: OutlierDetection, replicas: usize, rng: SplitMix64) -> Self {
        Self {
            config,
            replicas: (0..replicas).map(|_| Replica::default()).collect(),
            rng,
        }
    }

    pub(super) fn interval(&self) -> Duration {
        self.config.interval
    }

    /// A call to `replica` ended, OK or not.
    pub(super) fn count(&mut self, replica: usize, ok: bool) {
        if let Some(r) = self.replicas.get_mut(replica) {
            if ok {
                r.active.successes += 1;
            } else {
                r.active.failures += 1;
            }
        }
    }

    pub(super) fn is_ejected(&self, replica: usize) -> bool {
        self.replicas
            .get(replica)
            .is_some_and(|r| r.ejected_at.is_some())
    }

    /// One interval's work at `now` (time since the channel started).
    pub(super) fn sweep(&mut self, now: Duration) -> Vec<Decision> {
        for r in &mut self.replicas {
            r.judged = std::mem::take(&mut r.active);
        }
        let mut decisions = Vec::new();
        self.success_rate(now, &mut decisions);
        self.failure_percentage(now, &mut decisions);
        self.returns(now, &mut decisions);
        decisions
    }

    /// Indices of the replicas with at least `volume` calls judged.
    fn with_volume(&self, volume: u32) -> Vec<usize> {
        (0..self.replicas.len())
            .filter(|&i| self.replicas[i].judged.calls() >= volume)
            .collect()
    }

    fn success_rate(&mut self, now: Duration, out: &mut Vec<Decision>) {
        let Some(sr) = self.config.success_rate_ejection.clone() else {
            return;
        };
        let judged = self.with_volume(sr.request_volume);
        if judged.len() < sr.minimum_hosts as usize || judged.is_empty() {
            return;
        }
        let rates: Vec<f64> = judged
            .iter()
            .map(|&i| self.replicas[i].judged.success_rate())
            .collect();
        let (mean, stdev) = mean_and_stdev(&rates);
        let required = mean - stdev * f64::from(sr.stdev_factor) / 1000.0;
        let why = Ejection::SuccessRate {
            mean_ppm: ppm(mean),
            required_ppm: ppm(required),
        };
        for (&i, &rate) in judged.iter().zip(&rates) {
            if self.at_max() {
                return;
            }
            if rate < required && self.draw() < sr.enforcement_percentage {
                self.eject(i, now, why, out);
            }
        }
    }

    fn failure_percentage(&mut self, now: Duration, out: &mut Vec<Decision>) {
        let Some(fp) = self.config.failure_percentage_ejection.clone() else {
            return;
        };
        let judged = self.with_volume(fp.request_volume);
        if judged.len() < fp.minimum_hosts as usize {
            return;
        }
        for i in judged {
            if self.at_max() {
                return;
            }
            let b = self.replicas[i].judged;
            let failed = f64::from(b.failures) * 100.0 / f64::from(b.calls());
            if failed > f64::from(fp.threshold) && self.draw() < fp.enforcement_percentage {
                let why = Ejection::FailurePercentage {
                    threshold: fp.threshold,
                };
                self.eject(i, now, why, out);
            }
        }
    }

    /// Whether `max_ejection_percent` of the replicas are ejected already.
    fn at_max(&self) -> bool {
        let ejected = self
            .replicas
            .iter()
            .filter(|r| r.ejected_at.is_some())
            .count();
        ejected as f64 * 100.0 / self.replicas.len() as f64
            >= f64::from(self.config.max_ejection_percent)
    }

    /// A draw in 0..100 (grpc-go: `rand.Int32N(100)`), from the seed.
    fn draw(&mut self) -> u32 {
        (self.rng.next_u64() % 100) as u32
    }

    fn eject(&mut self, i: usize, now: Duration, why: Ejection, out: &mut Vec<Decision>) {
        let r = &mut self.replicas[i];
        if r.ejected_at.is_some() {
            return;
        }
        r.ejected_at = Some(now);
        r.multiplier += 1;
        let (successes, calls) = (r.judged.successes, r.judged.calls());
        let ejected_for = self.ejection_time(self.replicas[i].multiplier);
        out.push(Decision::Eject {
            replica: i,
            why,
            successes,
            calls,
            ejected_for,
        });
    }

    /// `min(base × multiplier, max(base, max_ejection_time))`.
    fn ejection_time(&self, multiplier: u32) -> Duration {
        let base = self.config.base_ejection_time;
        let cap = base.max(self.config.max_ejection_time);
        base.saturating_mul(multiplier).min(cap)
    }

    fn returns(&mut self, now: Duration, out: &mut Vec<Decision>) {
        for i in 0..self.replicas.len() {
            let time = self.ejection_time(self.replicas[i].multiplier);
            let r = &mut self.replicas[i];
            match r.ejected_at {
                None => r.multiplier = r.multiplier.saturating_sub(1),
                Some(at) if now >= at + time => {
                    r.ejected_at = None;
                    out.push(Decision::Return {
                        replica: i,
                        after: now - at,
                    });
                }
                Some(_) => {}
            }
        }
    }
}

/// The mean and the population standard deviation (grpc-go's
/// `meanAndStdDev` divides by the count, not count − 1).
fn mean_and_stdev(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, variance.sqrt())
}

/// A fraction in parts per million, for the typed event (which must stay
/// `Eq`); a negative line is kept negative.
fn ppm(fraction: f64) -> i32 {
    (fraction * 1_000_000.0).round() as i32
}

#[cfg(test)]
mod tests {
    use super::super::outlier::{FailurePercentageEjection, SuccessRateEjection};
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn detector(config: OutlierDetection, n: usize) -> Detector {
        Detector::new(config, n, SplitMix64::new(7))
    }

    /// Each replica's (successes, failures) this interval.
    fn calls(d: &mut Detector, counts: &[(u32, u32)]) {
        for (i, &(ok, failed)) in counts.iter().enumerate() {
            (0..ok).for_each(|_| d.count(i, true));
            (0..failed).for_each(|_| d.count(i, false));
        }
    }

    fn ejected(decisions: &[Decision]) -> Vec<usize> {
        decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Eject { replica, .. } => Some(*replica),
                Decision::Return { .. } => None,
            })
            .collect()
    }

    fn sr_only(sr: SuccessRateEjection) -> OutlierDetection {
        OutlierDetection::default()
            .success_rate_ejection(Some(sr))
            .failure_percentage_ejection(None)
            .max_ejection_percent(100)
    }

    #[test]
    fn success_rate_ejects_half_failing_of_five_not_of_four() {
        // Five: mean 0.9, stdev 0.2, line 0.9 − 1.9 × 0.2 = 0.52 > 0.5.
        let mut d = detector(OutlierDetection::default(), 5);
        calls(&mut d, &[(100, 0), (50, 50), (100, 0), (100, 0), (100, 0)]);
        let out = d.sweep(10 * S);
        assert_eq!(
            out,
            [Decision::Eject {
                replica: 1,
                why: Ejection::SuccessRate {
                    mean_ppm: 900_000,
                    required_ppm: 520_000
                },
                successes: 50,
                calls: 100,
                ejected_for: 30 * S,
            }]
        );
        // Four (minimum_hosts lowered): mean 0.875, stdev 0.2165, line
        // 0.464 < 0.5: not an outlier, however many calls fail.
        let sr = SuccessRateEjection::default().minimum_hosts(4);
        let mut d = detector(sr_only(sr), 4);
        calls(&mut d, &[(100, 0), (50, 50), (100, 0), (100, 0)]);
        assert!(ejected(&d.sweep(10 * S)).is_empty());
        let mut d = detector(sr_only(SuccessRateEjection::default().minimum_hosts(4)), 4);
        calls(&mut d, &[(100, 0), (0, 100), (100, 0), (100, 0)]);
        assert!(ejected(&d.sweep(10 * S)).is_empty(), "not even at 0 %");
    }

    #[test]
    fn success_rate_needs_volume_and_minimum_hosts() {
        // One replica short of request_volume: four judged, fewer than 5.
        let mut d = detector(OutlierDetection::default(), 5);
        calls(&mut d, &[(100, 0), (50, 50), (100, 0), (100, 0), (99, 0)]);
        assert!(d.sweep(10 * S).is_empty());
    }

    #[test]
    fn failure_percentage_is_off_by_default_and_ejects_over_its_threshold() {
        let only_fp = |fp| {
            OutlierDetection::default()
                .success_rate_ejection(None)
                .failure_percentage_ejection(Some(fp))
                .max_ejection_percent(100)
        };
        let fp = FailurePercentageEjection::default().minimum_hosts(3);
        let mut d = detector(only_fp(fp.clone()), 3);
        calls(&mut d, &[(50, 0), (0, 50), (50, 0)]);
        assert!(d.sweep(10 * S).is_empty(), "enforcement 0 %");
        let fp = fp.enforcement_percentage(100).threshold(50);
        let mut d = detector(only_fp(fp), 3);
        // 50 % is not over 50; 51 % is.
        calls(&mut d, &[(25, 25), (49, 51), (50, 0)]);
        assert_eq!(ejected(&d.sweep(10 * S)), [1]);
    }

    #[test]
    fn max_ejection_percent_stops_the_second_ejection() {
        let fp = FailurePercentageEjection::default()
            .enforcement_percentage(100)
            .minimum_hosts(1)
            .request_volume(1);
        let od = OutlierDetection::default()
            .success_rate_ejection(None)
            .failure_percentage_ejection(Some(fp));
        // 10 %: 0 of 5 ejected is under it, 1 of 5 (20 %) is not.
        let mut d = detector(od.clone(), 5);
        calls(&mut d, &[(0, 9), (0, 9), (9, 0), (9, 0), (9, 0)]);
        assert_eq!(ejected(&d.sweep(10 * S)), [0]);
        let mut d = detector(od.clone().max_ejection_percent(40), 5);
        calls(&mut d, &[(0, 9), (0, 9), (0, 9), (9, 0), (9, 0)]);
        assert_eq!(ejected(&d.sweep(10 * S)), [0, 1], "20 %, 40 % stops");
        let mut d = detector(od.max_ejection_percent(0), 5);
        calls(&mut d, &[(0, 9), (9, 0), (9, 0), (9, 0), (9, 0)]);
        assert!(d.sweep(10 * S).is_empty(), "0 % ejects nothing");
    }

    #[test]
    fn the_ejection_time_grows_with_the_multiplier_and_shrinks_back() {
        let fp = FailurePercentageEjection::default()
            .enforcement_percentage(100)
            .minimum_hosts(1)
            .request_volume(1);
        let od = OutlierDetection::default()
            .success_rate_ejection(None)
            .failure_percentage_ejection(Some(fp))
            .max_ejection_percent(100)
            .max_ejection_time(50 * S);
        let mut d = detector(od, 2);
        let mut t = Duration::ZERO;
        let mut step = |d: &mut Detector, bad: bool| {
            t += 10 * S;
            calls(d, &[(9, 0), if bad { (0, 9) } else { (9, 0) }]);
            d.sweep(t)
        };
        // Ejected at 10 s for 30 s: returns at the sweep of 40 s.
        assert!(
            matches!(step(&mut d, true)[..], [Decision::Eject { ejected_for, .. }] if ejected_for == 30 * S)
        );
        assert!(d.is_ejected(1));
        for _ in 0..2 {
            assert!(step(&mut d, false).is_empty());
        }
        assert_eq!(
            step(&mut d, false),
            [Decision::Return {
                replica: 1,
                after: 30 * S
            }]
        );
        // Ejected again at once: 2 × 30 s, capped at max(30, 50) = 50 s.
        assert!(
            matches!(step(&mut d, true)[..], [Decision::Eject { ejected_for, .. }] if ejected_for == 50 * S)
        );
        for _ in 0..4 {
            assert!(step(&mut d, false).is_empty());
        }
        assert_eq!(
            step(&mut d, false),
            [Decision::Return {
                replica: 1,
                after: 50 * S
            }]
        );
        // Two good intervals take the multiplier from 2 to 0: 30 s again.
        step(&mut d, false);
        step(&mut d, false);
        assert!(
            matches!(step(&mut d, true)[..], [Decision::Eject { ejected_for, .. }] if ejected_for == 30 * S)
        );
    }

    #[test]
    fn enforcement_draws_are_seeded() {
        let sr = SuccessRateEjection::default().enforcement_percentage(50);
        let run = |seed| {
            let mut d = Detector::new(sr_only(sr.clone()), 5, SplitMix64::new(seed));
            (0..20)
                .map(|n| {
                    calls(&mut d, &[(100, 0), (50, 50), (100, 0), (100, 0), (100, 0)]);
                    let out = d.sweep(n * 1000 * S);
                    !ejected(&out).is_empty()
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(3), run(3));
        let ejections = run(3).iter().filter(|e| **e).count();
        assert!((1..20).contains(&ejections), "about half: {ejections}");
    }
}
