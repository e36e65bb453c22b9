//! Assertions over a trace. Each returns a [`Violation`] that names the
//! offending hop, call or handler run, with the numbers.

use std::fmt;
use std::time::Duration;

use super::{fmt_duration, HandlerRun, Trace};

/// A failed trace assertion: which rule, and where it broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    rule: &'static str,
    detail: String,
    artifact: Option<std::path::PathBuf>,
}

impl Violation {
    pub(crate) fn new(rule: &'static str, detail: String) -> Self {
        Self {
            rule,
            detail,
            artifact: None,
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
            write!(f, " (trace in {})", dir.display())?;
        }
        Ok(())
    }
}

impl std::error::Error for Violation {}

/// Work a handler did after its caller had given up.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Orphan {
    /// The handler run.
    pub run: HandlerRun,
    /// When the work stopped mattering: the earliest of its own deadline,
    /// its caller's deadline or give-up, and the same for every call up the
    /// chain (*simulated* time since the start of the run).
    pub abandoned_at: Duration,
    /// How long it kept going after that (to its finish, or to the end of
    /// the run if it never finished).
    pub ran_on: Duration,
}

/// How long before the end of the run a caller must have given up for a
/// handler still running at the end to count as orphan work (*simulated*
/// time). Cancellation takes a network hop or two to arrive; a handler
/// abandoned just before the run ended may be one whose RST_STREAM is still
/// in flight, and calling that an orphan would be a guess.
pub const ORPHAN_GRACE: Duration = Duration::from_millis(50);

const DEADLINE: &str = "deadline propagation";
const ORPHAN: &str = "orphan work";

impl Trace {
    /// Checks that every call along `chain` (host names, caller first)
    /// carried a `grpc-timeout` no larger than its caller's remaining
    /// budget: the first hop's call must have a deadline, and each later hop
    /// at most what the calling handler had left when it made the call.
    ///
    /// # Errors
    /// A [`Violation`] naming the first hop that broke the rule: no call on
    /// that hop, a call with no `grpc-timeout`, a budget that grew, or a hop
    /// made through an unrecorded channel (use [`crate::Host::channel`]).
    pub fn assert_deadline_propagated<'a>(
        &self,
        chain: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Violation> {
        let chain: Vec<&str> = chain.into_iter().collect();
        chain
            .windows(2)
            .try_for_each(|hop| self.check_hop(hop[0], hop[1]))
            .map_err(|v| self.keep(v))
    }

    fn check_hop(&self, from: &str, to: &str) -> Result<(), Violation> {
        let runs: Vec<&HandlerRun> = self.runs_on(to).filter(|r| r.from == from).collect();
        if runs.is_empty() {
            return Err(Violation::new(
                DEADLINE,
                format!("hop {from}→{to}: no call from {from} reached {to}"),
            ));
        }
        for run in runs {
            let hop = format!("hop {from}→{to}: {} {}", run.id, run.path);
            let call = run.call.and_then(|c| self.call(c)).ok_or_else(|| {
                Violation::new(
                    DEADLINE,
                    format!("{hop}: the caller used an unrecorded channel; make the call through Host::channel"),
                )
            })?;
            let budget = match call.parent.and_then(|p| self.run(p)) {
                None => call.timeout,
                Some(parent) => match parent.deadline() {
                    None => {
                        return Err(Violation::new(
                            DEADLINE,
                            format!(
                                "{hop}: the calling handler {} {} had no deadline itself",
                                parent.id, parent.path
                            ),
                        ))
                    }
                    Some(d) => Some(d.saturating_sub(call.started)),
                },
            };
            let Some(budget) = budget else {
                return Err(Violation::new(
                    DEADLINE,
                    format!("{hop}: call {} carried no grpc-timeout", call.id),
                ));
            };
            match call.timeout {
                None => {
                    return Err(Violation::new(
                        DEADLINE,
                        format!(
                            "{hop}: call {} carried no grpc-timeout; the caller had {} left",
                            call.id,
                            fmt_duration(budget)
                        ),
                    ))
                }
                Some(sent) if sent > budget => {
                    return Err(Violation::new(
                        DEADLINE,
                        format!(
                            "{hop}: call {} sent grpc-timeout={} but the caller had only {} left",
                            call.id,
                            fmt_duration(sent),
                            fmt_duration(budget)
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Every handler run that finished after the work stopped mattering, or
    /// was still running at the end of the run more than [`ORPHAN_GRACE`]
    /// after it; see [`Orphan`]. Runs that were dropped (cancelled) are not
    /// orphans.
    pub fn orphans(&self) -> Vec<Orphan> {
        let end_of_run = self.ended;
        self.runs
            .iter()
            .filter(|r| {
                matches!(
                    r.end,
                    super::RunEnd::Finished { .. } | super::RunEnd::Running
                )
            })
            .filter_map(|r| {
                let abandoned_at = self.abandoned_at(r, 0)?;
                let (finished, grace) = match r.ended_at {
                    Some(t) => (t, Duration::ZERO),
                    None => (end_of_run, ORPHAN_GRACE),
                };
                (finished > abandoned_at + grace).then(|| Orphan {
                    run: r.clone(),
                    abandoned_at,
                    ran_on: finished - abandoned_at,
                })
            })
            .collect()
    }

    /// Checks that no handler kept working after its caller's deadline or
    /// cancellation, anywhere up its call chain.
    ///
    /// # Errors
    /// A [`Violation`] naming the first orphan run, where it came from, and
    /// how long it ran on.
    pub fn assert_no_orphan_work(&self) -> Result<(), Violation> {
        let Some(o) = self.orphans().into_iter().next() else {
            return Ok(());
        };
        let r = &o.run;
        Err(self.keep(Violation::new(
            ORPHAN,
            format!(
                "{} {} on {} (from {}) kept running {} after its caller gave up at {}",
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
    fn keep(&self, mut v: Violation) -> Violation {
        v.artifact = super::write_artifacts(self);
        v
    }

    /// When the work of `run` stopped mattering, following the call chain
    /// upwards (bounded, in case of a malformed chain).
    fn abandoned_at(&self, run: &HandlerRun, depth: usize) -> Option<Duration> {
        let mut times = vec![run.deadline()];
        if let Some(call) = run.call.and_then(|c| self.call(c)) {
            times.push(call.deadline());
            times.push(call.gave_up_at());
            if depth < 16 {
                if let Some(parent) = call.parent.and_then(|p| self.run(p)) {
                    times.push(self.abandoned_at(parent, depth + 1));
                }
            }
        }
        times.into_iter().flatten().min()
    }
}
