//! tonic's server timer, told apart from the other drops of a handler run
//! when the trace is built: a run dropped at the very instant its host
//! answered the run's stream trailers-only CANCELLED "Timeout expired" was
//! dropped by tonic's `GrpcTimeout` (the rule and its sources are on
//! [`ServerTimeout`]). The recorded `HandlerDropped` gets its
//! [`timed_out`](crate::recorder::event::HandlerDropped::timed_out); nothing
//! else changes. A run that cannot be tied so stays a plain drop: the trace
//! says only what the frames show.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::recorder::event::{
    CallId, Event, EventKind, FrameDetail, HostName, Outcome, RunId, ServerTimeout, ServerTimer,
    ShownHeader,
};
use crate::wire::{percent_decode, BlockKind};

/// tonic's words for its `TimeoutExpired` (`status.rs`: `Status::from_error`
/// makes CANCELLED with them).
const TIMEOUT_WORDS: &str = "Timeout expired";

/// A server's trailers-only CANCELLED "Timeout expired".
struct Answer {
    at: Duration,
    server: HostName,
    client: HostName,
    key: (u32, u32),
}

/// The request HEADERS of an answered stream.
struct Request {
    path: String,
    call: Option<CallId>,
}

/// A run to mark: its `HandlerDropped`'s index, and the `grpc-timeout`
/// tonic's server read for it.
type Tie = (usize, Option<Duration>);

/// What the run's arrival said.
struct Arrival {
    from: HostName,
    call: Option<CallId>,
    /// The `grpc-timeout` as tonic's server reads it.
    timeout: Option<Duration>,
}

/// `events` with every `HandlerDropped` that tonic's server timer caused
/// marked so (see the module docs).
pub(super) fn complete(mut events: Vec<Event>) -> Vec<Event> {
    let answers: Vec<Answer> = events.iter().filter_map(answer).collect();
    if answers.is_empty() {
        return events;
    }
    let keys: HashSet<(u32, u32)> = answers.iter().map(|a| a.key).collect();
    let instants: HashSet<(HostName, Duration)> =
        answers.iter().map(|a| (a.server, a.at)).collect();
    let mut requests: HashMap<(u32, u32), (HostName, HostName, Request)> = HashMap::new();
    let mut dropped: Vec<usize> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            EventKind::Frame {
                conn,
                to,
                stream,
                detail: FrameDetail::Headers(block),
                ..
            } if block.kind() == BlockKind::Request && keys.contains(&(*conn, *stream)) => {
                let call = block
                    .field(crate::recorder::CALL_ID_HEADER)
                    .and_then(|v| v.parse().ok())
                    .map(CallId);
                let path = block.request_path().unwrap_or_default().to_owned();
                requests.insert((*conn, *stream), (e.host, *to, Request { path, call }));
            }
            EventKind::HandlerDropped(_) if instants.contains(&(e.host, e.at())) => {
                dropped.push(i);
            }
            _ => {}
        }
    }
    if dropped.is_empty() {
        return events;
    }
    let runs = arrivals(&events, &dropped);
    // Each instant's dropped runs and answers, matched.
    let mut tied: Vec<Tie> = Vec::new();
    let mut used: HashSet<(u32, u32)> = HashSet::new();
    for &(server, at) in &instants {
        let here: Vec<(usize, &Arrival, &str)> = dropped
            .iter()
            .filter(|&&i| events[i].host == server && events[i].at() == at)
            .filter_map(|&i| {
                let EventKind::HandlerDropped(d) = &events[i].kind else {
                    return None;
                };
                Some((i, runs.get(&d.run)?, d.path.as_str()))
            })
            .collect();
        // The answered streams' requests: (stream, caller, request).
        let answered: Vec<((u32, u32), HostName, &Request)> = answers
            .iter()
            .filter(|a| a.server == server && a.at == at)
            .filter_map(|a| {
                let (client, to, request) = requests.get(&a.key)?;
                (*client == a.client && *to == server).then_some((a.key, *client, request))
            })
            .collect();
        let of = |from: HostName, call: Option<CallId>, path: &str| -> Vec<(u32, u32)> {
            answered
                .iter()
                .filter(|(_, client, r)| *client == from && r.call == call && r.path == path)
                .map(|(key, ..)| *key)
                .collect()
        };
        // A run with a call id has exactly its own stream.
        for &(i, run, path) in &here {
            if run.call.is_some() {
                if let [key] = of(run.from, run.call, path)[..] {
                    if used.insert(key) {
                        tied.push((i, run.timeout));
                    }
                }
            }
        }
        // Runs without one: each answer dropped one run of its caller and
        // method, so as many answers as runs tie them all; fewer, none.
        let mut groups: Vec<(HostName, &str, Vec<Tie>)> = Vec::new();
        for &(i, run, path) in here.iter().filter(|(_, run, _)| run.call.is_none()) {
            match groups
                .iter_mut()
                .find(|(from, p, _)| *from == run.from && *p == path)
            {
                Some((.., members)) => members.push((i, run.timeout)),
                None => groups.push((run.from, path, vec![(i, run.timeout)])),
            }
        }
        for (from, path, members) in groups {
            if of(from, None, path).len() == members.len() {
                tied.extend(members);
            }
        }
    }
    for (i, grpc_timeout) in tied {
        if let EventKind::HandlerDropped(d) = &mut events[i].kind {
            let timer = match grpc_timeout {
                // tonic's sleep is the shorter of the two; one that lasted
                // the grpc-timeout ran for it.
                Some(timeout) if d.ran >= timeout => ServerTimer::GrpcTimeout { timeout },
                grpc_timeout => ServerTimer::ServerTimeout { grpc_timeout },
            };
            d.timed_out = Some(ServerTimeout {
                timer,
                outcome: Outcome {
                    code: "CANCELLED",
                    message: TIMEOUT_WORDS.to_owned(),
                    spec_code: "DEADLINE_EXCEEDED",
                    rule: Some(crate::spec::rules::SERVER_DEADLINE),
                },
            });
        }
    }
    events
}

