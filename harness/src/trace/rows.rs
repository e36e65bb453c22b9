//! The rows of the timeline: which events an options set shows, and what
//! each says (time, place, text, kind). The text and HTML renders lay out
//! the same rows, so a word changed here changes both. Frame and keepalive
//! fields get their words from [`super::words`]; nothing else in the crate
//! makes a trace's words for them.

use crate::recorder::event;
use std::fmt::Write as _;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::{words, RenderOptions};
use crate::recorder::event::{
    CallId, ConnectFailure, Event, EventKind, Fate, FrameDetail, FrameFate, FrameFlags, LayerSide,
    Outcome, RunId,
};
use crate::units::fmt_duration;
use crate::wire::FrameType;

/// The timeline's column headings.
pub(crate) const COLUMNS: [&str; 3] = ["t(ms)", "where", "event"];

/// One shown event.
pub(crate) struct Row {
    /// *Simulated* ms since the start of the run, three decimals: `500.400`.
    pub(crate) ms: String,
    /// The host, `a→b` for a connection or call, `a↔b` for a link.
    pub(crate) place: String,
    /// What happened, in the trace's words.
    pub(crate) text: String,
    /// What sort of event it is.
    pub(crate) kind: RowKind,
    /// Whether the default options hide it (connection noise, debug logs).
    pub(crate) quiet: bool,
    /// The index in the trace's events of the event it shows (the first
    /// one of a folded run), for the renders that link to rows. For a row
    /// that shows no event ([`Row::shows_event`] false: a deadline that
    /// passed), the index of the event it precedes, or the number of
    /// events when it comes last: rows stay in order of this index.
    pub(crate) event: usize,
    /// The event whose ids the row carries (for links and filters): its
    /// own, or for a deadline that passed, its call's start.
    pub(crate) about: usize,
}

impl Row {
    /// False for a row that shows no event of its own (a deadline that
    /// passed).
    pub(crate) fn shows_event(&self) -> bool {
        self.about == self.event
    }
}

/// The sort of a row, for styling: faults and what they did to frames
/// are told apart from ordinary traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowKind {
    Call,
    /// A call that ended with a code other than the spec's: a finding.
    CallDiffers,
    Handler,
    Retry,
    Frame,
    DroppedFrame,
    HeldFrame,
    /// Untouched by a rule, but queued behind a kept-back frame.
    BehindFrame,
    InjectedFrame,
    /// A connection attempt, its outcome, a reset.
    Connection,
    Fault,
    ProtocolError,
    Policy,
    Log,
}

impl RowKind {
    /// The CSS class(es) of the kind; faulted frames are also `frame`.
    pub(crate) fn class(self) -> &'static str {
        match self {
            Self::Call => "call",
            Self::CallDiffers => "call differs",
            Self::Handler => "handler",
            Self::Retry => "retry",
            Self::Frame => "frame",
            Self::DroppedFrame => "frame dropped",
            Self::HeldFrame => "frame held",
            Self::BehindFrame => "frame behind",
            Self::InjectedFrame => "frame injected",
            Self::Connection => "connection",
            Self::Fault => "fault",
            Self::ProtocolError => "protocol-error",
            Self::Policy => "policy",
            Self::Log => "log",
        }
    }
}

/// What a row needs to know beyond its own event: which handler runs tonic
/// rejected before the handler (their `HandlerStarted` is an arrival), and
/// each call's deadline (for its overrun).
#[derive(Default)]
struct Context {
    rejected: HashSet<RunId>,
    deadlines: HashMap<CallId, Duration>,
    /// The calls seen only on the wire, with their connection and stream.
    wire: HashMap<CallId, (u32, u32)>,
    /// How HEADERS rows print their fields (the options' choice; the
    /// default where no options apply: the summary, the exports).
    headers: words::HeaderWords,
}

impl Context {
    fn of(events: &[Event]) -> Self {
        let mut cx = Self::default();
        for e in events {
            match &e.kind {
                EventKind::HandlerRejected(handler_rejected) => {
                    let event::HandlerRejected { run, .. } = &**handler_rejected;
                    cx.rejected.insert(*run);
                }
                EventKind::CallSeenOnWire { call, conn, stream } => {
                    cx.wire.insert(*call, (*conn, *stream));
                }
                EventKind::CallStarted(started) => {
                    if let Some(t) = started.timeout {
                        cx.deadlines.insert(started.call, e.at() + t);
                    }
                }
                _ => {}
            }
        }
        cx
    }

    /// How long past its deadline `call` ended at `at`, when more than a
    /// tick ([`super::TICK_TOLERANCE`]: tonic's timer fires at the first
    /// tick at or after its instant).
    fn overrun(&self, call: CallId, at: Duration) -> Option<Duration> {
        let deadline = *self.deadlines.get(&call)?;
        let over = at.checked_sub(deadline)?;
        (over > super::TICK_TOLERANCE).then_some(over)
    }
}

/// The rows `options` shows, in time order; `ended` is when the run ended
/// (*simulated* time), for the calls still open then.
pub(crate) fn rows(events: &[Event], options: &RenderOptions, ended: Duration) -> Vec<Row> {
    let mut cx = Context::of(events);
    cx.headers = words::HeaderWords::of(options);
    let chosen: Vec<usize> = (0..events.len())
        .filter(|&i| shown(&events[i], options))
        .collect();
    let mut passed = deadlines_passed(events, &cx, ended).into_iter().peekable();
    let mut out = Vec::with_capacity(chosen.len());
    for row in rows_in(&cx, events, &chosen, options.fold_data) {
        let at = events[row.event].at();
        while let Some((_, mut deadline)) = passed.next_if(|(when, _)| *when < at) {
            deadline.event = row.event;
            out.push(deadline);
        }
        out.push(row);
    }
    out.extend(passed.map(|(_, mut row)| {
        row.event = events.len();
        row
    }));
    out
}

