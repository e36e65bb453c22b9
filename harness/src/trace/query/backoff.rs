//! Redials that come sooner than connection backoff allows.
//!
//! grpc's `doc/connection-backoff.md` (read) says how a channel redials
//! after a failed connection attempt: the next attempt starts no sooner
//! than a backoff after the start of the one that failed, the backoff
//! starting at INITIAL_BACKOFF = 1 s and growing ×1.6 per consecutive
//! failure up to MAX_BACKOFF = 120 s, each jittered by ±20%; a connection
//! that comes up resets it. tonic 0.14.9's channel has no such backoff: it
//! dials again on the next call after a failure
//! (`transport/channel/service/reconnect.rs`, read; measured in
//! `tests/tests/faults/partitions.rs`, one dial per call 100 ms apart). This finds
//! each redial that started before the smallest start the document allows
//! (the backoff less its 20% jitter), per dialling host and server, so a
//! reconnect storm shows in the summary. The document's
//! MIN_CONNECT_TIMEOUT (20 s) is about how long an attempt may take, not
//! when the next starts, and is not checked here.

use std::collections::HashMap;
use std::time::Duration;

use crate::recorder::event::{Event, EventKind, HostName};

/// connection-backoff.md's INITIAL_BACKOFF.
const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
/// connection-backoff.md's MAX_BACKOFF.
const MAX_BACKOFF: Duration = Duration::from_secs(120);
/// connection-backoff.md's MULTIPLIER.
const MULTIPLIER: f64 = 1.6;
/// connection-backoff.md's JITTER: a backoff may be this much shorter.
const JITTER: f64 = 0.2;

/// The redials of one host to one server that came too soon, with the
/// index of the first one's event (for the summary's link).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// The dialling host and the server host.
    pub(crate) host: HostName,
    pub(crate) to: HostName,
    /// The index of the first such redial's `ConnectStarted` event.
    pub(crate) first: usize,
    /// How many redials came too soon.
    pub(crate) count: usize,
    /// How many redials followed a failed attempt at all.
    pub(crate) redials: usize,
    /// The shortest time from a failed attempt's start to the next
    /// attempt's start, *simulated*.
    pub(crate) shortest: Duration,
    /// What the document allowed for that redial (backoff less jitter).
    pub(crate) allowed: Duration,
}

/// One connection attempt, as far as the trace has seen it.
#[derive(Clone, Copy)]
struct Attempt {
    start: Duration,
    /// Consecutive failed attempts ending with this one (0: not failed).
    failures: u32,
}

/// The smallest gap connection-backoff.md allows between the start of an
/// attempt that was the `failures`-th failure in a row and the next start.
pub(crate) fn allowed_gap(failures: u32) -> Duration {
    let growth = MULTIPLIER.powi(i32::try_from(failures.saturating_sub(1)).unwrap_or(i32::MAX));
    // Capped before it multiplies a Duration: 1.6^n overflows to infinity.
    let cap = MAX_BACKOFF.as_secs_f64() / INITIAL_BACKOFF.as_secs_f64();
    INITIAL_BACKOFF.mul_f64(growth.min(cap) * (1.0 - JITTER))
}

/// Every host→server pair with a redial sooner than the document allows,
/// in the order of their first such redial.
pub(crate) fn quick_redials(events: &[Event]) -> Vec<Found> {
    // By (dialling host, server, attempt number on the channel); looked up
    // only, never iterated, so a hash map keeps no order out of the trace.
    let mut attempts: HashMap<(HostName, HostName, u32), Attempt> = HashMap::new();
    let key = |host: &HostName, to: &HostName, attempt: u32| (*host, *to, attempt);
    let mut found: Vec<Found> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            EventKind::ConnectStarted { to, attempt } => {
                let before = attempt
                    .checked_sub(1)
                    .and_then(|a| attempts.get(&key(&e.host, to, a)).copied());
                attempts.insert(
                    key(&e.host, to, *attempt),
                    Attempt {
                        start: e.at(),
                        failures: 0,
                    },
                );
                if let Some(before) = before.filter(|b| b.failures > 0) {
                    note(&mut found, i, e, to, e.at() - before.start, before.failures);
                }
            }
            EventKind::ConnectFailed { to, attempt, .. }
            | EventKind::ConnectAbandoned { to, attempt, .. } => {
                let streak = attempt
                    .checked_sub(1)
                    .and_then(|a| attempts.get(&key(&e.host, to, a)))
                    .map_or(0, |b| b.failures);
                if let Some(this) = attempts.get_mut(&key(&e.host, to, *attempt)) {
                    this.failures = streak + 1;
                }
            }
            _ => {}
        }
    }
    found.retain(|q| q.count > 0);
    found
}

