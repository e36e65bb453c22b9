//! The JSON export: the run's facts, the views the text and the page show
//! (calls, handler runs, findings, faults that never fired, stalls), and
//! every event, with the ids the text uses (`r1`, `h1`, `c1`). It is a
//! renderer like the others: it lays out queries of the trace and keeps
//! every event whatever the render options (nothing is folded or hidden).
//!
//! Events are their recorded data, with one exception: what a handler
//! fault or a middlebox did (`fault_fired`'s and `policy_acted`'s
//! `action`), recorded typed ([`FaultAction`], [`PolicyAction`]), is
//! written as its row's words (`"action": "delay 300ms"`), the field's
//! shape since the first export.
//!
//! [`FaultAction`]: crate::recorder::event::FaultAction
//! [`PolicyAction`]: crate::recorder::event::PolicyAction

use std::time::Duration;

use serde::Serialize;

use super::views::{Call, CallEnd, HandlerRun, RunEnd};
use super::{StallEnd, Trace, Window};
use crate::recorder::event::{CallId, Event, EventKind, LayerSide, Outcome, RunId, ServerTimer};

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
    /// Hosts that redialled a server sooner than connection backoff
    /// allows (the summary's finding); absent when none did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    quick_redials: Vec<JsonRedials>,
    events: Events<'a>,
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
            quick_redials: super::backoff::quick_redials(trace.events())
                .iter()
                .map(|q| JsonRedials::of(q, trace.events()))
                .collect(),
            events: Events(trace.events()),
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

/// One host→server's redials after failed attempts, times in *simulated*
/// µs: how many, how many came sooner than connection-backoff.md allows,
/// the first of those, the shortest gap from a failed attempt's start and
/// what the document allowed there.
#[derive(Serialize)]
struct JsonRedials {
    host: String,
    to: String,
    redials: usize,
    too_soon: usize,
    first_us: u64,
    shortest_us: u64,
    allowed_us: u64,
}

impl JsonRedials {
    fn of(q: &super::backoff::Found, events: &[Event]) -> Self {
        Self {
            host: q.host.to_string(),
            to: q.to.to_string(),
            redials: q.redials,
            too_soon: q.count,
            first_us: micros(events[q.first].at()),
            shortest_us: micros(q.shortest),
            allowed_us: micros(q.allowed),
        }
    }
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
    fn of(s: &super::super::query::Stall) -> Self {
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

/// The run's events, each as it serializes, but for the acts (see the
/// module docs).
struct Events<'a>(&'a [Event]);

impl Serialize for Events<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(JsonEvent))
    }
}

struct JsonEvent<'a>(&'a Event);

impl Serialize for JsonEvent<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let (at_us, host) = (micros(e.at()), e.host.as_str());
        match &e.kind {
            EventKind::FaultFired(f) => FaultFiredWords {
                at_us,
                host,
                event: "fault_fired",
                run: f.run,
                path: &f.path,
                action: super::act_words::fault(&f.action),
                side: f.side,
            }
            .serialize(s),
            EventKind::PolicyActed(p) => PolicyActedWords {
                at_us,
                host,
                event: "policy_acted",
                conn: format!("c{}", p.conn),
                to: p.to.as_str(),
                policy: &p.policy,
                action: super::act_words::policy(&p.action),
            }
            .serialize(s),
            EventKind::PolicyClosed(p) => PolicyEndWords {
                at_us,
                host,
                event: "policy_closed",
                conn: format!("c{}", p.conn),
                to: p.to.as_str(),
                policy: &p.policy,
                reason: super::act_words::policy_end(&p.reason),
                discarded: None,
            }
            .serialize(s),
            EventKind::PolicyReset(p) => PolicyEndWords {
                at_us,
                host,
                event: "policy_reset",
                conn: format!("c{}", p.conn),
                to: p.to.as_str(),
                policy: &p.policy,
                reason: super::act_words::policy_end(&p.reason),
                discarded: Some(p.discarded),
            }
            .serialize(s),
            _ => e.serialize(s),
        }
    }
}

