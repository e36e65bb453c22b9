//! The rows of the timeline: which events an options set shows, and what
//! each says (time, place, text, kind). The text and HTML renders lay out
//! the same rows, so a word changed here changes both. Frame and keepalive
//! fields get their words from [`super::words`]; nothing else in the crate
//! makes a trace's words for them.

use std::fmt::Write as _;

use super::{fmt_duration, words, RenderOptions};
use crate::recorder::event::{ConnectFailure, Event, EventKind, Fate, LayerSide, Outcome};

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
    /// one of a folded run), for the renders that link to rows.
    pub(crate) event: usize,
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

/// The rows `options` shows, in time order.
pub(crate) fn rows(events: &[Event], options: &RenderOptions) -> Vec<Row> {
    let default = RenderOptions::default();
    let (index, visible): (Vec<usize>, Vec<&Event>) = events
        .iter()
        .enumerate()
        .filter(|(_, e)| shown(e, options))
        .unzip();
    let mut out = Vec::with_capacity(visible.len());
    let mut at = 0;
    while at < visible.len() {
        let e = visible[at];
        let (place, mut text) = line(e);
        let mut taken = 1;
        if options.fold_data {
            if let Some(run) = super::fold::data_run(&visible[at..]) {
                text = super::fold::text(e, &run);
                taken = run.frames;
            }
        }
        out.push(Row {
            ms: fmt_ms(e.at),
            place: one_line(place),
            text: one_line(text),
            kind: kind(e),
            quiet: !shown(e, &default),
            event: index[at],
        });
        at += taken;
    }
    out
}

/// One event's `where` and text as its row says them, whether or not an
/// options set shows it (for the summary, which names events by their rows).
pub(crate) fn describe(e: &Event) -> (String, String) {
    let (place, text) = line(e);
    (one_line(place), one_line(text))
}

/// *Simulated* time as the timeline's ms column shows it: `500.400`.
pub(crate) fn fmt_ms(at: std::time::Duration) -> String {
    format!("{:.3}", at.as_nanos() as f64 / 1e6)
}

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
        EventKind::CallStarted { .. }
        | EventKind::CallEnded { .. }
        | EventKind::CallDropped { .. } => RowKind::Call,
        EventKind::HandlerStarted { .. }
        | EventKind::HandlerDequeued { .. }
        | EventKind::HandlerFinished { .. }
        | EventKind::HandlerDropped { .. }
        | EventKind::HandlerPanicked { .. } => RowKind::Handler,
        EventKind::RetryAttempt { .. }
        | EventKind::RetryArrived { .. }
        | EventKind::RetryDecision { .. } => RowKind::Retry,
        EventKind::Frame { fate, .. } => match fate {
            Fate::Passed => RowKind::Frame,
            Fate::Dropped | Fate::Lost | Fate::LostBehind => RowKind::DroppedFrame,
            Fate::Held | Fate::Delayed { .. } | Fate::Partitioned | Fate::Paused => {
                RowKind::HeldFrame
            }
            Fate::Behind { .. } | Fate::BehindHeld => RowKind::BehindFrame,
            Fate::Injected => RowKind::InjectedFrame,
        },
        EventKind::FrameReleased { .. } | EventKind::FrameNeverLeft { .. } => RowKind::HeldFrame,
        EventKind::ConnClosed { .. } => RowKind::Frame,
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
        | EventKind::FaultFired { .. }
        | EventKind::HoldReleased { .. }
        | EventKind::FaultNeverFired { .. } => RowKind::Fault,
        EventKind::ProtocolError { .. } => RowKind::ProtocolError,
        EventKind::KeepalivePing { .. }
        | EventKind::KeepaliveStrikesReset { .. }
        | EventKind::KeepaliveClosed { .. } => RowKind::Policy,
        EventKind::Log { .. } => RowKind::Log,
        EventKind::CallRouted { .. } => RowKind::Call,
        EventKind::ReplicaLeft { .. } | EventKind::ReplicaJoined { .. } => RowKind::Fault,
        // A client-side policy at work, styled as the server-side ones.
        EventKind::Balancer { .. } => RowKind::Policy,
    }
}