/// The rows of the events a caller has already chosen (indices into
/// `events`, in order), each with the index of the event it starts at
/// ([`Row::event`]); with `fold_data`, runs of plain DATA among them fold
/// into one row as in [`rows`]. Rows for deadlines that passed are not
/// among them: they show no event.
pub(crate) fn rows_of(events: &[Event], chosen: &[usize], fold_data: bool) -> Vec<Row> {
    rows_in(&Context::of(events), events, chosen, fold_data)
}

fn rows_in(cx: &Context, events: &[Event], chosen: &[usize], fold_data: bool) -> Vec<Row> {
    let default = RenderOptions::default();
    let visible: Vec<&Event> = chosen.iter().map(|&i| &events[i]).collect();
    let mut out = Vec::with_capacity(visible.len());
    let mut at = 0;
    while at < visible.len() {
        let e = visible[at];
        let (place, mut text) = line(e, cx);
        let mut taken = 1;
        if fold_data {
            if let Some(run) = super::fold::data_run(&visible[at..]) {
                text = super::fold::text(e, &run);
                taken = run.frames;
            }
        }
        let row = Row {
            ms: fmt_ms(e.at()),
            place: one_line(place),
            text: one_line(text),
            kind: kind(e),
            quiet: !shown(e, &default),
            event: chosen[at],
            about: chosen[at],
        };
        out.push(row);
        at += taken;
    }
    out
}

/// A row at each deadline that passed with its call still open (it ended
/// more than a tick later, or never): `r1 call /tt.v1.Scoreboard/Watch
/// still open at its deadline (grpc-timeout=500ms)`. tonic's timer bounds
/// only the wait for response headers (`transport/service/grpc_timeout.rs`)
/// and starts once the channel is ready, so a streaming response, or a call
/// that waited for a connection, runs on past it.
fn deadlines_passed(events: &[Event], cx: &Context, ended: Duration) -> Vec<(Duration, Row)> {
    let mut ends: HashMap<CallId, Duration> = HashMap::new();
    let mut started: Vec<(CallId, &str, &str, Duration, usize)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        match &e.kind {
            EventKind::CallStarted(s) => {
                if let Some(t) = s.timeout {
                    started.push((s.call, &e.host, &s.path, t, i));
                }
            }
            EventKind::CallEnded { call, .. } | EventKind::CallDropped { call, .. } => {
                ends.insert(*call, e.at());
            }
            EventKind::CallStoppedReading(stopped) => {
                ends.insert(stopped.call, e.at());
            }
            EventKind::CallUndecodable(undecodable) => {
                ends.insert(undecodable.call, e.at());
            }
            _ => {}
        }
    }
    let mut out: Vec<(Duration, Row)> = started
        .into_iter()
        .filter_map(|(call, host, path, timeout, start)| {
            let deadline = *cx.deadlines.get(&call)?;
            let end = ends.get(&call).copied().unwrap_or(ended);
            let open = end.checked_sub(deadline)? > super::TICK_TOLERANCE;
            (open && deadline <= ended).then(|| {
                let text = format!(
                    "{call} call {path} still open at its deadline (grpc-timeout={})",
                    fmt_duration(timeout)
                );
                let row = Row {
                    ms: fmt_ms(deadline),
                    place: one_line(host.to_owned()),
                    text: one_line(text),
                    kind: RowKind::Call,
                    quiet: false,
                    // Set where the row is placed: the event it precedes.
                    event: 0,
                    about: start,
                };
                (deadline, row)
            })
        })
        .collect();
    out.sort_by_key(|(at, _)| *at);
    out
}

/// One event's `where` and text as its row says them, whether or not an
/// options set shows it (for the summary and the waterfall's marks, which
/// name events by their rows). Made once per trace: some words depend on
/// other events (a run rejected before its handler, a call's deadline).
pub(crate) struct Words(Context);

impl Words {
    pub(crate) fn of(events: &[Event]) -> Self {
        Self(Context::of(events))
    }

    pub(crate) fn describe(&self, e: &Event) -> (String, String) {
        let (place, text) = line(e, &self.0);
        (one_line(place), one_line(text))
    }
}

pub(crate) use crate::units::fmt_ms;

