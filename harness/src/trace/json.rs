//! The JSON export: the run's facts, the views the text and the page show
//! (calls, handler runs, findings, faults that never fired, stalls), and
//! every event, with the ids the text uses (`r1`, `h1`, `c1`). It is a
//! renderer like the others: it lays out queries of the trace and keeps
//! every event whatever the render options (nothing is folded or hidden).
//!
//! Events are their recorded data, not their rows' words: what a handler
//! fault or a middlebox did (`fault_fired`'s and `policy_acted`'s
//! `action`) is an object tagged by `"kind"`, with its numbers, codes and
//! *simulated* µs beside it (`{"kind": "delay", "by_us": 300000}`), where
//! the text says `delay 300ms`.

use std::time::Duration;

use serde::Serialize;

use super::views::{Call, CallEnd, HandlerRun, RunEnd};
use super::{StallEnd, Trace, Window};
use crate::recorder::event::{CallId, Event, EventKind, Outcome, RunId, ServerTimer};

/// The document [`Trace::to_json`] writes.
#[derive(Serialize)]
pub(super) struct Document<'a> {
    seed: u64,
    ended_us: u64,
    hosts: &'a [String],
    calls: Vec<JsonCall<'a>>,
    handler_runs: Vec<JsonRun<'a>>,
    findings: Vec<Finding<'a>>,
    faults_never_fired: Vec<NeverFired<'a>>,
    stalls: Vec<JsonStall>,
    events: &'a [Event],
}

impl<'a> Document<'a> {
    pub(super) fn of(trace: &'a Trace) -> Self {
        Self {
            seed: trace.seed(),
            ended_us: micros(trace.ended_at()),
            hosts: trace.hosts(),
            calls: trace.calls().iter().map(JsonCall::of).collect(),
            handler_runs: trace.handler_runs().iter().map(JsonRun::of).collect(),
            findings: trace
                .calls()
                .iter()
                .filter_map(Finding::of_call)
                .chain(trace.handler_runs().iter().filter_map(Finding::of_run))
                .collect(),
            faults_never_fired: never_fired(trace.events()),
            stalls: trace
                .stalls(Duration::ZERO)
                .iter()
                .map(JsonStall::of)
                .collect(),
            events: trace.events(),
        }
    }
}

/// A [`Call`], its times in *simulated* µs since the start of the run.
#[derive(Serialize)]
struct JsonCall<'a> {
    id: CallId,
    host: &'a str,
    target: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    replica: Option<&'a str>,
    path: &'a str,
    started_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<RunId>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    parent_inferred: bool,
    /// Seen only on the wire ([`Call::seen_on_wire`]).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    seen_on_wire: bool,
    /// Seen only where its connection attempt failed
    /// ([`Call::failed_connecting`]); its `path` is empty then.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    failed_connecting: bool,
    /// `status`, `dropped`, `stopped_reading`, `undecodable` or `open`.
    end: &'static str,
    /// For `stopped_reading`: the header of the message the caller's
    /// decoder stopped at.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at_message: Option<StoppedAt>,
    /// For `undecodable`: the length of the message the caller's decoder
    /// could not parse, octets.
    #[serde(skip_serializing_if = "Option::is_none")]
    undecodable_message_len: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'a Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_us: Option<u64>,
    /// How far past its deadline it ended (or the run ended, if still open).
    #[serde(skip_serializing_if = "Option::is_none")]
    overran_us: Option<u64>,
}

impl<'a> JsonCall<'a> {
    fn of(c: &'a Call) -> Self {
        let (end, stopped_at_message) = match &c.end {
            CallEnd::Status(_) => ("status", None),
            CallEnd::Dropped => ("dropped", None),
            CallEnd::StoppedReading { message_len, flag } => (
                "stopped_reading",
                Some(StoppedAt {
                    message_len: *message_len,
                    flag: *flag,
                }),
            ),
            CallEnd::Undecodable { .. } => ("undecodable", None),
            CallEnd::Open => ("open", None),
        };
        Self {
            id: c.id,
            host: &c.host,
            target: &c.target,
            replica: c.replica.as_deref(),
            path: &c.path,
            started_us: micros(c.started),
            timeout_us: c.timeout.map(micros),
            parent: c.parent,
            parent_inferred: c.parent_inferred,
            seen_on_wire: c.seen_on_wire,
            failed_connecting: c.failed_connecting,
            end,
            stopped_at_message,
            undecodable_message_len: match c.end {
                CallEnd::Undecodable { message_len } => Some(message_len),
                _ => None,
            },
            outcome: c.outcome(),
            ended_us: c.ended_at.map(micros),
            overran_us: c.overran_deadline().map(micros),
        }
    }
}

/// A gRPC message header: its length in octets and its Compressed-Flag.
#[derive(Serialize)]
struct StoppedAt {
    message_len: u32,
    flag: u8,
}

