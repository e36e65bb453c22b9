//! A frame sequence per connection: inline SVG, no script. Two lifelines
//! (the host that dialled on the left, the server on the right) and one
//! arrow per timeline row of the connection, top to bottom in simulated
//! time, its `t(ms)` on the left: the rows the timeline shows for the same
//! options, so DATA runs are folded as there. A frame a fault kept back
//! slants down to the row where it was released; a dropped or lost one
//! stops half way with a cross; injected, held and queued-behind frames
//! take the rows' styles. Other rows of the connection (its close, a reset,
//! a protocol error, a keepalive verdict) are notes on their host's
//! lifeline. Each arrow links to its row.

use super::svg::{line, text};
use super::{Page, View};
use crate::recorder::event::{Event, EventKind};
use crate::trace::render::rows::RowKind;

/// The most rows one connection's diagram draws; the rest are one link to
/// the timeline filtered to the connection, so a long run stays light.
pub(super) const MAX_ROWS: usize = 400;

/// The most rows all diagrams of a page draw together: once they are
/// drawn, later connections are listed with a link to their rows only.
pub(super) const MAX_TOTAL_ROWS: usize = 1200;

const WIDTH: f64 = 900.0;
const LEFT: f64 = 180.0;
const RIGHT: f64 = 780.0;
const HEAD: f64 = 34.0;
const STEP: f64 = 18.0;
/// Labels longer than this are cut (the row and the tooltip have all).
const LABEL_CHARS: usize = 88;

/// One connection: its id, its two ends, its rows (indices into the
/// view's rows).
struct Conn {
    id: u32,
    client: String,
    server: String,
    rows: Vec<usize>,
}

pub(super) fn connections(page: &mut Page, view: &View<'_>) {
    let conns = conns(view);
    page.section("connections", "Frames per connection");
    if conns.is_empty() {
        page.markup("<p class=\"none\">no frames recorded</p>\n</section>\n");
        return;
    }
    let open = conns.len() <= 4;
    let mut budget = MAX_TOTAL_ROWS;
    let mut listed = Vec::new();
    for conn in &conns {
        if budget == 0 {
            listed.push(conn);
            continue;
        }
        let drawn = conn.rows.len().min(MAX_ROWS).min(budget);
        diagram(page, view, conn, drawn, open);
        budget -= drawn;
    }
    if !listed.is_empty() {
        page.markup("<p class=\"more\">Not drawn (the page draws ")
            .text(&MAX_TOTAL_ROWS.to_string())
            .markup(" rows of frames at most):");
        for conn in listed {
            let key = format!("c{}", conn.id);
            page.markup(" <a href=\"#only-")
                .attr(&key)
                .markup("\">")
                .text(&key)
                .markup("</a> (")
                .text(&rows_count(conn.rows.len()))
                .markup(")");
        }
        page.markup("</p>\n");
    }
    page.markup("</section>\n");
}

/// Every connection with a shown row, in order of first row.
fn conns(view: &View<'_>) -> Vec<Conn> {
    let events = view.trace.events();
    let mut out: Vec<Conn> = Vec::new();
    for (i, row) in view.rows.iter().enumerate() {
        let Some(id) = row
            .shows_event()
            .then(|| events[row.event].kind.conn())
            .flatten()
        else {
            continue;
        };
        match out.iter_mut().find(|c| c.id == id) {
            Some(c) => c.rows.push(i),
            None => {
                let (client, server) = ends(events, id);
                out.push(Conn {
                    id,
                    client,
                    server,
                    rows: vec![i],
                });
            }
        }
    }
    out
}

/// The host that dialled and the one it dialled: from the connection's
/// `Connected`, else its first frame's sender and receiver.
fn ends(events: &[Event], id: u32) -> (String, String) {
    let connected = events.iter().find_map(|e| match &e.kind {
        EventKind::Connected { conn, to, .. } if *conn == id => {
            Some((e.host.to_string(), to.to_string()))
        }
        _ => None,
    });
    connected
        .or_else(|| {
            events.iter().find_map(|e| match &e.kind {
                EventKind::Frame { conn, to, .. } if *conn == id => {
                    Some((e.host.to_string(), to.to_string()))
                }
                _ => None,
            })
        })
        .unwrap_or_default()
}

