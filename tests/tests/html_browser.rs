//! The HTML page in a real browser: catalog stories rendered as the CLI
//! renders them, opened with headless Chromium, and the DOM it dumps
//! checked: the summary says the verdict and the first failure first, the
//! waterfall has a bar per call and per handler run on the right lanes,
//! every link goes to an element of the page, and the page made no network
//! request (Chromium's net log, checked against a control page that does
//! make one). Screenshots land under `target/grpc-chaos/screenshots/`.
//!
//! Needs Debian's `chromium` (`apt-get install -y --no-install-recommends
//! chromium`). Without it the test says so and passes, except in CI (`CI`
//! set), where a missing browser fails it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::{RenderOptions, RunVerdict};
use grpc_chaos::Trace;
use grpc_chaos_scenarios::catalog::{self, Verdict};

/// Stories whose pages are opened: a crash and its outage, an orphan, a
/// queue, a retry storm.
const STORIES: [&str; 4] = ["store-restart", "fresh-request", "queueing", "retry-storm"];

/// The flags every run of the browser gets: headless, no sandbox (CI runs
/// as root), and none of Chromium's own background traffic.
const FLAGS: [&str; 8] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
];

/// Longest a browser run may take (wall time) before it is killed. The
/// wall clock and the polling sleep below are outside any simulation: they
/// wait for the browser process, after the traces were rendered.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

fn browser() -> Option<PathBuf> {
    let path = PathBuf::from("/usr/bin/chromium");
    path.is_file().then_some(path)
}

/// `<target>/grpc-chaos/<leaf>`, next to the CLI's traces.
fn target_dir(leaf: &str) -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let target = tmp.parent().map_or_else(|| tmp.clone(), Path::to_path_buf);
    let dir = target.join("grpc-chaos").join(leaf);
    std::fs::create_dir_all(&dir).expect("a writable target dir");
    dir
}

/// Runs the browser on `page` with `extra` flags and a fresh profile;
/// returns its stdout, read while it runs (a DOM bigger than a pipe's
/// buffer would otherwise block it) and to its end (the browser's helper
/// processes may still be writing when the first one exits).
fn chromium(browser: &Path, page: &Path, name: &str, extra: &[String]) -> String {
    let profile = target_dir("browser-profiles").join(name);
    let _ = std::fs::remove_dir_all(&profile);
    let mut child = Command::new(browser)
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let mut stdout = child.stdout.take().expect("its stdout");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut out).map(|_| out)
    });
    let started = Instant::now();
    loop {
        if child.try_wait().expect("chromium runs").is_some() {
            break;
        }
        if started.elapsed() > BROWSER_TIMEOUT {
            let _ = child.kill();
            panic!(
                "chromium on {} took over {BROWSER_TIMEOUT:?}",
                page.display()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().expect("its status");
    assert!(status.success(), "chromium failed on {}", page.display());
    reader
        .join()
        .expect("the reader")
        .expect("chromium's stdout is UTF-8")
}

/// The DOM of `page` as the browser built it, and the URLs the page itself
/// asked the network for (from `--log-net-log`).
fn open(browser: &Path, page: &Path, name: &str) -> (String, Vec<String>) {
    let log = target_dir("browser-profiles").join(format!("{name}.netlog.json"));
    let dom = chromium(
        browser,
        page,
        name,
        &[
            "--dump-dom".into(),
            format!("--log-net-log={}", log.display()),
        ],
    );
    let log = std::fs::read_to_string(&log).expect("a net log");
    (dom, page_requests(&log))
}

/// The requests a page started, from a Chromium net log: each request
/// start (an event with a `url` and a `method`) whose initiator is a page
/// (`null` for a file:// page, or a page's origin) rather than the browser
/// itself (`not an origin`: its own time and account checks, which the
/// flags cannot all turn off), or whose network isolation key is the
/// file:// page's. The page's own file:// load is not a request.
fn page_requests(log: &str) -> Vec<String> {
    let log: serde_json::Value = serde_json::from_str(log).expect("the net log is JSON");
    let mut urls = BTreeSet::new();
    for e in log["events"].as_array().expect("events") {
        let p = &e["params"];
        let (Some(url), Some(_)) = (p["url"].as_str(), p["method"].as_str()) else {
            continue;
        };
        if url.starts_with("file:") {
            continue;
        }
        let initiator = p["initiator"].as_str().unwrap_or("not an origin");
        let key = p["network_isolation_key"].as_str().unwrap_or_default();
        if initiator != "not an origin" || key.contains("file://") {
            urls.insert(url.to_owned());
        }
    }
    urls.into_iter().collect()
}

/// The `(tag's text, its attribute's value)` of every `attr="…"` in `html`.
fn values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
    let open = format!(" {attr}=\"");
    html.split(open.as_str())
        .skip(1)
        .filter_map(|s| s.split('"').next())
        .collect()
}

/// The element that starts at `open` in `html`, up to the first `close`.
fn element<'a>(html: &'a str, open: &str, close: &str) -> &'a str {
    let at = html
        .find(open)
        .unwrap_or_else(|| panic!("{open} in the DOM"));
    let rest = &html[at..];
    &rest[..rest.find(close).unwrap_or(rest.len())]
}

