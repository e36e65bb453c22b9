//! The rows of the timeline: which events an options set shows, and what
//! each says (time, place, text, kind). The text and HTML renders lay out
//! the same rows, so a word changed here changes both. Frame and keepalive
//! fields get their words from [`super::words`]; nothing else in the crate
//! makes a trace's words for them.
//!
//! Each family of events says its words in a file of its own (`host`,
//! `link`, `connection`, `fault`, `call`, `handler`, `frame`, `policy`,
//! `retry`, `balancer`): its `line` answers for its own kinds and `None`
//! for the others, and [`line`] asks each in turn.

mod balancer;
mod call;
mod connection;
mod fault;
mod frame;
mod handler;
mod hedge;
mod host;
mod link;
mod policy;
mod retry;
mod tls;
mod tls_message;

use crate::recorder::event;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::{words, RenderOptions};
use crate::recorder::event::{CallId, Event, EventKind, Fate, RunId};
use crate::units::fmt_duration;

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
    /// The replica each hedged attempt (group, attempt) was balanced to.
    hedge_replicas: HashMap<(u32, u32), String>,
}

impl Context {
    fn of(events: &[Event]) -> Self {
        let mut cx = Self::default();
        let mut routed: HashMap<CallId, String> = HashMap::new();
        let mut hedges: Vec<((u32, u32), CallId)> = Vec::new();
        for (i, e) in events.iter().enumerate() {
            match &e.kind {
                EventKind::RetryAttempt(a) if a.hedged => {
                    if let Some(call) = super::hedges::attempt_call(events, i) {
                        hedges.push(((a.group, a.attempt), call));
                    }
                }
                EventKind::CallRouted { call, replica, .. } => {
                    routed.insert(*call, replica.to_string());
                }
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
        cx.hedge_replicas = hedges
            .into_iter()
            .filter_map(|(key, call)| Some((key, routed.get(&call)?.clone())))
            .collect();
        cx
    }

    /// How long past its deadline `call` ended at `at`, when more than a
    /// tick ([`crate::trace::query::TICK_TOLERANCE`]: tonic's timer fires at the first
    /// tick at or after its instant).
    fn overrun(&self, call: CallId, at: Duration) -> Option<Duration> {
        let deadline = *self.deadlines.get(&call)?;
        let over = at.checked_sub(deadline)?;
        (over > crate::trace::query::TICK_TOLERANCE).then_some(over)
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
            let open = end.checked_sub(deadline)? > crate::trace::query::TICK_TOLERANCE;
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
pub(crate) use call::{call_end, said};
pub(crate) use handler::run_end;

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
        EventKind::TlsHandshake(h) => match h.outcome {
            event::TlsOutcome::Done { .. } => RowKind::Connection,
            event::TlsOutcome::Failed { .. } => RowKind::ProtocolError,
        },
        EventKind::TlsMessage(m) => match m.message {
            event::TlsMessageKind::Unreadable(_) => RowKind::ProtocolError,
            _ => RowKind::Connection,
        },
        EventKind::HostCrashed
        | EventKind::HostRestarted
        | EventKind::ShutdownStarted { .. }
        | EventKind::PodTerminationStarted(_)
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
        EventKind::Log(_) | EventKind::Effect(_) => RowKind::Log,
        EventKind::CallRouted { .. } => RowKind::Call,
        EventKind::ReplicaLeft { .. }
        | EventKind::ReplicaJoined { .. }
        | EventKind::HealthSet { .. }
        | EventKind::DnsOutage
        | EventKind::DnsRestored => RowKind::Fault,
        // A client-side policy at work, styled as the server-side ones.
        EventKind::Balancer(_) | EventKind::Resolution(_) => RowKind::Policy,
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

/// The `where` column and the event text of one event: each family of
/// events has its own file.
fn line(e: &Event, cx: &Context) -> (String, String) {
    host::line(e)
        .or_else(|| link::line(e))
        .or_else(|| connection::line(e))
        .or_else(|| tls::line(e))
        .or_else(|| fault::line(e))
        .or_else(|| call::line(e, cx))
        .or_else(|| handler::line(e, cx))
        .or_else(|| frame::line(e, cx))
        .or_else(|| policy::line(e))
        .or_else(|| retry::line(e, &cx.hedge_replicas))
        .or_else(|| balancer::line(e))
        .unwrap_or_default()
}

/// `1 connection`, `2 connections`.
fn count(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
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
    use crate::trace::query::Trace;

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
