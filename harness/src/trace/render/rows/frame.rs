//! The rows of a frame: as written with its fate, one that arrived in its
//! place, one released or never sent.

use std::fmt::Write as _;

use super::{count, Context};
use crate::recorder::event::{self, Event, EventKind, Fate, FrameDetail, FrameFate, FrameFlags};
use crate::trace::render::words;
use crate::units::fmt_duration;
use crate::wire::FrameType;

/// The `where` column and text of a frame event; `None` for any other.
pub(super) fn line(e: &Event, cx: &Context) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
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
        _ => return None,
    })
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