/// Each waterfall lane's host (as the DOM serialises the attribute) and the
/// ids of its bars.
fn lanes(dom: &str) -> BTreeMap<String, BTreeSet<String>> {
    let svg = element(dom, "<svg class=\"waterfall\"", "</svg>");
    svg.split("<g class=\"lane\" data-host=\"")
        .skip(1)
        .map(|lane| {
            let (host, rest) = lane.split_once('"').expect("a host");
            let rest = &rest[..rest.find("</g>").unwrap_or(rest.len())];
            let ids = values(rest, "data-id")
                .into_iter()
                .map(String::from)
                .collect();
            (host.to_owned(), ids)
        })
        .collect()
}

/// The bars each host's lane must have: its calls and its handler runs.
fn expected_lanes(trace: &Trace) -> BTreeMap<String, BTreeSet<String>> {
    let mut lanes: BTreeMap<String, BTreeSet<String>> = trace
        .hosts()
        .iter()
        .map(|h| (h.clone(), BTreeSet::new()))
        .collect();
    for c in trace.calls() {
        lanes
            .entry(c.host.clone())
            .or_default()
            .insert(c.id.to_string());
    }
    for r in trace.handler_runs() {
        lanes
            .entry(r.host.clone())
            .or_default()
            .insert(r.id.to_string());
    }
    lanes
}

/// The page of a story as the CLI writes it: default options, the story's
/// verdict on top.
fn story_page(name: &str, dir: &Path) -> (PathBuf, Trace, RunVerdict) {
    let story = catalog::find(name).expect("a story of the catalog");
    let (report, trace) = story.run(0);
    let trace = trace.unwrap_or_else(|| panic!("{name} kept no trace"));
    let verdict = match &report.verdict {
        Verdict::Pass => RunVerdict::pass(&report.happened),
        Verdict::Fail(why) => RunVerdict::fail(why),
    };
    let page = dir.join(format!("{name}.html"));
    let html = trace.render_html_judged(&RenderOptions::default(), Some(&verdict));
    std::fs::write(&page, html).expect("the page is written");
    (page, trace, verdict)
}

