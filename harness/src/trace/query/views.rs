//! Calls and handler runs, derived from the event log.

use crate::recorder::event;
use std::collections::HashMap;
use std::time::Duration;

use crate::recorder::event::{CallId, Event, EventKind, Outcome, RunId, ServerTimeout};

/// One client call as its caller saw it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// The call's id (`r1`).
    pub id: CallId,
    /// The calling host.
    pub host: String,
    /// The called host; for a call through a
    /// [`Host::balanced_channel`](crate::Host::balanced_channel), the
    /// replica set's name (the replica is [`Call::replica`]).
    pub target: String,
    /// For a call through a balanced channel: the replica host the
    /// balancer sent it to, once it did (`None` while it waited for a
    /// ready replica, and for calls on plain channels).
    pub replica: Option<String>,
    /// The method path.
    pub path: String,
    /// When it started, *simulated* time since the start of the run.
    pub started: Duration,
    /// The `grpc-timeout` it carried.
    pub timeout: Option<Duration>,
    /// The handler run on the calling host it was made from. Recorded when
    /// the call was made inside the handler's own task; otherwise inferred
    /// when exactly one handler run was active on the calling host at that
    /// instant (see [`Call::parent_inferred`]).
    pub parent: Option<RunId>,
    /// True when [`Call::parent`] was inferred, not recorded (the handler
    /// made the call from a task it spawned).
    pub parent_inferred: bool,
    /// How it ended.
    pub end: CallEnd,
    /// When it ended or was dropped.
    pub ended_at: Option<Duration>,
    /// True for a call the harness saw only on the wire
    /// ([`EventKind::CallSeenOnWire`](crate::recorder::event::EventKind::CallSeenOnWire)):
    /// made through [`Host::tonic_channel`](crate::Host::tonic_channel)
    /// (or [`Channel::into_inner`](crate::Channel::into_inner)), not the
    /// harness's own client. Then [`Call::started`] is when its request
    /// HEADERS were written, not when the caller made it; [`Call::timeout`]
    /// the `grpc-timeout` sent (a deadline the caller set but did not
    /// send is not seen); [`Call::end`] what the wire shows: the status of
    /// its trailers as sent, tonic's code for an RST_STREAM from the
    /// server (`PROTOCOL-HTTP2.md`'s table), dropped for a reset of the
    /// caller's own before its deadline, and DEADLINE_EXCEEDED (tonic:
    /// CANCELLED "Timeout expired") for one at or after it; `Open` when
    /// its connection went away first (what tonic told the caller is not
    /// on the wire). The handler run it reached has no
    /// [`HandlerRun::call`]. Needs the wire tap
    /// ([`SimBuilder::wire_tap`](crate::SimBuilder::wire_tap)).
    pub seen_on_wire: bool,
    /// True for a call through [`Host::tonic_channel`](crate::Host::tonic_channel)
    /// that failed before its connection was up
    /// ([`EventKind::CallFailedConnecting`](crate::recorder::event::EventKind::CallFailedConnecting)):
    /// it is known only from its channel's failed connection attempt, so
    /// [`Call::path`] is empty (the method is not seen), [`Call::started`]
    /// is when it failed (its start is not seen), [`Call::timeout`] none
    /// (not seen either), and [`Call::end`] the status tonic gave it.
    pub failed_connecting: bool,
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallEnd {
    /// With a status.
    Status(Outcome),
    /// The caller dropped it before it ended.
    Dropped,
    /// The caller's decoder stopped at the header of a response message of
    /// `message_len` octets before the message was whole (see
    /// [`EventKind::CallStoppedReading`](crate::recorder::event::EventKind::CallStoppedReading)):
    /// tonic ended the call with OUT_OF_RANGE for a message over its
    /// `max_decoding_message_size`, RESOURCE_EXHAUSTED by the spec (with a
    /// Compressed-Flag other than 0 and 1: INTERNAL, as the spec says).
    StoppedReading {
        /// The message's length, octets.
        message_len: u32,
        /// The message's Compressed-Flag octet.
        flag: u8,
    },
    /// The caller's decoder could not parse a whole response message of
    /// `message_len` octets as protobuf (see
    /// [`EventKind::CallUndecodable`](crate::recorder::event::EventKind::CallUndecodable)):
    /// tonic ended the call with INTERNAL "failed to decode Protobuf
    /// message: …" (its words after that depend on the caller's message
    /// type, which the harness does not know), INTERNAL by the spec too.
    Undecodable {
        /// The message's length, octets.
        message_len: u32,
    },
    /// Still open when the run ended.
    Open,
}

