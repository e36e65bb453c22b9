//! Units and plain-text formatting every module may use: a leaf that
//! imports nothing from the crate, so a fault's description, an error's
//! message and a render all say a duration the same way without the faults
//! or the error reaching down into the trace for it.

use std::time::Duration;

/// Formats a *simulated* duration in milliseconds with up to three
/// decimals, trailing zeros dropped: `500ms`, `488.8ms`, `0.25ms`.
pub fn fmt_duration(d: Duration) -> String {
    let micros = d.as_micros();
    let (ms, frac) = (micros / 1000, micros % 1000);
    if frac == 0 {
        return format!("{ms}ms");
    }
    let frac = format!("{frac:03}");
    format!("{ms}.{}ms", frac.trim_end_matches('0'))
}

/// The text of a panic's payload (`panic!` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

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
}
