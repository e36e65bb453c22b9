//! The nginx preset against real nginx 1.22.1 (issue 27): each scenario
//! `calibration/nginx/record.py` recorded (fixtures in
//! `calibration/fixtures/nginx/run*/`) runs in the sim with
//! [`Middlebox::nginx`] set to the recording's timers, and each behaviour
//! is compared frame for frame: the same marks in the same order, each
//! within [`TOLERANCE_MS`] of the real time. The table `behaviour | preset |
//! real | match` is printed (`-- --nocapture`). A row passes when it
//! matches one of the real runs, or when it is in [`KNOWN`] with both
//! sides exactly as listed there: a fixture or a preset that changes a row
//! fails the test either way.

mod marks;
mod world;

use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use marks::{Mark, Recording};

/// How far a simulated mark may be from the real one, ms. nginx's timers
/// fired within 6 ms of their setting in every recorded run; the sim adds
/// a 1 ms link each way.
const TOLERANCE_MS: f64 = 150.0;

/// The recorded runs.
const RUNS: [&str; 2] = ["run1", "run2"];

/// Which marks a behaviour looks at.
#[derive(Clone, Copy)]
enum View {
    /// The first SETTINGS the client reads and the connection's first
    /// WINDOW_UPDATE (no times).
    Settings,
    /// Stream 1's frames to the client (no WINDOW_UPDATE).
    Stream,
    /// GOAWAY and the connection's end, at the client.
    Connection,
    /// How many PINGs (not ACKs) reached the client.
    ClientPings,
    /// RST_STREAM, GOAWAY and the connection's end at the backend.
    Upstream,
}

struct Row {
    behaviour: &'static str,
    scenario: &'static str,
    view: View,
}

const ROWS: &[Row] = &[
    Row {
        behaviour: "SETTINGS the client sees",
        scenario: "settings_and_unary",
        view: View::Settings,
    },
    Row {
        behaviour: "unary call the backend answers",
        scenario: "settings_and_unary",
        view: View::Stream,
    },
    Row {
        behaviour: "connection never used",
        scenario: "never_used",
        view: View::Connection,
    },
    Row {
        behaviour: "connection idle after a call",
        scenario: "idle_after_call",
        view: View::Connection,
    },
    Row {
        behaviour:
            "unary call, then the connection idles (RST_STREAM(NO_ERROR) after it in some runs)",
        scenario: "idle_after_call",
        view: View::Stream,
    },
    Row {
        behaviour: "connection idle after a call, the client PINGing every second",
        scenario: "idle_with_pings",
        view: View::Connection,
    },
    Row {
        behaviour: "unary, backend silent (read timer from the request's end)",
        scenario: "unary_silent_backend",
        view: View::Stream,
    },
    Row {
        behaviour: "client streaming, a message every 0.5 s, END_STREAM at 3 s, backend silent",
        scenario: "upload_messages_then_end",
        view: View::Stream,
    },
    Row {
        behaviour: "client streaming, a message every 0.5 s, no END_STREAM, backend silent",
        scenario: "upload_messages_no_end",
        view: View::Stream,
    },
    Row {
        behaviour: "after response headers: one message at 1 s, then silence",
        scenario: "headers_then_silent",
        view: View::Stream,
    },
    Row {
        behaviour: "after response headers: the client's messages do not re-arm the read timer",
        scenario: "client_data_after_headers",
        view: View::Stream,
    },
    Row {
        behaviour: "after response headers: backend PINGs every 0.6 s, trailers at 5 s",
        scenario: "backend_pings",
        view: View::Stream,
    },
    Row {
        behaviour: "backend PINGs reach the client",
        scenario: "backend_pings",
        view: View::ClientPings,
    },
    Row {
        behaviour: "silent client stream (client_body_timeout 2 s, read timeout 10 s)",
        scenario: "silent_client_stream",
        view: View::Stream,
    },
    Row {
        behaviour: "upstream at the read timeout before response headers",
        scenario: "unary_silent_backend",
        view: View::Upstream,
    },
    Row {
        behaviour: "upstream at the read timeout after response headers",
        scenario: "headers_then_silent",
        view: View::Upstream,
    },
    Row {
        behaviour: "upstream at client_body_timeout",
        scenario: "silent_client_stream",
        view: View::Upstream,
    },
];

/// Rows the sim does not reproduce: (behaviour, real, preset), each side
/// as the table prints it. The preset's docs say the same.
const KNOWN: &[(&str, &str, &str)] = &[
    // nginx terminates HTTP/2: the client reads nginx's SETTINGS; the box is
    // drawn transparent, so the sim's client reads the server's.
    (
        "SETTINGS the client sees",
        "SETTINGS INITIAL_WINDOW_SIZE=65536 MAX_CONCURRENT_STREAMS=128 MAX_FRAME_SIZE=16777215, WINDOW_UPDATE 2147418112",
        "SETTINGS INITIAL_WINDOW_SIZE=1048576 MAX_FRAME_SIZE=16384 MAX_HEADER_LIST_SIZE=16384, WINDOW_UPDATE 983041",
    ),
    // nginx ends it at client_header_timeout; tonic dials only on a call, so
    // the sim has no such connection (the preset would use keepalive_timeout).
    (
        "connection never used",
        "GOAWAY NO_ERROR last 0 @6.0s, closed @6.0s",
        "nothing",
    ),
    // nginx closes its upstream connection (one per request); the sim's
    // one connection gets RST_STREAM(CANCEL).
    (
        "upstream at the read timeout before response headers",
        "closed @2.0s",
        "RST_STREAM CANCEL @2.0s, GOAWAY NO_ERROR last 0 @2.5s",
    ),
    // The same after response headers.
    (
        "upstream at the read timeout after response headers",
        "closed @3.0s",
        "RST_STREAM CANCEL @3.0s, GOAWAY NO_ERROR last 0 @3.5s",
    ),
    // The same at client_body_timeout: the box resets the stream upstream
    // with the client's code, PROTOCOL_ERROR.
    (
        "upstream at client_body_timeout",
        "closed @2.0s",
        "RST_STREAM PROTOCOL_ERROR @2.0s, GOAWAY NO_ERROR last 0 @2.5s",
    ),
];