fn check_story(browser: &Path, name: &str, pages: &Path, shots: &Path) {
    let (page, trace, verdict) = story_page(name, pages);
    let (dom, requests) = open(browser, &page, name);
    assert!(
        requests.is_empty(),
        "{name} asked the network for {requests:?}"
    );
    assert!(
        dom.contains("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"),
        "{name}: the CSP is in the DOM"
    );
    // Summary first: the first section after the header and the nav, the
    // verdict its first line, the first failure the next.
    let body = &dom[dom.find("<body>").expect("a body")..];
    let first_section = values(body, "id")
        .into_iter()
        .find(|id| body.contains(&format!("<section id=\"{id}\">")));
    assert_eq!(first_section, Some("summary"), "{name}");
    let summary = element(body, "<section id=\"summary\">", "</section>");
    let verdict_line = element(summary, "<p class=\"verdict", "</p>");
    let word = if verdict.passed() { "PASS: " } else { "FAIL: " };
    assert!(verdict_line.contains(word), "{name}: {verdict_line}");
    let first = element(summary, "<dd id=\"first-error\">", "</dd>");
    assert!(
        summary.find("<p class=\"verdict").expect("verdict")
            < summary.find("first-error").expect("first error"),
        "{name}: the verdict comes first"
    );
    // The first call the trace shows ending with an error by the spec's
    // code (none of these stories has a handler panic or a protocol error).
    let failed = trace.events().iter().find_map(|e| match &e.kind {
        EventKind::CallEnded {
            call,
            path,
            outcome,
        } if outcome.spec_code != "OK" => Some((call.to_string(), path.clone(), outcome.spec_code)),
        _ => None,
    });
    match failed {
        Some((id, path, code)) => {
            let said = format!(">{id}</a> call {path} ended {code}");
            assert!(first.contains(&said), "{name}: {said} in {first}");
            // Its time links to the row of that call's end.
            let row = values(first, "href")[0].trim_start_matches('#');
            let row = element(body, &format!("<tr id=\"{row}\""), "</tr>");
            assert!(
                row.contains(&format!("{id}</a> call {path} ended")),
                "{name}: {row}"
            );
        }
        None => assert!(first.contains("none"), "{name}: {first}"),
    }
    // A bar per call and per handler run, on its host's lane.
    assert_eq!(lanes(&dom), expected_lanes(&trace), "{name}: bars by lane");
    // Every link goes to an element of the page; nothing links out.
    let ids: BTreeSet<&str> = values(&dom, "id").into_iter().collect();
    let hrefs = values(&dom, "href");
    assert!(
        hrefs.len() > trace.calls().len(),
        "{name}: {} links",
        hrefs.len()
    );
    for href in hrefs {
        let target = href
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{name}: a link out of the page: {href}"));
        assert!(ids.contains(target), "{name}: #{target} has no element");
    }
    let shot = shots.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    chromium(
        browser,
        &page,
        &format!("{name}-shot"),
        &[
            "--hide-scrollbars".into(),
            "--window-size=1300,1400".into(),
            format!("--screenshot={}", shot.display()),
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{}: {e}", shot.display()));
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{name}: a picture"
    );
}

/// The net-log check catches a request, and the page's CSP stops one: a
/// page with an image on a local port is seen asking for it; the same page
/// with the CSP is not.
fn check_the_network_check(browser: &Path, pages: &Path) {
    let img = "<img src=\"http://127.0.0.1:9/pixel.png\">";
    let bare = pages.join("control.html");
    std::fs::write(
        &bare,
        format!("<!DOCTYPE html><html><body>{img}</body></html>"),
    )
    .expect("control page");
    let (_, seen) = open(browser, &bare, "control");
    assert_eq!(
        seen,
        ["http://127.0.0.1:9/pixel.png"],
        "the control's request is seen"
    );
    let guarded = pages.join("control-csp.html");
    std::fs::write(
        &guarded,
        format!(
            "<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"></head><body>{img}</body></html>"
        ),
    )
    .expect("control page");
    let (_, seen) = open(browser, &guarded, "control-csp");
    assert!(seen.is_empty(), "the CSP let {seen:?} through");
}

#[test]
fn catalog_pages_in_chromium_put_the_failure_first_and_fetch_nothing() {
    let Some(browser) = browser() else {
        let how = "install it with `apt-get install -y --no-install-recommends chromium` \
                   (Debian's package; .ci/run does this in CI)";
        assert!(
            std::env::var_os("CI").is_none(),
            "no /usr/bin/chromium in CI: {how}"
        );
        eprintln!("skipped: no /usr/bin/chromium; {how}");
        return;
    };
    let pages = target_dir("browser-pages");
    let shots = target_dir("screenshots");
    check_the_network_check(&browser, &pages);
    for name in STORIES {
        check_story(&browser, name, &pages, &shots);
    }
    eprintln!("screenshots in {}", shots.display());
}
