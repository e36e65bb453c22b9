//! Retries in a trace: the attempts of each logical call made through a
//! retry layer ([`Host::retry_channel`](crate::Host::retry_channel)). The
//! check of them against the policy the caller meant to have
//! ([`Trace::assert_retries_conform`]) lives beside the policy it replays,
//! in `retry/check.rs`.
//!
//! Attempts are grouped by the layer's `RetryAttempt` events (one group id,
//! `g1`, `g2`, …, per logical call); each is linked to the recorded call
//! (`rN`) that immediately follows it on the calling host. Times are
//! measured on the trace, not taken from the layer: the delay before an
//! attempt is the *simulated* time from the previous attempt's end (its
//! `RetryDecision`) to its start.

use crate::recorder::event;
use std::collections::HashMap;
use std::time::Duration;

use super::Trace;
use crate::recorder::event::{CallId, EventKind, RunId};

/// How much later than drawn a retry may start: simulated time advances in
/// ticks (1 ms by default, [`SimBuilder::tick`](crate::SimBuilder::tick)),
/// so a timer fires at the first tick at or after its instant.
pub const TICK_TOLERANCE: Duration = Duration::from_millis(1);

/// One logical call through a retry layer and its attempts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RetriedCall {
    /// The group id (`g1` is 1): numbered in order of first attempt.
    pub group: u32,
    /// The calling host.
    pub host: String,
    /// The called host.
    pub target: String,
    /// The method path.
    pub path: String,
    /// The attempts, in order.
    pub attempts: Vec<AttemptRecord>,
}

/// One attempt of a [`RetriedCall`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AttemptRecord {
    /// 1 for the original call.
    pub attempt: u32,
    /// The recorded call that carried it.
    pub call: Option<CallId>,
    /// The handler run it reached on the server, if it reached one.
    pub run: Option<RunId>,
    /// The `grpc-previous-rpc-attempts` that run received, if any.
    pub previous_seen: Option<u32>,
    /// When it started, *simulated* time since the start of the run.
    pub started: Duration,
    /// The delay the layer said it waited before it.
    pub claimed_delay: Duration,
    /// The `grpc-timeout` it carried.
    pub timeout: Option<Duration>,
    /// What the layer decided after it, if it ended.
    pub decision: Option<DecisionRecord>,
}

/// A `RetryDecision` event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DecisionRecord {
    /// When the attempt ended and the decision was taken.
    pub at: Duration,
    /// How the attempt ended, in the trace's words.
    pub outcome: String,
    /// The attempt's gRPC code name, when known.
    pub code: Option<&'static str>,
    /// Response headers were received: the call was committed.
    pub committed: bool,
    /// `grpc-retry-pushback-ms` (negative: stop).
    pub pushback_ms: Option<i64>,
    /// The delay before the next attempt, when retrying.
    pub retry_in: Option<Duration>,
    /// The rule that stopped the call, when stopping.
    pub stop: Option<&'static str>,
}

impl RetriedCall {
    /// `g2 /tt.v1.Store/Save (player→store)`.
    pub fn label(&self) -> String {
        format!(
            "g{} {} ({}→{})",
            self.group, self.path, self.host, self.target
        )
    }

    /// When the last attempt ended (its decision), if it did.
    pub fn ended_at(&self) -> Option<Duration> {
        self.attempts.last()?.decision.as_ref().map(|d| d.at)
    }

    /// The delays measured between attempts: `delays()[i]` is the time from
    /// the end of attempt `i + 1` to the start of attempt `i + 2`.
    pub fn delays(&self) -> Vec<Duration> {
        self.attempts
            .windows(2)
            .filter_map(|w| {
                let end = w[0].decision.as_ref()?.at;
                Some(w[1].started.saturating_sub(end))
            })
            .collect()
    }
}

impl Trace {
    /// What the server side saw of each attempt, for the retry and hedge
    /// views: the handler run each recorded call reached, and the
    /// `grpc-previous-rpc-attempts` each run received.
    pub(super) fn arrivals(&self) -> (HashMap<CallId, RunId>, HashMap<RunId, u32>) {
        let runs = self
            .runs
            .iter()
            .filter_map(|r| Some((r.call?, r.id)))
            .collect();
        let previous = self
            .events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::RetryArrived { run, previous, .. } => Some((*run, *previous)),
                _ => None,
            })
            .collect();
        (runs, previous)
    }

    /// Every logical call made through a recording retry layer, in order of
    /// first attempt.
    pub fn retried_calls(&self) -> Vec<RetriedCall> {
        let mut out: Vec<RetriedCall> = Vec::new();
        let mut ix: HashMap<u32, usize> = HashMap::new();
        let (runs, previous) = self.arrivals();
        for (i, e) in self.events.iter().enumerate() {
            match &e.kind {
                EventKind::RetryAttempt(retry_attempt) => {
                    let event::RetryAttempt {
                        group,
                        target,
                        path,
                        attempt,
                        delay,
                        hedged,
                    } = &**retry_attempt;
                    if *hedged {
                        // Hedged calls are Trace::hedged_calls.
                        continue;
                    }
                    // The attempt's own call is the next CallStarted on this
                    // host: the layer records the attempt right before it.
                    let started = self.events[i + 1..]
                        .iter()
                        .take_while(|n| n.at() == e.at())
                        .find_map(|n| match &n.kind {
                            EventKind::CallStarted(s) if n.host == e.host && s.path == *path => {
                                Some((s.call, s.timeout))
                            }
                            _ => None,
                        });
                    let slot = *ix.entry(*group).or_insert_with(|| {
                        out.push(RetriedCall {
                            group: *group,
                            host: e.host.to_string(),
                            target: target.to_string(),
                            path: path.clone(),
                            attempts: Vec::new(),
                        });
                        out.len() - 1
                    });
                    out[slot].attempts.push(AttemptRecord {
                        attempt: *attempt,
                        call: started.map(|s| s.0),
                        run: started.and_then(|s| runs.get(&s.0).copied()),
                        previous_seen: started
                            .and_then(|s| runs.get(&s.0))
                            .and_then(|r| previous.get(r).copied()),
                        started: e.at(),
                        claimed_delay: *delay,
                        timeout: started.and_then(|s| s.1),
                        decision: None,
                    });
                }
                EventKind::RetryDecision(retry_decision) => {
                    let event::RetryDecision {
                        group,
                        attempt,
                        outcome,
                        code,
                        committed,
                        pushback_ms,
                        retry_in,
                        stop,
                        ..
                    } = &**retry_decision;
                    let Some(&slot) = ix.get(group) else { continue };
                    if let Some(a) = out[slot]
                        .attempts
                        .iter_mut()
                        .rev()
                        .find(|a| a.attempt == *attempt)
                    {
                        a.decision = Some(DecisionRecord {
                            at: e.at(),
                            outcome: outcome.clone(),
                            code: *code,
                            committed: *committed,
                            pushback_ms: *pushback_ms,
                            retry_in: *retry_in,
                            stop: *stop,
                        });
                    }
                }
                _ => {}
            }
        }
        out
    }
}
