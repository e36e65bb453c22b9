//! A gray-failing replica: store-1 of five stays up, answers its health
//! checks and its connections, and fails every second Save (a bad disk, a
//! broken dependency of its own). Nothing at the connection level tells a
//! balancer; a channel without outlier detection keeps sending it its
//! share, and one call in ten fails all run long. With outlier detection
//! (gRFC A50, being added to tonic-xds in PRs #2604 and #2619) the channel
//! judges each replica's success rate every interval, ejects store-1,
//! returns it after the ejection time, and ejects it again for twice as
//! long when it still fails.
//!
//! Five replicas because A50's success-rate line, `mean − 1.9 stdev`,
//! cannot reach a replica among four or fewer when the others never fail
//! (1.9 > √(n − 1)), and `minimum_hosts` defaults to 5. The settings are
//! A50's defaults except `request_volume`, 20 calls per interval instead
//! of 100, so that a call every 50 ms (about 40 per replica per interval)
//! is enough.

use std::time::Duration;

use grpc_chaos::balance::{BalanceConfig, OutlierDetection, SuccessRateEjection};
use grpc_chaos::recorder::event::{BalancerChange, EventKind};
use grpc_chaos::trace::{fmt_duration, Call};
use grpc_chaos::{Sim, Trace};

use super::replica_world;
use super::world::ms;
use super::{Report, Scenario};
use crate::services::{Store, SAVE};

/// The story without outlier detection: the bug.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "gray-replica",
    source: "gRFC A50 (outlier detection); tonic-xds PRs #2604, #2619",
    story: "A replica fails half its calls but stays up and healthy: a balanced channel keeps sending it its share.",
    checks: "store-1 of 5 fails every 2nd Save, a Save every 50ms for 55s, channel without outlier detection: store-1 gets calls and calls fail in every 10s of the run",
    simulate: simulate_plain,
    judge: judge_plain,
};

/// The story with outlier detection: the fix.
pub(super) const EJECTED: Scenario = Scenario {
    name: "gray-replica-ejected",
    source: "gRFC A50 (outlier detection); grpc-go xds/internal/balancer/outlierdetection; tonic-xds PRs #2604, #2619",
    story: "A replica fails half its calls: outlier detection ejects it after an interval, returns it after the ejection time, and ejects it again for longer.",
    checks: "as gray-replica, channel with A50 outlier detection (defaults, request_volume 20): store-1 ejected at the 10s sweep for 30s with a success rate near 50%, no Save sent to it while ejected and none of those fails, back at 40s, ejected again at 50s for 60s",
    simulate: simulate_ejected,
    judge: judge_ejected,
};

const REPLICAS: usize = 5;
const EVERY: Duration = ms(50);
const CALLS: u32 = 1100;
const WORK: Duration = ms(5);
/// A50's default interval and base ejection time.
const INTERVAL: Duration = ms(10_000);
const BASE: Duration = ms(30_000);

fn simulate_plain(seed: u64) -> grpc_chaos::Result<Trace> {
    sim(seed, None).run()
}

fn simulate_ejected(seed: u64) -> grpc_chaos::Result<Trace> {
    sim(seed, Some(detection())).run()
}

/// A50's defaults, but 20 calls per interval are enough to be judged.
fn detection() -> OutlierDetection {
    OutlierDetection::default()
        .success_rate_ejection(Some(SuccessRateEjection::default().request_volume(20)))
}

/// Five store replicas, store-1 failing every 2nd Save, and a player that
/// starts [`CALLS`] Saves, one every [`EVERY`], through one balanced
/// channel (with `detection`, when given).
fn sim(seed: u64, detection: Option<OutlierDetection>) -> Sim {
    let mut sim = Sim::builder().seed(seed).duration(ms(60_000)).build();
    sim.servers("store", REPLICAS, |s| {
        let store = Store::with_work(WORK);
        let store = if s.name() == "store-1" {
            store.failing_every(2)
        } else {
            store
        };
        s.add_service(store.into_server())
    });
    let config = BalanceConfig::new();
    let config = match detection {
        Some(d) => config.outlier_detection(d),
        None => config,
    };
    replica_world::add_player(&mut sim, CALLS, EVERY, config);
    sim
}

fn saves(trace: &Trace) -> Vec<&Call> {
    trace
        .calls_from("player")
        .filter(|c| c.path == SAVE)
        .collect()
}

fn ok(c: &Call) -> bool {
    c.outcome().is_some_and(|o| o.is_ok())
}

