//! What the proxies' calibration comparisons share (issue 27): reading a
//! recorded fixture (`calibration/fixtures/<proxy>/run*/`), the marks of a
//! recording, real or simulated ([`marks`]), the views a behaviour looks
//! at, and the verdict of each row against the runs and a `KNOWN` list.
//! A row passes when it matches one of the real runs frame for frame (the
//! same marks in the same order, each within [`TOLERANCE_MS`] of the real
//! time), or when it is in `KNOWN` with both sides exactly as listed there:
//! a fixture or a preset that changes a row fails the test either way.

pub mod backend;
pub mod marks;

use std::time::Duration;

use grpc_chaos::Trace;
use marks::{Mark, Recording};

/// How far a simulated mark may be from the real one, ms. nginx's and
/// Envoy's timers fired within 6 ms of their setting in every recorded
/// run; the sim adds a 1 ms link each way.
pub const TOLERANCE_MS: f64 = 150.0;

/// The recorded runs.
pub const RUNS: [&str; 2] = ["run1", "run2"];

/// Which marks a behaviour looks at.
#[derive(Clone, Copy)]
pub enum View {
    /// The first SETTINGS the client reads and the connection's first
    /// WINDOW_UPDATE (no times).
    Settings,
    /// Stream 1's frames to the client (no WINDOW_UPDATE).
    Stream,
    /// GOAWAY and the connection's end, at the client.
    Connection,
    /// The frames of every stream but stream 1 to the client (no
    /// WINDOW_UPDATE), GOAWAY and the connection's end.
    OtherStreams,
    /// How many PINGs (not ACKs) reached the client.
    ClientPings,
    /// RST_STREAM, GOAWAY and the connection's end at the backend.
    Upstream,
    /// Only the RST_STREAMs at the backend: for a proxy that pools its
    /// upstream connections (Envoy), whose backend never reads the
    /// client's GOAWAY or end (the box is drawn transparent, so the sim's
    /// backend does; `Upstream` shows that difference once).
    UpstreamResets,
}

/// One behaviour: which scenario shows it, through which view.
pub struct Row {
    pub behaviour: &'static str,
    pub scenario: &'static str,
    pub view: View,
}

/// A proxy's comparison: its fixtures' folder name, rows, known
/// mismatches (behaviour, real, preset, each as the table prints it), how
/// to run a scenario in the sim and how long its recording read.
pub struct Calibration {
    pub proxy: &'static str,
    pub rows: &'static [Row],
    pub known: &'static [(&'static str, &'static str, &'static str)],
    pub run: fn(&'static str) -> grpc_chaos::Result<Trace>,
    pub window: fn(&str) -> Duration,
}

fn view(rec: &Recording, v: View, window_ms: f64) -> Vec<Mark> {
    let inside = |m: &&Mark| m.t < window_ms - 50.0;
    // An untimed mark: its time is no part of the comparison.
    let untimed = |what: String| Mark {
        t: f64::NEG_INFINITY,
        stream: 0,
        what,
    };
    let connection = |m: &Mark| m.what.starts_with("GOAWAY") || m.what == "closed";
    let stream = |m: &Mark| m.stream != 0 && !m.what.starts_with("WINDOW_UPDATE");
    let pick = |keep: &dyn Fn(&Mark) -> bool| -> Vec<Mark> {
        rec.client
            .iter()
            .filter(inside)
            .filter(|m| keep(m))
            .cloned()
            .collect()
    };
    match v {
        View::Settings => {
            let first = |p: &str| {
                rec.client
                    .iter()
                    .find(|m| m.stream == 0 && m.what.starts_with(p))
            };
            [first("SETTINGS"), first("WINDOW_UPDATE")]
                .into_iter()
                .map(|m| untimed(m.map_or("none".into(), |m| m.what.clone())))
                .collect()
        }
        View::Stream => pick(&|m| m.stream == 1 && stream(m)),
        View::Connection => pick(&connection),
        View::OtherStreams => pick(&|m| (m.stream > 1 && stream(m)) || connection(m)),
        View::ClientPings => {
            let n = pick(&|m| m.what == "PING").len();
            vec![untimed(format!("{n} PINGs"))]
        }
        View::Upstream => upstream(rec, &["RST_STREAM", "GOAWAY", "closed"], window_ms),
        View::UpstreamResets => upstream(rec, &["RST_STREAM"], window_ms),
    }
}

