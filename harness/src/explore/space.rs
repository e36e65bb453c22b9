//! The fault space a user declares: which fault may land on which host,
//! link or call, how many at once, and in which window of simulated time.

use std::time::Duration;

use tonic::Code;

use crate::error::{Error, Kind};

/// One kind of fault on one target: a point of the space.
///
/// Coverage ([`Report::coverage`](super::Report::coverage)) counts the
/// schedules that placed each.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Target {
    /// Crash server host `host`, then restart it after the space's outage
    /// ([`Fault::crash`](crate::Fault::crash), [`Fault::restart`](crate::Fault::restart)).
    Crash {
        /// The server host.
        host: String,
    },
    /// Partition `a` from `b`, then repair it after the space's outage
    /// ([`Fault::partition`](crate::Fault::partition), [`Fault::repair`](crate::Fault::repair)).
    Partition {
        /// One end.
        a: String,
        /// The other end.
        b: String,
    },
    /// Delay every request reaching server host `host`'s handlers by
    /// `delay` (*simulated* time) for the space's outage
    /// ([`HandlerFault::delay`](crate::fault::HandlerFault::delay) with
    /// [`HandlerFault::during`](crate::fault::HandlerFault::during)).
    HandlerDelay {
        /// The server host.
        host: String,
        /// How long each request waits before its handler.
        delay: Duration,
    },
    /// Fail every request reaching server host `host`'s handlers with
    /// `code` for the space's outage
    /// ([`HandlerFault::abort`](crate::fault::HandlerFault::abort) with
    /// [`HandlerFault::during`](crate::fault::HandlerFault::during)).
    HandlerFail {
        /// The server host.
        host: String,
        /// The status code the requests get.
        #[serde(with = "super::workers::code")]
        code: Code,
    },
    /// Hang every request reaching server host `host`'s handlers (no
    /// answer, ever) for the space's outage
    /// ([`HandlerFault::hang`](crate::fault::HandlerFault::hang) with
    /// [`HandlerFault::during`](crate::fault::HandlerFault::during)).
    HandlerHang {
        /// The server host.
        host: String,
    },
    /// Shut server host `host`'s server down gracefully at an instant, as
    /// its `main` does on SIGTERM ([`Fault::shutdown`](crate::Fault::shutdown),
    /// no grace: the server drains for as long as its connections stay
    /// open): GOAWAY, calls in flight finish, new ones are refused. It
    /// lasts to the end of the run (no restart): a rolling restart's
    /// restart could land before the drain ends and drop what a correct
    /// server was still finishing.
    Shutdown {
        /// The server host.
        host: String,
    },
    /// Cancel one call from `caller` to server host `server` at an instant
    /// of its life: RST_STREAM(CANCEL) on its stream, written as if
    /// `caller` sent it ([`Fault::inject`](crate::Fault::inject)), which is
    /// what `caller`'s HTTP/2 stack writes when the caller drops the call
    /// (RFC 9113 §8.7; FACTS.md, "Deadlines and cancellation"). The
    /// caller's own stack does not know: its call waits for its deadline.
    /// The frame goes on every connection from `caller` to `server` open
    /// then; with more than one, the same stream id on the others is
    /// another call, or none.
    Cancel {
        /// The calling host.
        caller: String,
        /// The server host.
        server: String,
    },
}

impl Target {
    /// The fault's kind in a word or two: `crash`, `partition`, `handler
    /// delay`, `handler fail`, `handler hang`, `shutdown`, `cancel`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Crash { .. } => "crash",
            Self::Partition { .. } => "partition",
            Self::HandlerDelay { .. } => "handler delay",
            Self::HandlerFail { .. } => "handler fail",
            Self::HandlerHang { .. } => "handler hang",
            Self::Shutdown { .. } => "shutdown",
            Self::Cancel { .. } => "cancel",
        }
    }

    /// What it lands on: `inventory`, `orders↔inventory`, `orders→inventory`.
    pub fn on(&self) -> String {
        match self {
            Self::Crash { host }
            | Self::HandlerDelay { host, .. }
            | Self::HandlerFail { host, .. }
            | Self::HandlerHang { host }
            | Self::Shutdown { host } => host.clone(),
            Self::Partition { a, b } => format!("{a}↔{b}"),
            Self::Cancel { caller, server } => format!("{caller}→{server}"),
        }
    }

    /// The hosts it names, and for each the builder method that named it
    /// (for the unknown-host error).
    fn hosts(&self) -> Vec<(&str, &'static str)> {
        match self {
            Self::Crash { host } => vec![(host, "Space::crash")],
            Self::HandlerDelay { host, .. } => vec![(host, "Space::handler_delay")],
            Self::HandlerFail { host, .. } => vec![(host, "Space::handler_fail")],
            Self::HandlerHang { host } => vec![(host, "Space::handler_hang")],
            Self::Shutdown { host } => vec![(host, "Space::shutdown")],
            Self::Partition { a, b } => vec![(a, "Space::partition"), (b, "Space::partition")],
            Self::Cancel { caller, server } => {
                vec![(caller, "Space::cancel"), (server, "Space::cancel")]
            }
        }
    }

    /// The host that must be a server, if any, and the method naming it.
    fn server(&self) -> Option<(&str, &'static str)> {
        match self {
            Self::Crash { host } => Some((host, "Space::crash")),
            Self::HandlerDelay { host, .. } => Some((host, "Space::handler_delay")),
            Self::HandlerFail { host, .. } => Some((host, "Space::handler_fail")),
            Self::HandlerHang { host } => Some((host, "Space::handler_hang")),
            Self::Shutdown { host } => Some((host, "Space::shutdown")),
            Self::Cancel { server, .. } => Some((server, "Space::cancel")),
            Self::Partition { .. } => None,
        }
    }
}

