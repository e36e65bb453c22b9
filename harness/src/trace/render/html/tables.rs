//! The tables under the timeline. Each lays out what an existing query of
//! the trace answers; none analyses anything of its own. Ids link to their
//! filters.

use std::collections::BTreeSet;
use std::time::Duration;

use super::Page;
use crate::recorder::event::{Event, EventKind};
use crate::trace::query::{Call, CallEnd, HandlerRun, Trace};
use crate::trace::render::rows::{run_end, said};
use crate::units::fmt_duration;

/// Shown where a call or run has no end, so cells never collapse.
const NONE: &str = "-";

/// Every call, with the status tonic reported next to the spec's.
pub(super) fn calls(page: &mut Page, calls: &[Call], known: &BTreeSet<String>) {
    page.section("calls", "Calls");
    if calls.is_empty() {
        return none(page);
    }
    table(
        page,
        &[
            "call",
            "where",
            "path",
            "started",
            "took",
            "tonic said",
            "spec",
            "why they differ",
        ],
    );
    for c in calls {
        let (class, tonic, spec, why) = match &c.end {
            CallEnd::Status(o) if o.code != o.spec_code => {
                ("call differs", said(o), o.spec_code, o.rule.unwrap_or(NONE))
            }
            CallEnd::Status(o) => ("call", said(o), o.spec_code, NONE),
            CallEnd::Dropped => ("call", "dropped by the caller".into(), NONE, NONE),
            CallEnd::StoppedReading { message_len, flag } if *flag > 1 => (
                "call",
                format!("INTERNAL (its decoder, Compressed-Flag {flag} on a {message_len}-byte message)"),
                "INTERNAL",
                NONE,
            ),
            CallEnd::Undecodable { message_len } => (
                "call",
                format!("INTERNAL (its decoder, a {message_len}-byte message that is not protobuf)"),
                "INTERNAL",
                NONE,
            ),
            CallEnd::StoppedReading { message_len, .. } => (
                "call differs",
                format!("OUT_OF_RANGE (its decoder, a {message_len}-byte message)"),
                "RESOURCE_EXHAUSTED",
                crate::spec::rules::DECODE_LIMIT,
            ),
            // A call still waiting when the run ended is often why it
            // failed (a timeout names it): make it stand out.
            CallEnd::Open => ("call open", "open when the run ended".into(), NONE, NONE),
        };
        page.linked_row(
            class,
            known,
            &[
                &c.id.to_string(),
                &format!("{}→{}", c.host, c.target),
                // A call seen only where its connection attempt failed.
                if c.failed_connecting {
                    "(not seen)"
                } else {
                    &c.path
                },
                &fmt_duration(c.started),
                &took(c.latency()),
                &tonic,
                spec,
                why,
            ],
        );
    }
    end_table(page);
}

/// Every handler run and how it ended.
pub(super) fn handler_runs(page: &mut Page, runs: &[HandlerRun], known: &BTreeSet<String>) {
    page.section("handler-runs", "Handler runs");
    if runs.is_empty() {
        return none(page);
    }
    table(
        page,
        &[
            "run", "where", "path", "from", "call", "started", "took", "end",
        ],
    );
    for r in runs {
        let end = run_end(&r.end);
        let call = r.call.map(|c| c.to_string());
        page.linked_row(
            "handler",
            known,
            &[
                &r.id.to_string(),
                &r.host,
                &r.path,
                &r.from,
                call.as_deref().unwrap_or(NONE),
                &fmt_duration(r.started),
                &took(r.ended_at.map(|t| t.saturating_sub(r.started))),
                &end,
            ],
        );
    }
    end_table(page);
}

/// The faults recorded at the end of the run as never having acted.
pub(super) fn never_fired(page: &mut Page, events: &[Event]) {
    page.section("never-fired", "Faults that never fired");
    let mut faults = events.iter().filter_map(|e| match &e.kind {
        EventKind::FaultNeverFired { fault } => Some((e.host.as_str(), fault.as_str())),
        _ => None,
    });
    let Some(first) = faults.next() else {
        return none(page);
    };
    table(page, &["where", "fault"]);
    for (host, fault) in std::iter::once(first).chain(faults) {
        page.row("fault", &[host, fault]);
    }
    end_table(page);
}

/// [`Trace::stalls`], when the wire tap recorded frames to find them in.
pub(super) fn stalls(page: &mut Page, trace: &Trace) {
    let tapped = trace
        .events()
        .iter()
        .any(|e| matches!(e.kind, EventKind::Frame { .. }));
    if !tapped {
        return;
    }
    page.section("stalls", "Flow-control stalls");
    let stalls = trace.stalls(Duration::ZERO);
    if stalls.is_empty() {
        return none(page);
    }
    page.markup("<ul>\n");
    for stall in stalls {
        page.markup("<li>")
            .text(&stall.to_string())
            .markup("</li>\n");
    }
    page.markup("</ul>\n</section>\n");
}

fn took(d: Option<Duration>) -> String {
    d.map_or_else(|| NONE.to_owned(), fmt_duration)
}

fn none(page: &mut Page) {
    page.markup("<p class=\"none\">none</p>\n</section>\n");
}

fn table(page: &mut Page, headings: &[&'static str]) {
    page.markup("<table>\n")
        .head_row(headings)
        .markup("<tbody>\n");
}

fn end_table(page: &mut Page) {
    page.markup("</tbody>\n</table>\n</section>\n");
}
