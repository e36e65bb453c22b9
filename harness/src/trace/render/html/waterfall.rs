//! The call waterfall: inline SVG, no script. One lane per host, simulated
//! time on x; a bar per call (on the caller's lane) and per handler run (on
//! the server's), each below the call or run that caused it, with a thin
//! line from cause to effect; the deadline of each call and run as a tick;
//! faults, RST_STREAM, GOAWAY and closes as marks on their lane; a host's
//! downtime shaded. Colour by outcome. Every bar links to its filter, every
//! mark to its row.
//!
//! What each story looks like: a propagated deadline is a column of
//! deadline ticks at one x; a cancellation cascade a staircase of bars that
//! end together, grey (dropped), with RST_STREAM marks under them; an
//! orphan a hatched red tail after its caller's bar ended; a queue a
//! hatched head (waiting for a slot) before a run's bar; a retry storm a
//! stack of short red bars on the bottom lane.

mod marks;

use std::collections::BTreeMap;
use std::time::Duration;

use super::svg::{line, rect, text};
use super::{Page, View};
use crate::trace::query::{CallEnd, RunEnd, Trace};
use crate::trace::render::rows::{call_end, fmt_ms};
use crate::trace::render::words::quoted;
use crate::units::fmt_duration;

/// Drawing units (CSS px at 100%).
const WIDTH: f64 = 1200.0;
/// Left of the plot: the lane names.
const LABEL: f64 = 130.0;
const RIGHT: f64 = 44.0;
const BAR: f64 = 10.0;
const ROW: f64 = 14.0;
/// The strip at the top of each lane that holds its marks.
const MARKS: f64 = 14.0;
const AXIS: f64 = 20.0;
/// The narrowest bar: an instant still shows.
const MIN_BAR: f64 = 3.0;

/// One bar: a call or a handler run.
#[derive(Clone, Copy)]
enum Item {
    Call(usize),
    Run(usize),
}

struct Bar {
    item: Item,
    lane: usize,
    parent: Option<usize>,
    x0: f64,
    x1: f64,
    /// Sub-row within its lane.
    row: usize,
}

struct Scale {
    end: f64,
}

impl Scale {
    /// Whether `t` is on the axis.
    fn shows(&self, t: Duration) -> bool {
        t.as_secs_f64() <= self.end
    }

    fn x(&self, t: Duration) -> f64 {
        LABEL + (t.as_secs_f64() / self.end).min(1.0) * (WIDTH - LABEL - RIGHT)
    }
}

