//! The nginx preset against real nginx 1.22.1 (issue 27): each scenario
//! `calibration/nginx/record.py` recorded (fixtures in
//! `calibration/fixtures/nginx/run*/`) runs in the sim with
//! [`Middlebox::nginx`] set to the recording's timers, and each behaviour
//! is compared frame for frame (`super::calibration` says how). The table
//! `behaviour | preset | real | match` is printed (`-- --nocapture`).

mod world;

use std::time::Duration;

use super::calibration::{check, Calibration, Row, View};
use grpc_chaos::policy::Middlebox;

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

#[test]
fn the_nginx_preset_matches_nginx_1_22_1_or_says_where_not() -> grpc_chaos::Result {
    check(&Calibration {
        proxy: "nginx",
        rows: ROWS,
        known: KNOWN,
        run: |scenario| world::run(scenario, preset(scenario)),
        window: world::window,
    })
}
