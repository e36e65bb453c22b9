//! The HTML page of a trace: one self-contained file to open in a browser.
//! Top to bottom: the summary, the call waterfall, a frame sequence per
//! connection, the timeline (the text render's rows, with links and
//! filters), and the tables of calls, handler runs, faults that never fired
//! and stalls.

mod keys;
mod links;
mod sequence;
mod svg;
mod tables;
mod top;
mod waterfall;

use super::rows::{rows, shown, Row, COLUMNS};
use super::summary::RunVerdict;
use super::{RenderOptions, Trace};
use crate::units::fmt_duration;

/// Inline, so the page needs nothing but itself.
const STYLE: &str = include_str!("html/style.css");

/// The page's Content-Security-Policy: nothing may be fetched or run, only
/// its own inline style applies. A browser then refuses any request the
/// page would make, even one smuggled in by a string the escaping missed.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'";

impl Trace {
    /// The trace as one HTML5 page, with the default [`RenderOptions`].
    ///
    /// The page, top to bottom:
    /// - a header: the seed and the `CHAOS_SEED=<n>` that reproduces the
    ///   run, its *simulated* duration, its hosts, and the options used;
    ///   links to each section and a filter per host;
    /// - the summary of [`Trace::render_summary`]: the verdict (with
    ///   [`Trace::render_html_judged`]), the first error with its text, the
    ///   findings (tonic's code next to the spec's), the faults that fired
    ///   and never fired, the stalls and the deadline overruns, each with a
    ///   link to its row;
    /// - the call waterfall (inline SVG): a lane per host, *simulated* time
    ///   across, a bar per call and per handler run under what caused it,
    ///   deadlines as ticks, faults, RST_STREAM, GOAWAY and closes as marks,
    ///   coloured by outcome;
    /// - with [`frames`](RenderOptions::frames), a frame sequence per
    ///   connection (inline SVG): two lifelines and an arrow per shown row
    ///   (at most 400 per connection and 1,200 per page; the rest are one
    ///   link to the timeline filtered to the connection);
    /// - the timeline: a table with exactly the rows of
    ///   [`Trace::render_with`] for the same options (time in *simulated*
    ///   ms with three decimals, where, event), each row classed by kind
    ///   (`call`, `call differs` when tonic's code is not the spec's,
    ///   `handler`, `retry`, `frame`, `frame dropped`, `frame held`,
    ///   `frame behind` (queued behind a kept-back frame), `frame injected`,
    ///   `fault`, `protocol-error`,
    ///   `policy`, `log`) so faults stand out, and `quiet` on rows the
    ///   default options would hide; row *n* has the id `t`*n*. Every
    ///   `rN`, `hN`, `cN` and `sN` in it links to a filter (`#only-r1`,
    ///   `#only-c1s3`, `#only-H0` for the first host) that shows only the
    ///   rows of that call, handler run, connection, stream or host (CSS
    ///   `:target`, no script);
    /// - tables from the trace's queries: [`Trace::calls`] with the
    ///   status tonic reported next to the one the spec requires,
    ///   [`Trace::handler_runs`], faults that never fired, and
    ///   [`Trace::stalls`] (only when frames are shown and the wire tap
    ///   recorded some).
    ///
    /// It is self-contained and works offline: inline CSS and SVG, no
    /// script, no fonts, nothing fetched, and a Content-Security-Policy
    /// that forbids fetching anything. It is byte-stable like the text
    /// render: the same trace gives the same bytes. Every string from the
    /// trace (hosts, paths, grpc-message, log fields, GOAWAY debug data) is
    /// escaped, so a hostile message shows as text.
    ///
    /// ```
    /// use grpc_chaos::Sim;
    ///
    /// let mut sim = Sim::builder().seed(7).build();
    /// sim.server("store", |s| s);
    /// sim.client("player", |_| async { Ok(()) });
    /// let page = sim.run()?.render_html();
    /// assert!(page.starts_with("<!DOCTYPE html>"));
    /// assert!(page.contains("CHAOS_SEED=7"));
    /// # Ok::<(), grpc_chaos::Error>(())
    /// ```
    pub fn render_html(&self) -> String {
        self.render_html_with(&RenderOptions::default())
    }

    /// The HTML page with explicit options: they choose the timeline's rows
    /// as for [`Trace::render_with`]; without
    /// [`frames`](RenderOptions::frames) the frame sequences and the stalls
    /// section are left out.
    pub fn render_html_with(&self, options: &RenderOptions) -> String {
        self.render_html_judged(options, None)
    }