pub(super) fn waterfall(page: &mut Page, view: &View<'_>) {
    let trace = view.trace;
    page.section("waterfall", "Calls in time");
    if trace.calls().is_empty() && trace.handler_runs().is_empty() {
        page.markup("<p class=\"none\">no calls or handler runs</p>\n</section>\n");
        return;
    }
    let lanes = lanes(trace);
    let scale = Scale {
        end: axis_end(trace).as_secs_f64().max(1e-3),
    };
    let mut bars = bars(trace, &lanes, &scale);
    let rows = pack(&mut bars, lanes.len());
    let tops: Vec<f64> = rows
        .iter()
        .scan(AXIS, |y, rows| {
            let top = *y;
            *y += lane_height(*rows);
            Some(top)
        })
        .collect();
    let height = tops
        .last()
        .map_or(AXIS, |t| t + lane_height(rows[rows.len() - 1]))
        + 4.0;
    let bar_y = |b: &Bar| tops[b.lane] + MARKS + b.row as f64 * ROW;
    page.markup("<svg class=\"waterfall\" viewBox=\"0 0 ")
        .num(WIDTH)
        .markup(" ")
        .num(height)
        .markup("\" width=\"")
        .num(WIDTH)
        .markup("\" height=\"")
        .num(height)
        .markup(
            "\" role=\"img\" aria-label=\"calls and handler runs by host in simulated time\">\n",
        );
    defs(page);
    for (l, top) in tops.iter().enumerate() {
        page.markup("<rect class=\"lane-bg")
            .markup(if l % 2 == 1 { " odd" } else { "" })
            .markup("\" x=\"0\" y=\"")
            .num(*top)
            .markup("\" width=\"")
            .num(WIDTH)
            .markup("\" height=\"")
            .num(lane_height(rows[l]))
            .markup("\"/>\n");
    }
    axis(page, &scale, axis_end(trace), height);
    marks::downtime(page, trace, &lanes, &tops, &rows, &scale);
    page.markup("<g class=\"causes\">\n");
    for b in &bars {
        let Some(p) = b.parent.map(|p| &bars[p]) else {
            continue;
        };
        let (from, to) = (bar_y(p), bar_y(b));
        let (y1, y2) = if from < to {
            (from + BAR, to)
        } else {
            (from, to + BAR)
        };
        line(page, "cause", b.x0, y1, b.x0, y2);
    }
    page.markup("</g>\n");
    let orphans: BTreeMap<_, _> = trace.orphans().into_iter().map(|o| (o.run.id, o)).collect();
    for (l, host) in lanes.iter().enumerate() {
        page.markup("<g class=\"lane\" data-host=\"")
            .attr(host)
            .markup("\">\n");
        let name_y = tops[l] + MARKS + BAR;
        match view.host_key(host) {
            Some(key) => {
                page.markup("<a href=\"#only-").attr(&key).markup("\">");
                text(page, "lane-name", 6.0, name_y, "start", host);
                page.markup("</a>\n");
            }
            None => text(page, "lane-name", 6.0, name_y, "start", host),
        }
        for b in bars.iter().filter(|b| b.lane == l) {
            let y = bar_y(b);
            match b.item {
                Item::Call(i) => call_bar(page, view, i, b, y, &scale),
                Item::Run(i) => run_bar(
                    page,
                    view,
                    i,
                    b,
                    y,
                    &scale,
                    orphans.get(&trace.handler_runs()[i].id),
                ),
            }
        }
        marks::marks(page, view, host, tops[l] + MARKS / 2.0, &scale);
        page.markup("</g>\n");
    }
    page.markup("</svg>\n");
    legend(page, view.options.frames);
    page.markup("</section>\n");
}

/// The end of the time axis: the end of the run, or the latest deadline of
/// a call or run when that is later, up to three times the run (so that a
/// propagated deadline past the run's end still shows as its column of
/// ticks, and a distant one does not squash the bars).
fn axis_end(trace: &Trace) -> Duration {
    let end = trace.ended_at();
    let deadlines = trace
        .calls()
        .iter()
        .filter_map(|c| c.deadline())
        .chain(trace.handler_runs().iter().filter_map(|r| r.deadline()));
    deadlines.filter(|d| *d <= end * 3).fold(end, Duration::max)
}

fn lane_height(rows: usize) -> f64 {
    MARKS + rows.max(1) as f64 * ROW + 4.0
}

/// Hosts in the order calls reach them (the first caller on top), then the
/// others as [`Trace::hosts`] lists them.
fn lanes(trace: &Trace) -> Vec<String> {
    let mut lanes: Vec<String> = Vec::new();
    let mut add = |h: &str| {
        if !lanes.iter().any(|l| l == h) {
            lanes.push(h.to_owned());
        }
    };
    for c in trace.calls() {
        add(&c.host);
        let to = c.replica.as_deref().unwrap_or(&c.target);
        if trace.hosts().iter().any(|h| h == to) {
            add(to);
        }
    }
    for r in trace.handler_runs() {
        add(&r.host);
    }
    for h in trace.hosts() {
        add(h);
    }
    lanes
}

