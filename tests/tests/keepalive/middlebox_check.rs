//! `check_middlebox`: the one-line question "does this channel's keepalive
//! keep a Watch alive through this box?", answered with a typed report.
//! Times are simulated.

use std::time::Duration;

use grpc_chaos::check::{check_middlebox, Traffic};
use grpc_chaos::policy::Middlebox;
use grpc_chaos_tests::secs;

/// An NLB (350 s TCP idle, any byte resets it): a silent Watch lives 10
/// minutes when the channel PINGs every 60 s. Without keepalive the NLB
/// forgets the flow at 350 s and tells no one; the Watch is cut only at
/// the next frame on it, here the probe server's trailers when the call
/// ends at 600 s, which never reach the client.
#[test]
fn keepalive_keeps_a_silent_watch_alive_through_an_nlb_and_nothing_else_does() -> grpc_chaos::Result
{
    let with = check_middlebox(
        |e| e.http2_keep_alive_interval(secs(60)),
        Middlebox::aws_nlb(),
        Traffic::LongCall,
        secs(10 * 60),
    )?;
    assert!(with.survived(), "{with}");
    assert_eq!(with.pings.1, 0, "an NLB forwards PINGs: {with}");
    assert!(with.pings.0 >= 9, "{with}");
    assert!(
        with.to_string()
            .starts_with("alive through AWS NLB for 600000ms"),
        "{with}"
    );

    let without = check_middlebox(
        |e| e,
        Middlebox::aws_nlb(),
        Traffic::LongCall,
        secs(10 * 60),
    )?;
    assert!(!without.survived(), "{without}");
    let at = without.cut_after().expect("cut");
    assert_eq!(at, secs(600), "{without}");
    assert!(
        without.to_string().starts_with(
            "cut by AWS NLB after 600000ms (frame after the idle timeout: RST; the flow was \
             forgotten at 350020ms, this HEADERS from the server did not pass); calls end with \
             UNKNOWN"
        ),
        "{without}"
    );
    // The expiry itself is only the box's act, at 350 s: nothing was sent.
    assert!(
        without
            .trace
            .render()
            .contains("forgets the flow, nothing sent: idle timeout 350000ms: no frame since 20ms"),
        "{without}"
    );
    Ok(())
}

/// An ALB answers PINGs itself and they do not reset its 60 s idle timer:
/// whatever the keepalive, a silent Watch is cut at 60 s, and tonic reports
/// it as UNKNOWN where the spec says UNAVAILABLE.
#[test]
fn no_keepalive_keeps_a_silent_watch_alive_through_an_alb() -> grpc_chaos::Result {
    let report = check_middlebox(
        |e| e.http2_keep_alive_interval(secs(20)),
        Middlebox::aws_alb(),
        Traffic::LongCall,
        secs(5 * 60),
    )?;
    assert!(!report.survived());
    let at = report.cut_after().expect("cut");
    assert!(at >= secs(60) && at < secs(61), "{report}");
    let (sent, answered) = report.pings;
    assert!(sent >= 2 && answered == sent, "{report}");
    let end = report.calls_end.as_ref().expect("a call failed");
    assert_eq!(
        (end.code, end.spec_code),
        ("UNKNOWN", "UNAVAILABLE"),
        "{report}"
    );
    assert!(
        report.to_string().contains("idle timeout 60000ms"),
        "{report}"
    );
    Ok(())
}

/// A stream that delivers a message every 30 s survives an ALB, and a
/// misconfigured box is the run's error.
#[test]
fn traffic_keeps_it_alive_and_a_bad_box_is_an_error() -> grpc_chaos::Result {
    let report = check_middlebox(
        |e| e,
        Middlebox::aws_alb(),
        Traffic::Streaming { every: secs(30) },
        secs(5 * 60),
    )?;
    assert!(report.survived(), "{report}");
    let mut bad = Middlebox::envoy();
    bad.max_concurrent_streams = Some(0);
    let err = check_middlebox(|e| e, bad, Traffic::LongCall, secs(60)).expect_err("bad box");
    assert!(err.is_misconfigured(), "{err}");
    Ok(())
}

/// A check of no time, one longer than a run simulates, a stream faster
/// than the check's tick, and a box timer past a year are typed errors
/// that say what to change — not a report of "alive for 0ms", a panic on
/// an overflowing addition, or a minute of wall time spent streaming.
#[test]
fn out_of_range_checks_and_timers_are_misconfigurations() {
    let alb = Middlebox::aws_alb;
    let cases: [(&str, grpc_chaos::Result<_>); 4] = [
        (
            "the check's duration is 0",
            check_middlebox(|e| e, alb(), Traffic::LongCall, Duration::ZERO),
        ),
        (
            "longer than a run simulates (365 days)",
            check_middlebox(|e| e, alb(), Traffic::LongCall, Duration::MAX),
        ),
        (
            "Traffic::Streaming { every: 0ms } is shorter than the check's 10ms tick",
            check_middlebox(
                |e| e,
                alb(),
                Traffic::Streaming {
                    every: Duration::ZERO,
                },
                secs(60),
            ),
        ),
        ("connection_idle.after = ", {
            let mut mb = alb();
            if let Some(idle) = mb.connection_idle.as_mut() {
                idle.after = Duration::MAX;
            }
            check_middlebox(|e| e, mb, Traffic::LongCall, secs(60))
        }),
    ];
    for (words, result) in cases {
        let err = result.expect_err(words);
        assert!(err.is_misconfigured(), "{words}: {err}");
        assert!(err.to_string().contains(words), "{words}: {err}");
    }
    let mut capped = alb();
    capped.connection_lifetime = Some(grpc_chaos::policy::ConnectionLifetime::new(
        secs(60),
        Duration::MAX,
    ));
    let err = check_middlebox(|e| e, capped, Traffic::LongCall, secs(60)).expect_err("grace");
    assert!(
        err.to_string().contains("has connection_lifetime.grace = ")
            && err.to_string().contains("365 days"),
        "{err}"
    );
}