/// The marks at the backend, after the request, that start with one of
/// `kinds`.
fn upstream(rec: &Recording, kinds: &[&str], window_ms: f64) -> Vec<Mark> {
    rec.backend
        .iter()
        .filter(|m| m.t > 0.0 && m.t < window_ms - 50.0)
        .filter(|m| kinds.iter().any(|p| m.what.starts_with(p)))
        .cloned()
        .collect()
}

/// The marks as the table prints them: `HEADERS :status 504 @2.0s, …`.
fn text(marks: &[Mark]) -> String {
    if marks.is_empty() {
        return "nothing".to_owned();
    }
    let one = |m: &Mark| match m.t {
        t if t.is_infinite() => m.what.clone(),
        t => format!("{} @{:.1}s", m.what, t / 1000.0),
    };
    marks.iter().map(one).collect::<Vec<_>>().join(", ")
}

fn same(sim: &[Mark], real: &[Mark]) -> bool {
    sim.len() == real.len()
        && sim
            .iter()
            .zip(real)
            .all(|(s, r)| s.what == r.what && (s.t == r.t || (s.t - r.t).abs() <= TOLERANCE_MS))
}

fn fixture(proxy: &str, run: &str, scenario: &str) -> serde_json::Value {
    let path = format!(
        "{}/../calibration/fixtures/{proxy}/{run}/{scenario}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One row's verdict: the table line, and what is wrong with it.
fn judge(c: &Calibration, row: &Row, sim: &Recording) -> (String, Option<String>) {
    let window = (c.window)(row.scenario).as_secs_f64() * 1000.0;
    let preset = view(sim, row.view, window);
    let reals: Vec<Vec<Mark>> = RUNS
        .iter()
        .map(|run| {
            let rec = marks::real(&fixture(c.proxy, run, row.scenario));
            view(&rec, row.view, window)
        })
        .collect();
    let texts: Vec<String> = reals.iter().map(|r| text(r)).collect();
    let real_text = if texts.iter().all(|t| *t == texts[0]) {
        texts[0].clone()
    } else {
        format!("varies: {}", texts.join(" / "))
    };
    let matched = reals.iter().any(|r| same(&preset, r));
    let preset_text = text(&preset);
    let known = c.known.iter().find(|(b, _, _)| *b == row.behaviour);
    let problem = match known {
        Some(_) if matched => Some("matches now: take it out of KNOWN".to_owned()),
        Some((_, real, _)) if *real != real_text => {
            Some(format!("the fixture changed; KNOWN says real = {real}"))
        }
        Some((_, _, p)) if *p != preset_text => {
            Some(format!("the preset changed; KNOWN says preset = {p}"))
        }
        None if !matched => Some("does not match and is not in KNOWN".to_owned()),
        _ => None,
    };
    let verdict = match (matched, known) {
        (true, _) => "yes",
        (false, Some(_)) => "no (known)",
        (false, None) => "NO",
    };
    let line = format!(
        "| {} | {preset_text} | {real_text} | {verdict} |",
        row.behaviour
    );
    (line, problem)
}

/// Runs every scenario of `c` in the sim, prints the table and fails
/// with each row that neither matches nor is known as listed.
pub fn check(c: &Calibration) -> grpc_chaos::Result {
    let mut table = vec![
        "| behaviour | preset | real | match |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    let mut problems = Vec::new();
    let mut scenarios: Vec<&'static str> = Vec::new();
    for r in c.rows {
        if !scenarios.contains(&r.scenario) {
            scenarios.push(r.scenario);
        }
    }
    for scenario in scenarios {
        let trace = (c.run)(scenario)?;
        let sim = marks::sim(&trace, "player", "store");
        for row in c.rows.iter().filter(|r| r.scenario == scenario) {
            let (line, problem) = judge(c, row, &sim);
            table.push(line);
            if let Some(p) = problem {
                problems.push(format!("{}: {p}", row.behaviour));
            }
        }
    }
    for (b, _, _) in c.known {
        assert!(
            c.rows.iter().any(|r| r.behaviour == *b),
            "KNOWN names no row: {b}"
        );
    }
    let table = table.join("\n");
    println!("{table}");
    assert!(problems.is_empty(), "{}\n\n{table}", problems.join("\n"));
    Ok(())
}