/// What the explorer may break, and when.
///
/// | setting | default |
/// |---|---|
/// | targets | none: an empty space is an error |
/// | [`Space::max_faults`] | 1 fault per schedule |
/// | [`Space::window`] | the whole run: from 0 to the scenario's duration |
/// | [`Space::outage`] | 200 ms (*simulated*): how long a crash, partition or handler fault lasts (a shutdown lasts to the end, a cancel is an instant) |
///
/// ```
/// use std::time::Duration;
/// use grpc_chaos::explore::Space;
/// let space = Space::new()
///     .crash("inventory")
///     .partition("orders", "inventory")
///     .cancel("orders", "inventory")
///     .max_faults(2)
///     .window(Duration::ZERO, Duration::from_secs(1));
/// assert_eq!(space.targets().len(), 3);
/// ```
#[derive(Debug, Clone)]
#[must_use = "hand the space to Explorer::space"]
pub struct Space {
    targets: Vec<Target>,
    max_faults: usize,
    window: Option<(Duration, Duration)>,
    outage: Duration,
}

impl Default for Space {
    fn default() -> Self {
        Self::new()
    }
}

impl Space {
    /// An empty space (add targets to it).
    pub fn new() -> Self {
        Self {
            targets: Vec::new(),
            max_faults: 1,
            window: None,
            outage: Duration::from_millis(200),
        }
    }

    fn with(mut self, target: Target) -> Self {
        if !self.targets.contains(&target) {
            self.targets.push(target);
        }
        self
    }

    /// Server host `host` may crash (and restart one outage later).
    pub fn crash(self, host: impl Into<String>) -> Self {
        self.with(Target::Crash { host: host.into() })
    }

    /// The link between `a` and `b` may partition (and heal one outage
    /// later), as [`Fault::partition`](crate::Fault::partition) does.
    pub fn partition(self, a: impl Into<String>, b: impl Into<String>) -> Self {
        self.with(Target::Partition {
            a: a.into(),
            b: b.into(),
        })
    }

    /// Server host `host`'s handlers may be slowed by `delay` (*simulated*
    /// time) for one outage.
    pub fn handler_delay(self, host: impl Into<String>, delay: Duration) -> Self {
        self.with(Target::HandlerDelay {
            host: host.into(),
            delay,
        })
    }

    /// Server host `host`'s handlers may fail with `code` for one outage.
    pub fn handler_fail(self, host: impl Into<String>, code: Code) -> Self {
        self.with(Target::HandlerFail {
            host: host.into(),
            code,
        })
    }

    /// Server host `host`'s handlers may hang (never answer) for one
    /// outage.
    pub fn handler_hang(self, host: impl Into<String>) -> Self {
        self.with(Target::HandlerHang { host: host.into() })
    }

    /// Server host `host` may be shut down gracefully, once, to the end of
    /// the run (see [`Target::Shutdown`]).
    pub fn shutdown(self, host: impl Into<String>) -> Self {
        self.with(Target::Shutdown { host: host.into() })
    }

    /// A call from `caller` to server host `server` may be cancelled at
    /// any instant of its life (see [`Target::Cancel`]).
    pub fn cancel(self, caller: impl Into<String>, server: impl Into<String>) -> Self {
        self.with(Target::Cancel {
            caller: caller.into(),
            server: server.into(),
        })
    }

