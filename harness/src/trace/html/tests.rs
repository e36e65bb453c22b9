use std::time::Duration;

use crate::recorder::event::{
    CallId, Event, EventKind, Fate, FrameDetail, FrameFlags, Outcome, RunId,
};
use crate::trace::{RenderOptions, Trace};
use crate::wire::{ErrorCode, FrameType};

/// Breaks out of text, of a quoted attribute, and of a table cell.
const HOSTILE: &str = "<script>alert(\"x\")</script> & 'q'";
const HOST: &str = "pl\"ay<er>&";

/// Tags and attributes the page is made of; anything else came from data.
const TAGS: [&str; 24] = [
    "!DOCTYPE", "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt",
    "dd", "code", "section", "table", "thead", "tbody", "tr", "th", "td", "p", "ul", "li",
];
const ATTRIBUTES: [&str; 7] = [
    "lang",
    "charset",
    "name",
    "content",
    "id",
    "class",
    "data-where",
];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn event(at: u64, host: &str, kind: EventKind) -> Event {
    Event {
        at: ms(at),
        host: host.to_owned(),
        kind,
    }
}

fn frame(
    at: u64,
    (frame, flags): (FrameType, FrameFlags),
    detail: FrameDetail,
    fate: Fate,
    noise: bool,
) -> Event {
    event(
        at,
        "store",
        EventKind::Frame {
            conn: 1,
            to: HOST.to_owned(),
            stream: 0,
            frame,
            flags,
            detail,
            invalid: None,
            fate,
            noise,
        },
    )
}

/// One call from a hostile host to `store`, hostile strings in every field
/// that carries text, and a frame of each fate.
fn hostile_trace() -> Trace {
    let path = format!("/x.Y/{HOSTILE}");
    let events = vec![
        event(
            0,
            HOST,
            EventKind::CallStarted {
                call: CallId(1),
                target: "store".into(),
                path: path.clone(),
                timeout: None,
                parent: None,
            },
        ),
        event(
            1,
            "store",
            EventKind::HandlerFinished {
                run: RunId(1),
                path: path.clone(),
                code: "UNAVAILABLE",
                message: HOSTILE.into(),
                ran: ms(1),
            },
        ),
        frame(
            1,
            (FrameType::Settings, FrameFlags::ACK),
            FrameDetail::Settings {
                values: Box::new([]),
            },
            Fate::Passed,
            true,
        ),
        frame(
            1,
            (FrameType::Ping, FrameFlags::ACK),
            FrameDetail::Ping { payload: [0; 8] },
            Fate::Dropped,
            true,
        ),
        frame(
            1,
            (FrameType::Data, FrameFlags::NONE),
            FrameDetail::Data { len: 5 },
            Fate::BehindHeld,
            false,
        ),
        frame(
            2,
            (FrameType::GoAway, FrameFlags::NONE),
            FrameDetail::GoAway {
                last_stream_id: 0,
                code: ErrorCode::NoError,
                debug: HOSTILE.as_bytes().into(),
            },
            Fate::Injected,
            false,
        ),
        event(
            3,
            HOST,
            EventKind::CallEnded {
                call: CallId(1),
                path,
                outcome: Outcome {
                    code: "CANCELLED",
                    message: HOSTILE.into(),
                    spec_code: "DEADLINE_EXCEEDED",
                    rule: Some(crate::spec::rules::DEADLINE),
                },
            },
        ),
        event(
            4,
            HOST,
            EventKind::Log {
                level: "WARN",
                target: HOSTILE.into(),
                message: format!("said {HOSTILE}"),
            },
        ),
        event(
            5,
            "store",
            EventKind::FaultNeverFired {
                fault: HOSTILE.into(),
            },
        ),
    ];
    Trace::new(7, vec![HOST.into(), "store".into()], events, ms(5))
}

