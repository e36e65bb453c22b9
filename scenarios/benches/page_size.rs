//! How big the HTML page is and how long it takes to make and to open, for
//! the largest catalog story and for a run of 1,000 streams.
//!
//! Run with `cargo bench -p grpc-chaos-scenarios --bench page_size` (a
//! release build). For each run it prints the trace's events, the page's
//! bytes with the default options (what the CLI writes: DATA folded) and
//! with `RenderOptions::everything()`, the wall time `render_html` takes
//! (fastest of `BENCH_REPEAT`, default 5), and, when `/usr/bin/chromium`
//! exists, how long headless Chromium takes to load the page and dump its
//! DOM, less the time it takes for an empty page (its own start-up).
//!
//! The runs:
//! 1. the catalog story (seed 0) whose trace has the most events;
//! 2. 1,000 unary `Store/Load` calls in sequence through one recorded
//!    channel: 1,000 HTTP/2 streams on one connection.
//!
//! Wall time is read with `std::time::Instant` around the renders and the
//! browser, outside any simulation.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grpc_chaos::trace::RenderOptions;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::catalog;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::LoadRequest;
use grpc_chaos_scenarios::services::Store;

const STREAMS: u32 = 1000;

fn main() {
    let repeat = std::env::var("BENCH_REPEAT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(5u32)
        .max(1);
    let (name, largest) = catalog::all()
        .into_iter()
        .filter_map(|s| Some((s.name, (s.simulate)(0).ok()?)))
        .max_by_key(|(_, t)| t.events().len())
        .expect("the catalog has stories");
    let streams = streams(STREAMS);
    let dir = std::env::temp_dir().join(format!("grpc-chaos-page-size-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let browser = Path::new("/usr/bin/chromium");
    let empty = browser.is_file().then(|| {
        let page = dir.join("empty.html");
        std::fs::write(&page, "<!DOCTYPE html><html><body></body></html>").expect("written");
        best(repeat, || open(browser, &page, &dir))
    });
    println!("grpc-chaos page_size: fastest of {repeat} (wall clock: std::time::Instant)");
    println!();
    for (label, trace) in [
        (format!("largest catalog story ({name})"), &largest),
        (
            format!("{STREAMS} streams (sequential Store/Load)"),
            &streams,
        ),
    ] {
        let default = trace.render_html();
        let everything = trace.render_html_with(&RenderOptions::everything());
        let render = best(repeat, || {
            let t = Instant::now();
            std::hint::black_box(trace.render_html());
            t.elapsed()
        });
        let text = best(repeat, || {
            let t = Instant::now();
            std::hint::black_box(trace.render());
            t.elapsed()
        });
        println!("{label}");
        println!(
            "  {} events, {} calls, {} handler runs, {} timeline rows by default",
            trace.events().len(),
            trace.calls().len(),
            trace.handler_runs().len(),
            trace.render().lines().count() - 1
        );
        println!(
            "  page: {} bytes (default), {} bytes (everything)",
            default.len(),
            everything.len()
        );
        println!(
            "  render_html: {:.1} ms wall (the text render: {:.1} ms)",
            ms(render),
            ms(text)
        );
        if let Some(empty) = empty {
            let page = dir.join("page.html");
            std::fs::write(&page, &default).expect("written");
            let load = best(repeat, || open(browser, &page, &dir));
            println!(
                "  headless chromium, load and dump the DOM: {:.0} ms wall ({:.0} ms less an empty page's {:.0} ms)",
                ms(load),
                ms(load.saturating_sub(empty)),
                ms(empty)
            );
        }
        println!();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn best(repeat: u32, mut f: impl FnMut() -> Duration) -> Duration {
    (0..repeat).map(|_| f()).min().unwrap_or_default()
}

/// Wall time for headless Chromium to load `page` and dump its DOM.
fn open(browser: &Path, page: &Path, dir: &Path) -> Duration {
    let profile = dir.join("profile");
    let _ = std::fs::remove_dir_all(&profile);
    let t = Instant::now();
    let status = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("chromium starts");
    assert!(status.success(), "chromium failed on {}", page.display());
    t.elapsed()
}

/// `n` sequential unary calls through one recorded channel.
fn streams(n: u32) -> Trace {
    let mut sim = Sim::builder()
        .seed(1)
        .duration(Duration::from_millis(10) * n + Duration::from_secs(60))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("bench", move |c| async move {
        let mut client = StoreClient::new(c.channel("store"));
        for _ in 0..n {
            client
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await?;
        }
        Ok(())
    });
    sim.run()
        .unwrap_or_else(|e| panic!("the streams run failed: {e}"))
}
