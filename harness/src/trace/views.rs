//! Calls and handler runs, derived from the event log.

use crate::recorder::event;
use std::collections::HashMap;
use std::time::Duration;

use crate::recorder::event::{CallId, Event, EventKind, Outcome, RunId};

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
    /// ([`EventKind::CallSeenOnWire`](crate::EventKind::CallSeenOnWire)):
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
    /// [`EventKind::CallStoppedReading`](crate::EventKind::CallStoppedReading)):
    /// tonic ended the call with OUT_OF_RANGE for a message over its
    /// `max_decoding_message_size`, RESOURCE_EXHAUSTED by the spec (with a
    /// Compressed-Flag other than 0 and 1: INTERNAL, as the spec says).
    StoppedReading {
        /// The message's length, octets.
        message_len: u32,
        /// The message's Compressed-Flag octet.
        flag: u8,
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
    /// (see [`EventKind::HandlerRejected`](crate::EventKind::HandlerRejected)).
    Rejected {
        /// What tonic answered, and the spec's code.
        outcome: Outcome,
        /// Why, in the trace's words.
        why: &'static str,
    },
    /// hyper dropped it before it finished.
    Dropped,
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
    let mut call_ix: HashMap<CallId, usize> = HashMap::new();
    let mut run_ix: HashMap<RunId, usize> = HashMap::new();
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
                call_ix.insert(*call, calls.len());
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
                });
            }
            EventKind::CallEnded { call, outcome, .. } => {
                if let Some(c) = call_ix.get(call).map(|&i| &mut calls[i]) {
                    c.end = CallEnd::Status((**outcome).clone());
                    c.ended_at = Some(e.at());
                }
            }
            EventKind::CallRouted { call, replica } => {
                if let Some(c) = call_ix.get(call).map(|&i| &mut calls[i]) {
                    c.replica = Some(replica.to_string());
                }
            }
            EventKind::CallStoppedReading(stopped) => {
                if let Some(c) = call_ix.get(&stopped.call).map(|&i| &mut calls[i]) {
                    c.end = CallEnd::StoppedReading {
                        message_len: stopped.message_len,
                        flag: stopped.flag,
                    };
                    c.ended_at = Some(e.at());
                }
            }
            EventKind::CallDropped { call, .. } => {
                if let Some(c) = call_ix.get(call).map(|&i| &mut calls[i]) {
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
                run_ix.insert(*run, runs.len());
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
                if let Some(r) = run_ix.get(&dequeued.run).map(|&i| &mut runs[i]) {
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
                end_run(&mut runs, &run_ix, dropped.run, e.at(), RunEnd::Dropped);
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

/// The first end of a run wins: a panic is followed by the INTERNAL status
/// the harness answers with, which must not overwrite it.
fn end_run(
    runs: &mut [HandlerRun],
    ix: &HashMap<RunId, usize>,
    run: RunId,
    at: Duration,
    end: RunEnd,
) {
    if let Some(r) = ix.get(&run).map(|&i| &mut runs[i]) {
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
    let mut active: HashMap<&str, std::collections::BTreeSet<usize>> = HashMap::new();
    let (mut s, mut e) = (0, 0);
    for ci in orphans {
        let t = calls[ci].started;
        while let Some(&(_, ri)) = starts.get(s).filter(|(at, _)| *at <= t) {
            active.entry(runs[ri].host.as_str()).or_default().insert(ri);
            s += 1;
        }
        while let Some(&(_, ri)) = ends.get(e).filter(|(at, _)| *at <= t) {
            if let Some(set) = active.get_mut(runs[ri].host.as_str()) {
                set.remove(&ri);
            }
            e += 1;
        }
        let on_host = active.get(calls[ci].host.as_str());
        if let Some(&only) = on_host
            .filter(|set| set.len() == 1)
            .and_then(|set| set.first())
        {
            calls[ci].parent = Some(runs[only].id);
            calls[ci].parent_inferred = true;
        }
    }
}