/// `s` with control characters (a newline in a log message) and bidi
/// overrides escaped: one row stays one line, and reads as it is stored.
fn one_line(s: String) -> String {
    // Bidi marks and overrides, and the Unicode line separators.
    let unsafe_char = |c: char| {
        c.is_control()
            || matches!(
                c,
                '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}'
                    | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            )
    };
    if !s.chars().any(unsafe_char) {
        return s;
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// The kind of one event's row.
pub(crate) fn kind(e: &Event) -> RowKind {
    match &e.kind {
        EventKind::CallEnded { outcome, .. } if outcome.code != outcome.spec_code => {
            RowKind::CallDiffers
        }
        EventKind::CallFailedConnecting(f) if f.outcome.code != f.outcome.spec_code => {
            RowKind::CallDiffers
        }
        // tonic's OUT_OF_RANGE where the spec says RESOURCE_EXHAUSTED.
        EventKind::CallStoppedReading { .. } => RowKind::CallDiffers,
        EventKind::CallStarted(_)
        | EventKind::CallSeenOnWire { .. }
        | EventKind::CallEnded { .. }
        | EventKind::CallFailedConnecting(_)
        | EventKind::CallUndecodable(_)
        | EventKind::CallDropped { .. } => RowKind::Call,
        EventKind::HandlerStarted(_)
        | EventKind::HandlerDequeued { .. }
        | EventKind::HandlerFinished(_)
        | EventKind::HandlerDropped { .. }
        | EventKind::HandlerPanicked(_) => RowKind::Handler,
        EventKind::GrpcTimeoutInvalid(_) => RowKind::Handler,
        EventKind::HandlerRejected(r) if r.outcome.code != r.outcome.spec_code => {
            RowKind::CallDiffers
        }
        EventKind::HandlerRejected(_) => RowKind::Handler,
        EventKind::RetryAttempt(_)
        | EventKind::RetryArrived { .. }
        | EventKind::RetryDecision(_)
        | EventKind::Hedge(_) => RowKind::Retry,
        EventKind::Frame { fate, .. } => match **fate {
            Fate::Passed | Fate::ReadAtReceiver => RowKind::Frame,
            Fate::Dropped | Fate::Lost | Fate::LostBehind => RowKind::DroppedFrame,
            Fate::Held | Fate::Delayed { .. } | Fate::Partitioned | Fate::Paused => {
                RowKind::HeldFrame
            }
            Fate::Behind { .. } | Fate::BehindHeld => RowKind::BehindFrame,
            Fate::Injected => RowKind::InjectedFrame,
            Fate::Replaced { .. } | Fate::Swallowed => RowKind::DroppedFrame,
        },
        EventKind::FrameReplaced(_) => RowKind::InjectedFrame,
        EventKind::FrameReleased { .. } | EventKind::FrameNeverLeft(_) => RowKind::HeldFrame,
        EventKind::ConnClosed { .. } | EventKind::RawPeerClosed { .. } => RowKind::Frame,
        EventKind::ConnResetSent { .. } => RowKind::Connection,
        EventKind::FramesUndelivered { .. } => RowKind::DroppedFrame,
        EventKind::ConnectStarted { .. }
        | EventKind::ConnectWaiting { .. }
        | EventKind::Connected { .. }
        | EventKind::ConnectFailed { .. }
        | EventKind::ConnectAbandoned { .. }
        | EventKind::ConnReset { .. } => RowKind::Connection,
        EventKind::HostCrashed
        | EventKind::HostRestarted
        | EventKind::ShutdownStarted { .. }
        | EventKind::ServeReturned { .. }
        | EventKind::ServeFnWithoutLayer
        | EventKind::ShutdownGraceOver { .. }
        | EventKind::ShutdownStillDraining { .. }
        | EventKind::Partitioned { .. }
        | EventKind::BlackHoled { .. }
        | EventKind::HostPaused
        | EventKind::HostResumed
        | EventKind::Repaired { .. }
        | EventKind::LinkLatency { .. }
        | EventKind::FaultFired(_)
        | EventKind::HoldReleased { .. }
        | EventKind::FaultNeverFired { .. } => RowKind::Fault,
        EventKind::ProtocolError { .. } => RowKind::ProtocolError,
        EventKind::KeepalivePing(_)
        | EventKind::KeepaliveStrikesReset { .. }
        | EventKind::KeepaliveDataReset { .. }
        | EventKind::PolicyClosed(_)
        | EventKind::PolicyReset(_)
        | EventKind::PolicyActed(_)
        | EventKind::KeepaliveClosed { .. } => RowKind::Policy,
        EventKind::Log(_) => RowKind::Log,
        EventKind::CallRouted { .. } => RowKind::Call,
        EventKind::ReplicaLeft { .. } | EventKind::ReplicaJoined { .. } => RowKind::Fault,
        // A client-side policy at work, styled as the server-side ones.
        EventKind::Balancer(_) => RowKind::Policy,
    }
}

pub(crate) fn shown(e: &Event, options: &RenderOptions) -> bool {
    match &e.kind {
        EventKind::Frame { noise, fate, .. } => {
            // A raw peer's frame is untouched by faults: noise as any other.
            let touched = !matches!(**fate, Fate::Passed | Fate::ReadAtReceiver);
            options.frames && (options.noise || !noise || touched)
        }
        EventKind::FrameReleased { .. }
        | EventKind::FrameNeverLeft(_)
        | EventKind::FrameReplaced(_)
        | EventKind::ProtocolError { .. } => options.frames,
        EventKind::ConnClosed { .. }
        | EventKind::RawPeerClosed { .. }
        | EventKind::ConnResetSent { .. } => options.frames && options.noise,
        // A dial that waited for a partition or a pause says why a call
        // waited and when its channel came back: shown by default. Other
        // dials are routine (`connections` shows them).
        EventKind::ConnectStarted { .. } => options.connections,
        EventKind::Connected { waited, .. }
        | EventKind::ConnectFailed { waited, .. }
        | EventKind::ConnectAbandoned { waited, .. } => options.connections || *waited,
        EventKind::Log(log) => {
            let event::Log { level, .. } = &**log;
            options.debug_logs || !matches!(*level, "DEBUG" | "TRACE")
        }
        // Said on the call's start row.
        EventKind::CallSeenOnWire { .. } => false,
        _ => true,
    }
}

/// The `where` column and the event text of one event.
fn line(e: &Event, cx: &Context) -> (String, String) {
    let host = e.host.to_string();
    match &e.kind {
        EventKind::HostCrashed => (host, "host crashed".into()),
        EventKind::HostRestarted => (host, "host restarted".into()),
        EventKind::ShutdownStarted { grace } => (
            host,
            match grace {
                Some(g) => format!("graceful shutdown started (grace {})", fmt_duration(*g)),
                None => "graceful shutdown started (no grace: drains as long as it takes)".into(),
            },
        ),
        EventKind::ServeFnWithoutLayer => (
            host.clone(),
            format!(
                "serve fn without the handler layer: handler runs and handler faults are not \
                 seen on {host}; frames are"
            ),
        ),
        EventKind::ServeReturned { drained } => (
            host,
            format!(
                "serve returned: every connection closed, {} after the shutdown started",
                fmt_duration(*drained)
            ),
        ),
        EventKind::ShutdownGraceOver { grace, open_conns } => (
            host,
            format!(
                "shutdown grace of {} over with {} still open: crashing the host",
                fmt_duration(*grace),
                count(*open_conns, "connection")
            ),
        ),
        EventKind::ShutdownStillDraining(draining) => {
            let event::ShutdownStillDraining {
                since,
                open_conns,
                waiting_on,
            } = &**draining;
            let mut text = format!(
                "shutdown still draining at the end of the run (started at {}): {} open",
                fmt_duration(*since),
                count(*open_conns, "connection")
            );
            if !waiting_on.is_empty() {
                let runs: Vec<String> = waiting_on
                    .iter()
                    .map(|r| format!("{} {}", r.run, r.path))
                    .collect();
                let _ = write!(text, ", waiting on {}", runs.join(", "));
            }
            (host, text)
        }
        EventKind::Partitioned { peer, reset_after } => {
            let mut text = "partitioned: bytes wait at their senders until repair".to_owned();
            if let Some(d) = reset_after {
                let _ = write!(
                    text,
                    "; a connection resets after {} of waiting",
                    fmt_duration(*d)
                );
            }
            (format!("{host}↔{peer}"), text)
        }
        EventKind::BlackHoled { peer } => (
            format!("{host}↔{peer}"),
            "black hole: bytes sent across are lost".into(),
        ),
        EventKind::HostPaused => (
            host,
            "host paused: bytes to and from it wait until resume".into(),
        ),
        EventKind::HostResumed => (host, "host resumed".into()),
        EventKind::ConnectStarted { to, attempt } => (
            format!("{host}→{to}"),
            if *attempt == 1 {
                "connect attempt 1".to_owned()
            } else {
                format!("connect attempt {attempt} (redial)")
            },
        ),
        EventKind::ConnectWaiting {
            to,
            attempt,
            paused,
        } => {
            (
                format!("{host}→{to}"),
                if *paused {
                    format!("connect attempt {attempt} waits: a host is paused")
                } else {
                    format!("connect attempt {attempt} waits: partitioned, the SYN is retried until repair")
                },
            )
        }
        EventKind::Connected {
            conn,
            to,
            attempt,
            took,
            waited,
        } => (
            format!("{host}→{to}"),
            format!(
                "c{conn} connected after {}{} (attempt {attempt})",
                fmt_duration(*took),
                if *waited {
                    ", once the link opened"
                } else {
                    ""
                }
            ),
        ),
        EventKind::ConnectFailed {
            to,
            attempt,
            reason,
            took,
            ..
        } => {
            let why = match reason {
                ConnectFailure::Refused => "refused",
                ConnectFailure::UnknownHost => "unknown host",
                ConnectFailure::TimedOut => "timed out",
                ConnectFailure::Other => "I/O error",
            };
            (
                format!("{host}→{to}"),
                format!(
                    "connect attempt {attempt} failed: {why} after {}",
                    fmt_duration(*took)
                ),
            )
        }
        EventKind::ConnectAbandoned {
            to, attempt, after, ..
        } => (
            format!("{host}→{to}"),
            format!(
                "connect attempt {attempt} given up by the caller after {} (its connect timeout)",
                fmt_duration(*after)
            ),
        ),
        EventKind::ConnReset {
            conn,
            to,
            waited,
            discarded,
        } => {
            let text = format!(
                "c{conn} reset at both ends: bytes waited {} for the partition (reset_after){}",
                fmt_duration(*waited),
                discarded_words(*discarded)
            );
            (format!("{host}→{to}"), text)
        }
        EventKind::Repaired { peer } => (format!("{host}↔{peer}"), "repaired".into()),
        EventKind::LinkLatency { peer, latency } => (
            format!("{host}↔{peer}"),
            format!("link latency set to {}", fmt_duration(*latency)),
        ),
        EventKind::FaultFired(fault_fired) => {
            let event::FaultFired {
                run,
                path,
                action,
                side,
            } = &**fault_fired;
            let side = match side {
                None => "",
                Some(LayerSide::OutsideLayers) => " (outside the server's layers)",
                Some(LayerSide::InsideLayers) => " (inside the server's layers)",
            };
            (host, format!("{run} fault {action} on {path}{side}"))
        }
        EventKind::CallStarted(call_started) => {
            let event::CallStarted {
                call,
                target,
                path,
                timeout,
                parent,
            } = &**call_started;
            let mut text = format!("{call} call {path}");
            if let Some(t) = timeout {
                let _ = write!(text, " grpc-timeout={}", fmt_duration(*t));
            }
            if let Some(p) = parent {
                let _ = write!(text, " (from {p})");
            }
            if let Some((conn, stream)) = cx.wire.get(call) {
                let _ = write!(
                    text,
                    " (seen on the wire at c{conn} s{stream}, not through a recorded channel: when its caller made it{} and what it was told are not seen)",
                    if timeout.is_some() {
                        ""
                    } else {
                        ", any deadline it set without sending grpc-timeout"
                    }
                );
            }
            (format!("{host}→{target}"), text)
        }
        EventKind::CallEnded {
            call,
            path,
            outcome,
        } => {
            let mut text = format!("{call} call {path} ended {}", status(outcome));
            if let Some(over) = cx.overrun(*call, e.at()) {
                let _ = write!(text, ", {} past its deadline", fmt_duration(over));
            }
            if cx.wire.contains_key(call) {
                text.push_str(if outcome.rule == Some(crate::spec::rules::DEADLINE) {
                    " (seen on the wire: its caller reset the stream at its grpc-timeout, tonic's deadline timer)"
                } else {
                    " (as the wire shows it)"
                });
            }
            (host, text)
        }
        EventKind::CallDropped { call, path } if cx.wire.contains_key(call) => {
            let seen = match cx.deadlines.get(call).and_then(|d| d.checked_sub(e.at())) {
                Some(early) => format!(
                    "it reset the stream {} before the grpc-timeout it sent ran out, and tonic's \
                     timer for that timeout starts as the request is sent, so it had not fired",
                    fmt_duration(early)
                ),
                None => "it reset the stream, and sent no grpc-timeout".to_owned(),
            };
            (
                host,
                format!("{call} call {path} dropped by the caller (seen on the wire: {seen})"),
            )
        }
        EventKind::CallDropped { call, path } => {
            (host, format!("{call} call {path} dropped by the caller"))
        }
        // Its words are on the call's start row.
        EventKind::CallSeenOnWire { .. } => (host, String::new()),
        EventKind::CallFailedConnecting(failed) => {
            let event::CallFailedConnecting {
                call,
                target,
                attempt,
                outcome,
            } = &**failed;
            (
                format!("{host}→{target}"),
                format!(
                    "{call} call ended {} before its connection was up (a call through a plain tonic channel, seen where its channel's connect attempt {attempt} ended without a connection: tonic fails the call that waited for it; its method, start and deadline are not seen)",
                    status(outcome)
                ),
            )
        }
        EventKind::CallUndecodable(undecodable) => {
            let event::CallUndecodable {
                call,
                path,
                message_len,
            } = &**undecodable;
            (
                host,
                format!(
                    "{call} call {path} ended INTERNAL: {}",
                    words::undecodable(*message_len)
                ),
            )
        }
        EventKind::CallStoppedReading(stopped) => {
            let event::CallStoppedReading {
                call,
                path,
                message_len,
                received,
                flag,
            } = &**stopped;
            (
                host,
                format!(
                    "{call} call {path} {}",
                    words::stopped_reading(*message_len, *received, *flag)
                ),
            )
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
            let mut about = Vec::new();
            match call {
                Some(c) => about.push(format!("{c} from {from}")),
                None => about.push(format!("from {from}")),
            }
            if let Some(t) = timeout {
                about.push(format!("grpc-timeout={}", fmt_duration(*t)));
            }
            about.push(format!("#{nth}"));
            let what = if cx.rejected.contains(run) {
                "request arrived"
            } else {
                "started"
            };
            (
                host,
                format!("{run} handler {path} {what} ({})", about.join(", ")),
            )
        }
        EventKind::HandlerRejected(handler_rejected) => {
            let event::HandlerRejected {
                run,
                path,
                outcome,
                why,
                ran,
            } = &**handler_rejected;
            (
                host,
                format!(
                    "{run} handler {path} never ran: tonic answered {} after {}: {why}",
                    answered(outcome),
                    fmt_duration(*ran)
                ),
            )
        }
        EventKind::HandlerDequeued(dequeued) => {
            let event::HandlerDequeued { run, path, queued } = &**dequeued;
            (
                host,
                format!(
                    "{run} handler {path} got a slot after {}",
                    fmt_duration(*queued)
                ),
            )
        }
        EventKind::HandlerFinished(handler_finished) => {
            let event::HandlerFinished {
                run,
                path,
                code,
                message,
                ran,
            } = &**handler_finished;
            let msg = if message.is_empty() {
                String::new()
            } else {
                format!(" {}", words::quoted(message))
            };
            // What the server's own stack made of it (its encoder's limit):
            // the spec's code, as for a call.
            let code = crate::spec::code_from_name(code)
                .map(|c| crate::spec::classify_server(c, message).0)
                .map(crate::spec::code_name)
                .filter(|spec| spec != code)
                .map_or_else(
                    || format!("{code}{msg}"),
                    |spec| format!("{spec} (tonic said {code}{msg})"),
                );
            (
                host,
                format!(
                    "{run} handler {path} finished {code} after {}",
                    fmt_duration(*ran)
                ),
            )
        }
        EventKind::HandlerDropped(dropped) => {
            let event::HandlerDropped {
                run,
                path,
                ran,
                timed_out,
            } = &**dropped;
            let text = match timed_out {
                Some(t) => format!(
                    "{run} handler {path} dropped by tonic's server timeout after {} ({}): tonic answered {}",
                    fmt_duration(*ran),
                    server_timer(&t.timer),
                    answered(&t.outcome)
                ),
                None => format!("{run} handler {path} dropped after {}", fmt_duration(*ran)),
            };
            (host, text)
        }
        EventKind::HandlerPanicked(handler_panicked) => {
            let event::HandlerPanicked {
                run,
                path,
                message,
                site,
            } = &**handler_panicked;
            (
                host,
                format!(
                    "{run} handler {path} panicked{}: {}; {}",
                    words::panic_site(*site),
                    words::quoted(message),
                    words::panic_reset(*site)
                ),
            )
        }
        EventKind::Frame {
            conn,
            to,
            stream,
            frame,
            flags,
            detail,
            fate,
            ..
        } => {
            let mut text = frame_head(
                *conn,
                *stream,
                *frame,
                *flags,
                detail,
                fate.invalid(),
                &cx.headers,
            );
            push_fate(&mut text, fate, to);
            (format!("{host}→{to}"), text)
        }
        EventKind::FrameReplaced(frame_replaced) => {
            let event::FrameReplaced {
                conn,
                to,
                stream,
                frame,
                flags,
                detail,
                invalid,
            } = &**frame_replaced;
            let mut text = frame_head(
                *conn,
                *stream,
                *frame,
                *flags,
                detail,
                invalid.as_deref(),
                &cx.headers,
            );
            text.push_str(" [arrived instead]");
            (format!("{host}→{to}"), text)
        }
        EventKind::FrameReleased {
            conn,
            to,
            stream,
            frame,
            kept,
        } => (
            format!("{host}→{to}"),
            format!(
                "c{conn} s{stream} {frame} released after {}",
                fmt_duration(*kept)
            ),
        ),
        EventKind::HoldReleased { name, timed } => (
            host,
            if *timed {
                format!("hold {name:?} released by Fault::release")
            } else {
                format!("hold {name:?} released")
            },
        ),
        EventKind::FrameNeverLeft(frame_never_left) => {
            let event::FrameNeverLeft {
                conn,
                to,
                stream,
                frame,
                written,
                waiting_for,
            } = &**frame_never_left;
            (
                format!("{host}→{to}"),
                format!(
                    "c{conn} s{stream} {frame} never left: written at {}, {waiting_for}",
                    fmt_duration(*written)
                ),
            )
        }
        EventKind::ConnClosed { conn, to } => (format!("{host}→{to}"), format!("c{conn} closed")),
        EventKind::ConnResetSent {
            conn,
            to,
            read,
            unread,
        } => (
            format!("{host}→{to}"),
            words::reset_sent(*conn, &host, to, *read, *unread),
        ),
        EventKind::FramesUndelivered {
            conn,
            to,
            frames,
            more,
            cause,
        } => (
            format!("{host}→{to}"),
            words::undelivered(*conn, &host, to, frames, *more, *cause),
        ),
        EventKind::RawPeerClosed { conn, to, reset } => (
            format!("{host}→{to}"),
            if *reset {
                format!("c{conn} reset by the raw peer (RST, as {to} read it)")
            } else {
                format!("c{conn} closed by the raw peer (FIN, as {to} read it)")
            },
        ),
        EventKind::ProtocolError {
            conn,
            to,
            offset,
            reason,
        } => (
            format!("{host}→{to}"),
            format!("c{conn} protocol error at byte {offset}: {reason}"),
        ),
        EventKind::FaultNeverFired { fault } => (host, format!("fault never fired: {fault}")),
        EventKind::Log(log) => {
            let event::Log {
                level,
                target,
                message,
            } = &**log;
            (host, format!("log {level} {target}: {message}"))
        }
        EventKind::KeepalivePing(keepalive_ping) => {
            let event::KeepalivePing {
                conn,
                from,
                verdict,
                strikes,
                gap,
                allowed,
                open_calls,
                after_reset,
            } = &**keepalive_ping;
            (
                host,
                format!(
                    "c{conn} PING from {from}: {}",
                    words::ping_verdict(
                        *verdict,
                        *strikes,
                        *gap,
                        *allowed,
                        *open_calls,
                        *after_reset
                    )
                ),
            )
        }
        EventKind::KeepaliveStrikesReset {
            conn,
            to,
            cleared,
            frame,
        } => (
            format!("{host}→{to}"),
            format!("c{conn} {frame} resets ping strikes ({cleared} cleared)"),
        ),
        EventKind::RetryAttempt(retry_attempt) => {
            let event::RetryAttempt {
                group,
                target,
                path,
                attempt,
                delay,
                hedged,
            } = &**retry_attempt;
            let text = if *hedged {
                super::hedges::attempt_row(*group, path, *attempt, *delay)
            } else if *attempt == 1 {
                format!("g{group} retry layer: attempt 1 of {path}")
            } else {
                format!(
                    "g{group} retry layer: attempt {attempt} of {path} after {}",
                    fmt_duration(*delay)
                )
            };
            (format!("{host}→{target}"), text)
        }
        EventKind::GrpcTimeoutInvalid(grpc_timeout_invalid) => {
            let event::GrpcTimeoutInvalid {
                run,
                path,
                raw,
                tonic_reads,
            } = &**grpc_timeout_invalid;
            (
                host,
                format!(
                    "{run} handler {path}: {}",
                    words::invalid_timeout(raw, *tonic_reads)
                ),
            )
        }
        EventKind::RetryArrived {
            run,
            path,
            previous,
        } => (
            host,
            format!("{run} handler {path} is a retry (grpc-previous-rpc-attempts={previous})"),
        ),
        EventKind::Hedge(hedge) => (host, super::hedges::step_row(hedge)),
        EventKind::RetryDecision(retry_decision) => {
            let event::RetryDecision {
                group,
                attempt,
                outcome,
                retry_in,
                backoff_n,
                pushback_ms,
                stop,
                ..
            } = &**retry_decision;
            let decision = match (retry_in, stop) {
                (Some(d), _) => match backoff_n {
                    Some(n) => format!("retry in {} (backoff n={n})", fmt_duration(*d)),
                    None => format!(
                        "retry in {} (pushback {}ms)",
                        fmt_duration(*d),
                        pushback_ms.unwrap_or_default()
                    ),
                },
                (None, Some(rule)) => format!("stop: {rule}"),
                (None, None) => "stop".to_owned(),
            };
            (
                host,
                format!("g{group} attempt {attempt} {outcome} → {decision}"),
            )
        }
        EventKind::KeepaliveDataReset {
            conn,
            to,
            cleared,
            stream,
        } => (
            format!("{host}→{to}"),
            format!(
                "c{conn} ping strikes reset ({cleared} cleared): the server's WINDOW_UPDATE for \
                 {to}'s DATA on s{stream}, as C-core writes it (not on the wire)"
            ),
        ),
        EventKind::PolicyClosed(policy_closed) => {
            let event::PolicyClosed {
                conn,
                to,
                policy,
                reason,
            } = &**policy_closed;
            (
                format!("{host}→{to}"),
                format!("c{conn} connection closed by {policy} ({reason})"),
            )
        }
        EventKind::PolicyReset(policy_reset) => {
            let event::PolicyReset {
                conn,
                to,
                policy,
                reason,
                discarded,
            } = &**policy_reset;
            let text = format!(
                "c{conn} reset at both ends by {policy} ({reason}){}",
                discarded_words(*discarded)
            );
            (format!("{host}→{to}"), text)
        }
        EventKind::PolicyActed(policy_acted) => {
            let event::PolicyActed {
                conn,
                to,
                policy,
                action,
            } = &**policy_acted;
            (
                format!("{host}→{to}"),
                format!("c{conn} {policy}: {action}"),
            )
        }
        EventKind::KeepaliveClosed { conn, to, reason } => (
            format!("{host}→{to}"),
            format!("c{conn} connection closed by the keepalive policy ({reason})"),
        ),
        EventKind::ReplicaLeft { .. }
        | EventKind::ReplicaJoined { .. }
        | EventKind::CallRouted { .. }
        | EventKind::Balancer(_) => super::balancer_rows::line(e).unwrap_or_default(),
    }
}

/// `1 connection`, `2 connections`.
fn count(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A frame's words before its fate: `c1 s1 HEADERS POST /path …`, for a
/// frame as written and for one that arrived in its place.
fn frame_head(
    conn: u32,
    stream: u32,
    frame: FrameType,
    flags: FrameFlags,
    detail: &FrameDetail,
    invalid: Option<&str>,
    how: &words::HeaderWords,
) -> String {
    let mut text = format!("c{conn} s{stream} {frame}");
    let detail = words::frame_text(frame, flags, detail, invalid, how);
    if !detail.is_empty() {
        let _ = write!(text, " {detail}");
    }
    text
}

/// What the frame faults, the links and the policies did to a frame, as
/// the suffix of its row (`[dropped]`, `[held until 50ms]`, `[sent by
/// AWS ALB]`), with the rule the fate breaks inside the brackets
/// (`[dropped, invalid: …]`); nothing when it passed. `to` is the
/// receiving host.
fn push_fate(text: &mut String, fate: &FrameFate, to: &str) {
    let words = match fate.policy() {
        // A connection policy's own frame, not a fault's injection: the
        // row names who wrote it.
        Some(policy) => format!("sent by {policy}"),
        None => match fate_words(fate, to) {
            Some(words) => words,
            None => return,
        },
    };
    let _ = write!(text, " [{words}");
    if let Some(rule) = fate.fate_invalid() {
        let _ = write!(text, ", invalid: {rule}");
    }
    text.push(']');
}

/// What `fate` says inside a row's brackets; `None` when the frame passed.
fn fate_words(fate: &Fate, to: &str) -> Option<String> {
    let words = match fate {
        Fate::Passed => return None,
        Fate::Dropped => "dropped".to_owned(),
        Fate::Held => "held until released".to_owned(),
        Fate::Delayed { until } => format!("held until {}", fmt_duration(*until)),
        Fate::Behind { until } => {
            format!("behind a kept-back frame, until {}", fmt_duration(*until))
        }
        Fate::BehindHeld => "behind a held frame".to_owned(),
        Fate::Injected => "injected".to_owned(),
        Fate::Partitioned => "held: partitioned until repair".to_owned(),
        Fate::Paused => "held: paused until resume".to_owned(),
        Fate::Lost => "lost in the black hole".to_owned(),
        Fate::LostBehind => "lost behind a frame the black hole dropped".to_owned(),
        Fate::ReadAtReceiver => format!("raw peer: recorded when {to} read it"),
        Fate::Replaced {
            differing,
            first_differing,
            arrived,
        } => {
            let verb = if *differing == 1 { "differs" } else { "differ" };
            let mut words = format!("replaced: {} {verb}", count(*differing, "octet"));
            if let Some(at) = first_differing {
                let _ = write!(words, ", first at octet {at}");
            }
            let _ = write!(words, "; {} arrived instead", count(*arrived, "octet"));
            words
        }
        Fate::Swallowed => "swallowed by a connection policy".to_owned(),
    };
    Some(words)
}

/// `OK`, `UNAVAILABLE "msg"`, or `DEADLINE_EXCEEDED (tonic said CANCELLED
/// "Timeout expired")` when tonic and the spec disagree.
pub(crate) fn status(o: &Outcome) -> String {
    let said = said(o);
    if o.code == o.spec_code {
        said
    } else {
        format!("{} (tonic said {said})", o.spec_code)
    }
}

/// Which of tonic's server durations ran out: `its grpc-timeout=100ms ran
/// out`, `Server::timeout; the request sent no grpc-timeout`.
fn server_timer(timer: &event::ServerTimer) -> String {
    match timer {
        event::ServerTimer::GrpcTimeout { timeout } => {
            format!("its grpc-timeout={} ran out", fmt_duration(*timeout))
        }
        event::ServerTimer::ServerTimeout { grpc_timeout: None } => {
            "Server::timeout; the request sent no grpc-timeout".to_owned()
        }
        event::ServerTimer::ServerTimeout {
            grpc_timeout: Some(t),
        } => format!(
            "Server::timeout, shorter than its grpc-timeout={}",
            fmt_duration(*t)
        ),
    }
}

/// What tonic answered, then the spec's code when it differs:
/// `OUT_OF_RANGE "…" (spec RESOURCE_EXHAUSTED)`.
fn answered(o: &Outcome) -> String {
    if o.code == o.spec_code {
        said(o)
    } else {
        format!("{} (spec {})", said(o), o.spec_code)
    }
}

/// The status as tonic reported it: `OK`, `CANCELLED "Timeout expired"`.
/// How a call ended, in the trace's words (the waterfall's and the
/// exports' titles).
pub(crate) fn call_end(end: &super::CallEnd) -> String {
    use super::CallEnd;
    match end {
        CallEnd::Status(o) => status(o),
        CallEnd::Dropped => "dropped by the caller".to_owned(),
        // Its decoder's own answer: OUT_OF_RANGE where the spec says
        // RESOURCE_EXHAUSTED, or INTERNAL for a bad Compressed-Flag.
        CallEnd::StoppedReading { flag, .. } if *flag > 1 => "stopped reading: INTERNAL".to_owned(),
        CallEnd::StoppedReading { .. } => {
            "stopped reading: OUT_OF_RANGE (spec RESOURCE_EXHAUSTED)".to_owned()
        }
        CallEnd::Undecodable { .. } => "undecodable response: INTERNAL".to_owned(),
        CallEnd::Open => "open when the run ended".to_owned(),
    }
}

/// How a handler run ended, in the trace's words (the runs table's and
/// the exports').
pub(crate) fn run_end(end: &super::RunEnd) -> String {
    use super::RunEnd;
    match end {
        RunEnd::Finished { code, message } if message.is_empty() => (*code).to_owned(),
        RunEnd::Finished { code, message } => format!("{code} {}", words::quoted(message)),
        RunEnd::Rejected { outcome, why } => {
            format!("never ran: tonic answered {}: {why}", said(outcome))
        }
        RunEnd::Dropped => "dropped".to_owned(),
        RunEnd::TimedOut(t) => format!(
            "dropped by tonic's server timeout ({}): tonic answered {}",
            server_timer(&t.timer),
            answered(&t.outcome)
        ),
        RunEnd::Panicked(message) => format!("panicked: {}", words::quoted(message)),
        RunEnd::Running => "running when the run ended".to_owned(),
    }
}

pub(crate) fn said(o: &Outcome) -> String {
    if o.message.is_empty() {
        o.code.to_owned()
    } else {
        format!("{} {}", o.code, words::quoted(&o.message))
    }
}

/// `; 3 frames discarded` after a reset's words, nothing for none.
fn discarded_words(discarded: usize) -> String {
    match discarded {
        0 => String::new(),
        1 => "; 1 frame discarded".to_owned(),
        n => format!("; {n} frames discarded"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::recorder::event::{Event, EventKind};
    use crate::trace::Trace;

    #[test]
    fn a_multi_line_or_bidi_log_message_stays_one_row() {
        let log = Event::new(
            Duration::from_millis(3),
            "store",
            EventKind::Log(Box::new(crate::recorder::event::Log {
                level: "INFO",
                target: "app".into(),
                message: "first\nsecond\t\u{202E}gnp.exe\0\u{200F}\u{2028}".into(),
            })),
        );
        let trace = Trace::new(1, vec!["store".into()], vec![log], Duration::from_millis(4));
        let render = trace.render();
        assert_eq!(render.lines().count(), 2, "{render}");
        assert!(
            render.contains(r"first\nsecond\t\u{202e}gnp.exe\u{0}\u{200f}\u{2028}"),
            "{render}"
        );
        assert!(!trace.render_html().contains('\u{202E}'));
    }
}
