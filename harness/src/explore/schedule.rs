//! A schedule: the faults one exploration run places, each with its time,
//! turned into [`Fault`]s for the run and into `sim.fault(…)` lines for a
//! regression test.

use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::space::Target;
use crate::wire::ErrorCode;
use crate::Fault;

/// One fault of a schedule, placed: its [`Target`] and its times
/// (*simulated*, since the start of the run).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Placed {
    /// What it breaks.
    pub target: Target,
    /// When it starts.
    pub at: Duration,
    /// When it heals (restart, repair, end of a handler fault); `None`: it
    /// lasts to the end of the run (always for a shutdown and a cancel).
    pub until: Option<Duration>,
    /// For [`Target::Cancel`]: the HTTP/2 stream of the call it cancels.
    pub stream: u32,
}

impl Placed {
    /// The faults to add to a sim (one or two: a crash and its restart, a
    /// partition and its repair).
    pub fn faults(&self) -> Vec<Fault> {
        let at = self.at;
        let mut out = Vec::new();
        match &self.target {
            Target::Crash { host } => {
                out.push(Fault::crash(host.clone()).at(at));
                out.extend(self.until.map(|t| Fault::restart(host.clone()).at(t)));
            }
            Target::Partition { a, b } => {
                out.push(Fault::partition(a.clone(), b.clone()).at(at));
                out.extend(
                    self.until
                        .map(|t| Fault::repair(a.clone(), b.clone()).at(t)),
                );
            }
            Target::HandlerDelay { host, delay } => out.push(
                Fault::handler(host.clone())
                    .during(at, self.until.unwrap_or(Duration::MAX))
                    .delay(*delay),
            ),
            Target::HandlerFail { host, code } => out.push(
                Fault::handler(host.clone())
                    .during(at, self.until.unwrap_or(Duration::MAX))
                    .abort(*code, EXPLORED),
            ),
            Target::HandlerHang { host } => out.push(
                Fault::handler(host.clone())
                    .during(at, self.until.unwrap_or(Duration::MAX))
                    .hang(),
            ),
            Target::Shutdown { host } => out.push(Fault::shutdown(host.clone()).at(at)),
            Target::Cancel { caller, server } => out.push(
                Fault::inject(caller.clone(), server.clone())
                    .rst_stream(self.stream, ErrorCode::Cancel)
                    .at(at),
            ),
        }
        out
    }

    /// The `sim.fault(…);` lines that add [`Placed::faults`], as Rust
    /// (with `use std::time::Duration; use grpc_chaos::Fault;` in scope,
    /// `tonic::Code` for a handler fail, `grpc_chaos::wire::ErrorCode` for
    /// a cancel).
    pub fn rust(&self) -> String {
        let at = rust_duration(self.at);
        let until = self.until.map(rust_duration);
        let mut out = String::new();
        let mut line = |l: String| {
            let _ = writeln!(out, "sim.fault({l});");
        };
        match (&self.target, until) {
            (Target::Crash { host }, until) => {
                line(format!("Fault::crash({host:?}).at({at})"));
                if let Some(t) = until {
                    line(format!("Fault::restart({host:?}).at({t})"));
                }
            }
            (Target::Partition { a, b }, until) => {
                line(format!("Fault::partition({a:?}, {b:?}).at({at})"));
                if let Some(t) = until {
                    line(format!("Fault::repair({a:?}, {b:?}).at({t})"));
                }
            }
            (Target::HandlerDelay { host, delay }, until) => line(format!(
                "Fault::handler({host:?}).during({at}, {}).delay({})",
                until.unwrap_or_else(|| "Duration::MAX".into()),
                rust_duration(*delay)
            )),
            (Target::HandlerFail { host, code }, until) => line(format!(
                "Fault::handler({host:?}).during({at}, {}).abort(Code::{code:?}, {EXPLORED:?})",
                until.unwrap_or_else(|| "Duration::MAX".into()),
            )),
            (Target::HandlerHang { host }, until) => line(format!(
                "Fault::handler({host:?}).during({at}, {}).hang()",
                until.unwrap_or_else(|| "Duration::MAX".into()),
            )),
            (Target::Shutdown { host }, _) => line(format!("Fault::shutdown({host:?}).at({at})")),
            (Target::Cancel { caller, server }, _) => line(format!(
                "Fault::inject({caller:?}, {server:?}).rst_stream({}, ErrorCode::Cancel).at({at})",
                self.stream
            )),
        }
        out
    }
}

/// The status message of an explored handler fail.
const EXPLORED: &str = "explored";