/// Every call and run as a bar, depth first from the calls nothing caused:
/// a call, then the runs that served it, then the calls they made.
fn bars(trace: &Trace, lanes: &[String], scale: &Scale) -> Vec<Bar> {
    let (calls, runs) = (trace.calls(), trace.handler_runs());
    let lane = |h: &str| lanes.iter().position(|l| l == h).unwrap_or(0);
    let end = trace.ended_at();
    let span = |start: Duration, stop: Option<Duration>| {
        let x0 = scale.x(start);
        (x0, scale.x(stop.unwrap_or(end)).max(x0 + MIN_BAR))
    };
    let mut runs_of: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        if let Some(c) = r.call {
            runs_of.entry(c.0).or_default().push(i);
        }
    }
    let mut calls_of: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate() {
        if let Some(p) = c.parent {
            calls_of.entry(p.0).or_default().push(i);
        }
    }
    let call_known = |id: u32| calls.iter().any(|c| c.id.0 == id);
    let run_known = |id: u32| runs.iter().any(|r| r.id.0 == id);
    let mut roots: Vec<(Duration, u8, usize)> = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        if !c.parent.is_some_and(|p| run_known(p.0)) {
            roots.push((c.started, 0, i));
        }
    }
    for (i, r) in runs.iter().enumerate() {
        if !r.call.is_some_and(|c| call_known(c.0)) {
            roots.push((r.started, 1, i));
        }
    }
    roots.sort_unstable();
    let mut out = Vec::with_capacity(calls.len() + runs.len());
    let mut stack: Vec<(Item, Option<usize>)> = roots
        .iter()
        .rev()
        .map(|&(_, k, i)| (if k == 0 { Item::Call(i) } else { Item::Run(i) }, None))
        .collect();
    while let Some((item, parent)) = stack.pop() {
        let here = out.len();
        let (lane, (x0, x1), children) = match item {
            Item::Call(i) => {
                let c = &calls[i];
                let kids = runs_of
                    .get(&c.id.0)
                    .map(|v| v.iter().map(|&r| Item::Run(r)).collect());
                (lane(&c.host), span(c.started, c.ended_at), kids)
            }
            Item::Run(i) => {
                let r = &runs[i];
                let kids = calls_of
                    .get(&r.id.0)
                    .map(|v| v.iter().map(|&c| Item::Call(c)).collect());
                (lane(&r.host), span(r.started, r.ended_at), kids)
            }
        };
        out.push(Bar {
            item,
            lane,
            parent,
            x0,
            x1,
            row: 0,
        });
        let children: Vec<Item> = children.unwrap_or_default();
        stack.extend(children.into_iter().rev().map(|c| (c, Some(here))));
    }
    out
}

/// Gives each bar the first sub-row of its lane where it overlaps no other
/// bar, below its cause when that is on the same lane. Returns the rows
/// each lane needs.
fn pack(bars: &mut [Bar], lanes: usize) -> Vec<usize> {
    let mut taken: Vec<Vec<Vec<(f64, f64)>>> = vec![Vec::new(); lanes];
    for i in 0..bars.len() {
        let (lane, x0, x1) = (bars[i].lane, bars[i].x0 - 1.0, bars[i].x1 + 1.0);
        let min = bars[i]
            .parent
            .filter(|&p| bars[p].lane == lane)
            .map_or(0, |p| bars[p].row + 1);
        let rows = &mut taken[lane];
        let row = (min..)
            .find(|&r| {
                rows.get(r)
                    .is_none_or(|spans| spans.iter().all(|&(a, b)| b <= x0 || a >= x1))
            })
            .unwrap_or(min);
        if rows.len() <= row {
            rows.resize(row + 1, Vec::new());
        }
        rows[row].push((x0, x1));
        bars[i].row = row;
    }
    taken.iter().map(Vec::len).collect()
}