/// `(sent to store-1, failed)` among the Saves started in `[from, until)`.
fn tally(saves: &[&Call], from: Duration, until: Duration) -> (usize, usize) {
    let window = saves
        .iter()
        .filter(|c| c.started >= from && c.started < until);
    let (mut to_one, mut failed) = (0, 0);
    for c in window {
        to_one += usize::from(c.replica.as_deref() == Some("store-1"));
        failed += usize::from(!ok(c));
    }
    (to_one, failed)
}

fn judge_plain(trace: &Trace) -> Report {
    let saves = saves(trace);
    let windows: Vec<(usize, usize)> = (0..5)
        .map(|n| tally(&saves, INTERVAL * n, INTERVAL * (n + 1)))
        .collect();
    let happened = format!(
        "per 10s (to store-1, failed): {}; {} of {} calls failed",
        windows
            .iter()
            .map(|(to, f)| format!("{to}/{f}"))
            .collect::<Vec<_>>()
            .join(", "),
        saves.iter().filter(|c| !ok(c)).count(),
        saves.len()
    );
    Report::from_checks(
        happened,
        &[(
            windows.iter().all(|&(to, failed)| to > 0 && failed > 0),
            "some 10s of the run had no call to store-1 or no failure".into(),
        )],
    )
    .with_findings(trace)
}

/// store-1's ejections `(at, ejected_for, successes, calls)` and returns
/// `(at, after)`, as the player's channel recorded them.
#[allow(clippy::type_complexity)]
fn ejections(
    trace: &Trace,
) -> (
    Vec<(Duration, Duration, u32, u32)>,
    Vec<(Duration, Duration)>,
) {
    let (mut out, mut back) = (Vec::new(), Vec::new());
    for e in trace.events_on("player") {
        let EventKind::Balancer(b) = &e.kind else {
            continue;
        };
        if b.replica != "store-1" {
            continue;
        }
        match &b.change {
            BalancerChange::Ejected {
                ejected_for,
                successes,
                calls,
                ..
            } => out.push((e.at(), *ejected_for, *successes, *calls)),
            BalancerChange::Unejected { after } => back.push((e.at(), *after)),
            _ => {}
        }
    }
    (out, back)
}

fn judge_ejected(trace: &Trace) -> Report {
    let saves = saves(trace);
    let (out, back) = ejections(trace);
    let (Some(&(first, for_, ok_calls, calls)), Some(&(returned, _))) = (out.first(), back.first())
    else {
        return Report::failed("store-1 was never ejected and returned");
    };
    let again = out.get(1).copied();
    // Calls already on their way when the sweep ran are not the channel's
    // to stop: from the next millisecond on.
    let (during, failed_during) = tally(&saves, first + ms(1), returned);
    let (after, _) = tally(&saves, returned, again.map_or(Duration::MAX, |a| a.0));
    let rate = f64::from(ok_calls) * 100.0 / f64::from(calls.max(1));
    let failed = saves.iter().filter(|c| !ok(c)).count();
    let happened = format!(
        "store-1 ejected at {} for {} (success rate {rate:.1} % of {calls} calls), back at {}, \
         ejected again at {}; while out it got {during} calls ({failed_during} of the window's \
         calls failed), after its return {after}; {failed} of {} calls failed",
        fmt_duration(first),
        fmt_duration(for_),
        fmt_duration(returned),
        again.map_or("never".to_owned(), |a| format!(
            "{} for {}",
            fmt_duration(a.0),
            fmt_duration(a.1)
        )),
        saves.len(),
    );
    Report::from_checks(
        happened,
        &[
            (
                first == INTERVAL && for_ == BASE,
                "store-1 was not ejected at the first sweep for the base ejection time".into(),
            ),
            (
                (40.0..=60.0).contains(&rate),
                "its judged success rate was not near 50 %".into(),
            ),
            (
                during == 0,
                "a call reached store-1 while it was ejected".into(),
            ),
            (
                failed_during == 0,
                "a call failed while store-1 was ejected".into(),
            ),
            (
                returned == first + BASE && after > 0,
                "store-1 did not return after the ejection time, or got no calls after".into(),
            ),
            (
                again.is_some_and(|a| a.0 == returned + INTERVAL && a.1 == BASE * 2),
                "store-1 was not ejected again one interval after its return, for twice as long"
                    .into(),
            ),
        ],
    )
    .with_findings(trace)
}