pub(crate) fn shown(e: &Event, options: &RenderOptions) -> bool {
    match &e.kind {
        EventKind::Frame { noise, fate, .. } => {
            options.frames && (options.noise || !noise || *fate != Fate::Passed)
        }
        EventKind::FrameReleased { .. }
        | EventKind::FrameNeverLeft { .. }
        | EventKind::ProtocolError { .. } => options.frames,
        EventKind::ConnClosed { .. } => options.frames && options.noise,
        // A dial that waited for a partition or a pause says why a call
        // waited and when its channel came back: shown by default. Other
        // dials are routine (`connections` shows them).
        EventKind::ConnectStarted { .. } => options.connections,
        EventKind::Connected { waited, .. }
        | EventKind::ConnectFailed { waited, .. }
        | EventKind::ConnectAbandoned { waited, .. } => options.connections || *waited,
        EventKind::Log { level, .. } => options.debug_logs || !matches!(*level, "DEBUG" | "TRACE"),
        _ => true,
    }
}

/// The `where` column and the event text of one event.
fn line(e: &Event) -> (String, String) {
    let host = e.host.clone();
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
        EventKind::ShutdownStillDraining {
            since,
            open_conns,
            waiting_on,
        } => {
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
            let mut text = format!(
                "c{conn} reset at both ends: bytes waited {} for the partition (reset_after)",
                fmt_duration(*waited)
            );
            match discarded {
                0 => {}
                1 => text.push_str("; 1 frame discarded"),
                n => {
                    let _ = write!(text, "; {n} frames discarded");
                }
            }
            (format!("{host}→{to}"), text)
        }
        EventKind::Repaired { peer } => (format!("{host}↔{peer}"), "repaired".into()),
        EventKind::LinkLatency { peer, latency } => (
            format!("{host}↔{peer}"),
            format!("link latency set to {}", fmt_duration(*latency)),
        ),
        EventKind::FaultFired {
            run,
            path,
            action,
            side,
        } => {
            let side = match side {
                None => "",
                Some(LayerSide::OutsideLayers) => " (outside the server's layers)",
                Some(LayerSide::InsideLayers) => " (inside the server's layers)",
            };
            (host, format!("{run} fault {action} on {path}{side}"))
        }
        EventKind::CallStarted {
            call,
            target,
            path,
            timeout,
            parent,
        } => {
            let mut text = format!("{call} call {path}");
            if let Some(t) = timeout {
                let _ = write!(text, " grpc-timeout={}", fmt_duration(*t));
            }
            if let Some(p) = parent {
                let _ = write!(text, " (from {p})");
            }
            (format!("{host}→{target}"), text)
        }
        EventKind::CallEnded {
            call,
            path,
            outcome,
        } => (
            host,
            format!("{call} call {path} ended {}", status(outcome)),
        ),
        EventKind::CallDropped { call, path } => {
            (host, format!("{call} call {path} dropped by the caller"))
        }
        EventKind::HandlerStarted {
            run,
            path,
            from,
            call,
            timeout,
            nth,
        } => {
            let mut about = Vec::new();
            match call {
                Some(c) => about.push(format!("{c} from {from}")),
                None => about.push(format!("from {from}")),
            }
            if let Some(t) = timeout {
                about.push(format!("grpc-timeout={}", fmt_duration(*t)));
            }
            about.push(format!("#{nth}"));
            (
                host,
                format!("{run} handler {path} started ({})", about.join(", ")),
            )
        }
        EventKind::HandlerDequeued { run, path, queued } => (
            host,
            format!(
                "{run} handler {path} got a slot after {}",
                fmt_duration(*queued)
            ),
        ),
        EventKind::HandlerFinished {
            run,
            path,
            code,
            message,
            ran,
        } => {
            let msg = if message.is_empty() {
                String::new()
            } else {
                format!(" {message:?}")
            };
            (
                host,
                format!(
                    "{run} handler {path} finished {code}{msg} after {}",
                    fmt_duration(*ran)
                ),
            )
        }
        EventKind::HandlerDropped { run, path, ran } => (
            host,
            format!("{run} handler {path} dropped after {}", fmt_duration(*ran)),
        ),
        EventKind::HandlerPanicked { run, path, message } => {
            (host, format!("{run} handler {path} panicked: {message:?}"))
        }
        EventKind::Frame {
            conn,
            to,
            stream,
            frame,
            flags,
            detail,
            invalid,
            fate,
            ..
        } => {
            let mut text = format!("c{conn} s{stream} {frame}");
            let detail = words::frame_text(*frame, *flags, detail, invalid.as_deref());
            if !detail.is_empty() {
                let _ = write!(text, " {detail}");
            }
            match fate {
                Fate::Passed => {}
                Fate::Dropped => text.push_str(" [dropped]"),
                Fate::Held => text.push_str(" [held until released]"),
                Fate::Delayed { until } => {
                    let _ = write!(text, " [held until {}]", fmt_duration(*until));
                }
                Fate::Behind { until } => {
                    let _ = write!(
                        text,
                        " [behind a kept-back frame, until {}]",
                        fmt_duration(*until)
                    );
                }
                Fate::BehindHeld => text.push_str(" [behind a held frame]"),
                Fate::Injected => text.push_str(" [injected]"),
                Fate::Partitioned => text.push_str(" [held: partitioned until repair]"),
                Fate::Paused => text.push_str(" [held: paused until resume]"),
                Fate::Lost => text.push_str(" [lost in the black hole]"),
                Fate::LostBehind => text.push_str(" [lost behind a frame the black hole dropped]"),
            }
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
        EventKind::FrameNeverLeft {
            conn,
            to,
            stream,
            frame,
            written,
            waiting_for,
        } => (
            format!("{host}→{to}"),
            format!(
                "c{conn} s{stream} {frame} never left: written at {}, {waiting_for}",
                fmt_duration(*written)
            ),
        ),
        EventKind::ConnClosed { conn, to } => (format!("{host}→{to}"), format!("c{conn} closed")),
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
        EventKind::Log {
            level,
            target,
            message,
        } => (host, format!("log {level} {target}: {message}")),
        EventKind::KeepalivePing {
            conn,
            from,
            verdict,
            strikes,
            gap,
            allowed,
            open_calls,
            after_reset,
        } => (
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
        ),
        EventKind::KeepaliveStrikesReset {
            conn,
            to,
            cleared,
            frame,
        } => (
            format!("{host}→{to}"),
            format!("c{conn} {frame} resets ping strikes ({cleared} cleared)"),
        ),
        EventKind::RetryAttempt {
            group,
            target,
            path,
            attempt,
            delay,
        } => {
            let text = if *attempt == 1 {
                format!("g{group} retry layer: attempt 1 of {path}")
            } else {
                format!(
                    "g{group} retry layer: attempt {attempt} of {path} after {}",
                    fmt_duration(*delay)
                )
            };
            (format!("{host}→{target}"), text)
        }
        EventKind::RetryArrived {
            run,
            path,
            previous,
        } => (
            host,
            format!("{run} handler {path} is a retry (grpc-previous-rpc-attempts={previous})"),
        ),
        EventKind::RetryDecision {
            group,
            attempt,
            outcome,
            retry_in,
            backoff_n,
            pushback_ms,
            stop,
            ..
        } => {
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
        EventKind::KeepaliveClosed { conn, to, reason } => (
            format!("{host}→{to}"),
            format!("c{conn} connection closed by the keepalive policy ({reason})"),
        ),
        EventKind::ReplicaLeft { .. }
        | EventKind::ReplicaJoined { .. }
        | EventKind::CallRouted { .. }
        | EventKind::Balancer { .. } => super::balancer_rows::line(e).unwrap_or_default(),
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

/// `OK`, `UNAVAILABLE "msg"`, or `DEADLINE_EXCEEDED (tonic said CANCELLED
/// "Timeout expired")` when tonic and the spec disagree.
fn status(o: &Outcome) -> String {
    let said = said(o);
    if o.code == o.spec_code {
        said
    } else {
        format!("{} (tonic said {said})", o.spec_code)
    }
}

/// The status as tonic reported it: `OK`, `CANCELLED "Timeout expired"`.
pub(crate) fn said(o: &Outcome) -> String {
    if o.message.is_empty() {
        o.code.to_owned()
    } else {
        format!("{} {:?}", o.code, o.message)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::recorder::event::{Event, EventKind};
    use crate::trace::Trace;

    #[test]
    fn a_multi_line_or_bidi_log_message_stays_one_row() {
        let log = Event {
            at: Duration::from_millis(3),
            host: "store".into(),
            kind: EventKind::Log {
                level: "INFO",
                target: "app".into(),
                message: "first\nsecond\t\u{202E}gnp.exe\0\u{200F}\u{2028}".into(),
            },
        };
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
