//! Outlier detection's configuration (gRFC A50, "Outlier Detection"): the
//! fields of gRPC's `outlier_detection_experimental` load-balancing config,
//! with the names of the xDS proto (`envoy.config.cluster.v3.OutlierDetection`
//! as A50 maps it) and grpc-go's `LBConfig`
//! (`xds/internal/balancer/outlierdetection/config.go`), and A50's defaults.
//! The algorithm that uses them is in `detector.rs`.

use std::time::Duration;

use crate::error::{Error, Kind};

/// Outlier detection for a balanced channel (gRFC A50), set with
/// [`Host::balanced_channel_outlier_detection`](crate::Host::balanced_channel_outlier_detection).
///
/// Every [`interval`](OutlierDetection::interval) the channel looks at
/// each replica's calls in the interval just ended and ejects outliers:
/// an ejected replica is not picked until its ejection time has passed.
/// The defaults are A50's (its xDS mapping of Envoy's `OutlierDetection`),
/// all durations *simulated* time:
///
/// | field | default |
/// |---|---|
/// | `interval` | 10 s |
/// | `base_ejection_time` | 30 s |
/// | `max_ejection_time` | 300 s |
/// | `max_ejection_percent` | 10 |
/// | `success_rate_ejection` | on, [`SuccessRateEjection::default`] |
/// | `failure_percentage_ejection` | present, [`FailurePercentageEjection::default`] (enforcement 0 %: it never ejects) |
///
/// A replica is ejected for `base_ejection_time × n`, n the times it was
/// ejected (less one for each interval since that it was not), capped at
/// `max(base_ejection_time, max_ejection_time)`; it returns at the first
/// interval after that. No ejection happens while
/// `max_ejection_percent` % of the set's replicas or more are ejected.
///
/// A call counts as a failure when it ends with any status but OK as the
/// channel saw it (grpc-go's `incrementCounter`: `DoneInfo.Err != nil`),
/// a deadline the caller set included.
///
/// Bad values are an error from [`Sim::run`](crate::Sim::run) (or from
/// [`OutlierDetection::validate`]) that names the field and the range.
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::balance::{OutlierDetection, SuccessRateEjection};
///
/// let od = OutlierDetection::default()
///     .interval(Duration::from_secs(5))
///     .success_rate_ejection(Some(SuccessRateEjection::default().request_volume(20)));
/// assert!(od.validate().is_ok());
/// assert!(OutlierDetection::default().max_ejection_percent(150).validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlierDetection {
    pub(super) interval: Duration,
    pub(super) base_ejection_time: Duration,
    pub(super) max_ejection_time: Duration,
    pub(super) max_ejection_percent: u32,
    pub(super) success_rate_ejection: Option<SuccessRateEjection>,
    pub(super) failure_percentage_ejection: Option<FailurePercentageEjection>,
}

impl Default for OutlierDetection {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(10),
            base_ejection_time: Duration::from_secs(30),
            max_ejection_time: Duration::from_secs(300),
            max_ejection_percent: 10,
            success_rate_ejection: Some(SuccessRateEjection::default()),
            failure_percentage_ejection: Some(FailurePercentageEjection::default()),
        }
    }
}

impl OutlierDetection {
    /// How often the channel looks at the calls and ejects or returns
    /// replicas (*simulated* time). Defaults to 10 s. Must not be zero.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The ejection time of a first ejection (*simulated* time); the n-th
    /// in a row is ejected n times as long. Defaults to 30 s.
    pub fn base_ejection_time(mut self, time: Duration) -> Self {
        self.base_ejection_time = time;
        self
    }

    /// The longest ejection, unless `base_ejection_time` is longer
    /// (*simulated* time). Defaults to 300 s.
    pub fn max_ejection_time(mut self, time: Duration) -> Self {
        self.max_ejection_time = time;
        self
    }

    /// No replica is ejected while this percentage of the set's replicas,
    /// or more, is ejected; 0 to 100. Defaults to 10 (with fewer than ten
    /// replicas: one at a time).
    pub fn max_ejection_percent(mut self, percent: u32) -> Self {
        self.max_ejection_percent = percent;
        self
    }

    /// Success-rate ejection, or `None` for none. Defaults to
    /// [`SuccessRateEjection::default`].
    pub fn success_rate_ejection(mut self, ejection: Option<SuccessRateEjection>) -> Self {
        self.success_rate_ejection = ejection;
        self
    }