fn call_bar(page: &mut Page, view: &View<'_>, i: usize, b: &Bar, y: f64, scale: &Scale) {
    let c = &view.trace.calls()[i];
    let class = match &c.end {
        CallEnd::Status(o) if o.code != o.spec_code => "call failed differs",
        CallEnd::Status(o) if o.spec_code == "OK" => "call ok",
        CallEnd::Status(_) => "call failed",
        CallEnd::Dropped => "call dropped",
        CallEnd::StoppedReading { flag, .. } if *flag > 1 => "call failed",
        CallEnd::StoppedReading { .. } => "call failed differs",
        CallEnd::Undecodable { .. } => "call failed",
        CallEnd::Open => "call open",
    };
    let end = call_end(&c.end);
    let id = c.id.to_string();
    let took = c.latency().map(fmt_duration).unwrap_or_else(|| "-".into());
    let title = format!(
        "{id} call {} {}→{} at {}: {end} after {took}",
        c.path,
        c.host,
        c.target,
        fmt_ms(c.started)
    );
    open_link(page, view, &id);
    rect(page, class, &id, b.x0, y, b.x1 - b.x0, BAR, &title);
    label(page, &id, b, y);
    page.markup("</a>\n");
    if let Some(deadline) = c.deadline().filter(|d| scale.shows(*d)) {
        let title = format!("{id} deadline at {}", fmt_ms(deadline));
        budget(page, b.x1, scale.x(deadline), y);
        tick(
            page,
            scale.x(deadline),
            y,
            hit(c.ended_at, deadline),
            &title,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn run_bar(
    page: &mut Page,
    view: &View<'_>,
    i: usize,
    b: &Bar,
    y: f64,
    scale: &Scale,
    orphan: Option<&crate::trace::query::Orphan>,
) {
    let r = &view.trace.handler_runs()[i];
    let (class, end) = match &r.end {
        RunEnd::Finished { code, .. } if *code == "OK" => ("run ok", "finished OK".to_owned()),
        RunEnd::Finished { code, message } => {
            ("run failed", format!("finished {code} {}", quoted(message)))
        }
        RunEnd::Rejected { outcome, why } => (
            "run failed",
            format!("never ran: tonic answered {} ({why})", outcome.code),
        ),
        RunEnd::Dropped => ("run dropped", "dropped".to_owned()),
        RunEnd::TimedOut(_) => ("run failed", crate::trace::render::rows::run_end(&r.end)),
        RunEnd::Panicked(m) => ("run failed", format!("panicked: {}", quoted(m))),
        RunEnd::Running => ("run open", "running when the run ended".to_owned()),
    };
    let id = r.id.to_string();
    let took = r
        .ended_at
        .map(|t| fmt_duration(t.saturating_sub(r.started)))
        .unwrap_or_else(|| "-".into());
    let mut title = format!(
        "{id} handler {} on {} from {} at {}: {end} after {took}",
        r.path,
        r.host,
        r.from,
        fmt_ms(r.started)
    );
    let began = scale.x(r.began()).clamp(b.x0, b.x1);
    if let Some(d) = r.dequeued.filter(|d| *d > r.started) {
        title.push_str(&format!(
            "; waited {} for a slot",
            fmt_duration(d - r.started)
        ));
    }
    open_link(page, view, &id);
    if began > b.x0 {
        rect(page, "queued", "", b.x0, y, began - b.x0, BAR, &title);
    }
    let x0 = if b.x1 - began >= MIN_BAR { began } else { b.x0 };
    rect(page, class, &id, x0, y, b.x1 - x0, BAR, &title);
    if let Some(o) = orphan {
        let from = scale.x(o.abandoned_at).clamp(b.x0, b.x1);
        let title = format!(
            "{id} orphan work: ran on {} after its caller stopped waiting at {}",
            fmt_duration(o.ran_on),
            fmt_ms(o.abandoned_at)
        );
        rect(
            page,
            "orphan",
            "",
            from,
            y,
            (b.x1 - from).max(MIN_BAR),
            BAR,
            &title,
        );
    }
    label(page, &id, b, y);
    page.markup("</a>\n");
    if let Some(deadline) = r.deadline().filter(|d| scale.shows(*d)) {
        let title = format!("{id} deadline at {}", fmt_ms(deadline));
        budget(page, b.x1, scale.x(deadline), y);
        tick(
            page,
            scale.x(deadline),
            y,
            hit(r.ended_at, deadline),
            &title,
        );
    }
}

fn open_link(page: &mut Page, view: &View<'_>, id: &str) {
    if view.keys.all.contains(id) {
        page.markup("<a href=\"#only-").attr(id).markup("\">");
    } else {
        page.markup("<a>");
    }
}

/// The bar's id inside it, when it fits.
fn label(page: &mut Page, id: &str, b: &Bar, y: f64) {
    if b.x1 - b.x0 >= 8.0 * id.len() as f64 {
        text(page, "bar-label", b.x0 + 2.0, y + BAR - 1.5, "start", id);
    }
}

/// Time ticks: about ten, at 1, 2 or 5 × a power of ten ms.
fn axis(page: &mut Page, scale: &Scale, end: Duration, height: f64) {
    let end_ms = (end.as_secs_f64() * 1e3).max(1.0);
    let mut step = 1.0_f64;
    'find: loop {
        for m in [1.0, 2.0, 5.0] {
            if end_ms / (step * m) <= 10.0 {
                step *= m;
                break 'find;
            }
        }
        step *= 10.0;
    }
    page.markup("<g class=\"axis\">\n");
    let mut t = 0.0;
    while t <= end_ms + 1e-9 {
        let at = Duration::from_secs_f64(t / 1e3);
        let x = scale.x(at);
        line(page, "grid", x, AXIS - 4.0, x, height);
        text(
            page,
            "tick",
            x + 2.0,
            AXIS - 7.0,
            "start",
            &fmt_duration(at),
        );
        t += step;
    }
    page.markup("</g>\n");
}

/// The patterns the queued and orphan parts are hatched with (referenced
/// from the page's CSS; a fragment of the page itself, nothing fetched).
fn defs(page: &mut Page) {
    page.markup("<defs>");
    for id in ["queued", "orphan"] {
        page.markup("<pattern id=\"hatch-")
            .markup(id)
            .markup(
                "\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" \
                 patternTransform=\"rotate(45)\"><rect class=\"ink-",
            )
            .markup(id)
            .markup("\" width=\"2\" height=\"4\"/></pattern>");
    }
    page.markup("</defs>\n");
}

fn legend(page: &mut Page, frames: bool) {
    page.markup(
        "<p class=\"legend\">solid bar: a call, on its caller's lane; light bar: a handler run, on \
         its server's lane; each under what caused it (thin line). \
         <span class=\"sw ok\"></span>OK <span class=\"sw failed\"></span>error \
         <span class=\"sw differs\"></span>tonic's code is not the spec's \
         <span class=\"sw dropped\"></span>dropped (cancelled) \
         <span class=\"sw open\"></span>open when the run ended \
         <span class=\"sw queued\"></span>waiting for a slot \
         <span class=\"sw orphan\"></span>orphan work \
         <span class=\"sw deadline\"></span>deadline it ran into \
         <span class=\"sw spare\"></span>deadline with time to spare (dotted: the time left) \
         <span class=\"sw down\"></span>host down or paused · marks: \
         <span class=\"mk fault\">◆</span>fault",
    );
    if frames {
        page.markup(
            " <span class=\"mk close\">⬣</span>close <span class=\"mk rst\">▼</span>RST_STREAM <span class=\"mk goaway\">■</span>GOAWAY \
             <span class=\"mk dropped\">◆</span>frame dropped \
             <span class=\"mk injected\">◆</span>frame injected or sent by a connection policy",
        );
    }
    page.markup(". A bar selects its rows; a mark goes to its row.</p>\n");
}

/// Whether a bar that ended at `ended` (`None`: still open) ran into its
/// deadline: its tick is drawn strong, a deadline with time to spare faint.
fn hit(ended: Option<Duration>, deadline: Duration) -> bool {
    ended.is_none_or(|end| end + super::super::summary::OVERRUN_TOLERANCE >= deadline)
}

/// The time a bar had left: a dotted line from its end to its deadline.
fn budget(page: &mut Page, end: f64, deadline: f64, y: f64) {
    if deadline > end + 1.0 {
        line(page, "budget", end, y + BAR / 2.0, deadline, y + BAR / 2.0);
    }
}

/// A deadline tick across a bar: strong when the bar ran into it.
fn tick(page: &mut Page, x: f64, y: f64, hit: bool, title: &str) {
    page.markup(if hit {
        "<line class=\"deadline\" x1=\""
    } else {
        "<line class=\"deadline spare\" x1=\""
    })
    .num(x)
    .markup("\" y1=\"")
    .num(y - 2.0)
    .markup("\" x2=\"")
    .num(x)
    .markup("\" y2=\"")
    .num(y + BAR + 2.0)
    .markup("\"><title>")
    .text(title)
    .markup("</title></line>\n");
}
