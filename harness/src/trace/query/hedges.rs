//! Hedged calls in a trace (gRFC A6 `hedgingPolicy`): the attempts of each
//! logical call a retry layer hedged, which one won and which were
//! cancelled, and the rows that say so. The check against the policy
//! ([`Trace::assert_hedging_conforms`]) lives beside the policy, in
//! `retry/check_hedge.rs`.
//!
//! Attempts are the layer's `RetryAttempt` events marked `hedged`, linked to
//! the recorded call that follows each (as for retries, `trace/query/retries.rs`);
//! their ends, cancellations and refused hedges are its `Hedge` events.
//! Times are measured on the trace (*simulated* time since the run's start).

use std::collections::HashMap;
use std::time::Duration;

use super::Trace;
use crate::recorder::event::{self, CallId, EventKind, HedgeStep, HedgeVerdict, RunId};

/// One logical call a retry layer hedged.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HedgedCall {
    /// The group id (`g1` is 1), shared with retried calls' numbering.
    pub group: u32,
    /// The calling host.
    pub host: String,
    /// The called host (or replica set).
    pub target: String,
    /// The method path.
    pub path: String,
    /// The attempts, in the order they were sent (hedge number order).
    pub attempts: Vec<HedgeAttempt>,
    /// A hedge that was due but not sent: its number, the rule, and when.
    pub not_sent: Option<(u32, &'static str, Duration)>,
    /// The attempt the call committed to while it was in flight, the rule
    /// (`buffer_limit`: the request passed the replay buffer, gRFC A6
    /// "Memory Management (Buffering)"), and when.
    pub committed: Option<(u32, &'static str, Duration)>,
    /// Position in the trace's event log of that commit.
    pub(crate) committed_seq: Option<usize>,
}

/// One attempt of a [`HedgedCall`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HedgeAttempt {
    /// The hedge number: 1 for the original.
    pub attempt: u32,
    /// The recorded call that carried it.
    pub call: Option<CallId>,
    /// The handler run it reached on the server, if it reached one.
    pub run: Option<RunId>,
    /// The `grpc-previous-rpc-attempts` that run received, if any (gRFC A6
    /// "Exposed Retry Metadata": absent on the original, `k − 1` on hedge
    /// `k`).
    pub previous_seen: Option<u32>,
    /// When it was sent.
    pub started: Duration,
    /// The time since the previous attempt was sent, as the layer said.
    pub claimed_delay: Duration,
    /// When it ended, its code name (when known) and the layer's verdict.
    pub ended: Option<(Duration, Option<&'static str>, HedgeVerdict)>,
    /// When it was cancelled, and the attempt that had won (`None`: the
    /// deadline passed).
    pub cancelled: Option<(Duration, Option<u32>)>,
    /// Positions in the trace's event log of its start and its end, to
    /// order events of one instant.
    pub(crate) start_seq: usize,
    pub(crate) end_seq: Option<usize>,
}

impl HedgedCall {
    /// `g2 /tt.v1.Store/Load (player→store)`.
    pub fn label(&self) -> String {
        format!(
            "g{} {} ({}→{})",
            self.group, self.path, self.host, self.target
        )
    }

    /// The attempt whose response was the call's, if one won.
    pub fn winner(&self) -> Option<&HedgeAttempt> {
        self.attempts
            .iter()
            .find(|a| matches!(a.ended, Some((_, _, HedgeVerdict::Won))))
    }

    /// From the first attempt's start to the end of the winner (or of the
    /// last attempt to end): the latency the caller saw, to its response
    /// headers, *simulated* time.
    pub fn latency(&self) -> Option<Duration> {
        let start = self.attempts.first()?.started;
        let end = match self.winner() {
            Some(w) => w.ended?.0,
            None => self
                .attempts
                .iter()
                .filter_map(|a| a.ended)
                .map(|e| e.0)
                .max()?,
        };
        Some(end.saturating_sub(start))
    }
}

impl Trace {
    /// Every logical call a recording retry layer hedged, in order of first
    /// attempt. Retried calls are [`Trace::retried_calls`].
    pub fn hedged_calls(&self) -> Vec<HedgedCall> {
        let mut out: Vec<HedgedCall> = Vec::new();
        let mut ix: HashMap<u32, usize> = HashMap::new();
        let (runs, previous) = self.arrivals();
        for (i, e) in self.events.iter().enumerate() {
            match &e.kind {
                EventKind::RetryAttempt(a) if a.hedged => {
                    let call = attempt_call(&self.events, i);
                    let slot = *ix.entry(a.group).or_insert_with(|| {
                        out.push(HedgedCall {
                            group: a.group,
                            host: e.host.to_string(),
                            target: a.target.to_string(),
                            path: a.path.clone(),
                            attempts: Vec::new(),
                            not_sent: None,
                            committed: None,
                            committed_seq: None,
                        });
                        out.len() - 1
                    });
                    let run = call.and_then(|c| runs.get(&c).copied());
                    out[slot].attempts.push(HedgeAttempt {
                        attempt: a.attempt,
                        call,
                        run,
                        previous_seen: run.and_then(|r| previous.get(&r).copied()),
                        started: e.at(),
                        claimed_delay: a.delay,
                        ended: None,
                        cancelled: None,
                        start_seq: i,
                        end_seq: None,
                    });
                }
                EventKind::Hedge(h) => {
                    let Some(&slot) = ix.get(&h.group) else {
                        continue;
                    };
                    apply(&mut out[slot], h, e.at(), i);
                }
                _ => {}
            }
        }
        out
    }
}

/// The recorded call that carries the attempt whose `RetryAttempt` is
/// `events[i]`: the next `CallStarted` of its path on its host, in the same
/// instant (the layer records the attempt right before calling the channel).
pub(in crate::trace) fn attempt_call(events: &[event::Event], i: usize) -> Option<CallId> {
    let e = &events[i];
    let EventKind::RetryAttempt(a) = &e.kind else {
        return None;
    };
    events[i + 1..]
        .iter()
        .take_while(|n| n.at() == e.at())
        .find_map(|n| match &n.kind {
            EventKind::CallStarted(s) if n.host == e.host && s.path == a.path => Some(s.call),
            _ => None,
        })
}

fn apply(call: &mut HedgedCall, h: &event::Hedge, at: Duration, seq: usize) {
    match &h.step {
        HedgeStep::NotSent { stop } => {
            call.not_sent = Some((h.attempt, stop, at));
            return;
        }
        HedgeStep::Committed { stop } => {
            call.committed = Some((h.attempt, stop, at));
            call.committed_seq = Some(seq);
            return;
        }
        _ => {}
    }
    let Some(a) = call.attempts.iter_mut().find(|a| a.attempt == h.attempt) else {
        return;
    };
    match &h.step {
        HedgeStep::Ended { code, verdict, .. } => {
            a.ended = Some((at, *code, *verdict));
            a.end_seq = Some(seq);
        }
        HedgeStep::Cancelled { winner, .. } => a.cancelled = Some((at, *winner)),
        HedgeStep::NotSent { .. } | HedgeStep::Committed { .. } => {}
    }
}
