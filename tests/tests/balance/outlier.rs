//! Outlier detection (gRFC A50) in the balanced channel
//! (`Host::balanced_channel_outlier_detection`): a replica that fails half
//! its calls is ejected at a sweep, gets no calls while out, returns after
//! the ejection time; what the trace and its JSON say; bad settings.

use std::time::Duration;

use grpc_chaos::balance::{FailurePercentageEjection, OutlierDetection, SuccessRateEjection};
use grpc_chaos::recorder::event::{BalancerChange, Ejection, EventKind};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::{ms, secs};

/// `replicas` stores, store-1 failing every 2nd Save, and a player making
/// `calls` Saves one after another, 10 ms apart, through one balanced
/// channel (with `detection` when given).
fn world(replicas: usize, calls: u32, detection: Option<OutlierDetection>) -> Sim {
    let mut sim = Sim::builder().seed(3).build();
    sim.servers("store", replicas, |s| {
        let store = Store::with_work(ms(2));
        let store = if s.name() == "store-1" {
            store.failing_every(2)
        } else {
            store
        };
        s.add_service(store.into_server())
    });
    sim.client("player", move |player| async move {
        let channel = match detection {
            Some(d) => player.balanced_channel_outlier_detection("store", d, |e| e),
            None => player.balanced_channel("store"),
        };
        let store = StoreClient::new(channel);
        for n in 0..calls {
            let req = SaveRequest {
                match_id: format!("m{n}"),
                points: 1,
            };
            // Each call's outcome is in the trace; the tests check them.
            let _ = store.clone().save(req).await;
            tokio::time::sleep(ms(10)).await;
        }
        Ok(())
    });
    sim
}

/// A 1 s interval and 2 s base ejection time (simulated), 5 calls to be
/// judged: short enough for a test, the rules A50's.
fn quick() -> OutlierDetection {
    OutlierDetection::default()
        .interval(secs(1))
        .base_ejection_time(secs(2))
        .success_rate_ejection(Some(SuccessRateEjection::default().request_volume(5)))
}

/// store-1's ejections and returns, with their times.
fn changes(trace: &Trace) -> Vec<(Duration, BalancerChange)> {
    trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Balancer(b)
                if matches!(
                    b.change,
                    BalancerChange::Ejected { .. } | BalancerChange::Unejected { .. }
                ) =>
            {
                assert_eq!(b.replica, "store-1", "only store-1 fails");
                Some((e.at(), b.change.clone()))
            }
            _ => None,
        })
        .collect()
}

/// When the player's calls to `replica` started.
fn picks(trace: &Trace, replica: &str) -> Vec<Duration> {
    trace
        .calls_from("player")
        .filter(|c| c.replica.as_deref() == Some(replica))
        .map(|c| c.started)
        .collect()
}

fn failed_between(trace: &Trace, from: Duration, until: Duration) -> usize {
    trace
        .calls_from("player")
        .filter(|c| c.started >= from && c.started < until)
        .filter(|c| !c.outcome().is_some_and(|o| o.is_ok()))
        .count()
}

#[test]
fn a_half_failing_replica_is_ejected_at_a_sweep_and_returns_after_the_ejection_time(
) -> grpc_chaos::Result {
    let trace = world(5, 800, Some(quick())).run()?;
    let seen = changes(&trace);
    let at: Vec<Duration> = seen.iter().map(|(t, _)| *t).collect();
    // Ejected at 1 s (30 s × 1 → here 2 s), back at 3 s; failing again in
    // [3 s, 4 s), ejected at 4 s for 2 × 2 s, back at 8 s.
    assert_eq!(at[..4], [secs(1), secs(3), secs(4), secs(8)], "{seen:?}");
    let BalancerChange::Ejected {
        why: Ejection::SuccessRate {
            mean_ppm,
            required_ppm,
        },
        successes,
        calls,
        ejected_for,
    } = seen[0].1
    else {
        panic!("{seen:?}");
    };
    assert_eq!(ejected_for, secs(2));
    // Every other call failed: half of an even count, or one off.
    assert!(
        successes * 2 >= calls - 1 && successes * 2 <= calls + 1,
        "{successes}/{calls}"
    );
    assert!(f64::from(successes) / f64::from(calls) < f64::from(required_ppm) / 1e6);
    assert!(required_ppm < mean_ppm);
    assert_eq!(seen[1].1, BalancerChange::Unejected { after: secs(2) });
    assert!(
        matches!(seen[2].1, BalancerChange::Ejected { ejected_for, .. } if ejected_for == secs(4))
    );
    // No call to store-1 while out (one may be on its way at the sweep).
    let to_one = picks(&trace, "store-1");
    assert!(!to_one
        .iter()
        .any(|t| (secs(1) + ms(1)..secs(3)).contains(t)));
    assert!(!to_one
        .iter()
        .any(|t| (secs(4) + ms(1)..secs(8)).contains(t)));
    assert!(to_one.iter().any(|t| (secs(3)..secs(4)).contains(t)));
    assert_eq!(failed_between(&trace, secs(1) + ms(1), secs(3)), 0);
    assert!(failed_between(&trace, ms(0), secs(1)) > 0);
    Ok(())
}

#[test]
fn without_outlier_detection_the_failures_go_on() -> grpc_chaos::Result {
    let trace = world(5, 500, None).run()?;
    assert!(changes(&trace).is_empty());
    for second in 0..5 {
        let from = secs(second);
        assert!(
            failed_between(&trace, from, from + secs(1)) > 0,
            "{second}s"
        );
    }
    Ok(())
}