/// A [`HandlerRun`], its times in *simulated* µs since the start of the run.
#[derive(Serialize)]
struct JsonRun<'a> {
    id: RunId,
    host: &'a str,
    path: &'a str,
    from: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<CallId>,
    started_us: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dequeued_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout_us: Option<u64>,
    nth: u32,
    /// `finished`, `rejected` (tonic answered before the handler ran),
    /// `dropped`, `timed_out` (tonic's server timer dropped it and
    /// answered), `panicked` or `running`.
    end: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    /// For `rejected` and `timed_out`: the spec's code for tonic's answer;
    /// for `rejected`, why tonic answered (`timed_out`: the `timer`
    /// below).
    #[serde(skip_serializing_if = "Option::is_none")]
    spec_code: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<&'static str>,
    /// For `timed_out`: which duration ran out (`timer`: `grpc_timeout`
    /// or `server_timeout`, with `grpc_timeout_us`).
    #[serde(flatten)]
    timer: Option<ServerTimer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_us: Option<u64>,
}

impl<'a> JsonRun<'a> {
    fn of(r: &'a HandlerRun) -> Self {
        let (end, code, message) = match &r.end {
            RunEnd::Finished { code, message } => ("finished", Some(*code), Some(message)),
            RunEnd::Rejected { outcome, .. } => {
                ("rejected", Some(outcome.code), Some(&outcome.message))
            }
            RunEnd::Dropped => ("dropped", None, None),
            RunEnd::TimedOut(t) => ("timed_out", Some(t.outcome.code), Some(&t.outcome.message)),
            RunEnd::Panicked(message) => ("panicked", None, Some(message)),
            RunEnd::Running => ("running", None, None),
        };
        let (spec_code, why) = match &r.end {
            RunEnd::Rejected { outcome, why } => (Some(outcome.spec_code), Some(*why)),
            RunEnd::TimedOut(t) => (Some(t.outcome.spec_code), None),
            _ => (None, None),
        };
        Self {
            id: r.id,
            host: &r.host,
            path: &r.path,
            from: &r.from,
            call: r.call,
            started_us: micros(r.started),
            dequeued_us: r.dequeued.map(micros),
            timeout_us: r.timeout.map(micros),
            nth: r.nth,
            end,
            code,
            message: message.map(String::as_str),
            spec_code,
            why,
            timer: match &r.end {
                RunEnd::TimedOut(t) => Some(t.timer),
                _ => None,
            },
            ended_us: r.ended_at.map(micros),
        }
    }
}

/// A call that ended with a code other than the one the gRPC
/// specification requires, or a request tonic's server answered before
/// the handler with such a code (the page's and the text's "findings").
#[derive(Serialize)]
struct Finding<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<CallId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    run: Option<RunId>,
    /// What tonic reported.
    code: &'static str,
    message: &'a str,
    /// What the spec requires.
    spec_code: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule: Option<&'static str>,
}

impl<'a> Finding<'a> {
    fn of_call(c: &'a Call) -> Option<Self> {
        let o = c.outcome().filter(|o| o.code != o.spec_code)?;
        Some(Self {
            call: Some(c.id),
            run: None,
            code: o.code,
            message: &o.message,
            spec_code: o.spec_code,
            rule: o.rule,
        })
    }
}

impl<'a> Finding<'a> {
    fn of_run(r: &'a HandlerRun) -> Option<Self> {
        let o = match &r.end {
            RunEnd::Rejected { outcome, .. } => outcome,
            RunEnd::TimedOut(t) => &t.outcome,
            _ => return None,
        };
        (o.code != o.spec_code).then(|| Self {
            call: None,
            run: Some(r.id),
            code: o.code,
            message: &o.message,
            spec_code: o.spec_code,
            rule: o.rule,
        })
    }
}

#[derive(Serialize)]
struct NeverFired<'a> {
    host: &'a str,
    fault: &'a str,
}

fn never_fired(events: &[Event]) -> Vec<NeverFired<'_>> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FaultNeverFired { fault } => Some(NeverFired {
                host: &e.host,
                fault,
            }),
            _ => None,
        })
        .collect()
}

/// A [`Stall`](super::Stall), with the sentence the text prints for it.
#[derive(Serialize)]
struct JsonStall {
    conn: String,
    stream: u32,
    sender: String,
    receiver: String,
    since_us: u64,
    until_us: u64,
    /// `stream` or `connection`.
    window: &'static str,
    /// `reopened`, `closed` or `open`.
    end: &'static str,
    sent_bytes: u64,
    held_updates: usize,
    text: String,
}

impl JsonStall {
    fn of(s: &super::Stall) -> Self {
        Self {
            conn: format!("c{}", s.conn),
            stream: s.stream,
            sender: s.sender.clone(),
            receiver: s.receiver.clone(),
            since_us: micros(s.since),
            until_us: micros(s.until),
            window: match s.window {
                Window::Stream => "stream",
                Window::Connection => "connection",
            },
            end: match s.end {
                StallEnd::Reopened => "reopened",
                StallEnd::Closed => "closed",
                StallEnd::Open => "open",
            },
            sent_bytes: s.sent,
            held_updates: s.held_updates,
            text: s.to_string(),
        }
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
