//! The HTML page of a trace: one self-contained file to open in a browser,
//! with the text render's rows as a table and summaries under it.

mod summary;

use super::rows::{rows, COLUMNS};
use super::{fmt_duration, RenderOptions, Trace};

/// Inline, so the page needs nothing but itself.
const STYLE: &str = include_str!("html/style.css");

impl Trace {
    /// The trace as one HTML5 page, with the default [`RenderOptions`].
    ///
    /// The page, top to bottom:
    /// - a header: the seed and the `CHAOS_SEED=<n>` that reproduces the
    ///   run, its *simulated* duration, its hosts, and the options used;
    /// - the timeline: a table with exactly the rows of
    ///   [`Trace::render_with`] for the same options (time in *simulated*
    ///   ms with three decimals, where, event), each row classed by kind
    ///   (`call`, `call differs` when tonic's code is not the spec's,
    ///   `handler`, `retry`, `frame`, `frame dropped`, `frame held`,
    ///   `frame behind` (queued behind a kept-back frame), `frame injected`,
    ///   `fault`, `protocol-error`,
    ///   `policy`, `log`) so faults stand out, and `quiet` on rows the
    ///   default options would hide;
    /// - summaries from the trace's queries: [`Trace::calls`] with the
    ///   status tonic reported next to the one the spec requires,
    ///   [`Trace::handler_runs`], faults that never fired, and
    ///   [`Trace::stalls`] (only when frames are shown and the wire tap
    ///   recorded some).
    ///
    /// It is self-contained and works offline: inline CSS, no script, no
    /// fonts, nothing fetched. It is byte-stable like the text render:
    /// the same trace gives the same bytes. Every string from the trace
    /// (hosts, paths, grpc-message, log fields, GOAWAY debug data) is
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
    /// as for [`Trace::render_with`], and without
    /// [`frames`](RenderOptions::frames) the stalls section is left out.
    pub fn render_html_with(&self, options: &RenderOptions) -> String {
        let mut page = Page(String::with_capacity(4096 + self.events.len() * 160));
        head(&mut page, self);
        header(&mut page, self, options);
        timeline(&mut page, self, options);
        summary::calls(&mut page, self.calls());
        summary::handler_runs(&mut page, self.handler_runs());
        summary::never_fired(&mut page, self.events());
        if options.frames {
            summary::stalls(&mut page, self);
        }
        page.markup("</body>\n</html>\n");
        page.0
    }
}

fn head(page: &mut Page, trace: &Trace) {
    page.markup("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        .markup("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
        .markup("<title>grpc-chaos trace, seed ")
        .text(&trace.seed().to_string())
        .markup("</title>\n<style>\n")
        .markup(STYLE)
        .markup("</style>\n</head>\n<body>\n");
}

fn header(page: &mut Page, trace: &Trace, options: &RenderOptions) {
    let seed = trace.seed().to_string();
    let yes = |on: bool| if on { "yes" } else { "no" };
    let shown = format!(
        "frames {}, noise {}, debug_logs {}",
        yes(options.frames),
        yes(options.noise),
        yes(options.debug_logs)
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

/// The text render's rows, one table row each.
fn timeline(page: &mut Page, trace: &Trace, options: &RenderOptions) {
    page.section("timeline", "Timeline")
        .markup("<table class=\"timeline\">\n")
        .head_row(&COLUMNS)
        .markup("<tbody>\n");
    for row in rows(trace.events(), options, trace.ended_at()) {
        page.markup("<tr class=\"").markup(row.kind.class());
        if row.quiet {
            page.markup(" quiet");
        }
        page.markup("\" data-where=\"")
            .attr(&row.place)
            .markup("\">")
            .cell(&row.ms)
            .cell(&row.place)
            .cell(&row.text)
            .markup("</tr>\n");
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
