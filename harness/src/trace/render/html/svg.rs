//! The SVG pieces the waterfall and the frame sequences are drawn with.
//! Coordinates are CSS px at 100%; every string goes through the page's
//! escaping.

use super::Page;

#[allow(clippy::too_many_arguments)]
pub(super) fn rect(
    page: &mut Page,
    class: &'static str,
    id: &str,
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    title: &str,
) {
    page.markup("<rect class=\"").markup(class).markup("\"");
    if !id.is_empty() {
        page.markup(" data-id=\"").attr(id).markup("\"");
    }
    page.markup(" x=\"")
        .num(x)
        .markup("\" y=\"")
        .num(y)
        .markup("\" width=\"")
        .num(w)
        .markup("\" height=\"")
        .num(h)
        .markup("\"><title>")
        .text(title)
        .markup("</title></rect>");
}

pub(super) fn line(page: &mut Page, class: &'static str, x1: f64, y1: f64, x2: f64, y2: f64) {
    page.markup("<line class=\"")
        .markup(class)
        .markup("\" x1=\"")
        .num(x1)
        .markup("\" y1=\"")
        .num(y1)
        .markup("\" x2=\"")
        .num(x2)
        .markup("\" y2=\"")
        .num(y2)
        .markup("\"/>\n");
}

pub(super) fn text(
    page: &mut Page,
    class: &'static str,
    x: f64,
    y: f64,
    anchor: &'static str,
    s: &str,
) {
    page.markup("<text class=\"")
        .markup(class)
        .markup("\" x=\"")
        .num(x)
        .markup("\" y=\"")
        .num(y)
        .markup("\"");
    if anchor != "start" {
        page.markup(" text-anchor=\"").markup(anchor).markup("\"");
    }
    page.markup(">").text(s).markup("</text>");
}
