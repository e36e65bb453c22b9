//! The HTML page of a trace: the text render's rows, escaped, byte-stable.

use grpc_chaos::trace::RenderOptions;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::catalog;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use tonic::Code;

const HOSTILE: &str = "<script>alert(\"x\")</script> & 'q'";

fn story(name: &str) -> Trace {
    let scenario = catalog::find(name).expect("story in the catalog");
    (scenario.simulate)(0).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Escaped for element content, written here rather than taken from the
/// crate under test.
fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// `page` without its links (`<a href="#only-r1">r1</a>` is `r1`): the
/// text the rows show.
fn without_links(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(at) = rest.find("<a") {
        let after = &rest[at + 2..];
        if !(after.starts_with(' ') || after.starts_with('>')) {
            out.push_str(&rest[..at + 2]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        rest = &after[after.find('>').expect("a tag's end") + 1..];
    }
    out.push_str(rest);
    out.replace("</a>", "")
}

/// The timeline cells of each row of the text render, escaped.
fn text_rows(trace: &Trace, options: &RenderOptions) -> Vec<String> {
    let text = trace.render_with(options);
    text.lines()
        .skip(1)
        .map(|line| {
            // `{t:>10}  {where:<20} {event}`; a where never has a space.
            let (t, rest) = line.split_at(10);
            let (place, event) = rest[2..].split_once(' ').expect("where and event");
            format!(
                "<td>{}</td><td>{}</td><td>{}</td></tr>",
                t.trim_start(),
                escaped(place),
                escaped(event.trim_start())
            )
        })
        .collect()
}

/// The `<tr …>` openings of the timeline.
fn timeline_rows(page: &str) -> usize {
    let start = page.find("<section id=\"timeline\">").expect("a timeline");
    let end = start + page[start..].find("</section>").expect("its end");
    page[start..end].matches("<tr id=\"t").count()
}

#[test]
fn every_row_of_the_text_render_is_a_row_of_the_page_in_order() {
    for name in [
        "slow-dependency",
        "receiver-decides-speed",
        "keepalive-mismatch",
    ] {
        let trace = story(name);
        for options in [
            RenderOptions::default(),
            RenderOptions::everything(),
            RenderOptions::rpc_only(),
        ] {
            let page = without_links(&trace.render_html_with(&options));
            let rows = text_rows(&trace, &options);
            assert_eq!(timeline_rows(&page), rows.len(), "{name} {options:?}");
            let mut from = 0;
            for row in rows {
                let at = page[from..].find(&row);
                let at = at
                    .unwrap_or_else(|| panic!("{name} {options:?}: {row} missing or out of order"));
                from += at + row.len();
            }
        }
    }
}

#[test]
fn default_options_hide_the_noise_rows_and_everything_shows_them() {
    let trace = story("slow-dependency");
    let default = without_links(&trace.render_html());
    let everything = without_links(&trace.render_html_with(&RenderOptions::everything()));
    let shown = text_rows(&trace, &RenderOptions::default());
    let noise: Vec<_> = text_rows(&trace, &RenderOptions::everything())
        .into_iter()
        .filter(|row| !shown.contains(row))
        .collect();
    assert!(
        noise.iter().any(|row| row.contains("SETTINGS")),
        "{noise:?}"
    );
    for row in &noise {
        assert!(!default.contains(row.as_str()), "default shows {row}");
        assert!(everything.contains(row.as_str()), "everything hides {row}");
    }
    assert!(!default.contains(" quiet\""), "{default}");
    assert_eq!(
        everything.matches(" quiet\"").count(),
        noise.len(),
        "each row the default hides is marked quiet"
    );
}

#[test]
fn a_hostile_grpc_message_is_shown_as_text() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .abort(Code::Internal, HOSTILE),
    );
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .save(SaveRequest::default())
            .await
            .expect_err("aborted");
        assert_eq!(err.message(), HOSTILE);
        Ok(())
    });
    let trace = sim.run()?;
    assert!(
        trace.render().contains("<script>alert("),
        "the text render has it unescaped"
    );
    let page = without_links(&trace.render_html_with(&RenderOptions::everything()));
    assert!(!page.contains("<script>alert"), "{page}");
    assert!(!page.contains("<script"), "the page has no script at all");
    // As the text render quotes it (`{:?}`), then escaped.
    let quoted = escaped(&format!("{HOSTILE:?}"));
    assert!(quoted.starts_with("\"&lt;script&gt;alert(\\\"x\\\")&lt;/script&gt; &amp; 'q'"));
    assert!(
        page.contains(&format!("<td>INTERNAL {quoted}</td>")),
        "{page}"
    );
    assert!(page.contains(&format!(
        "r1 call /tt.v1.Store/Save ended INTERNAL {quoted}"
    )));
    Ok(())
}

#[test]
fn the_same_seed_gives_the_same_page() {
    let a = story("receiver-decides-speed").render_html_with(&RenderOptions::everything());
    let b = story("receiver-decides-speed").render_html_with(&RenderOptions::everything());
    assert!(a == b, "two runs of one seed gave different pages");
    assert!(a.contains("<section id=\"stalls\">\n<h2>Flow-control stalls</h2>\n<ul>\n<li>"));
}

#[test]
fn slow_dependency_page() {
    insta::assert_snapshot!(story("slow-dependency").render_html_with(&RenderOptions::rpc_only()));
}

/// A run that times out: the call it waits on stands out in the summary,
/// and the page is what the failure artifact keeps.
#[test]
fn a_call_open_when_the_run_ended_stands_out() {
    let mut sim = Sim::builder()
        .seed(1)
        .duration(std::time::Duration::from_secs(2))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).hang());
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .save(SaveRequest::default())
            .await?;
        Ok(())
    });
    let err = sim.run().expect_err("the call never ends");
    let page = without_links(&err.trace().expect("kept").render_html());
    assert!(
        page.contains("<tr class=\"call open\"><td>r1</td>"),
        "{page}"
    );
}
