//! Assertions over a trace. Each returns a [`Violation`] that names the
//! offending hop, call or handler run, with the numbers.

use std::fmt;
use std::time::Duration;

use super::{HandlerRun, Trace};
use crate::units::fmt_duration;

/// A failed trace assertion: which rule, and where it broke.
///
/// `Debug` (what `.unwrap()` prints) reads like `Display`, followed by the
/// environment that replays the run when the violation came from a trace.
#[derive(Clone, PartialEq, Eq)]
pub struct Violation {
    rule: &'static str,
    detail: String,
    artifact: Option<std::path::PathBuf>,
    /// `CHAOS_SEED=<n>` (and jitter) of the run it came from.
    replay: Option<String>,
    /// The seed of that run.
    seed: Option<u64>,
}

impl Violation {
    pub(crate) fn new(rule: &'static str, detail: String) -> Self {
        Self {
            rule,
            detail,
            artifact: None,
            replay: None,
            seed: None,
        }
    }

    /// Where the trace of the failing run was written, if it was (see
    /// [`ARTIFACTS_ENV`](super::ARTIFACTS_ENV)).
    pub fn artifact(&self) -> Option<&std::path::Path> {
        self.artifact.as_deref()
    }

    /// A violation of a rule of your own, for checks written on top of the
    /// trace's queries (`rule` names the check, `detail` what broke).
    pub fn custom(rule: &'static str, detail: impl Into<String>) -> Self {
        Self::new(rule, detail.into())
    }

