//! The rows of a call as its client saw it: start, end, drop, and the ends
//! a decoder chose.

use std::fmt::Write as _;

use super::Context;
use crate::recorder::event::{self, Event, EventKind, Outcome};
use crate::trace::render::words;
use crate::units::fmt_duration;

/// The `where` column and text of a call event; `None` for any other.
pub(super) fn line(e: &Event, cx: &Context) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::CallStarted(s) => (format!("{host}→{}", s.target), started(s, cx)),
        EventKind::CallEnded {
            call,
            path,
            outcome,
        } => (host, ended(e, cx, *call, path, outcome)),
        EventKind::CallDropped { call, path } if cx.wire.contains_key(call) => {
            (host, dropped_on_wire(e, cx, *call, path))
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
        _ => return None,
    })
}

/// `r1 call /tt.v1.Echo/Say grpc-timeout=500ms (from r0)`, and for a call
/// seen only on the wire, what is not seen of it.
fn started(s: &event::CallStarted, cx: &Context) -> String {
    let event::CallStarted {
        call,
        path,
        timeout,
        parent,
        ..
    } = s;
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
    text
}

/// `r1 call /p ended OK`, with its overrun and what the wire showed.
fn ended(e: &Event, cx: &Context, call: event::CallId, path: &str, outcome: &Outcome) -> String {
    let mut text = format!("{call} call {path} ended {}", status(outcome));
    if let Some(over) = cx.overrun(call, e.at()) {
        let _ = write!(text, ", {} past its deadline", fmt_duration(over));
    }
    if cx.wire.contains_key(&call) {
        text.push_str(if outcome.rule == Some(crate::spec::rules::DEADLINE) {
            " (seen on the wire: its caller reset the stream at its grpc-timeout, tonic's deadline timer)"
        } else {
            " (as the wire shows it)"
        });
    }
    text
}

/// A drop seen on the wire: when its caller reset the stream, against the
/// grpc-timeout it sent.
fn dropped_on_wire(e: &Event, cx: &Context, call: event::CallId, path: &str) -> String {
    let seen = match cx.deadlines.get(&call).and_then(|d| d.checked_sub(e.at())) {
        Some(early) => format!(
            "it reset the stream {} before the grpc-timeout it sent ran out, and tonic's \
             timer for that timeout starts as the request is sent, so it had not fired",
            fmt_duration(early)
        ),
        None => "it reset the stream, and sent no grpc-timeout".to_owned(),
    };
    format!("{call} call {path} dropped by the caller (seen on the wire: {seen})")
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

/// The status as tonic reported it: `OK`, `CANCELLED "Timeout expired"`.
/// How a call ended, in the trace's words (the waterfall's and the
/// exports' titles).
pub(crate) fn call_end(end: &crate::trace::query::CallEnd) -> String {
    use crate::trace::query::CallEnd;
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

pub(crate) fn said(o: &Outcome) -> String {
    if o.message.is_empty() {
        o.code.to_owned()
    } else {
        format!("{} {}", o.code, words::quoted(&o.message))
    }
}