/// Counts one redial after a failure of `host` to `to`, `gap` after the
/// failed attempt's start, the `failures`-th in a row.
fn note(found: &mut Vec<Found>, i: usize, e: &Event, to: &HostName, gap: Duration, failures: u32) {
    let at = match found.iter().position(|q| q.host == e.host && q.to == *to) {
        Some(at) => at,
        None => {
            found.push(Found {
                host: e.host,
                to: *to,
                first: i,
                count: 0,
                redials: 0,
                shortest: Duration::MAX,
                allowed: Duration::ZERO,
            });
            found.len() - 1
        }
    };
    let entry = &mut found[at];
    entry.redials += 1;
    let allowed = allowed_gap(failures);
    if gap >= allowed {
        return;
    }
    if entry.count == 0 {
        entry.first = i;
    }
    entry.count += 1;
    if gap < entry.shortest {
        entry.shortest = gap;
        entry.allowed = allowed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn the_allowed_gap_grows_by_the_multiplier_less_jitter_up_to_the_cap() {
        assert_eq!(allowed_gap(1), ms(800));
        assert_eq!(allowed_gap(2), ms(1_280));
        assert_eq!(allowed_gap(3), ms(2_048));
        // 1.6^10 ≈ 110, 1.6^11 ≈ 176: capped at 120 s, less 20%.
        assert_eq!(allowed_gap(12), ms(96_000));
        assert_eq!(allowed_gap(u32::MAX), ms(96_000));
    }
}

/// One host's redials to one server sooner than grpc's connection backoff
/// allows (`doc/connection-backoff.md`: 1 s, ×1.6 per failure, up to
/// 120 s, less 20 % jitter), as the trace's summary flags them
/// ([`Trace::quick_redials`](crate::Trace::quick_redials)). Times are *simulated*.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QuickRedials {
    /// The dialling host.
    pub host: String,
    /// The server host it dialled.
    pub to: String,
    /// Its redials after a failed connect attempt.
    pub redials: usize,
    /// How many of them came too soon (at least one).
    pub too_soon: usize,
    /// When the first too-soon redial started, since the start of the run.
    pub first: Duration,
    /// The shortest time from a failed attempt's start to the next
    /// attempt's start.
    pub shortest: Duration,
    /// What the document allowed for that redial (backoff less jitter).
    pub allowed: Duration,
}

impl super::Trace {
    /// Every host→server pair that redialled sooner than connection
    /// backoff allows, in the order of their first such redial; empty
    /// when every redial waited long enough (or none followed a failed
    /// connect). The same pairs the summary lists as findings.
    ///
    /// ```
    /// # fn f(trace: &grpc_chaos::Trace) {
    /// for q in trace.quick_redials() {
    ///     println!("{}→{}: {} of {} redials too soon", q.host, q.to, q.too_soon, q.redials);
    /// }
    /// # }
    /// ```
    pub fn quick_redials(&self) -> Vec<QuickRedials> {
        let events = self.events();
        quick_redials(events)
            .into_iter()
            .map(|q| QuickRedials {
                host: q.host.to_string(),
                to: q.to.to_string(),
                redials: q.redials,
                too_soon: q.count,
                first: events[q.first].at(),
                shortest: q.shortest,
                allowed: q.allowed,
            })
            .collect()
    }
}