    /// The assertion that failed (`deadline propagation`).
    pub fn rule(&self) -> &'static str {
        self.rule
    }

    /// What broke, naming hosts, ids and durations.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.rule, self.detail)?;
        if let Some(dir) = &self.artifact {
            super::artifacts::shown(dir);
            write!(f, " (trace in {})", dir.display())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Violation {
    // `.unwrap()` on an assertion prints Debug: make it the readable
    // message, with how to reproduce the run.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)?;
        if let Some(replay) = &self.replay {
            write!(f, " (reproduce with {replay})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Violation {}

impl Violation {
    /// What `Error` takes over when `?` turns a violation into one: the
    /// seed, the replay environment and the artifact, so that the error
    /// says how to reproduce the run as every other error of a run does.
    pub(crate) fn run_parts(&self) -> (Option<u64>, Option<String>, Option<std::path::PathBuf>) {
        (self.seed, self.replay.clone(), self.artifact.clone())
    }
}

const DEADLINE: &str = "deadline propagation";
const ORPHAN: &str = "orphan work";

impl Trace {
    /// Checks that every call along `chain` (host names, caller first)
    /// carried a `grpc-timeout` no larger than its caller's remaining
    /// budget: the first hop's call must have a deadline, and each later hop
    /// at most what the calling handler had left when it made the call.
    ///
    /// A hop made through a channel the harness does not record
    /// ([`crate::Host::tonic_channel`], a channel of your own) is checked
    /// against the request HEADERS the wire tap saw leave the caller. The
    /// tap knows when the request left, not when the call was made, so
    /// such a hop is held to what the calling handler had left when it
    /// began: a missing or fresh deadline is caught, a slightly stale one
    /// may not be. The calling handler is the one running on the caller
    /// when the request left; with several running, the hop is a violation
    /// that asks for a recorded channel.
    ///
    /// # Errors
    /// A [`Violation`] for a host the run does not have (listing the run's
    /// hosts) or a chain of fewer than two hosts; else one naming the first
    /// hop that broke the rule: no call on
    /// that hop, a call with no `grpc-timeout`, a budget that grew, or a hop
    /// the harness cannot check (an unrecorded channel with the wire tap
    /// off, or with several handlers running on the caller; use
    /// [`crate::Host::channel`]).
    pub fn assert_deadline_propagated<'a>(
        &self,
        chain: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Violation> {
        let chain: Vec<&str> = chain.into_iter().collect();
        self.check_chain_hosts(&chain)
            .and_then(|()| {
                chain
                    .windows(2)
                    .try_for_each(|hop| self.check_hop(hop[0], hop[1]))
            })
            .map_err(|v| self.keep(v))
    }

    /// Every host of `chain` is one of the run's, and there is a hop.
    fn check_chain_hosts(&self, chain: &[&str]) -> Result<(), Violation> {
        if let Some(unknown) = chain.iter().find(|h| !self.hosts.iter().any(|k| k == *h)) {
            return Err(Violation::new(
                DEADLINE,
                format!(
                    "unknown host `{unknown}` in the chain; the run's hosts are {}",
                    self.hosts.join(", ")
                ),
            ));
        }
        if chain.len() < 2 {
            return Err(Violation::new(
                DEADLINE,
                format!(
                    "the chain {chain:?} has no hop: name the caller first, then each host it calls"
                ),
            ));
        }
        Ok(())
    }

    fn check_hop(&self, from: &str, to: &str) -> Result<(), Violation> {
        let runs: Vec<&HandlerRun> = self.runs_on(to).filter(|r| r.from == from).collect();
        if runs.is_empty() {
            return Err(Violation::new(
                DEADLINE,
                format!("hop {from}→{to}: no call from {from} reached {to}"),
            ));
        }
        let written = self.wire_requests(from, to, &runs);
        for (run, written) in runs.iter().zip(written) {
            let hop = format!("hop {from}→{to}: {} {}", run.id, run.path);
            let sent = self.sent(run, written, from, &hop)?;
            check_budget(&hop, &sent)?;
        }
        Ok(())
    }

    /// What the caller sent for `run`: the recorded call, or else the
    /// request HEADERS the wire tap saw (an unrecorded channel).
    fn sent(
        &self,
        run: &HandlerRun,
        written: Option<Duration>,
        from: &str,
        hop: &str,
    ) -> Result<Sent<'_>, Violation> {
        if let Some(call) = run.call.and_then(|c| self.call(c)) {
            return Ok(Sent {
                what: format!("call {}", call.id),
                timeout: call.timeout,
                at: call.started,
                written: None,
                parent: call.parent.and_then(|p| self.run(p)),
            });
        }
        let Some(written) = written else {
            return Err(Violation::new(
                DEADLINE,
                format!("{hop}: the caller used an unrecorded channel and the wire tap saw no request; make the call through Host::channel, or keep the wire tap on"),
            ));
        };
        let parent = self.run_active_on(from, written).map_err(|n| {
            Violation::new(
                DEADLINE,
                format!(
                    "{hop}: the request went through an unrecorded channel while {n} handlers ran on {from}, so which one made it is unknown; make the call through Host::channel"
                ),
            )
        })?;
        // The tap saw when the request left, not when the call was made
        // (connecting, or waiting for a stream, comes in between): judge it
        // against the earliest the call could have been made, when the
        // calling handler began, so a propagated deadline always passes.
        // The value is the one the handler received (a wire request for
        // the same path may be another caller's, when several left at
        // once); the wire gives the time, to find the calling handler.
        Ok(Sent {
            what: format!("the request written at {}", fmt_duration(written)),
            timeout: run.timeout,
            at: parent.map_or(written, HandlerRun::began),
            written: Some(written),
            parent,
        })
    }

    /// Checks that no handler kept working more than [`ORPHAN_GRACE`](super::ORPHAN_GRACE)
    /// after its caller's deadline or cancellation, anywhere up its call
    /// chain.
    ///
    /// # Errors
    /// A [`Violation`] naming the worst orphan run (the one that ran on
    /// longest), where it came from, and how long it ran on.
    pub fn assert_no_orphan_work(&self) -> Result<(), Violation> {
        let Some(o) = self.orphans().into_iter().next() else {
            return Ok(());
        };
        let r = &o.run;
        Err(self.keep(Violation::new(
            ORPHAN,
            format!(
                "{} {} on {} (from {}) kept running {} after its caller's deadline or cancellation at {}",
                r.id,
                r.path,
                r.host,
                r.from,
                fmt_duration(o.ran_on),
                fmt_duration(o.abandoned_at)
            ),
        )))
    }

    /// Writes the trace as a failure artifact and notes where in `v`.
    pub(crate) fn keep(&self, mut v: Violation) -> Violation {
        v.artifact = super::write_artifacts_with(self, &v.to_string());
        v.replay = Some(self.replay_env());
        v.seed = Some(self.seed());
        v
    }
}

/// What a caller sent on one hop, from the recorded call or the wire.
struct Sent<'a> {
    /// `call r2`, or `the request written at 123ms`.
    what: String,
    timeout: Option<Duration>,
    /// When the call was made, *simulated* time: for a request seen only
    /// on the wire, the earliest it could have been.
    at: Duration,
    /// For a request seen only on the wire, when it left.
    written: Option<Duration>,
    /// The handler run that made it, if any.
    parent: Option<&'a HandlerRun>,
}

/// The hop's `grpc-timeout` is no larger than what the calling handler had
/// left when it sent it (or, for the first hop, present at all).
fn check_budget(hop: &str, sent: &Sent<'_>) -> Result<(), Violation> {
    let what = &sent.what;
    let deadline = match sent.parent {
        None => None,
        Some(parent) => Some(parent.deadline().ok_or_else(|| {
            Violation::new(
                DEADLINE,
                format!(
                    "{hop}: the calling handler {} {} had no deadline itself",
                    parent.id, parent.path
                ),
            )
        })?),
    };
    let left = |at: Duration| deadline.map(|d| d.saturating_sub(at));
    match (sent.timeout, left(sent.at)) {
        (None, None) => Err(Violation::new(
            DEADLINE,
            format!("{hop}: {what} carried no grpc-timeout"),
        )),
        (None, Some(_)) => {
            let when = sent.written.unwrap_or(sent.at);
            let budget = left(when).unwrap_or_default();
            Err(Violation::new(
                DEADLINE,
                format!(
                    "{hop}: {what} carried no grpc-timeout; the caller had {} left",
                    fmt_duration(budget)
                ),
            ))
        }
        (Some(timeout), Some(budget)) if timeout > budget => {
            let when = if sent.written.is_some() {
                " when its handler began"
            } else {
                ""
            };
            Err(Violation::new(
                DEADLINE,
                format!(
                    "{hop}: {what} sent grpc-timeout={} but the caller had only {} left{when}",
                    fmt_duration(timeout),
                    fmt_duration(budget)
                ),
            ))
        }
        _ => Ok(()),
    }
}
