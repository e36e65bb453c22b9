//! The rows of a host: its software (crashed, restarted, paused, resumed),
//! its graceful shutdown, and its logs.

use std::fmt::Write as _;

use super::count;
use crate::recorder::event::{self, Event, EventKind};
use crate::units::fmt_duration;

/// The `where` column and text of a host event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
        EventKind::HostCrashed => (host, "host crashed".into()),
        EventKind::HostRestarted => (host, "host restarted".into()),
        EventKind::ShutdownStarted { grace } => (
            host,
            match grace {
                Some(g) => format!("graceful shutdown started (grace {})", fmt_duration(*g)),
                None => "graceful shutdown started (no grace: drains as long as it takes)".into(),
            },
        ),
        EventKind::PodTerminationStarted(times) => (
            host,
            format!(
                "pod termination started: endpoint removed in {}, SIGTERM in {}, SIGKILL in {} \
                 (if still draining)",
                fmt_duration(times.endpoint_lag),
                fmt_duration(times.sigterm),
                fmt_duration(times.sigkill)
            ),
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
        EventKind::HostPaused => (
            host,
            "host paused: bytes to and from it wait until resume".into(),
        ),
        EventKind::HostResumed => (host, "host resumed".into()),
        EventKind::Log(log) => {
            let event::Log {
                level,
                target,
                message,
            } = &**log;
            (host, format!("log {level} {target}: {message}"))
        }
        EventKind::Effect(effect) => {
            let event::Effect { name, run, message } = &**effect;
            let by = run.map_or_else(|| "outside a handler's task".to_owned(), |r| r.to_string());
            (host, format!("effect {name} by {by}: {message}"))
        }
        _ => return None,
    })
}