impl Call {
    /// The status, when the call ended with one.
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.end {
            CallEnd::Status(o) => Some(o),
            _ => None,
        }
    }

    /// From start to end, *simulated* time.
    pub fn latency(&self) -> Option<Duration> {
        self.ended_at.map(|t| t.saturating_sub(self.started))
    }

    /// The caller's deadline, *simulated* time since the start of the run.
    pub fn deadline(&self) -> Option<Duration> {
        self.timeout.map(|t| self.started + t)
    }

    /// How long after its deadline the call ended, when it ended later:
    /// tonic starts the clock of `Request::set_timeout` once the channel is
    /// ready, so a call that must connect (or reconnect) first can end past
    /// the deadline its caller meant, and its first hop's `grpc-timeout`
    /// is the full timeout, not what is left. `None`: no deadline, still
    /// open, or ended in time (*simulated* time throughout).
    pub fn overran_deadline(&self) -> Option<Duration> {
        let (deadline, ended) = (self.deadline()?, self.ended_at?);
        (ended > deadline).then(|| ended - deadline)
    }

    /// When the caller stopped waiting without a result: it dropped the call
    /// or it ended with DEADLINE_EXCEEDED or CANCELLED (by the spec's code).
    pub fn gave_up_at(&self) -> Option<Duration> {
        match &self.end {
            CallEnd::Dropped => self.ended_at,
            CallEnd::Status(o) if matches!(o.spec_code, "DEADLINE_EXCEEDED" | "CANCELLED") => {
                self.ended_at
            }
            _ => None,
        }
    }
}

/// One request's life in a server's handler layer.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HandlerRun {
    /// The run's id (`h1`).
    pub id: RunId,
    /// The server host.
    pub host: String,
    /// The method path.
    pub path: String,
    /// The host the request came from.
    pub from: String,
    /// The client call it belongs to (when the caller used a recorded
    /// channel).
    pub call: Option<CallId>,
    /// When the request reached the handler layer.
    pub started: Duration,
    /// When it got a slot under a concurrency limit, if it had to wait.
    pub dequeued: Option<Duration>,
    /// The incoming `grpc-timeout`.
    pub timeout: Option<Duration>,
    /// The server-side attempt number for this method on this host.
    pub nth: u32,
    /// How it ended.
    pub end: RunEnd,
    /// When it ended.
    pub ended_at: Option<Duration>,
}

/// How a handler run ended.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunEnd {
    /// It returned a status (`code` is the gRPC name).
    Finished {
        /// The gRPC code name.
        code: &'static str,
        /// The status message.
        message: String,
    },
    /// tonic's server answered before the user's handler got the request
    /// (see [`EventKind::HandlerRejected`](crate::recorder::event::EventKind::HandlerRejected)).
    Rejected {
        /// What tonic answered, and the spec's code.
        outcome: Outcome,
        /// Why, in the trace's words.
        why: &'static str,
    },
    /// hyper dropped it before it finished (the peer reset the stream,
    /// the connection closed, the host crashed).
    Dropped,
    /// tonic's server timer ran out and tonic answered the stream itself
    /// (CANCELLED "Timeout expired", spec DEADLINE_EXCEEDED), dropping the
    /// handler: see [`ServerTimeout`] for how the harness tells.
    TimedOut(ServerTimeout),
    /// It panicked.
    Panicked(String),
    /// Still running when the run ended.
    Running,
}

impl HandlerRun {
    /// The deadline the caller gave it, *simulated* time since the start of
    /// the run (measured from arrival).
    pub fn deadline(&self) -> Option<Duration> {
        self.timeout.map(|t| self.started + t)
    }