    /// Failure-percentage ejection, or `None` for none. Defaults to
    /// [`FailurePercentageEjection::default`], whose enforcement of 0 %
    /// ejects nothing.
    pub fn failure_percentage_ejection(
        mut self,
        ejection: Option<FailurePercentageEjection>,
    ) -> Self {
        self.failure_percentage_ejection = ejection;
        self
    }

    /// Checks the ranges (A50's "Validation": percentages at most 100;
    /// the harness's own: a non-zero `interval`, since a zero one would
    /// look again without simulated time passing, and a non-zero
    /// `request_volume`, since a replica with no calls has no success
    /// rate). The error says which field and what to give instead
    /// ([`Error::is_misconfigured`]).
    pub fn validate(&self) -> Result<(), Error> {
        self.problem().map_or(Ok(()), |why| {
            Err(Error::new(Kind::Misconfigured(format!(
                "OutlierDetection: {why}"
            ))))
        })
    }

    fn problem(&self) -> Option<String> {
        if self.interval.is_zero() {
            return Some(
                "interval is zero; give a positive interval (A50's default is 10 s)".into(),
            );
        }
        if let Some(why) = percent("max_ejection_percent", self.max_ejection_percent, 10) {
            return Some(why);
        }
        if let Some(sr) = &self.success_rate_ejection {
            let name = "success_rate_ejection";
            let e = percent("enforcement_percentage", sr.enforcement_percentage, 100);
            let v = volume(sr.request_volume, 100);
            if let Some(why) = e.or(v) {
                return Some(format!("{name}.{why}"));
            }
        }
        if let Some(fp) = &self.failure_percentage_ejection {
            let name = "failure_percentage_ejection";
            let t = percent("threshold", fp.threshold, 85);
            let e = percent("enforcement_percentage", fp.enforcement_percentage, 0);
            let v = volume(fp.request_volume, 50);
            if let Some(why) = t.or(e).or(v) {
                return Some(format!("{name}.{why}"));
            }
        }
        None
    }
}

fn percent(field: &str, value: u32, default: u32) -> Option<String> {
    (value > 100).then(|| {
        format!(
            "{field} {value} is over 100; give a percentage from 0 to 100 (A50's default is {default})"
        )
    })
}

fn volume(value: u32, default: u32) -> Option<String> {
    (value == 0).then(|| {
        format!(
            "request_volume is 0; give at least 1 call per interval (A50's default is {default}): \
             a replica with no calls has no rate"
        )
    })
}

/// Success-rate ejection (A50, "Success Rate Ejection"): among the replicas
/// with at least `request_volume` calls in the interval (and only when
/// there are `minimum_hosts` of them), eject one whose success rate is
/// below `mean − stdev × stdev_factor / 1000`, with probability
/// `enforcement_percentage` % (drawn from the run's seed).
///
/// Defaults (A50): `stdev_factor` 1900 (1.9 standard deviations),
/// `enforcement_percentage` 100, `minimum_hosts` 5, `request_volume` 100.
/// With every other replica at 100 %, a replica with any failure is below
/// the line when there are 5 replicas or more, and never with 4 or fewer
/// (1.9 > √(n − 1) for n ≤ 4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuccessRateEjection {
    pub(super) stdev_factor: u32,
    pub(super) enforcement_percentage: u32,
    pub(super) minimum_hosts: u32,
    pub(super) request_volume: u32,
}

impl Default for SuccessRateEjection {
    fn default() -> Self {
        Self {
            stdev_factor: 1900,
            enforcement_percentage: 100,
            minimum_hosts: 5,
            request_volume: 100,
        }
    }
}

impl SuccessRateEjection {
    /// Standard deviations below the mean, in thousandths (1900 = 1.9).
    /// Defaults to 1900.
    pub fn stdev_factor(mut self, factor: u32) -> Self {
        self.stdev_factor = factor;
        self
    }

    /// The chance, 0 to 100 %, that an outlier found is ejected. Defaults
    /// to 100.
    pub fn enforcement_percentage(mut self, percent: u32) -> Self {
        self.enforcement_percentage = percent;
        self
    }

    /// Replicas with enough calls needed before any is judged. Defaults
    /// to 5.
    pub fn minimum_hosts(mut self, hosts: u32) -> Self {
        self.minimum_hosts = hosts;
        self
    }