/// The answer `e` is, if it is one: HEADERS a server wrote, trailers-only,
/// `grpc-status=1`, `grpc-message` tonic's words for `TimeoutExpired`.
fn answer(e: &Event) -> Option<Answer> {
    let EventKind::Frame {
        conn,
        to,
        stream,
        detail: FrameDetail::Headers(block),
        ..
    } = &e.kind
    else {
        return None;
    };
    let timeout = block.kind() == BlockKind::TrailersOnly
        && block.get(ShownHeader::GrpcStatus) == Some("1")
        && block
            .get(ShownHeader::GrpcMessage)
            .is_some_and(|m| percent_decode(m.as_bytes()) == TIMEOUT_WORDS);
    timeout.then(|| Answer {
        at: e.at(),
        server: e.host,
        client: *to,
        key: (*conn, *stream),
    })
}

/// The arrivals of the runs `dropped` (indices of `HandlerDropped`
/// events), with the `grpc-timeout` tonic's server reads: the harness's
/// reading, or tonic's own of one the spec does not allow
/// (`GrpcTimeoutInvalid`).
fn arrivals(events: &[Event], dropped: &[usize]) -> HashMap<RunId, Arrival> {
    let wanted: HashSet<RunId> = dropped
        .iter()
        .filter_map(|&i| match &events[i].kind {
            EventKind::HandlerDropped(d) => Some(d.run),
            _ => None,
        })
        .collect();
    let mut out: HashMap<RunId, Arrival> = HashMap::new();
    for e in events {
        match &e.kind {
            EventKind::HandlerStarted(s) if wanted.contains(&s.run) => {
                out.insert(
                    s.run,
                    Arrival {
                        from: s.from,
                        call: s.call,
                        timeout: s.timeout,
                    },
                );
            }
            EventKind::GrpcTimeoutInvalid(invalid) => {
                if let Some(arrival) = out.get_mut(&invalid.run) {
                    arrival.timeout = invalid.tonic_reads;
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::recorder::event::{
        CallId, Event, EventKind, Fate, FrameDetail, FrameFlags, GrpcTimeoutInvalid,
        HandlerDropped, HandlerStarted, HeaderFields, RunId, ServerTimer,
    };
    use crate::trace::query::{RunEnd, Trace};
    use crate::wire::{BlockKind, FrameType};

    const S: &str = "store";
    const C: &str = "player";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A trace from typed events only, as the recorder would hold them.
    #[derive(Default)]
    struct Script(Vec<Event>);

    impl Script {
        fn push(mut self, at: u64, host: &str, kind: EventKind) -> Self {
            self.0.push(Event::new(ms(at), host, kind));
            self
        }

        fn headers(self, at: u64, from: &str, stream: u32, block: HeaderFields) -> Self {
            let to = if from == S { C } else { S };
            let kind = EventKind::Frame {
                conn: 1,
                to: to.into(),
                stream,
                frame: FrameType::Headers,
                flags: FrameFlags::END_HEADERS,
                detail: FrameDetail::Headers(block),
                fate: Fate::Passed.into(),
                noise: false,
            };
            self.push(at, from, kind)
        }

        /// A request on `stream` at 1 ms, carrying `call`'s id if any, and
        /// its run's arrival at 2 ms.
        fn request(self, stream: u32, run: u32, call: Option<u32>, timeout: Option<u64>) -> Self {
            let mut fields = vec![(":path", "/p.S/M".to_owned())];
            if let Some(c) = call {
                fields.push((crate::recorder::CALL_ID_HEADER, c.to_string()));
            }
            let block = HeaderFields::new(BlockKind::Request, fields);
            let started = HandlerStarted {
                run: RunId(run),
                path: "/p.S/M".into(),
                from: C.into(),
                call: call.map(CallId),
                timeout: timeout.map(ms),
                nth: run,
            };
            self.headers(1, C, stream, block).push(
                2,
                S,
                EventKind::HandlerStarted(Box::new(started)),
            )
        }

        fn dropped(self, at: u64, run: u32) -> Self {
            let dropped = HandlerDropped {
                run: RunId(run),
                path: "/p.S/M".into(),
                ran: ms(at - 2),
                timed_out: None,
            };
            self.push(at, S, EventKind::HandlerDropped(Box::new(dropped)))
        }

        /// The store's trailers-only answer on `stream`.
        fn answer(self, at: u64, stream: u32, status: &str, message: &str) -> Self {
            let block = HeaderFields::new(
                BlockKind::TrailersOnly,
                [("grpc-status", status), ("grpc-message", message)],
            );
            self.headers(at, S, stream, block)
        }

        fn trace(mut self) -> Trace {
            self.0.sort_by_key(Event::at);
            Trace::new(0, vec![C.into(), S.into()], self.0, ms(1_000))
        }
    }

    fn ends(trace: &Trace) -> Vec<(u32, Option<ServerTimer>)> {
        trace
            .handler_runs()
            .iter()
            .map(|r| match &r.end {
                RunEnd::TimedOut(t) => (r.id.0, Some(t.timer)),
                RunEnd::Dropped => (r.id.0, None),
                end => panic!("{end:?}"),
            })
            .collect()
    }

    const EXPIRED: &str = "Timeout%20expired";

    #[test]
    fn a_drop_at_the_instant_of_its_streams_timeout_answer_is_tonics_timer() {
        let trace = Script::default()
            .request(1, 1, Some(1), None)
            .dropped(102, 1)
            .answer(102, 1, "1", EXPIRED)
            .trace();
        let server = Some(ServerTimer::ServerTimeout { grpc_timeout: None });
        assert_eq!(ends(&trace), [(1, server)]);
    }

    /// Not the answer tonic's timer gives, or not at the drop's instant:
    /// a plain drop.
    #[test]
    fn another_answer_or_another_instant_is_a_plain_drop() {
        for (at, status, message) in [
            (102, "1", "Timeout"),
            (102, "4", EXPIRED),
            (103, "1", EXPIRED),
        ] {
            let trace = Script::default()
                .request(1, 1, Some(1), None)
                .dropped(102, 1)
                .answer(at, 1, status, message)
                .trace();
            assert_eq!(ends(&trace), [(1, None)], "{at} {status} {message}");
        }
    }

    /// A run with a call id is tied to its own stream only: r2's stream
    /// answered, r1's not (its caller reset it), so h1 stays a drop.
    #[test]
    fn a_call_id_ties_a_run_to_its_own_stream() {
        let trace = Script::default()
            .request(1, 1, Some(1), None)
            .request(3, 2, Some(2), None)
            .dropped(102, 1)
            .dropped(102, 2)
            .answer(102, 3, "1", EXPIRED)
            .trace();
        let server = Some(ServerTimer::ServerTimeout { grpc_timeout: None });
        assert_eq!(ends(&trace), [(1, None), (2, server)]);
    }

    /// Without call ids, two runs dropped at one instant and one answer:
    /// which run it was is not known, so neither is tied; with two answers
    /// both are.
    #[test]
    fn without_call_ids_the_answers_must_number_the_runs() {
        let two = |answers: &[u32]| {
            let mut script = Script::default()
                .request(1, 1, None, Some(100))
                .request(3, 2, None, Some(100))
                .dropped(102, 1)
                .dropped(102, 2);
            for &stream in answers {
                script = script.answer(102, stream, "1", EXPIRED);
            }
            ends(&script.trace())
        };
        assert_eq!(two(&[3]), [(1, None), (2, None)]);
        let grpc = Some(ServerTimer::GrpcTimeout { timeout: ms(100) });
        assert_eq!(two(&[1, 3]), [(1, grpc), (2, grpc)]);
    }

    /// The timer that ran: the grpc-timeout when the run lasted it, else
    /// `Server::timeout`; tonic's own reading of a grpc-timeout the spec
    /// does not allow counts.
    #[test]
    fn the_timer_is_the_one_the_run_lasted() {
        let with = |timeout: Option<u64>, tonic_reads: Option<Option<u64>>| {
            let mut script = Script::default().request(1, 1, Some(1), timeout);
            if let Some(reads) = tonic_reads {
                let invalid = GrpcTimeoutInvalid {
                    run: RunId(1),
                    path: "/p.S/M".into(),
                    raw: "+100m".into(),
                    tonic_reads: reads.map(ms),
                };
                script = script.push(2, S, EventKind::GrpcTimeoutInvalid(Box::new(invalid)));
            }
            let trace = script.dropped(102, 1).answer(102, 1, "1", EXPIRED).trace();
            ends(&trace)[0].1
        };
        assert_eq!(
            with(Some(100), None),
            Some(ServerTimer::GrpcTimeout { timeout: ms(100) })
        );
        assert_eq!(
            with(Some(500), None),
            Some(ServerTimer::ServerTimeout {
                grpc_timeout: Some(ms(500))
            })
        );
        assert_eq!(
            with(None, Some(Some(100))),
            Some(ServerTimer::GrpcTimeout { timeout: ms(100) })
        );
        assert_eq!(
            with(None, Some(None)),
            Some(ServerTimer::ServerTimeout { grpc_timeout: None })
        );
    }
}