    /// When the handler actually began work (after any queueing).
    pub fn began(&self) -> Duration {
        self.dequeued.unwrap_or(self.started)
    }

    /// Whether it was running (started, not ended) at `at`.
    pub fn active_at(&self, at: Duration) -> bool {
        self.started <= at && self.ended_at.is_none_or(|end| at < end)
    }
}

/// Folds the event log into calls and runs.
pub(crate) fn build(events: &[Event]) -> (Vec<Call>, Vec<HandlerRun>) {
    let mut calls: Vec<Call> = Vec::new();
    let mut runs: Vec<HandlerRun> = Vec::new();
    let mut call_ix = ById::new(events.len());
    let mut run_ix = ById::new(events.len());
    let mut on_wire: std::collections::HashSet<CallId> = std::collections::HashSet::new();
    for e in events {
        match &e.kind {
            EventKind::CallSeenOnWire { call, .. } => {
                on_wire.insert(*call);
            }
            EventKind::CallStarted(call_started) => {
                let event::CallStarted {
                    call,
                    target,
                    path,
                    timeout,
                    parent,
                } = &**call_started;
                call_ix.insert(call.0, calls.len());
                calls.push(Call {
                    id: *call,
                    host: e.host.to_string(),
                    target: target.to_string(),
                    replica: None,
                    path: path.clone(),
                    started: e.at(),
                    timeout: *timeout,
                    parent: *parent,
                    parent_inferred: false,
                    end: CallEnd::Open,
                    ended_at: None,
                    seen_on_wire: on_wire.remove(call),
                    failed_connecting: false,
                });
            }
            EventKind::CallFailedConnecting(failed) => {
                call_ix.insert(failed.call.0, calls.len());
                calls.push(Call {
                    id: failed.call,
                    host: e.host.to_string(),
                    target: failed.target.to_string(),
                    replica: None,
                    path: String::new(),
                    started: e.at(),
                    timeout: None,
                    parent: None,
                    parent_inferred: false,
                    end: CallEnd::Status(failed.outcome.clone()),
                    ended_at: Some(e.at()),
                    seen_on_wire: false,
                    failed_connecting: true,
                });
            }
            EventKind::CallEnded { call, outcome, .. } => {
                if let Some(c) = call_ix.get(call.0).map(|i| &mut calls[i]) {
                    c.end = CallEnd::Status((**outcome).clone());
                    c.ended_at = Some(e.at());
                }
            }
            EventKind::CallRouted { call, replica, .. } => {
                if let Some(c) = call_ix.get(call.0).map(|i| &mut calls[i]) {
                    c.replica = Some(replica.to_string());
                }
            }
            EventKind::CallStoppedReading(stopped) => {
                if let Some(c) = call_ix.get(stopped.call.0).map(|i| &mut calls[i]) {
                    c.end = CallEnd::StoppedReading {
                        message_len: stopped.message_len,
                        flag: stopped.flag,
                    };
                    c.ended_at = Some(e.at());
                }
            }
            EventKind::CallUndecodable(undecodable) => {
                if let Some(c) = call_ix.get(undecodable.call.0).map(|i| &mut calls[i]) {
                    c.end = CallEnd::Undecodable {
                        message_len: undecodable.message_len,
                    };
                    c.ended_at = Some(e.at());
                }
            }
            EventKind::CallDropped { call, .. } => {
                if let Some(c) = call_ix.get(call.0).map(|i| &mut calls[i]) {
                    c.end = CallEnd::Dropped;
                    c.ended_at = Some(e.at());
                }
            }
            EventKind::HandlerStarted(handler_started) => {
                let event::HandlerStarted {
                    run,
                    path,
                    from,
                    call,
                    timeout,
                    nth,
                } = &**handler_started;
                run_ix.insert(run.0, runs.len());
                runs.push(HandlerRun {
                    id: *run,
                    host: e.host.to_string(),
                    path: path.clone(),
                    from: from.to_string(),
                    call: *call,
                    started: e.at(),
                    dequeued: None,
                    timeout: *timeout,
                    nth: *nth,
                    end: RunEnd::Running,
                    ended_at: None,
                });
            }
            EventKind::HandlerDequeued(dequeued) => {
                if let Some(r) = run_ix.get(dequeued.run.0).map(|i| &mut runs[i]) {
                    r.dequeued = Some(e.at());
                }
            }
            EventKind::HandlerFinished(handler_finished) => {
                let event::HandlerFinished {
                    run, code, message, ..
                } = &**handler_finished;
                end_run(
                    &mut runs,
                    &run_ix,
                    *run,
                    e.at(),
                    RunEnd::Finished {
                        code,
                        message: message.clone(),
                    },
                );
            }
            EventKind::HandlerRejected(handler_rejected) => {
                let event::HandlerRejected {
                    run, outcome, why, ..
                } = &**handler_rejected;
                let end = RunEnd::Rejected {
                    outcome: outcome.clone(),
                    why,
                };
                end_run(&mut runs, &run_ix, *run, e.at(), end);
            }
            EventKind::HandlerDropped(dropped) => {
                let end = match &dropped.timed_out {
                    Some(timed_out) => RunEnd::TimedOut(timed_out.clone()),
                    None => RunEnd::Dropped,
                };
                end_run(&mut runs, &run_ix, dropped.run, e.at(), end);
            }
            EventKind::HandlerPanicked(handler_panicked) => {
                let event::HandlerPanicked { run, message, .. } = &**handler_panicked;
                end_run(
                    &mut runs,
                    &run_ix,
                    *run,
                    e.at(),
                    RunEnd::Panicked(message.clone()),
                );
            }
            _ => {}
        }
    }
    infer_parents(&mut calls, &runs);
    (calls, runs)
}