    /// Calls in the interval a replica needs to be judged (and to count
    /// for the mean). Defaults to 100; at least 1.
    pub fn request_volume(mut self, calls: u32) -> Self {
        self.request_volume = calls;
        self
    }
}

/// Failure-percentage ejection (A50, "Failure Percentage Ejection"): among
/// the replicas with at least `request_volume` calls in the interval (and
/// only when there are `minimum_hosts` of them), eject one whose failed
/// calls are more than `threshold` %, with probability
/// `enforcement_percentage` % (drawn from the run's seed).
///
/// Defaults (A50): `threshold` 85, `enforcement_percentage` 0 (so it
/// ejects nothing until raised), `minimum_hosts` 5, `request_volume` 50.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailurePercentageEjection {
    pub(super) threshold: u32,
    pub(super) enforcement_percentage: u32,
    pub(super) minimum_hosts: u32,
    pub(super) request_volume: u32,
}

impl Default for FailurePercentageEjection {
    fn default() -> Self {
        Self {
            threshold: 85,
            enforcement_percentage: 0,
            minimum_hosts: 5,
            request_volume: 50,
        }
    }
}

impl FailurePercentageEjection {
    /// Failed calls, in percent, above which a replica is an outlier;
    /// 0 to 100. Defaults to 85.
    pub fn threshold(mut self, percent: u32) -> Self {
        self.threshold = percent;
        self
    }

    /// The chance, 0 to 100 %, that an outlier found is ejected. Defaults
    /// to 0: set it to turn this ejection on.
    pub fn enforcement_percentage(mut self, percent: u32) -> Self {
        self.enforcement_percentage = percent;
        self
    }

    /// Replicas with enough calls needed before any is judged. Defaults
    /// to 5.
    pub fn minimum_hosts(mut self, hosts: u32) -> Self {
        self.minimum_hosts = hosts;
        self
    }

    /// Calls in the interval a replica needs to be judged. Defaults to 50;
    /// at least 1.
    pub fn request_volume(mut self, calls: u32) -> Self {
        self.request_volume = calls;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(od: OutlierDetection) -> String {
        let e = od.validate().expect_err("invalid");
        assert!(e.is_misconfigured(), "{e}");
        e.to_string()
    }

    #[test]
    fn the_defaults_are_a50s_and_valid() {
        let od = OutlierDetection::default();
        assert!(od.validate().is_ok());
        assert_eq!(od.interval, Duration::from_secs(10));
        assert_eq!(od.base_ejection_time, Duration::from_secs(30));
        assert_eq!(od.max_ejection_time, Duration::from_secs(300));
        assert_eq!(od.max_ejection_percent, 10);
        let sr = od.success_rate_ejection.expect("on");
        assert_eq!((sr.stdev_factor, sr.enforcement_percentage), (1900, 100));
        assert_eq!((sr.minimum_hosts, sr.request_volume), (5, 100));
        let fp = od.failure_percentage_ejection.expect("present");
        assert_eq!((fp.threshold, fp.enforcement_percentage), (85, 0));
        assert_eq!((fp.minimum_hosts, fp.request_volume), (5, 50));
    }

    #[test]
    fn bad_values_name_the_field_and_the_fix() {
        let e = error(OutlierDetection::default().max_ejection_percent(101));
        assert!(e.contains("max_ejection_percent 101 is over 100"), "{e}");
        let e = error(OutlierDetection::default().interval(Duration::ZERO));
        assert!(
            e.contains("interval is zero; give a positive interval"),
            "{e}"
        );
        let sr = SuccessRateEjection::default().request_volume(0);
        let e = error(OutlierDetection::default().success_rate_ejection(Some(sr)));
        assert!(
            e.contains("success_rate_ejection.request_volume is 0"),
            "{e}"
        );
        let fp = FailurePercentageEjection::default().threshold(200);
        let e = error(OutlierDetection::default().failure_percentage_ejection(Some(fp)));
        assert!(
            e.contains("failure_percentage_ejection.threshold 200"),
            "{e}"
        );
        let fp = FailurePercentageEjection::default().enforcement_percentage(101);
        let e = error(OutlierDetection::default().failure_percentage_ejection(Some(fp)));
        assert!(e.contains("enforcement_percentage 101"), "{e}");
    }
}
