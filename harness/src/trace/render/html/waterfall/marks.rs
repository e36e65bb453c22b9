//! What the waterfall marks on a lane: faults, RST_STREAM, GOAWAY, closes
//! and frames a fault dropped or injected, each a link to its row; and a
//! host's time down or paused, shaded.

use std::collections::BTreeMap;
use std::time::Duration;

use super::super::svg::rect;
use super::super::{Page, View};
use super::{lane_height, Scale, MIN_BAR};
use crate::recorder::event::{EventKind, Fate};
use crate::trace::query::Trace;
use crate::trace::render::rows::{fmt_ms, kind, RowKind, Words};
use crate::wire::FrameType;

/// Marks on `host`'s lane: faults, RST_STREAM, GOAWAY, closes.
pub(super) fn marks(page: &mut Page, view: &View<'_>, host: &str, y: f64, scale: &Scale) {
    let words = Words::of(view.trace.events());
    for (i, e) in view.trace.events().iter().enumerate() {
        if e.host != host {
            continue;
        }
        let class = match &e.kind {
            EventKind::FaultNeverFired { .. } => continue,
            // Frames and connection closes belong to the wire: a page
            // without frames shows neither.
            EventKind::Frame { .. }
            | EventKind::ConnClosed { .. }
            | EventKind::KeepaliveClosed { .. }
            | EventKind::ConnReset { .. }
                if !view.options.frames =>
            {
                continue
            }
            EventKind::Frame { frame, fate, .. } => match frame {
                _ if matches!(**fate, Fate::Dropped | Fate::Lost) => "mark dropped",
                FrameType::RstStream => "mark rst",
                FrameType::GoAway => "mark goaway",
                _ if *fate == Fate::Injected => "mark injected",
                _ => continue,
            },
            EventKind::ConnClosed { .. }
            | EventKind::KeepaliveClosed { .. }
            | EventKind::ConnReset { .. } => "mark close",
            _ if kind(e) == RowKind::Fault => "mark fault",
            _ => continue,
        };
        let x = scale.x(e.at());
        let (place, what) = words.describe(e);
        let title = format!("{} {place} {what}", fmt_ms(e.at()));
        match view.row_of(i) {
            Some(row) => {
                page.markup("<a href=\"#t")
                    .attr(&row.to_string())
                    .markup("\">");
            }
            None => {
                page.markup("<a>");
            }
        }
        let shape = match class {
            "mark rst" => format!(
                "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
                x - 4.0,
                y - 4.0,
                x + 4.0,
                y - 4.0,
                x,
                y + 4.0
            ),
            "mark goaway" => format!(
                "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
                x - 4.0,
                y - 4.0,
                x + 4.0,
                y - 4.0,
                x + 4.0,
                y + 4.0,
                x - 4.0,
                y + 4.0
            ),
            "mark close" => format!(
                "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
                x - 2.0,
                y - 4.0,
                x + 2.0,
                y - 4.0,
                x + 4.0,
                y,
                x + 2.0,
                y + 4.0,
                x - 2.0,
                y + 4.0,
                x - 4.0,
                y
            ),
            _ => format!(
                "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
                x,
                y - 5.0,
                x + 5.0,
                y,
                x,
                y + 5.0,
                x - 5.0,
                y
            ),
        };
        page.markup("<polygon class=\"")
            .markup(class)
            .markup("\" points=\"")
            .attr(&shape)
            .markup("\"><title>")
            .text(&title)
            .markup("</title></polygon></a>\n");
    }
}

/// A host's time down (crash to restart) and paused (pause to resume),
/// shaded across its lane.
pub(super) fn downtime(
    page: &mut Page,
    trace: &Trace,
    lanes: &[String],
    tops: &[f64],
    rows: &[usize],
    scale: &Scale,
) {
    let mut since: BTreeMap<(&str, bool), Duration> = BTreeMap::new();
    let mut spans: Vec<(&str, bool, Duration, Option<Duration>)> = Vec::new();
    for e in trace.events() {
        match e.kind {
            EventKind::HostCrashed => {
                since.entry((&e.host, true)).or_insert(e.at());
            }
            EventKind::HostPaused => {
                since.entry((&e.host, false)).or_insert(e.at());
            }
            EventKind::HostRestarted | EventKind::HostResumed => {
                let down = matches!(e.kind, EventKind::HostRestarted);
                if let Some(from) = since.remove(&(e.host.as_str(), down)) {
                    spans.push((&e.host, down, from, Some(e.at())));
                }
            }
            _ => {}
        }
    }
    spans.extend(
        since
            .into_iter()
            .map(|((h, down), from)| (h, down, from, None)),
    );
    for (host, down, from, until) in spans {
        let Some(l) = lanes.iter().position(|h| h == host) else {
            continue;
        };
        let (x0, x1) = (scale.x(from), scale.x(until.unwrap_or(trace.ended_at())));
        let what = if down { "down" } else { "paused" };
        let title = format!(
            "{host} {what} from {} to {}",
            fmt_ms(from),
            until.map_or_else(|| "the end of the run".to_owned(), fmt_ms)
        );
        rect(
            page,
            if down { "down" } else { "paused" },
            "",
            x0,
            tops[l],
            (x1 - x0).max(MIN_BAR),
            lane_height(rows[l]),
            &title,
        );
    }
}