/// The diagram of `conn`'s first `drawn` rows.
fn diagram(page: &mut Page, view: &View<'_>, conn: &Conn, drawn: usize, open: bool) {
    let events = view.trace.events();
    let shown = &conn.rows[..drawn];
    let key = format!("c{}", conn.id);
    page.markup(if open {
        "<details open=\"\""
    } else {
        "<details"
    })
    .markup(" id=\"conn-")
    .attr(&key)
    .markup("\"><summary>");
    if view.keys.all.contains(&key) {
        page.markup("<a href=\"#only-")
            .attr(&key)
            .markup("\">")
            .text(&key)
            .markup("</a>");
    } else {
        page.text(&key);
    }
    page.markup(" ")
        .text(&conn.client)
        .markup(" → ")
        .text(&conn.server)
        .markup(": ")
        .text(&rows_count(conn.rows.len()))
        .markup("</summary>\n");
    let height = HEAD + shown.len() as f64 * STEP + 10.0;
    page.markup("<svg class=\"sequence\" viewBox=\"0 0 ")
        .num(WIDTH)
        .markup(" ")
        .num(height)
        .markup("\" width=\"")
        .num(WIDTH)
        .markup("\" height=\"")
        .num(height)
        .markup("\" role=\"img\" aria-label=\"frames of ")
        .attr(&key)
        .markup("\">\n");
    for (x, host) in [(LEFT, &conn.client), (RIGHT, &conn.server)] {
        text(page, "host", x, 14.0, "middle", host);
        line(page, "lifeline", x, 20.0, x, height - 4.0);
    }
    for (k, &r) in shown.iter().enumerate() {
        let row = &view.rows[r];
        let e = &events[row.event];
        let y = HEAD + k as f64 * STEP;
        text(page, "t", 4.0, y + 4.0, "start", &row.ms);
        page.markup("<a href=\"#t")
            .attr(&(r + 1).to_string())
            .markup("\"><g class=\"")
            .markup(row.kind.class())
            .markup("\"><title>")
            .text(&row.ms)
            .markup(" ")
            .text(&row.place)
            .markup(" ")
            .text(&row.text)
            .markup("</title>");
        let from_client = e.host == conn.client;
        let label = label(&row.text, conn.id);
        if let EventKind::Frame { .. } = e.kind {
            let (x1, x2) = if from_client {
                (LEFT, RIGHT)
            } else {
                (RIGHT, LEFT)
            };
            match row.kind {
                RowKind::DroppedFrame => {
                    let mid = (x1 + x2) / 2.0;
                    line(page, "arrow", x1, y, mid, y);
                    line(page, "cross", mid - 4.0, y - 4.0, mid + 4.0, y + 4.0);
                    line(page, "cross", mid - 4.0, y + 4.0, mid + 4.0, y - 4.0);
                }
                _ => {
                    let y2 = release_row(view, shown, k, e).map_or(y, |j| HEAD + j as f64 * STEP);
                    line(page, "arrow", x1, y, x2, y2);
                    head(page, x1, y, x2, y2);
                }
            }
            text(
                page,
                "label",
                (LEFT + RIGHT) / 2.0,
                y - 3.0,
                "middle",
                &label,
            );
        } else {
            let x = if from_client { LEFT } else { RIGHT };
            page.markup("<circle class=\"note\" cx=\"")
                .num(x)
                .markup("\" cy=\"")
                .num(y)
                .markup("\" r=\"3\"/>");
            let (lx, anchor) = if from_client {
                (x + 8.0, "start")
            } else {
                (x - 8.0, "end")
            };
            text(page, "label", lx, y + 4.0, anchor, &label);
        }
        page.markup("</g></a>\n");
    }
    page.markup("</svg>\n");
    if conn.rows.len() > shown.len() {
        page.markup("<p class=\"more\">… and ")
            .text(&(conn.rows.len() - shown.len()).to_string())
            .markup(" more rows of ")
            .text(&key);
        if view.keys.all.contains(&key) {
            page.markup(": <a href=\"#only-")
                .attr(&key)
                .markup("\">the timeline, filtered to ")
                .text(&key)
                .markup("</a>");
        }
        page.markup("</p>\n");
    }
    page.markup("</details>\n");
}

fn rows_count(n: usize) -> String {
    if n == 1 {
        "1 row".to_owned()
    } else {
        format!("{n} rows")
    }
}

/// The row's text without its leading `cN ` (the diagram names the
/// connection once), cut to fit between the lifelines.
fn label(text: &str, conn: u32) -> String {
    let prefix = format!("c{conn} ");
    let text = text.strip_prefix(&prefix).unwrap_or(text);
    if text.chars().count() <= LABEL_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(LABEL_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// For a frame a fault kept back: the position (among `shown`) of the row
/// where it was released, the first later `FrameReleased` of its stream
/// and type.
fn release_row(view: &View<'_>, shown: &[usize], k: usize, frame: &Event) -> Option<usize> {
    let EventKind::Frame {
        stream, frame: ty, ..
    } = &frame.kind
    else {
        return None;
    };
    if view.rows[shown[k]].kind != RowKind::HeldFrame {
        return None;
    }
    let events = view.trace.events();
    shown.iter().enumerate().skip(k + 1).find_map(|(j, &r)| {
        let e = &events[view.rows[r].event];
        match &e.kind {
            EventKind::FrameReleased {
                stream: s,
                frame: t,
                ..
            } if s == stream && t == ty && e.host == frame.host => Some(j),
            _ => None,
        }
    })
}

/// An arrowhead at (x2, y2), pointing along the line from (x1, y1).
fn head(page: &mut Page, x1: f64, y1: f64, x2: f64, y2: f64) {
    let (dx, dy) = (x2 - x1, y2 - y1);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    let (bx, by) = (x2 - 8.0 * ux, y2 - 8.0 * uy);
    let points = format!(
        "{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}",
        x2,
        y2,
        bx - 4.0 * uy,
        by + 4.0 * ux,
        bx + 4.0 * uy,
        by - 4.0 * ux
    );
    page.markup("<polygon class=\"head\" points=\"")
        .attr(&points)
        .markup("\"/>");
}