    /// The HTML page with the run's verdict at the top of its summary (a
    /// story's verdict, a failed assertion, a run's error); `None` says the
    /// run was not judged, as [`Trace::render_html_with`] does.
    ///
    /// ```
    /// use grpc_chaos::{trace::{RenderOptions, RunVerdict}, Sim};
    ///
    /// let mut sim = Sim::builder().seed(7).build();
    /// sim.server("store", |s| s);
    /// sim.client("player", |_| async { Ok(()) });
    /// let verdict = RunVerdict::fail("the store was never called");
    /// let page = sim.run()?.render_html_judged(&RenderOptions::default(), Some(&verdict));
    /// assert!(page.contains("<p class=\"verdict fail\">FAIL: the store was never called</p>"));
    /// # Ok::<(), grpc_chaos::Error>(())
    /// ```
    pub fn render_html_judged(
        &self,
        options: &RenderOptions,
        verdict: Option<&RunVerdict>,
    ) -> String {
        let rows = rows(self.events(), options, self.ended_at());
        let keys = keys::keys(self, &rows);
        let view = View {
            trace: self,
            options,
            rows,
            keys,
        };
        let mut page = Page(String::with_capacity(8192 + self.events.len() * 300));
        head(&mut page, &view);
        header(&mut page, self, options);
        nav(&mut page, &view);
        top::summary(&mut page, &view, verdict);
        waterfall::waterfall(&mut page, &view);
        if options.frames {
            sequence::connections(&mut page, &view);
        }
        timeline(&mut page, &view);
        tables::calls(&mut page, self.calls(), &view.keys.all);
        tables::handler_runs(&mut page, self.handler_runs(), &view.keys.all);
        tables::never_fired(&mut page, self.events());
        if options.frames {
            tables::stalls(&mut page, self);
        }
        page.markup("</body>\n</html>\n");
        page.0
    }
}

/// What the sections share: the trace, its rows for the options, and the
/// rows' filter keys.
pub(super) struct View<'a> {
    trace: &'a Trace,
    options: &'a RenderOptions,
    rows: Vec<Row>,
    keys: keys::Keys,
}

impl View<'_> {
    /// The timeline row (1-based, its id is `t<n>`) that shows event
    /// `event`: its own row, or the folded row it is part of. `None` when
    /// the options hide it.
    fn row_of(&self, event: usize) -> Option<usize> {
        let e = self.trace.events().get(event)?;
        if !shown(e, self.options) {
            return None;
        }
        // Rows partition the shown events in order: the last row that
        // starts at or before it holds it.
        let n = self.rows.partition_point(|r| r.event <= event);
        (n > 0).then_some(n)
    }

    /// The filter key of `host`, when some row has it.
    fn host_key(&self, host: &str) -> Option<String> {
        let i = self.trace.hosts().iter().position(|h| h == host)?;
        let key = format!("H{i}");
        self.keys.all.contains(&key).then_some(key)
    }
}

