use crate::recorder::event;
use std::time::Duration;

use crate::recorder::event::{
    CallId, Event, EventKind, Fate, FrameDetail, FrameFlags, GoAway, Outcome, RunId, SettingValues,
};
use crate::trace::query::Trace;
use crate::trace::render::RenderOptions;
use crate::wire::{ErrorCode, FrameType};

/// Breaks out of text, of a quoted attribute, and of a table cell.
const HOSTILE: &str = "<script>alert(\"x\")</script> & 'q'";
const HOST: &str = "pl\"ay<er>&";

/// Tags and attributes the page is made of; anything else came from data.
const TAGS: [&str; 41] = [
    "!DOCTYPE", "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "dl", "dt",
    "dd", "code", "section", "table", "thead", "tbody", "tr", "th", "td", "p", "ul", "li", "nav",
    "br", "a", "b", "span", "svg", "defs", "pattern", "rect", "g", "line", "text", "polygon",
    "circle", "details", "summary", "title",
];
const ATTRIBUTES: [&str; 34] = [
    "lang",
    "charset",
    "name",
    "content",
    "id",
    "class",
    "data-where",
    "http-equiv",
    "href",
    "data-k",
    "data-host",
    "data-id",
    "viewBox",
    "width",
    "height",
    "role",
    "aria-label",
    "x",
    "y",
    "x1",
    "y1",
    "x2",
    "y2",
    "points",
    "patternUnits",
    "patternTransform",
    "text-anchor",
    "cx",
    "cy",
    "r",
    "open",
    "lang",
    "content",
    "name",
];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn event(at: u64, host: &str, kind: EventKind) -> Event {
    Event::new(ms(at), host, kind)
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
            to: HOST.into(),
            stream: 0,
            frame,
            flags,
            detail,
            fate: fate.into(),
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
            EventKind::CallStarted(Box::new(event::CallStarted {
                call: CallId(1),
                target: "store".into(),
                path: path.clone(),
                timeout: None,
                parent: None,
            })),
        ),
        event(
            0,
            "store",
            EventKind::HandlerStarted(Box::new(event::HandlerStarted {
                run: RunId(1),
                path: path.clone(),
                from: HOST.into(),
                call: Some(CallId(1)),
                timeout: Some(ms(2)),
                nth: 1,
            })),
        ),
        event(
            1,
            "store",
            EventKind::HandlerFinished(Box::new(event::HandlerFinished {
                run: RunId(1),
                path: path.clone(),
                code: "UNAVAILABLE",
                message: HOSTILE.into(),
                ran: ms(1),
            })),
        ),
        frame(
            1,
            (FrameType::Settings, FrameFlags::ACK),
            FrameDetail::Settings {
                values: SettingValues::default(),
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
            FrameDetail::Data {
                len: 5,
                compressed_flag: None,
            },
            Fate::BehindHeld,
            false,
        ),
        frame(
            2,
            (FrameType::GoAway, FrameFlags::NONE),
            FrameDetail::GoAway(Box::new(GoAway {
                last_stream_id: 0,
                code: ErrorCode::NoError,
                debug: HOSTILE.as_bytes().into(),
            })),
            Fate::Injected,
            false,
        ),
        event(
            3,
            HOST,
            EventKind::CallEnded {
                call: CallId(1),
                path: path.into(),
                outcome: Box::new(Outcome {
                    code: "CANCELLED",
                    message: HOSTILE.into(),
                    spec_code: "DEADLINE_EXCEEDED",
                    rule: Some(crate::spec::rules::DEADLINE),
                }),
            },
        ),
        event(
            4,
            HOST,
            EventKind::Log(Box::new(event::Log {
                level: "WARN",
                target: HOSTILE.into(),
                message: format!("said {HOSTILE}"),
            })),
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
            rest.is_empty() || rest == "/" || name == "!DOCTYPE",
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
            everything.contains(&format!(" class=\"{class}\" data-where=")),
            "{class}: {everything}"
        );
    }
    let default = trace.render_html();
    assert!(!default.contains("quiet\""), "{default}");
    assert!(!default.contains("SETTINGS"), "{default}");
    assert!(everything.contains("c1 s0 SETTINGS ack"), "{everything}");
    assert!(
        default.contains("<a href=\"#only-c1\">c1</a> s0 PING ack 0000000000000000 [dropped]"),
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
    let timeline = &rpc[rpc.find("<section id=\"timeline\">").expect("a timeline")..];
    assert!(!timeline.contains("GOAWAY"), "{rpc}");
    assert!(
        !rpc.contains("id=\"connections\""),
        "no frame sequences: {rpc}"
    );
    // The summary is about the run, whatever the timeline shows.
    let fired = &rpc[rpc.find("<dd id=\"fired\">").expect("faults fired")..];
    assert!(fired.contains("GOAWAY NO_ERROR"), "{rpc}");
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
    for fetch in ["http://", "https://", "src=", "@import", "<link", "<script"] {
        assert!(!page.contains(fetch), "nothing fetched ({fetch}): {page}");
    }
    assert!(
        page.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"),
        "{page}"
    );
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

/// Every `href="#x"` and `url(#x)` of `page` names an `id="x"` of it.
fn assert_link_targets_exist(page: &str) {
    let ids: std::collections::BTreeSet<&str> = page
        .split(" id=\"")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    let mut links = 0;
    // The stylesheet names the waterfall's patterns whether or not the
    // page has a waterfall to draw them in.
    let patterns = page.contains("<svg class=\"waterfall\"");
    for (open, close) in [("href=\"#", '"'), ("url(#", ')')] {
        if open == "url(#" && !patterns {
            continue;
        }
        for target in page.split(open).skip(1) {
            let target = target.split(close).next().unwrap_or_default();
            assert!(ids.contains(target), "#{target} has no id in {page}");
            links += 1;
        }
    }
    assert!(links > 10, "{links} links: {page}");
}

#[test]
fn every_link_goes_to_an_element_of_the_page() {
    let trace = hostile_trace();
    for options in [
        RenderOptions::default(),
        RenderOptions::everything(),
        RenderOptions::rpc_only(),
    ] {
        let page = trace.render_html_with(&options);
        assert_link_targets_exist(&page);
        assert_only_own_markup(&page);
    }
}

#[test]
fn each_filter_has_its_banner_its_rule_and_rows_that_carry_its_key() {
    let page = hostile_trace().render_html_with(&RenderOptions::everything());
    let keys: Vec<&str> = page
        .split("<p class=\"only\" id=\"only-")
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect();
    // The call, its handler run, the connection, host 0 and host 1.
    for key in ["r1", "h1", "c1", "H0", "H1"] {
        assert!(keys.contains(&key), "{key} in {keys:?}");
    }
    assert!(page.contains("\n.only:target~table tbody tr{display:none}\n"));
    for key in keys {
        let rule = format!("#only-{key}:target~table tbody tr[data-k~={key}]{{display:table-row}}");
        assert!(page.contains(&rule), "{rule}");
        let rows = page
            .split("<tr id=\"t")
            .skip(1)
            .filter(|row| {
                let k = row.split("data-k=\"").nth(1).unwrap_or_default();
                k.split('"')
                    .next()
                    .unwrap_or_default()
                    .split(' ')
                    .any(|k| k == key)
            })
            .count();
        assert!(rows > 0, "no row carries {key}");
    }
    // The call's rows are its own and its handler run's, not the frames
    // of stream 0.
    let row_keys = |text: &str| {
        let row = page
            .split("<tr id=\"t")
            .skip(1)
            .find(|row| row.contains(text))
            .unwrap_or_else(|| panic!("{text} in {page}"));
        row.split("data-k=\"")
            .nth(1)
            .unwrap_or_default()
            .split('"')
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(row_keys("handler /x.Y/"), "H1 h1 r1");
    assert_eq!(row_keys("SETTINGS ack"), "H0 H1 c1");
}

#[test]
fn the_summary_comes_first_and_names_the_first_error_with_its_row() {
    let page = hostile_trace().render_html();
    let at = |s: &str| page.find(s).unwrap_or_else(|| panic!("{s} in {page}"));
    assert!(at("<section id=\"summary\">") < at("<section id=\"waterfall\">"));
    assert!(at("<section id=\"waterfall\">") < at("<section id=\"connections\">"));
    assert!(at("<section id=\"connections\">") < at("<section id=\"timeline\">"));
    assert!(at("<p class=\"verdict unjudged\">not judged") < at("<dd id=\"first-error\">"));
    let first = &page[at("<dd id=\"first-error\">")..];
    let first = &first[..first.find("</dd>").expect("its end")];
    assert!(
        first.contains("ended DEADLINE_EXCEEDED (tonic said CANCELLED"),
        "{first}"
    );
    // Its time links to its row, which is that call's end.
    let row = first
        .split("href=\"#")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("a link");
    let row_html = &page[at(&format!("<tr id=\"{row}\""))..];
    let row_html = &row_html[..row_html.find("</tr>").expect("its end")];
    assert!(row_html.contains("call differs"), "{row_html}");
    assert!(row_html.contains("ended DEADLINE_EXCEEDED"), "{row_html}");
    let judged = hostile_trace().render_html_judged(
        &RenderOptions::default(),
        Some(&crate::trace::render::RunVerdict::fail(
            "deadline propagation: <no>",
        )),
    );
    assert!(judged.contains("<p class=\"verdict fail\">FAIL: deadline propagation: &lt;no&gt;</p>"));
}

#[test]
fn the_waterfall_has_a_bar_per_call_and_run_on_its_hosts_lane() {
    let page = hostile_trace().render_html();
    let svg = &page[page.find("<svg class=\"waterfall\"").expect("a waterfall")..];
    let svg = &svg[..svg.find("</svg>").expect("its end")];
    let lane = |host: &str| {
        let open = format!("<g class=\"lane\" data-host=\"{host}\">");
        let lane = &svg[svg.find(&open).unwrap_or_else(|| panic!("{open} in {svg}"))..];
        lane[..lane.find("</g>").expect("its end")].to_owned()
    };
    let player = lane("pl&quot;ay&lt;er&gt;&amp;");
    let store = lane("store");
    assert!(
        player.contains("<rect class=\"call failed differs\" data-id=\"r1\""),
        "{player}"
    );
    assert!(
        store.contains("<rect class=\"run failed\" data-id=\"h1\""),
        "{store}"
    );
    assert_eq!(svg.matches("data-id=").count(), 2, "one bar each: {svg}");
    // h1's deadline (2ms after its start at 0) is a tick on its lane.
    assert!(
        store.contains("<title>h1 deadline at 2.000</title>"),
        "{store}"
    );
    // The injected GOAWAY is a mark on its sender's lane.
    assert!(store.contains("<polygon class=\"mark goaway\""), "{store}");
}

/// A long run stays light: each connection's diagram draws at most 400
/// rows and the page 1,200; what is left is one link to the rows.
#[test]
fn frame_sequences_draw_at_most_400_rows_a_connection_and_1200_a_page() {
    let mut events = Vec::new();
    for conn in 1..=4 {
        for i in 0..500 {
            let mut e = frame(
                i,
                (FrameType::Ping, FrameFlags::NONE),
                FrameDetail::Ping { payload: [0; 8] },
                Fate::Passed,
                false,
            );
            if let EventKind::Frame { conn: c, .. } = &mut e.kind {
                *c = conn;
            }
            events.push(e);
        }
    }
    events.sort_by_key(|e| e.at());
    let trace = Trace::new(1, vec![HOST.into(), "store".into()], events, ms(500));
    let page = trace.render_html();
    let arrows = |conn: u32| {
        let open = format!("id=\"conn-c{conn}\"");
        page.find(&open).map(|at| {
            let d = &page[at..];
            d[..d.find("</details>").expect("its end")]
                .matches("<a href=\"#t")
                .count()
        })
    };
    assert_eq!(
        [arrows(1), arrows(2), arrows(3), arrows(4)],
        [Some(400), Some(400), Some(400), None]
    );
    assert!(
        page.contains("… and 100 more rows of c1: <a href=\"#only-c1\">"),
        "{page}"
    );
    assert!(
        page.contains("Not drawn (the page draws 1200 rows of frames at most): <a href=\"#only-c4\">c4</a> (500 rows)"),
        "{page}"
    );
    assert_link_targets_exist(&page);
}

#[test]
fn a_row_links_only_the_ids_its_event_holds() {
    // Two handler runs, so `h2` is a filter; a middlebox's act whose words
    // name h2, the HTTP/2 library, on connection c1.
    let started = |run: u32| {
        event(
            0,
            "store",
            EventKind::HandlerStarted(Box::new(event::HandlerStarted {
                run: RunId(run),
                path: "/x.Y/Z".into(),
                from: "player".into(),
                call: None,
                timeout: None,
                nth: run,
            })),
        )
    };
    let refused = event(
        1,
        "store",
        EventKind::PolicyActed(Box::new(event::PolicyActed {
            conn: 1,
            to: "player".into(),
            policy: "Envoy".into(),
            action: event::PolicyAction::RefusedStream {
                stream: 5,
                open: 2,
                limit: 2,
            },
        })),
    );
    // A frame on c1, so that `c1` is a filter.
    let ack = frame(
        0,
        (FrameType::Settings, FrameFlags::ACK),
        FrameDetail::Settings {
            values: SettingValues::default(),
        },
        Fate::Passed,
        false,
    );
    let events = vec![started(1), started(2), ack, refused];
    let trace = Trace::new(1, vec!["store".into(), "player".into()], events, ms(2));
    let page = trace.render_html();
    let row = page
        .split("<tr id=\"t")
        .skip(1)
        .map(|row| row.split("</tr>").next().unwrap_or_default())
        .find(|row| row.contains("REFUSED_STREAM"))
        .unwrap_or_else(|| panic!("the act's row in {page}"));
    assert!(row.contains("<a href=\"#only-c1\">c1</a> Envoy:"), "{row}");
    assert!(row.contains(" and h2 rejects the request"), "{row}");
    assert!(!row.contains("#only-h2"), "{row}");
    // The handler run's own row links it.
    assert!(
        page.contains("<a href=\"#only-h2\">h2</a> handler"),
        "{page}"
    );
}