/// A duration as the shortest exact Rust constructor.
fn rust_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns.is_multiple_of(1_000_000) {
        format!("Duration::from_millis({})", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("Duration::from_micros({})", ns / 1_000)
    } else {
        format!("Duration::from_nanos({ns})")
    }
}

/// The faults of one run, and where they came from.
///
/// A schedule is a list of placed faults, so a failing one can be cut
/// down fault by fault; [`Explorer::run`](super::Explorer::run) runs any
/// schedule, one from a report or one built by hand.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Schedule {
    /// The explorer's seed (the scenario's seed too).
    pub seed: u64,
    /// Its number: for a random schedule, the RNG stream it was drawn
    /// from (with the seed it gives the same schedule again); for the
    /// instant sweep, its index among the sweep's placements (instant by
    /// instant, target by target), sampled or not.
    pub number: u64,
    /// The faults, in the order they are added.
    pub faults: Vec<Placed>,
    /// How many calls the scenario makes, for one that takes a count
    /// ([`Explorer::with_calls`](super::Explorer::with_calls)): set by
    /// shrinking when fewer still fail; `None`: the scenario's own count.
    pub calls: Option<usize>,
}

impl Schedule {
    /// A schedule of `faults` (for replaying one written by hand).
    pub fn new(seed: u64, number: u64, faults: Vec<Placed>) -> Self {
        Self {
            seed,
            number,
            faults,
            calls: None,
        }
    }

    /// The schedule with the scenario making `calls` calls (see
    /// [`Schedule::calls`]).
    pub fn with_calls(mut self, calls: usize) -> Self {
        self.calls = Some(calls);
        self
    }

    /// The comment line that says how many calls to build the scenario
    /// with, when the schedule says.
    pub(super) fn calls_line(&self) -> Option<String> {
        self.calls.map(|n| {
            format!(
                "// build the scenario with {n} call{} (the `calls` of Explorer::with_calls)\n",
                if n == 1 { "" } else { "s" }
            )
        })
    }

    /// Every fault of the schedule, to add to a sim.
    pub fn to_faults(&self) -> Vec<Fault> {
        self.faults.iter().flat_map(Placed::faults).collect()
    }

    /// The schedule as Rust: a comment with its seed and number, then the
    /// `sim.fault(…);` lines, ready to paste into a regression test.
    pub fn rust(&self) -> String {
        let mut out = format!(
            "// grpc-chaos explore: seed {}, schedule {}\n",
            self.seed, self.number
        );
        out.extend(self.calls_line());
        for fault in &self.faults {
            out.push_str(&fault.rust());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::Code;

    #[test]
    fn rust_lines_name_each_fault_and_its_heal() {
        let crash = Placed {
            target: Target::Crash {
                host: "inventory".into(),
            },
            at: Duration::from_millis(120),
            until: Some(Duration::from_micros(320_500)),
            stream: 0,
        };
        assert_eq!(
            crash.rust(),
            "sim.fault(Fault::crash(\"inventory\").at(Duration::from_millis(120)));\n\
             sim.fault(Fault::restart(\"inventory\").at(Duration::from_micros(320500)));\n"
        );
        let cancel = Placed {
            target: Target::Cancel {
                caller: "orders".into(),
                server: "inventory".into(),
            },
            at: Duration::from_nanos(1_000_001),
            until: None,
            stream: 3,
        };
        assert_eq!(
            cancel.rust(),
            "sim.fault(Fault::inject(\"orders\", \"inventory\").rst_stream(3, ErrorCode::Cancel)\
             .at(Duration::from_nanos(1000001)));\n"
        );
        let fail = Placed {
            target: Target::HandlerFail {
                host: "inventory".into(),
                code: Code::Unavailable,
            },
            at: Duration::ZERO,
            until: None,
            stream: 0,
        };
        let shutdown = Placed {
            target: Target::Shutdown {
                host: "ledger".into(),
            },
            at: Duration::from_millis(230),
            until: None,
            stream: 0,
        };
        assert_eq!(
            shutdown.rust(),
            "sim.fault(Fault::shutdown(\"ledger\").at(Duration::from_millis(230)));\n"
        );
        let [fault] = shutdown.faults().try_into().expect("one fault, no restart");
        assert_eq!(
            format!("{fault:?}"),
            format!(
                "{:?}",
                Fault::shutdown("ledger").at(Duration::from_millis(230))
            )
        );
        assert!(fail.rust().contains(".during(Duration::from_millis(0), Duration::MAX).abort(Code::Unavailable, \"explored\")"), "{}", fail.rust());
    }
}