#[test]
fn success_rate_cannot_eject_one_of_three_however_badly_it_fails() -> grpc_chaos::Result {
    // A50's line, mean − 1.9 stdev: with the other two at 100 %, it is
    // below 0 (1.9 > √2); minimum_hosts lowered to 3 so they are judged.
    let sr = SuccessRateEjection::default()
        .request_volume(5)
        .minimum_hosts(3);
    let detection = quick().success_rate_ejection(Some(sr));
    let trace = world(3, 300, Some(detection)).run()?;
    assert!(changes(&trace).is_empty());
    // Failure-percentage ejection, turned on with a 40 % threshold, does.
    let fp = FailurePercentageEjection::default()
        .threshold(40)
        .enforcement_percentage(100)
        .minimum_hosts(3)
        .request_volume(5);
    let detection = quick()
        .success_rate_ejection(None)
        .failure_percentage_ejection(Some(fp))
        .max_ejection_percent(34);
    let trace = world(3, 300, Some(detection)).run()?;
    let seen = changes(&trace);
    assert!(
        matches!(
            seen.first(),
            Some((t, BalancerChange::Ejected { why: Ejection::FailurePercentage { threshold: 40 }, .. }))
                if *t == secs(1)
        ),
        "{seen:?}"
    );
    Ok(())
}

#[test]
fn the_trace_and_its_json_say_why_and_for_how_long() -> grpc_chaos::Result {
    let trace = world(5, 300, Some(quick())).run()?;
    let render = trace.render();
    let lines: Vec<&str> = render.lines().filter(|l| l.contains(" ejected")).collect();
    insta::assert_snapshot!(lines.join("\n"));
    // The JSON carries the same numbers, typed (whitespace aside).
    let json: String = trace.to_json().split_whitespace().collect();
    assert!(json.contains(
        r#""change":{"state":"ejected","why":{"algorithm":"success_rate","mean_ppm":900000,"required_ppm":520000},"successes":6,"calls":12,"ejected_for_us":2000000}"#
    ));
    assert!(json.contains(r#""change":{"state":"unejected","after_us":2000000}"#));
    Ok(())
}

#[test]
fn bad_settings_are_errors_that_say_what_to_change() {
    let cases = [
        (
            quick().max_ejection_percent(150),
            "max_ejection_percent 150 is over 100; give a percentage from 0 to 100",
        ),
        (
            quick().interval(Duration::ZERO),
            "interval is zero; give a positive interval",
        ),
        (
            quick().success_rate_ejection(Some(SuccessRateEjection::default().request_volume(0))),
            "success_rate_ejection.request_volume is 0; give at least 1 call",
        ),
        (
            quick().failure_percentage_ejection(Some(
                FailurePercentageEjection::default().enforcement_percentage(101),
            )),
            "failure_percentage_ejection.enforcement_percentage 101 is over 100",
        ),
    ];
    for (detection, says) in cases {
        let e = match world(5, 1, Some(detection)).run() {
            Ok(_) => panic!("{says}: the run should have failed"),
            Err(e) => e,
        };
        assert!(e.is_misconfigured() && e.to_string().contains(says), "{e}");
    }
}

/// The rows of the rpc-only render that tell the story: the header, every
/// ejection and return, and every row at a time in one of `windows`
/// (`[from, until]`, *simulated*).
fn story_rows(trace: &Trace, windows: &[(Duration, Duration)]) -> String {
    let render = trace.render_with(&grpc_chaos::trace::RenderOptions::rpc_only());
    let mut lines = render.lines();
    let mut out = format!("{}\n", lines.next().unwrap_or_default());
    for line in lines {
        let at = line
            .split_whitespace()
            .next()
            .and_then(|t| t.parse::<f64>().ok())
            .map_or(Duration::ZERO, |t| Duration::from_secs_f64(t / 1000.0));
        let story = line.contains(" ejected");
        if story
            || windows
                .iter()
                .any(|(from, until)| (*from..=*until).contains(&at))
        {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn catalog_gray_replica_keeps_failing_without_outlier_detection() {
    let (trace, report) = grpc_chaos_tests::story("gray-replica");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    assert!(changes(&trace).is_empty());
    // store-1 got about a fifth of the calls, and half of those failed.
    let to_one = picks(&trace, "store-1").len();
    let failed = failed_between(&trace, Duration::ZERO, Duration::MAX);
    assert!((180..=260).contains(&to_one), "{to_one}");
    assert!(
        failed * 2 >= to_one - 1 && failed * 2 <= to_one + 1,
        "{failed} of {to_one}"
    );
}

#[test]
fn catalog_gray_replica_ejected_goes_out_and_comes_back() {
    let (trace, report) = grpc_chaos_tests::story("gray-replica-ejected");
    assert!(report.findings.is_empty(), "{:?}", report.findings);
    let at: Vec<Duration> = changes(&trace).iter().map(|(t, _)| *t).collect();
    assert_eq!(at, [secs(10), secs(40), secs(50)]);
    insta::assert_snapshot!(story_rows(
        &trace,
        &[
            (secs(10) - ms(20), secs(10) + ms(60)),
            (secs(40) - ms(20), secs(40) + ms(60))
        ]
    ));
}
