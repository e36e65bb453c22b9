//! The text timeline: what users snapshot. Byte-stable for a seed: no
//! ports, no wall clock, ids in order of appearance, strings escaped.

use std::fmt::Write as _;

use super::{fmt_duration, Trace};
use crate::recorder::event::{Event, EventKind, Fate, Outcome};

/// What the text render shows.
///
/// The default shows calls, handler runs, faults, INFO and higher logs, and
/// HTTP/2 frames except connection noise (SETTINGS ACKs and WINDOW_UPDATEs
/// under 65,535 octets) that no fault touched, so that snapshots change
/// only when behaviour does. [`RenderOptions::everything`] shows every
/// event; [`RenderOptions::rpc_only`] leaves frames out.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RenderOptions {
    /// Show `DEBUG`/`TRACE` events captured from user code. Default: false.
    pub debug_logs: bool,
    /// Show HTTP/2 frames at all. Default: true.
    pub frames: bool,
    /// Show connection noise frames no fault touched. Default: false.
    pub noise: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self {
            debug_logs: false,
            frames: true,
            noise: false,
        }
    }
}

impl RenderOptions {
    /// Every event.
    pub fn everything() -> Self {
        Self {
            debug_logs: true,
            frames: true,
            noise: true,
        }
    }

    /// Calls, handler runs, faults and logs: no HTTP/2 frames.
    pub fn rpc_only() -> Self {
        Self {
            frames: false,
            ..Self::default()
        }
    }
}

impl Trace {
    /// The text timeline with the default [`RenderOptions`]:
    ///
    /// ```text
    ///      t(ms)  where            event
    ///      0.000  player→gateway   r1 call /tt.v1.Scoreboard/Hit grpc-timeout=500ms
    ///      1.000  gateway          h1 handler /tt.v1.Scoreboard/Hit started (r1 from player, grpc-timeout=500ms, #1)
    /// ```
    pub fn render(&self) -> String {
        self.render_with(&RenderOptions::default())
    }

    /// The text timeline with explicit options.
    pub fn render_with(&self, options: &RenderOptions) -> String {
        let mut out = format!("{:>10}  {:<20} event\n", "t(ms)", "where");
        for e in self.events.iter().filter(|e| shown(e, options)) {
            let (place, text) = line(e);
            let t = e.at.as_nanos() as f64 / 1e6;
            let _ = writeln!(out, "{t:>10.3}  {place:<20} {text}");
        }
        out
    }
}

fn shown(e: &Event, options: &RenderOptions) -> bool {
    match &e.kind {
        EventKind::Frame { noise, fate, .. } => {
            options.frames && (options.noise || !noise || *fate != Fate::Passed)
        }
        EventKind::FrameReleased { .. } | EventKind::ProtocolError { .. } => options.frames,
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
        EventKind::Partitioned { peer } => (format!("{host}↔{peer}"), "partitioned".into()),
        EventKind::Repaired { peer } => (format!("{host}↔{peer}"), "repaired".into()),
        EventKind::LinkLatency { peer, latency } => (
            format!("{host}↔{peer}"),
            format!("link latency set to {}", fmt_duration(*latency)),
        ),
        EventKind::FaultFired { run, path, action } => {
            (host, format!("{run} fault {action} on {path}"))
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
            detail,
            fate,
            ..
        } => {
            let mut text = format!("c{conn} s{stream} {frame}");
            if !detail.is_empty() {
                let _ = write!(text, " {detail}");
            }
            match fate {
                Fate::Passed => {}
                Fate::Dropped => text.push_str(" [dropped]"),
                Fate::Delayed { until } => {
                    let _ = write!(text, " [held until {}]", fmt_duration(*until));
                }
                Fate::Injected => text.push_str(" [injected]"),
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
        EventKind::ProtocolError {
            conn,
            to,
            offset,
            reason,
        } => (
            format!("{host}→{to}"),
            format!("c{conn} protocol error at byte {offset}: {reason}"),
        ),
        EventKind::Log {
            level,
            target,
            message,
        } => (host, format!("log {level} {target}: {message}")),
    }
}

/// `OK`, `UNAVAILABLE "msg"`, or `DEADLINE_EXCEEDED (tonic said CANCELLED
/// "Timeout expired")` when tonic and the spec disagree.
fn status(o: &Outcome) -> String {
    let said = if o.message.is_empty() {
        o.code.to_owned()
    } else {
        format!("{} {:?}", o.code, o.message)
    };
    if o.code == o.spec_code {
        said
    } else {
        format!("{} (tonic said {said})", o.spec_code)
    }
}
