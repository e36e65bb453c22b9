//! Checks on a scenario's times and names that must hold before turmoil
//! sees them: turmoil adds latencies to instants and multiplies the tick,
//! and an absurd value there would panic inside a host (where it reads as a
//! network failure) instead of being an error that says what to change.

use std::time::Duration;

use super::Sim;
use crate::error::{Error, Kind};
use crate::fault::{Action, FaultKind, HostAction, HostFault, LONGEST_WAIT};
use crate::units::fmt_duration;

impl Sim {
    /// Tick, duration, latency and jitter fit the run; link latencies and
    /// frame delays are shorter than it.
    pub(super) fn check_times(&self) -> Result<(), Error> {
        self.check_ceiling()?;
        let c = &self.config;
        if c.tick < Duration::from_micros(1) {
            return misconfigured(format!(
                "SimBuilder::tick({:?}) is below the 1µs resolution of simulated time in the trace{}; \
                 use at least 1µs (the default is 1ms)",
                c.tick,
                if c.tick.is_zero() { " and would never advance it" } else { "" }
            ));
        }
        if c.max_steps == 0 {
            return misconfigured(
                "SimBuilder::max_steps(0) leaves the run no step; the default is 10,000,000"
                    .to_owned(),
            );
        }
        match c.no_progress_limit {
            Some(limit) if limit.is_zero() => {
                return misconfigured(format!(
                    "SimBuilder::no_progress_limit(0ms) would stop the run at its first quiet step; \
                     the default is {} (Duration::MAX turns the rule off)",
                    fmt_duration(super::defaults::NO_PROGRESS_LIMIT)
                ));
            }
            Some(limit) if c.duration != Duration::MAX => {
                return misconfigured(format!(
                    "SimBuilder::no_progress_limit({}) applies only to a run with \
                     duration(Duration::MAX); this run has a duration of {} and waits for its \
                     clients until then: drop the limit, or make the duration Duration::MAX",
                    fmt_duration(limit),
                    fmt_duration(c.duration)
                ));
            }
            _ => {}
        }
        if c.duration != Duration::MAX && c.capped_by_steps() {
            return misconfigured(format!(
                "SimBuilder::duration({}) is {} ticks of {}, more than SimBuilder::max_steps ({}); \
                 a coarser tick makes long idle stories cheaper; or shorten the duration, or raise max_steps",
                fmt_duration(c.duration),
                c.duration.as_nanos() / c.tick.as_nanos(),
                fmt_duration(c.tick),
                c.max_steps
            ));
        }
        if c.tick > c.duration {
            return misconfigured(format!(
                "SimBuilder::duration({}) is shorter than one tick ({}): the run would end before its first step; \
                 raise the duration or lower SimBuilder::tick",
                fmt_duration(c.duration),
                fmt_duration(c.tick)
            ));
        }
        // Both at most a year (check_ceiling): the sum cannot overflow.
        if c.latency + c.jitter > c.duration {
            return misconfigured(format!(
                "link latency {} plus latency_jitter {} is longer than the run ({}): no message would arrive; \
                 lower them or raise SimBuilder::duration",
                fmt_duration(c.latency),
                fmt_duration(c.jitter),
                fmt_duration(c.duration)
            ));
        }
        match self.fault_waits().find(|(_, d)| *d > c.duration) {
            Some((what, d)) => misconfigured(format!(
                "{what} {} is longer than the run ({}): nothing it touches would arrive in time; \
                 use a partition or a hold for that, or raise SimBuilder::duration",
                fmt_duration(d),
                fmt_duration(c.duration)
            )),
            None => Ok(()),
        }
    }

    /// No single wait is longer than [`LONGEST_WAIT`].
    fn check_ceiling(&self) -> Result<(), Error> {
        let c = &self.config;
        let settings = [
            ("SimBuilder::tick", c.tick),
            ("SimBuilder::latency", c.latency),
            ("SimBuilder::latency_jitter", c.jitter),
        ];
        // A handler delay may outlast the run (a call left waiting is a
        // story), not a year: its sleep would overflow the clock.
        let handler_delays = self.faults.iter().filter_map(|f| match &f.0 {
            FaultKind::Handler(r) => match r.action {
                Action::Delay(d) => Some(("Fault::handler(..).delay", d)),
                _ => None,
            },
            _ => None,
        });
        match settings
            .into_iter()
            .chain(self.fault_waits())
            .chain(handler_delays)
            .find(|(_, d)| *d > LONGEST_WAIT)
        {
            Some((what, d)) => misconfigured(format!(
                "{what} {} is longer than the longest single wait a run simulates (365 days); lower it \
                 (a partition or a hold keeps messages back for good)",
                fmt_duration(d)
            )),
            None => Ok(()),
        }
    }

    /// The waits the host faults add: link latencies (a frame delay checks
    /// itself, `fault/builtin.rs`).
    fn fault_waits(&self) -> impl Iterator<Item = (&'static str, Duration)> + '_ {
        self.faults.iter().filter_map(|f| long_wait(&f.0))
    }

    /// Host names are what a trace line, a `channel()` and an error show:
    /// DNS-like, so that `a→b` and `host:port` read unambiguously, and not
    /// an IP address.
    pub(super) fn check_host_names(&self) -> Result<(), Error> {
        let names = self.servers.iter().map(|(n, _)| n);
        for name in names.chain(self.clients.iter().map(|(n, _)| n)) {
            let ok = !name.is_empty()
                && name
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'));
            if !ok {
                return misconfigured(format!(
                    "host name {name:?}: use ASCII letters, digits, '-', '_' and '.', at least one"
                ));
            }
            // turmoil gives every host an address of its own and resolves
            // names to them; a name that is an address would clash.
            if name.parse::<std::net::IpAddr>().is_ok() {
                return misconfigured(format!(
                    "host name {name:?} is an IP address; turmoil assigns the hosts' addresses \
                     itself, so give the host a name (e.g. \"store\")"
                ));
            }
        }
        Ok(())
    }

    /// The host faults, in the order added.
    pub(super) fn host_faults(&self) -> impl Iterator<Item = &HostFault> {
        self.faults.iter().filter_map(|f| match &f.0 {
            FaultKind::Host(h) => Some(h),
            _ => None,
        })
    }

    /// A handler fault that fails calls names a failing code.
    pub(super) fn check_fault_codes(&self) -> Result<(), Error> {
        for fault in &self.faults {
            let FaultKind::Handler(rule) = &fault.0 else {
                continue;
            };
            let code = match &rule.action {
                Action::Abort(code, ..) | Action::FailFirst(_, code, _) => *code,
                _ => continue,
            };
            if code == tonic::Code::Ok {
                return misconfigured(format!(
                    "handler fault on `{}`: {} fails a call with OK, which is not a failure \
                     (tonic would see a response with no message); name an error code",
                    rule.host,
                    rule.action.describe()
                ));
            }
        }
        Ok(())
    }
}

fn misconfigured(text: String) -> Result<(), Error> {
    Err(Error::new(Kind::Misconfigured(text)))
}

/// The wait a fault adds to messages or frames, if it adds one.
fn long_wait(fault: &FaultKind) -> Option<(&'static str, Duration)> {
    match fault {
        FaultKind::Host(h) => match &h.action {
            HostAction::Latency(_, _, d) => Some(("Fault::link_latency", *d)),
            _ => None,
        },
        _ => None,
    }
}