/// Positions of calls or runs by their id. The recorder hands ids out in
/// order from 1, so a vector indexed by id holds them without hashing; an id
/// larger than the log is long goes to a map instead of growing the vector.
struct ById {
    dense: Vec<Option<usize>>,
    /// Largest id kept in `dense`.
    limit: usize,
    sparse: HashMap<u32, usize>,
}

impl ById {
    fn new(events: usize) -> Self {
        Self {
            dense: Vec::new(),
            limit: events.saturating_add(1),
            sparse: HashMap::new(),
        }
    }

    fn insert(&mut self, id: u32, at: usize) {
        let slot = id as usize;
        if slot > self.limit {
            self.sparse.insert(id, at);
            return;
        }
        if self.dense.len() <= slot {
            self.dense.resize(slot + 1, None);
        }
        self.dense[slot] = Some(at);
    }

    fn get(&self, id: u32) -> Option<usize> {
        match self.dense.get(id as usize) {
            Some(&at) => at,
            None => self.sparse.get(&id).copied(),
        }
    }
}

/// The first end of a run wins: a panic is followed by the INTERNAL status
/// the harness answers with, which must not overwrite it.
fn end_run(runs: &mut [HandlerRun], ix: &ById, run: RunId, at: Duration, end: RunEnd) {
    if let Some(r) = ix.get(run.0).map(|i| &mut runs[i]) {
        if r.ended_at.is_none() {
            r.end = end;
            r.ended_at = Some(at);
        }
    }
}

