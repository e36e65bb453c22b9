//! The rows of a link between two hosts: partitions, black holes, repairs,
//! latency.

use std::fmt::Write as _;

use crate::recorder::event::{Event, EventKind};
use crate::units::fmt_duration;

/// The `where` column and text of a link event; `None` for any other.
pub(super) fn line(e: &Event) -> Option<(String, String)> {
    let host = e.host.to_string();
    Some(match &e.kind {
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
        EventKind::Repaired { peer } => (format!("{host}↔{peer}"), "repaired".into()),
        EventKind::LinkLatency { peer, latency } => (
            format!("{host}↔{peer}"),
            format!("link latency set to {}", fmt_duration(*latency)),
        ),
        _ => return None,
    })
}