/// The preset with the recording's timers (`record.py`'s `TIMERS`): the
/// "read" server's, or the "body" server's for `silent_client_stream`.
fn preset(scenario: &str) -> Middlebox {
    let mut mb = Middlebox::nginx();
    let (read, body) = if scenario == "silent_client_stream" {
        (10_000, 2_000)
    } else {
        (2_000, 10_000)
    };
    if let Some(t) = mb.upstream_timeout.as_mut() {
        t.after = Duration::from_millis(read);
    }
    if let Some(t) = mb.connection_idle.as_mut() {
        t.after = Duration::from_millis(4_000);
    }
    if let Some(t) = mb.stream_idle.as_mut() {
        t.after = Duration::from_millis(body);
    }
    mb
}

fn view(rec: &Recording, v: View, window_ms: f64) -> Vec<Mark> {
    let inside = |m: &&Mark| m.t < window_ms - 50.0;
    // An untimed mark: its time is no part of the comparison.
    let untimed = |what: String| Mark {
        t: f64::NEG_INFINITY,
        stream: 0,
        what,
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
        View::Stream => rec
            .client
            .iter()
            .filter(inside)
            .filter(|m| m.stream == 1 && !m.what.starts_with("WINDOW_UPDATE"))
            .cloned()
            .collect(),
        View::Connection => rec
            .client
            .iter()
            .filter(inside)
            .filter(|m| m.what.starts_with("GOAWAY") || m.what == "closed")
            .cloned()
            .collect(),
        View::ClientPings => {
            let n = rec
                .client
                .iter()
                .filter(inside)
                .filter(|m| m.what == "PING")
                .count();
            vec![untimed(format!("{n} PINGs"))]
        }
        View::Upstream => rec
            .backend
            .iter()
            .filter(inside)
            .filter(|m| m.t > 0.0)
            .filter(|m| {
                ["RST_STREAM", "GOAWAY", "closed"]
                    .iter()
                    .any(|p| m.what.starts_with(p))
            })
            .cloned()
            .collect(),
    }
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

fn fixture(run: &str, scenario: &str) -> serde_json::Value {
    let path = format!(
        "{}/../calibration/fixtures/nginx/{run}/{scenario}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One row's verdict: the table line, and what is wrong with it.
fn judge(row: &Row, sim: &Recording) -> (String, Option<String>) {
    let window = world::window(row.scenario).as_secs_f64() * 1000.0;
    let preset = view(sim, row.view, window);
    let reals: Vec<Vec<Mark>> = RUNS
        .iter()
        .map(|run| view(&marks::real(&fixture(run, row.scenario)), row.view, window))
        .collect();
    let texts: Vec<String> = reals.iter().map(|r| text(r)).collect();
    let real_text = if texts.iter().all(|t| *t == texts[0]) {
        texts[0].clone()
    } else {
        format!("varies: {}", texts.join(" / "))
    };
    let matched = reals.iter().any(|r| same(&preset, r));
    let preset_text = text(&preset);
    let known = KNOWN.iter().find(|(b, _, _)| *b == row.behaviour);
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

#[test]
fn the_nginx_preset_matches_nginx_1_22_1_or_says_where_not() -> grpc_chaos::Result {
    let mut table = vec![
        "| behaviour | preset | real | match |".to_owned(),
        "|---|---|---|---|".to_owned(),
    ];
    let mut problems = Vec::new();
    let mut scenarios: Vec<&'static str> = Vec::new();
    for r in ROWS {
        if !scenarios.contains(&r.scenario) {
            scenarios.push(r.scenario);
        }
    }
    for scenario in scenarios {
        let trace = world::run(scenario, preset(scenario))?;
        let sim = marks::sim(&trace, "player", "store");
        for row in ROWS.iter().filter(|r| r.scenario == scenario) {
            let (line, problem) = judge(row, &sim);
            table.push(line);
            if let Some(p) = problem {
                problems.push(format!("{}: {p}", row.behaviour));
            }
        }
    }
    for (b, _, _) in KNOWN {
        assert!(
            ROWS.iter().any(|r| r.behaviour == *b),
            "KNOWN names no row: {b}"
        );
    }
    let table = table.join("\n");
    println!("{table}");
    assert!(problems.is_empty(), "{}\n\n{table}", problems.join("\n"));
    Ok(())
}
