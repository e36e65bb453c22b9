//! Units and plain-text formatting every module may use: a leaf that
//! imports nothing from the crate, so a fault's description, an error's
//! message and a render all say a duration the same way without the faults
//! or the error reaching down into the trace for it.

use std::time::Duration;

/// Formats a *simulated* duration in milliseconds with up to three
/// decimals, trailing zeros dropped: `500ms`, `488.8ms`, `0.25ms`.
///
/// From 1,000 years of 365 days (31,536,000,000 s) on it prints
/// `≥ 1000 years`: no run simulates that long (a single wait is capped at
/// one year), so such a value is a sentinel or a typo (`Duration::MAX`
/// would be `18446744073709551615999.999ms`), and a 17-digit count of
/// milliseconds says less than that bound.
pub fn fmt_duration(d: Duration) -> String {
    if d >= HUGE_DURATION {
        return "≥ 1000 years".to_owned();
    }
    let micros = d.as_micros();
    let (ms, frac) = (micros / 1000, micros % 1000);
    if frac == 0 {
        return format!("{ms}ms");
    }
    let frac = format!("{frac:03}");
    format!("{ms}.{}ms", frac.trim_end_matches('0'))
}

/// The shortest duration [`fmt_duration`] prints as `≥ 1000 years`
/// rather than in milliseconds: 1,000 years of 365 days
/// (31,536,000,000 s).
const HUGE_DURATION: Duration = Duration::from_secs(1000 * 365 * 24 * 3600);

/// The text of a panic's payload (`panic!` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

/// *Simulated* time as the timeline's ms column shows it: `500.400`.
pub(crate) fn fmt_ms(at: std::time::Duration) -> String {
    format!("{:.3}", at.as_nanos() as f64 / 1e6)
}

/// The simulated wall clock at the start of a run, seconds since the Unix
/// epoch (2026-01-01T00:00:00Z): [`defaults::EPOCH_SECS`](crate::defaults::EPOCH_SECS),
/// kept here, a leaf, for the TLS clock and certificates (`tls/`) too.
pub(crate) const EPOCH_SECS: u64 = 1_767_225_600;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::fmt_duration;

    #[test]
    fn durations_render_in_ms() {
        assert_eq!(fmt_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(fmt_duration(Duration::from_micros(488_800)), "488.8ms");
        assert_eq!(fmt_duration(Duration::from_micros(250)), "0.25ms");
        assert_eq!(fmt_duration(Duration::ZERO), "0ms");
    }

    #[test]
    fn huge_durations_print_their_bound() {
        use super::HUGE_DURATION;
        let just_under = HUGE_DURATION - Duration::from_micros(1);
        assert_eq!(fmt_duration(just_under), "31535999999999.999ms");
        // A year, the longest single wait, still in ms.
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(fmt_duration(year), "31536000000ms");
        for huge in [
            HUGE_DURATION,
            HUGE_DURATION + Duration::from_nanos(1),
            Duration::from_secs(u64::MAX),
            Duration::MAX,
        ] {
            assert_eq!(fmt_duration(huge), "≥ 1000 years", "{huge:?}");
        }
    }
}