/// Every tag's name and attribute names are the page's own, and every
/// attribute value is quoted: data broke out of nothing.
fn assert_only_own_markup(page: &str) {
    for tag in page.split('<').skip(1) {
        let tag = tag.split('>').next().unwrap_or_default();
        let tag = tag.strip_prefix('/').unwrap_or(tag);
        let (name, mut rest) = tag.split_once(' ').unwrap_or((tag, ""));
        assert!(TAGS.contains(&name), "tag <{tag}> in {page}");
        while let Some((key, after)) = rest.trim_start().split_once("=\"") {
            assert!(ATTRIBUTES.contains(&key), "attribute {key} in <{tag}>");
            let (_, after) = after.split_once('"').expect("a closing quote");
            rest = after;
        }
        let rest = rest.trim();
        assert!(
            rest.is_empty() || name == "!DOCTYPE",
            "<{tag}> ends {rest:?}"
        );
    }
}

#[test]
fn strings_from_events_are_escaped_in_text_and_attributes() {
    let page = hostile_trace().render_html_with(&RenderOptions::everything());
    assert_only_own_markup(&page);
    assert!(!page.contains("<script"), "{page}");
    // grpc-message as the text render quotes it, then escaped.
    assert!(
        page.contains("&lt;script&gt;alert(\\\"x\\\")&lt;/script&gt; &amp; 'q'"),
        "{page}"
    );
    assert!(
        page.contains("data-where=\"pl&quot;ay&lt;er&gt;&amp;→store\""),
        "{page}"
    );
    assert!(
        page.contains("<td>store→pl\"ay&lt;er&gt;&amp;</td>"),
        "{page}"
    );
}

#[test]
fn rows_are_classed_by_kind_and_quiet_rows_only_with_noise() {
    let trace = hostile_trace();
    let everything = trace.render_html_with(&RenderOptions::everything());
    for class in [
        "call",
        "call differs",
        "frame behind",
        "handler",
        "frame quiet",
        "frame dropped",
        "frame injected",
        "log",
        "fault",
    ] {
        assert!(
            everything.contains(&format!("<tr class=\"{class}\" data-where=")),
            "{class}: {everything}"
        );
    }
    let default = trace.render_html();
    assert!(!default.contains("quiet\""), "{default}");
    assert!(!default.contains("SETTINGS"), "{default}");
    assert!(everything.contains("c1 s0 SETTINGS ack"), "{everything}");
    assert!(
        default.contains("c1 s0 PING ack 0000000000000000 [dropped]"),
        "a fault touched it"
    );
}

#[test]
fn summaries_show_both_codes_and_faults_that_never_fired() {
    let page = hostile_trace().render_html();
    assert!(page.contains("<tr class=\"call differs\">"), "{page}");
    assert!(page.contains("<td>DEADLINE_EXCEEDED</td>"), "{page}");
    assert!(page.contains("<td>deadline expired: spec"), "{page}");
    assert!(page.contains("<section id=\"never-fired\">"), "{page}");
    assert!(
        page.contains("<section id=\"stalls\">"),
        "frames were recorded"
    );
    let rpc = hostile_trace().render_html_with(&RenderOptions::rpc_only());
    assert!(!rpc.contains("id=\"stalls\""), "no frames shown: {rpc}");
    assert!(!rpc.contains("GOAWAY"), "{rpc}");
}

#[test]
fn the_header_names_the_seed_duration_and_hosts() {
    let page = hostile_trace().render_html();
    assert!(page.starts_with("<!DOCTYPE html>\n"), "{page}");
    assert!(page.ends_with("</html>\n"), "{page}");
    assert!(page.contains("<code>CHAOS_SEED=7</code>"), "{page}");
    assert!(page.contains("<dd>5ms</dd>"), "{page}");
    assert!(
        page.contains("<dd>pl\"ay&lt;er&gt;&amp;, store</dd>"),
        "{page}"
    );
    assert!(!page.contains("http"), "nothing fetched: {page}");
}

#[test]
fn an_empty_trace_still_makes_a_whole_page() {
    let page = Trace::new(0, Vec::new(), Vec::new(), Duration::ZERO).render_html();
    assert_only_own_markup(&page);
    assert_eq!(page.matches("<p class=\"none\">none</p>").count(), 3);
    assert!(
        !page.contains("id=\"stalls\""),
        "no frames, no stalls section"
    );
}
