//! The rows of a connection: dials and their outcomes, resets, closes, and
//! what a raw peer or a protocol error did to one.

use super::discarded_words;
use crate::recorder::event::{ConnectFailure, Event, EventKind};
use crate::trace::render::words;
use crate::units::fmt_duration;

/// The `where` column and text of a connection event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    dial(e).or_else(|| ends(e))
}

/// A dial: its start, its wait, and how it ended.
fn dial(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
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
        _ => return None,
    })
}

/// How a connection ended, or what was lost when it did.
fn ends(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
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
        _ => return None,
    })
}