/// A `fault_fired` event, its fields in the order the event writes them.
#[derive(Serialize)]
struct FaultFiredWords<'a> {
    at_us: u64,
    host: &'a str,
    event: &'static str,
    run: RunId,
    path: &'a str,
    action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    side: Option<LayerSide>,
}

/// A `policy_acted` event, its fields in the order the event writes them.
#[derive(Serialize)]
struct PolicyActedWords<'a> {
    at_us: u64,
    host: &'a str,
    event: &'static str,
    conn: String,
    to: &'a str,
    policy: &'a str,
    action: String,
}

/// A `policy_closed` or `policy_reset` event, its fields in the order the
/// event writes them (`discarded` only on a reset).
#[derive(Serialize)]
struct PolicyEndWords<'a> {
    at_us: u64,
    host: &'a str,
    event: &'static str,
    conn: String,
    to: &'a str,
    policy: &'a str,
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    discarded: Option<usize>,
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::recorder::event::{
        self, Event, EventKind, FaultAction, PolicyAction, PolicyEnd, RunId,
    };
    use crate::trace::query::Trace;

    #[test]
    fn an_act_is_written_in_its_rows_words() {
        let fired = EventKind::FaultFired(Box::new(event::FaultFired {
            run: RunId(1),
            path: "/x.Y/Z".into(),
            action: FaultAction::Delay {
                by: Duration::from_millis(300),
            },
            side: None,
        }));
        let acted = EventKind::PolicyActed(Box::new(event::PolicyActed {
            conn: 1,
            to: "player".into(),
            policy: "Envoy".into(),
            action: PolicyAction::AdvertisesMaxStreams { value: 2 },
        }));
        let ms = Duration::from_millis;
        let events = vec![
            Event::new(ms(1), "store", fired),
            Event::new(ms(2), "store", acted),
        ];
        let json = Trace::new(1, vec!["store".into()], events, ms(3)).to_json();
        let fired = "\"at_us\": 1000,\n      \"host\": \"store\",\n      \"event\": \
                     \"fault_fired\",\n      \"run\": \"h1\",\n      \"path\": \"/x.Y/Z\",\n      \
                     \"action\": \"delay 300ms\"\n";
        assert!(json.contains(fired), "{json}");
        let acted = "\"event\": \"policy_acted\",\n      \"conn\": \"c1\",\n      \"to\": \
                     \"player\",\n      \"policy\": \"Envoy\",\n      \"action\": \"advertises \
                     SETTINGS_MAX_CONCURRENT_STREAMS = 2 to the client, in place of the server's \
                     SETTINGS\"\n";
        assert!(json.contains(acted), "{json}");
    }

    #[test]
    fn a_policy_end_is_written_in_its_rows_words_in_the_events_order() {
        let ms = Duration::from_millis;
        let closed = EventKind::PolicyClosed(Box::new(event::PolicyClosed {
            conn: 1,
            to: "player".into(),
            policy: "the edge proxy".into(),
            reason: PolicyEnd::LifetimeGraceOver {
                after: ms(5000),
                grace: ms(2000),
            },
        }));
        let reset = EventKind::PolicyReset(Box::new(event::PolicyReset {
            conn: 2,
            to: "player".into(),
            policy: "mine".into(),
            reason: PolicyEnd::Said("my words".into()),
            discarded: 3,
        }));
        let events = vec![
            Event::new(ms(1), "store", closed),
            Event::new(ms(2), "store", reset),
        ];
        let json = Trace::new(1, vec!["store".into()], events, ms(3)).to_json();
        let closed = "\"event\": \"policy_closed\",\n      \"conn\": \"c1\",\n      \"to\": \
                      \"player\",\n      \"policy\": \"the edge proxy\",\n      \"reason\": \
                      \"connection lifetime 5000ms: grace 2000ms after its GOAWAY over\"\n";
        assert!(json.contains(closed), "{json}");
        let reset = "\"event\": \"policy_reset\",\n      \"conn\": \"c2\",\n      \"to\": \
                     \"player\",\n      \"policy\": \"mine\",\n      \"reason\": \"my words\",\n      \
                     \"discarded\": 3\n";
        assert!(json.contains(reset), "{json}");
    }
}
