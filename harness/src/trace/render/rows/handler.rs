//! The rows of a handler run on a server: start, queueing, finish,
//! rejection, drop, panic, an unreadable grpc-timeout.

use super::{said, Context};
use crate::recorder::event::{self, Event, EventKind, Outcome};
use crate::trace::render::words;
use crate::units::fmt_duration;

/// The `where` column and text of a handler event; `None` for any other.
pub(super) fn line(e: &Event, cx: &Context) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::HandlerStarted(started) => (host, self::started(started, cx)),
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
        EventKind::HandlerFinished(finished) => (host, self::finished(finished)),
        EventKind::HandlerDropped(dropped) => (host, self::dropped(dropped)),
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
        _ => return None,
    })
}

/// `r1 handler /p started (r1 from client, grpc-timeout=500ms, #1)`, or
/// `request arrived` for a run tonic rejected before its handler.
fn started(started: &event::HandlerStarted, cx: &Context) -> String {
    let event::HandlerStarted {
        run,
        path,
        from,
        call,
        timeout,
        nth,
    } = started;
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
    format!("{run} handler {path} {what} ({})", about.join(", "))
}

/// `r1 handler /p finished OK after 2ms`, with the spec's code where the
/// server's own stack answers another.
fn finished(finished: &event::HandlerFinished) -> String {
    let event::HandlerFinished {
        run,
        path,
        code,
        message,
        ran,
    } = finished;
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
    format!(
        "{run} handler {path} finished {code} after {}",
        fmt_duration(*ran)
    )
}

/// `r1 handler /p dropped after 5ms`, or what tonic's server timeout did.
fn dropped(dropped: &event::HandlerDropped) -> String {
    let event::HandlerDropped {
        run,
        path,
        ran,
        timed_out,
    } = dropped;
    match timed_out {
        Some(t) => format!(
            "{run} handler {path} dropped by tonic's server timeout after {} ({}): tonic answered {}",
            fmt_duration(*ran),
            server_timer(&t.timer),
            answered(&t.outcome)
        ),
        None => format!("{run} handler {path} dropped after {}", fmt_duration(*ran)),
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

/// How a handler run ended, in the trace's words (the runs table's and
/// the exports').
pub(crate) fn run_end(end: &crate::trace::query::RunEnd) -> String {
    use crate::trace::query::RunEnd;
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
