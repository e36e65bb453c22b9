//! The page's first section: the summary [`Trace::render_summary`] prints
//! as text, with each item's time a link to its row and its ids links to
//! their filters.

use super::{links::linked, Page, View};
use crate::trace::render::rows::fmt_ms;
use crate::trace::render::summary::{more_text, verdict_text, Item, RunVerdict};
use crate::units::fmt_duration;

pub(super) fn summary(page: &mut Page, view: &View<'_>, verdict: Option<&RunVerdict>) {
    let s = view.trace.summary(verdict);
    let class = match &s.verdict {
        Some(v) if v.passed() => "verdict pass",
        Some(_) => "verdict fail",
        None => "verdict unjudged",
    };
    page.section("summary", "Summary")
        .markup("<p class=\"")
        .markup(class)
        .markup("\">")
        .text(&verdict_text(s.verdict.as_ref()))
        .markup("</p>\n<dl class=\"summary\">\n<dt>first error</dt><dd id=\"first-error\">");
    match &s.first_error {
        Some(item) => self::item(page, view, item),
        None => none(page),
    }
    page.markup("</dd>\n<dt>counted</dt><dd>")
        .text(&s.counts)
        .markup(" in ")
        .text(&fmt_duration(view.trace.ended_at()))
        .markup(" simulated</dd>\n");
    for section in &s.sections {
        page.markup("<dt>")
            .markup(section.title)
            .markup("</dt><dd id=\"")
            .markup(section.id)
            .markup("\">");
        if section.items.is_empty() {
            none(page);
        } else {
            page.markup("<ul>\n");
            for it in &section.items {
                page.markup("<li>");
                item(page, view, it);
                page.markup("</li>\n");
            }
            if section.more > 0 {
                page.markup("<li class=\"more\">")
                    .text(&more_text(section.more))
                    .markup("</li>\n");
            }
            page.markup("</ul>");
        }
        page.markup("</dd>\n");
    }
    page.markup("</dl>\n</section>\n");
}

/// `<time link> <place> <text with links>`.
fn item(page: &mut Page, view: &View<'_>, item: &Item) {
    let at = item.at.map(fmt_ms).unwrap_or_default();
    match item.event.and_then(|e| view.row_of(e)) {
        Some(row) => {
            page.markup("<a class=\"at\" href=\"#t")
                .attr(&row.to_string())
                .markup("\">")
                .text(&at)
                .markup("</a>");
        }
        None => {
            page.markup("<span class=\"at\">")
                .text(&at)
                .markup("</span>");
        }
    }
    page.markup(" <span class=\"place\">")
        .text(&item.place)
        .markup("</span> ");
    linked(page, &item.text, &view.keys.all);
}

fn none(page: &mut Page) {
    page.markup("<span class=\"none\">none</span>");
}
