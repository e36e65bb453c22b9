//! Invariants with a bound the user gives (issue #26 §3): recovery (after
//! the last fault, calls succeed again within a time) and amplification
//! (the handler runs one logical client call causes, across every hop and
//! retry, stay within a count).

use std::collections::BTreeMap;
use std::time::Duration;

use super::assert::Violation;
use super::{Call, CallEnd, Trace};
use crate::recorder::event::{CallId, EventKind, RunId};
use crate::units::fmt_duration;

const RECOVERY: &str = "recovery";
const AMPLIFICATION: &str = "amplification";

/// Whether `kind` is a fault acting on the run: a host, link, membership,
/// health or DNS fault, a handler fault firing, held frames released.
fn is_fault(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::HostCrashed
            | EventKind::HostRestarted
            | EventKind::ShutdownStarted { .. }
            | EventKind::PodTerminationStarted(_)
            | EventKind::Partitioned { .. }
            | EventKind::BlackHoled { .. }
            | EventKind::HostPaused
            | EventKind::HostResumed
            | EventKind::Repaired { .. }
            | EventKind::LinkLatency { .. }
            | EventKind::FaultFired(_)
            | EventKind::HoldReleased { .. }
            | EventKind::ReplicaLeft { .. }
            | EventKind::ReplicaJoined { .. }
            | EventKind::HealthSet { .. }
            | EventKind::DnsOutage
            | EventKind::DnsRestored
    )
}

/// How a call ended, for a violation: `ended UNAVAILABLE "…"`.
fn ending(c: &Call) -> String {
    match &c.end {
        CallEnd::Status(o) => format!("ended {} {:?}", o.spec_code, o.message),
        CallEnd::Dropped => "was dropped by its caller".to_owned(),
        CallEnd::Open => "was still open when the run ended".to_owned(),
        _ => "ended without a whole response".to_owned(),
    }
}

impl Trace {
    /// Checks that the run recovered: every call made through a recorded
    /// channel that started more than `bound` (*simulated*) after the last
    /// fault ended OK. The last fault is the last host, link, membership,
    /// health or DNS fault, handler fault firing or release of held frames
    /// in the trace; a trace without any passes.
    ///
    /// # Errors
    /// A [`Violation`] naming the first such call that did not end OK and
    /// how it ended; or, when no call started after the bound, one saying
    /// that recovery cannot be judged (keep calling past the last fault).
    pub fn assert_recovers_within(&self, bound: Duration) -> Result<(), Violation> {
        let Some(last) = self.events().iter().rev().find(|e| is_fault(&e.kind)) else {
            return Ok(());
        };
        let (at, host) = (last.at(), last.host.as_str());
        let from = at + bound;
        let mut after = self
            .calls()
            .iter()
            .filter(|c| !c.seen_on_wire && c.started > from)
            .peekable();
        if after.peek().is_none() {
            return Err(self.keep(Violation::new(
                RECOVERY,
                format!(
                    "no call started after {} ({} after the last fault, on {host} at {}): \
                     recovery cannot be judged; keep calling past the last fault",
                    fmt_duration(from),
                    fmt_duration(bound),
                    fmt_duration(at)
                ),
            )));
        }
        let Some(c) = after.find(|c| !c.outcome().is_some_and(|o| o.is_ok())) else {
            return Ok(());
        };
        Err(self.keep(Violation::new(
            RECOVERY,
            format!(
                "{} {} from {} started at {}, {} after the last fault (on {host} at {}), and {}",
                c.id,
                c.path,
                c.host,
                fmt_duration(c.started),
                fmt_duration(c.started - at),
                fmt_duration(at),
                ending(c)
            ),
        )))
    }

    /// The handler runs each logical client call caused, across every hop:
    /// its own runs (each attempt's, when a retry layer made several) and,
    /// recursively, the runs of the calls those handlers made. A logical
    /// call is a call with no parent handler run, or a retry layer's group
    /// of attempts (their first attempt's id names it). In the order the
    /// logical calls started.
    pub fn amplification(&self) -> Vec<(CallId, usize)> {
        // The calls each run made, and each call's runs.
        let mut made: BTreeMap<RunId, Vec<CallId>> = BTreeMap::new();
        for c in self.calls() {
            if let Some(parent) = c.parent {
                made.entry(parent).or_default().push(c.id);
            }
        }
        let mut runs_of: BTreeMap<CallId, Vec<RunId>> = BTreeMap::new();
        for r in self.runs.iter() {
            if let Some(call) = r.call {
                runs_of.entry(call).or_default().push(r.id);
            }
        }
        // A retry group's attempts count as one logical call.
        let mut group_of: BTreeMap<CallId, CallId> = BTreeMap::new();
        for g in self.retried_calls() {
            let ids: Vec<CallId> = g.attempts.iter().filter_map(|a| a.call).collect();
            if let Some(first) = ids.first().copied() {
                for id in ids {
                    group_of.insert(id, first);
                }
            }
        }
        let mut totals: Vec<(CallId, usize)> = Vec::new();
        for c in self.calls().iter().filter(|c| c.parent.is_none()) {
            let root = group_of.get(&c.id).copied().unwrap_or(c.id);
            let n = count_runs(c.id, &runs_of, &made, 0);
            match totals.iter_mut().find(|(id, _)| *id == root) {
                Some((_, total)) => *total += n,
                None => totals.push((root, n)),
            }
        }
        totals
    }

    /// Checks that no logical client call caused more than `max` handler
    /// runs across every hop and retry ([`Trace::amplification`]): a retry
    /// storm, where each layer's retries multiply the next one's, breaks it.
    ///
    /// # Errors
    /// A [`Violation`] naming the logical call with the most runs, and
    /// how many.
    pub fn assert_amplification_within(&self, max: usize) -> Result<(), Violation> {
        let worst = self
            .amplification()
            .into_iter()
            .filter(|(_, n)| *n > max)
            .max_by_key(|(_, n)| *n);
        let Some((id, n)) = worst else {
            return Ok(());
        };
        let c = self.call(id);
        let (path, from) = c.map_or(("?", "?"), |c| (c.path.as_str(), c.host.as_str()));
        Err(self.keep(Violation::new(
            AMPLIFICATION,
            format!("{id} {path} from {from} caused {n} handler runs across its hops and retries (bound {max})"),
        )))
    }
}

/// The runs of call `id` and, below them, of every call they made.
fn count_runs(
    id: CallId,
    runs_of: &BTreeMap<CallId, Vec<RunId>>,
    made: &BTreeMap<RunId, Vec<CallId>>,
    depth: usize,
) -> usize {
    let Some(runs) = runs_of.get(&id) else {
        return 0;
    };
    let below = |r: &RunId| -> usize {
        // Bounded, in case of a malformed chain.
        if depth >= 16 {
            return 0;
        }
        made.get(r).map_or(0, |calls| {
            calls
                .iter()
                .map(|c| count_runs(*c, runs_of, made, depth + 1))
                .sum()
        })
    };
    runs.len() + runs.iter().map(below).sum::<usize>()
}