/// A call made from a task the handler spawned has no recorded parent; when
/// exactly one handler run was active on the calling host, it is the parent.
///
/// One sweep over time (runs by start and by end, calls by start) keeps this
/// linear in the size of the trace: a run is active at `t` when it started
/// at or before `t` and had not ended by `t`.
fn infer_parents(calls: &mut [Call], runs: &[HandlerRun]) {
    let mut starts: Vec<(Duration, usize)> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.started, i))
        .collect();
    let mut ends: Vec<(Duration, usize)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.ended_at.map(|t| (t, i)))
        .collect();
    starts.sort();
    ends.sort();
    let mut orphans: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i].parent.is_none())
        .collect();
    orphans.sort_by_key(|&i| calls[i].started);
    // Per host, how many runs are active and the sum of their indices:
    // when one is, the sum is its index.
    let mut active: HashMap<&str, (usize, usize)> = HashMap::new();
    let (mut s, mut e) = (0, 0);
    for ci in orphans {
        let t = calls[ci].started;
        while let Some(&(_, ri)) = starts.get(s).filter(|(at, _)| *at <= t) {
            let (n, sum) = active.entry(runs[ri].host.as_str()).or_default();
            (*n, *sum) = (*n + 1, sum.wrapping_add(ri));
            s += 1;
        }
        while let Some(&(_, ri)) = ends.get(e).filter(|(at, _)| *at <= t) {
            if let Some((n, sum)) = active.get_mut(runs[ri].host.as_str()) {
                (*n, *sum) = (n.saturating_sub(1), sum.wrapping_sub(ri));
            }
            e += 1;
        }
        let only = match active.get(calls[ci].host.as_str()) {
            Some(&(1, only)) => runs.get(only),
            _ => None,
        };
        if let Some(only) = only {
            calls[ci].parent = Some(only.id);
            calls[ci].parent_inferred = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn run(id: u32, host: &str, started: u64, ended: Option<u64>) -> HandlerRun {
        HandlerRun {
            id: RunId(id),
            host: host.to_owned(),
            path: "/a.B/C".to_owned(),
            from: "client".to_owned(),
            call: None,
            started: ms(started),
            dequeued: None,
            timeout: None,
            nth: 1,
            end: RunEnd::Running,
            ended_at: ended.map(ms),
        }
    }

    fn call(id: u32, host: &str, started: u64) -> Call {
        Call {
            id: CallId(id),
            host: host.to_owned(),
            target: "store".to_owned(),
            replica: None,
            path: "/a.B/D".to_owned(),
            started: ms(started),
            timeout: None,
            parent: None,
            parent_inferred: false,
            end: CallEnd::Open,
            ended_at: None,
            seen_on_wire: false,
            failed_connecting: false,
        }
    }

    /// A call without a recorded parent gets the one run active on its
    /// host when it started, and none when two or none were.
    #[test]
    fn a_parent_is_inferred_only_from_the_one_active_run() {
        let runs = [
            run(1, "gw", 0, Some(10)),
            run(2, "gw", 5, Some(15)),
            run(3, "gw", 20, Some(20)),
            run(4, "gw", 30, None),
            run(5, "other", 0, None),
        ];
        let mut calls = [
            call(1, "gw", 3),
            call(2, "gw", 7),
            call(3, "gw", 12),
            call(4, "gw", 20),
            call(5, "gw", 25),
            call(6, "gw", 40),
            call(7, "lone", 3),
        ];
        calls[0].parent = Some(RunId(4));
        infer_parents(&mut calls, &runs);
        let parents: Vec<Option<u32>> = calls.iter().map(|c| c.parent.map(|r| r.0)).collect();
        // Call 1 kept its recorded parent; 2 saw two runs; 4 started as run
        // 3 started and ended; 5 and 7 saw none.
        assert_eq!(parents, [Some(4), None, Some(2), None, None, Some(4), None]);
        let inferred: Vec<bool> = calls.iter().map(|c| c.parent_inferred).collect();
        assert_eq!(inferred, [false, false, true, false, false, true, false]);
    }

    /// Ids the recorder makes are found in the vector; one far beyond the
    /// log's length still is, from the map.
    #[test]
    fn positions_are_found_by_id_near_or_far() {
        let mut ix = ById::new(4);
        for (id, at) in [(1, 0), (3, 1), (u32::MAX - 1, 2), (2, 3)] {
            ix.insert(id, at);
        }
        let found: Vec<Option<usize>> = [0, 1, 2, 3, 4, u32::MAX - 1, u32::MAX]
            .into_iter()
            .map(|id| ix.get(id))
            .collect();
        assert_eq!(
            found,
            [None, Some(0), Some(3), Some(1), None, Some(2), None]
        );
        assert!(ix.dense.len() <= 5, "the far id did not grow the vector");
    }
}
