//! The clock rustls reads for certificate validity and ticket ages: the
//! simulation's, not the wall's.

use std::sync::Arc;

use rustls::pki_types::UnixTime;
use rustls::time_provider::TimeProvider;

use crate::recorder::Recorder;
use crate::units::EPOCH_SECS;

/// rustls's `TimeProvider` (rustls 0.23 `time_provider.rs`: "used to, for
/// example, check if a certificate has expired during certificate
/// validation, or to check the age of a ticket") on *simulated* time: the
/// sim's epoch ([`EPOCH_SECS`], 2026-01-01T00:00:00Z) plus the running
/// host's simulated elapsed time (the recorder's clock, the one every
/// event is stamped with). Given to every config the harness builds with
/// `builder_with_details`, which rustls's own `builder` sets to the wall
/// clock (`DefaultTimeProvider`, `UnixTime::now`).
#[derive(Clone)]
pub(crate) struct SimClock(pub(crate) Arc<Recorder>);

impl SimClock {
    /// The simulated Unix time now.
    pub(crate) fn unix_now(&self) -> UnixTime {
        let since = std::time::Duration::from_secs(EPOCH_SECS) + self.0.now();
        UnixTime::since_unix_epoch(since)
    }
}

impl TimeProvider for SimClock {
    fn current_time(&self) -> Option<UnixTime> {
        Some(self.unix_now())
    }
}

impl std::fmt::Debug for SimClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SimClock")
    }
}