fn head(page: &mut Page, view: &View<'_>) {
    page.markup("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .markup("<meta http-equiv=\"Content-Security-Policy\" content=\"")
        .markup(CSP)
        .markup("\">\n")
        .markup("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
        .markup("<title>grpc-chaos trace, seed ")
        .text(&view.trace.seed().to_string())
        .markup("</title>\n<style>\n")
        .markup(STYLE);
    // While a filter banner `#only-K` is the target, every row is hidden
    // and one rule per key shows the rows whose keys hold K. The rule's
    // right end matches only those rows, so the browser walks back to the
    // banners for them alone: a rule per key that *hid* the other rows
    // would walk the banners for every row and every key (minutes for a
    // page of 5,000 rows and 900 keys). Keys are ASCII letters and digits
    // (see `keys`), safe in a selector as they are.
    if !view.keys.all.is_empty() {
        page.markup(".only:target~table tbody tr{display:none}\n");
    }
    for key in &view.keys.all {
        if key.bytes().all(|b| b.is_ascii_alphanumeric()) {
            page.markup("#only-");
            page.0.push_str(key);
            page.markup(":target~table tbody tr[data-k~=");
            page.0.push_str(key);
            page.markup("]{display:table-row}\n");
        }
    }
    page.markup("</style>\n</head>\n<body>\n");
}

fn header(page: &mut Page, trace: &Trace, options: &RenderOptions) {
    let seed = trace.seed().to_string();
    let yes = |on: bool| if on { "yes" } else { "no" };
    let shown = format!(
        "frames {}, noise {}, debug_logs {}, fold_data {}",
        yes(options.frames),
        yes(options.noise),
        yes(options.debug_logs),
        yes(options.fold_data)
    );
    page.markup("<header>\n<h1>grpc-chaos trace</h1>\n<dl>\n")
        .markup("<dt>seed</dt><dd>")
        .text(&seed)
        .markup(" (reproduce with <code>")
        .text(&trace.replay_env())
        .markup("</code>)</dd>\n<dt>simulated duration</dt><dd>")
        .text(&fmt_duration(trace.ended_at()))
        .markup("</dd>\n<dt>hosts</dt><dd>")
        .text(&trace.hosts().join(", "))
        .markup("</dd>\n<dt>shown</dt><dd>")
        .text(&shown)
        .markup("</dd>\n</dl>\n</header>\n");
}

/// Links to the sections, and the host filters.
fn nav(page: &mut Page, view: &View<'_>) {
    page.markup(
        "<nav>\n<a href=\"#summary\">summary</a> · <a href=\"#waterfall\">calls in time</a>",
    );
    if view.options.frames {
        page.markup(" · <a href=\"#connections\">frames per connection</a>");
    }
    page.markup(
        " · <a href=\"#timeline\">timeline</a> · <a href=\"#calls\">calls</a> · \
         <a href=\"#handler-runs\">handler runs</a>",
    );
    let hosts: Vec<(&String, String)> = view
        .trace
        .hosts()
        .iter()
        .filter_map(|h| Some((h, view.host_key(h)?)))
        .collect();
    if !hosts.is_empty() {
        page.markup("\n<br>only the rows of host:");
        for (host, key) in hosts {
            page.markup(" <a class=\"host\" href=\"#only-")
                .attr(&key)
                .markup("\">")
                .text(host)
                .markup("</a>");
        }
        page.markup(" · <a href=\"#timeline\">every row</a>");
    }
    page.markup("\n</nav>\n");
}

/// The text render's rows, one table row each, after a banner per filter
/// (shown only while it is the target).
fn timeline(page: &mut Page, view: &View<'_>) {
    page.section("timeline", "Timeline").markup(
        "<p class=\"hint\">Select an id (r1, h1, c1, s1) or a host to see only its rows.</p>\n",
    );
    for key in &view.keys.all {
        page.markup("<p class=\"only\" id=\"only-")
            .attr(key)
            .markup("\">Only the rows of <b>")
            .text(&keys::label(key, view.trace.hosts()))
            .markup("</b>. <a href=\"#timeline\">Show every row</a>.</p>\n");
    }
    page.markup("<table class=\"timeline\">\n")
        .head_row(&COLUMNS)
        .markup("<tbody>\n");
    for (i, row) in view.rows.iter().enumerate() {
        page.markup("<tr id=\"t")
            .attr(&(i + 1).to_string())
            .markup("\" class=\"")
            .markup(row.kind.class());
        if row.quiet {
            page.markup(" quiet");
        }
        page.markup("\" data-where=\"")
            .attr(&row.place)
            .markup("\" data-k=\"")
            .attr(&view.keys.rows[i])
            .markup("\">")
            .cell(&row.ms)
            .cell(&row.place)
            .markup("<td>");
        if row.kind == super::rows::RowKind::Log {
            page.text(&row.text);
        } else {
            links::linked(page, &row.text, &view.keys.named[i]);
        }
        page.markup("</td></tr>\n");
    }
    page.markup("</tbody>\n</table>\n</section>\n");
}

/// A page being written. Markup is `'static` text of this module; every
/// string from the trace goes through [`Page::text`] or [`Page::attr`],
/// which escape it for its context.
struct Page(String);

impl Page {
    fn markup(&mut self, markup: &'static str) -> &mut Self {
        self.0.push_str(markup);
        self
    }

    /// Escaped for element content.
    fn text(&mut self, text: &str) -> &mut Self {
        html_escape::encode_text_to_string(text, &mut self.0);
        self
    }

    /// Escaped for a double-quoted attribute value.
    fn attr(&mut self, value: &str) -> &mut Self {
        html_escape::encode_double_quoted_attribute_to_string(value, &mut self.0);
        self
    }

    /// A coordinate in an SVG attribute: one decimal, `.0` dropped.
    fn num(&mut self, n: f64) -> &mut Self {
        let s = format!("{n:.1}");
        self.0.push_str(s.strip_suffix(".0").unwrap_or(&s));
        self
    }

    fn cell(&mut self, text: &str) -> &mut Self {
        self.markup("<td>").text(text).markup("</td>")
    }

    fn section(&mut self, id: &'static str, title: &'static str) -> &mut Self {
        self.markup("<section id=\"")
            .markup(id)
            .markup("\">\n<h2>")
            .markup(title)
            .markup("</h2>\n")
    }

    fn head_row(&mut self, headings: &[&'static str]) -> &mut Self {
        self.markup("<thead><tr>");
        for heading in headings {
            self.markup("<th>").markup(heading).markup("</th>");
        }
        self.markup("</tr></thead>\n")
    }

    /// A table row of escaped cells, a cell that is a known id a link to
    /// its filter.
    fn linked_row(
        &mut self,
        class: &'static str,
        known: &std::collections::BTreeSet<String>,
        cells: &[&str],
    ) -> &mut Self {
        self.markup("<tr class=\"").markup(class).markup("\">");
        for cell in cells {
            if known.contains(*cell) {
                self.markup("<td><a href=\"#only-")
                    .attr(cell)
                    .markup("\">")
                    .text(cell)
                    .markup("</a></td>");
            } else {
                self.cell(cell);
            }
        }
        self.markup("</tr>\n")
    }

    /// A table row of escaped cells.
    fn row(&mut self, class: &'static str, cells: &[&str]) -> &mut Self {
        self.markup("<tr class=\"").markup(class).markup("\">");
        for cell in cells {
            self.cell(cell);
        }
        self.markup("</tr>\n")
    }
}

#[cfg(test)]
mod tests;