    /// At most `n` faults in one schedule (at least 1 is placed). Default 1.
    /// Zero is an error from the explorer.
    pub fn max_faults(mut self, n: usize) -> Self {
        self.max_faults = n;
        self
    }

    /// Faults start at or after `from` and before `until` (*simulated*
    /// time since the start of the run). Default: the whole run. A window
    /// that is empty or ends after the run is an error from the explorer.
    pub fn window(mut self, from: Duration, until: Duration) -> Self {
        self.window = Some((from, until));
        self
    }

    /// How long a crash lasts before its restart, a partition before its
    /// repair, a handler fault before it stops (*simulated* time); random
    /// schedules draw each between 1 ms and this, the instant sweep uses
    /// it whole. Default 200 ms. A heal
    /// that would fall after the run is left out (the fault lasts to the
    /// end).
    pub fn outage(mut self, outage: Duration) -> Self {
        self.outage = outage;
        self
    }

    /// The targets, in the order added (duplicates dropped).
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    pub(super) fn max(&self) -> usize {
        self.max_faults
    }

    pub(super) fn outage_len(&self) -> Duration {
        self.outage
    }

    /// The window, checked against the run's end.
    ///
    /// # Errors
    /// An empty window, one past `end`, or none with an unbounded run.
    pub(super) fn window_in(&self, end: Duration) -> Result<(Duration, Duration), Error> {
        let bad = |m: String| Err(Error::new(Kind::Misconfigured(m)));
        let fmt = crate::units::fmt_duration;
        match self.window {
            None if end == Duration::MAX => bad(
                "Space: the scenario runs without a duration (Duration::MAX); give the space a \
                 window with Space::window(from, until)"
                    .into(),
            ),
            None => Ok((Duration::ZERO, end)),
            Some((from, until)) if from >= until => bad(format!(
                "Space::window({}, {}) is empty: `until` must be after `from`",
                fmt(from),
                fmt(until)
            )),
            Some((_, until)) if until > end => bad(format!(
                "Space::window ends at {}, after the run's end at {}: shorten the window or \
                 lengthen the run (SimBuilder::duration)",
                fmt(until),
                fmt(end)
            )),
            Some(w) => Ok(w),
        }
    }

    /// Checks the space against the scenario's hosts.
    ///
    /// # Errors
    /// An empty space, zero `max_faults`, an unknown host (listing the
    /// known ones), or a client host where a server is needed.
    pub(super) fn check(&self, servers: &[String], clients: &[String]) -> Result<(), Error> {
        if self.targets.is_empty() {
            return Err(Error::new(Kind::Misconfigured(
                "the fault space is empty: add what may break with Space::crash, \
                 Space::partition, Space::shutdown, Space::cancel, Space::handler_delay, \
                 Space::handler_fail or Space::handler_hang"
                    .into(),
            )));
        }
        if self.max_faults == 0 {
            return Err(Error::new(Kind::Misconfigured(
                "Space::max_faults(0) places no fault: give 1 or more".into(),
            )));
        }
        let known: Vec<String> = servers.iter().chain(clients).cloned().collect();
        for target in &self.targets {
            for (host, context) in target.hosts() {
                if !known.iter().any(|k| k == host) {
                    return Err(Error::new(Kind::UnknownHost {
                        host: host.to_owned(),
                        context: context.to_owned(),
                        known: known.clone(),
                    }));
                }
            }
            if let Some((host, context)) = target.server() {
                if !servers.iter().any(|s| s == host) {
                    return Err(Error::new(Kind::NotAServer {
                        host: host.to_owned(),
                        fault: context.to_owned(),
                    }));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shutdown_names_its_kind_and_host_and_must_be_a_server() {
        let space = Space::new().shutdown("ledger").shutdown("ledger");
        assert_eq!(space.targets().len(), 1, "duplicates dropped");
        let target = &space.targets()[0];
        assert_eq!((target.kind(), target.on()), ("shutdown", "ledger".into()));
        let servers = ["ledger".to_owned()];
        let clients = ["shop".to_owned()];
        assert!(space.check(&servers, &clients).is_ok());
        let err = Space::new()
            .shutdown("shop")
            .check(&servers, &clients)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Space::shutdown: `shop` is a client host; only server hosts have handlers and can \
             crash, restart or shut down"
        );
        let err = Space::new()
            .shutdown("ledgr")
            .check(&servers, &clients)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("ledgr") && msg.contains("Space::shutdown"),
            "{msg}"
        );
        assert!(
            msg.contains("ledger") && msg.contains("shop"),
            "lists the known hosts: {msg}"
        );
    }
}
