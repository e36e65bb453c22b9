//! The catalog's middlebox stories (issue 15), each run against the
//! reference services: what it must show, pinned with numbers, plus a
//! snapshot of its trace.

use grpc_chaos::trace::{CallEnd, RunEnd};
use grpc_chaos_scenarios::services::{SAVE, WATCH};
use grpc_chaos_tests::{ms, story};

#[test]
fn nginx_read_timeout_fails_the_call_at_60s_with_its_504_page() {
    let (trace, report) = story("nginx-read-timeout");
    let call = trace.calls_from("player").next().expect("a call");
    // tonic reads nginx's HTML page as a gRPC message: its decoder stops at
    // a Compressed-Flag of 60 (`<`), and tonic says INTERNAL.
    assert!(
        matches!(call.end, CallEnd::StoppedReading { flag: 60, .. }),
        "{:?}",
        call.end
    );
    let ended = call.ended_at.expect("ended");
    assert!(ended >= ms(60_000) && ended < ms(60_100), "{ended:?}");
    let run = trace
        .runs_on("store")
        .find(|r| r.path == SAVE)
        .expect("ran");
    assert_eq!(run.end, RunEnd::Dropped);
    assert!(
        report.happened.contains("nginx's 504 page: sent"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(trace.render());
}

#[test]
fn gcp_lifetime_cap_cuts_a_healthy_watch_at_30s() {
    let (trace, _) = story("gcp-lifetime-cap");
    let call = trace.calls_from("player").next().expect("a call");
    assert_eq!(call.outcome().map(|o| o.code), Some("CANCELLED"));
    let run = trace
        .runs_on("gateway")
        .find(|r| r.path == WATCH)
        .expect("ran");
    assert_eq!(run.end, RunEnd::Dropped);
    insta::assert_snapshot!(trace.render());
}

#[test]
fn proxy_stream_limit_refuses_a_cold_burst_and_queues_a_warm_one() {
    let (trace, report) = story("proxy-stream-limit");
    assert_eq!(trace.handler_runs().len(), 8);
    assert!(
        report
            .happened
            .starts_with("cold burst: 2 OK, 4 UNAVAILABLE"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(trace.render());
}

#[test]
fn nlb_idle_reset_resets_the_next_call_and_pings_keep_the_flow() {
    let (trace, report) = story("nlb-idle-reset");
    let second = trace.calls_from("player").nth(1).expect("a second call");
    assert_eq!(
        second
            .outcome()
            .map(|o| (o.code, o.message.as_str(), o.spec_code)),
        Some(("UNKNOWN", "transport error", "UNAVAILABLE"))
    );
    let ended = second.ended_at.expect("ended");
    assert!(ended >= ms(400_000) && ended < ms(400_100), "{ended:?}");
    // The reset HEADERS never reached the store; the pinger's did.
    assert_eq!(trace.runs_on("store").count(), 3);
    assert!(
        report
            .happened
            .ends_with("the pinger's second Save ended OK"),
        "{}",
        report.happened
    );
    insta::assert_snapshot!(trace.render());
}
