//! A drained replica that DNS still hands out (`balance::Dns`): store-2's
//! pod is deleted with a preStop sleep that covers the endpoint removal
//! and the player's 5 s re-resolution, so a channel that resolves the
//! name afresh drops store-2 before SIGTERM and fails no call. Behind a
//! DNS cache of 30 s (CoreDNS's `cache 30`, a runtime's own cache) the
//! answer made before the deletion keeps naming store-2 until it expires,
//! long after SIGTERM: every call the balancer sends there in between
//! fails. The field's reports: grpc #12295 (re-resolution of names),
//! grpc-go #4650 (a rolling update's UNAVAILABLE behind DNS), grpc-go
//! #6718 (finding new servers through DNS).

use std::time::Duration;

use grpc_chaos::balance::{BalanceConfig, Dns};
use grpc_chaos::recorder::event::{EventKind, ResolutionOutcome};
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Fault, Sim, Trace};

use super::replica_world::{self, failed, fmt_codes, fmt_counts, per_replica};
use super::world::ms;
use super::{Report, Scenario};

const SOURCE: &str = "grpc #12295, grpc-go #4650 and #6718 (DNS re-resolution in Kubernetes); \
                      grpc-go internal/resolver/dns (30 s between resolutions); CoreDNS cache plugin";

/// The catalog entry behind a DNS cache.
pub(super) const STALE: Scenario = Scenario {
    name: "dns-stale-answer",
    source: SOURCE,
    story: "A replica drained with a preStop sleep long enough for the endpoints still gets calls from clients that resolve DNS through a 30s cache: they fail from SIGTERM until the cached answer expires.",
    checks: "store-2's pod deleted at 5s (endpoint removal 1s later, preStop 10s), the player resolving every 5s through a 30s DNS cache: calls fail, all sent to store-2 from answer 1 between SIGTERM and the cache's expiry at 30s",
    simulate: stale,
    judge: judge_stale,
};

/// The catalog entry resolving afresh.
pub(super) const FRESH: Scenario = Scenario {
    name: "dns-fresh-answer",
    source: SOURCE,
    story: "The same deletion with no DNS cache: the next resolution after the endpoint removal drops store-2, before SIGTERM, and no call fails.",
    checks: "store-2's pod deleted at 5s, endpoint removal 1s later, preStop 10s, resolution every 5s with no cache: no call fails; answer 2 without store-2 at 10s; store-2 gets no call after it",
    simulate: fresh,
    judge: judge_fresh,
};

const DELETE: Duration = ms(5_000);
const ENDPOINT_LAG: Duration = ms(1_000);
const PRE_STOP: Duration = ms(10_000);
const REFRESH: Duration = ms(5_000);
const TTL: Duration = ms(30_000);
/// A Save every 100 ms for 35 s.
const EVERY: Duration = ms(100);
const CALLS: u32 = 350;

fn run(dns: Dns, seed: u64) -> grpc_chaos::Result<Trace> {
    let builder = Sim::builder().seed(seed).duration(ms(60_000));
    let config = BalanceConfig::new().dns(dns);
    let mut sim = replica_world::sim_config(builder, CALLS, EVERY, config);
    let termination = Fault::pod_termination("store-2", ENDPOINT_LAG).pre_stop(PRE_STOP);
    sim.fault(termination.at(DELETE));
    sim.run()
}

fn stale(seed: u64) -> grpc_chaos::Result<Trace> {
    run(Dns::new().refresh(REFRESH).ttl(TTL), seed)
}

fn fresh(seed: u64) -> grpc_chaos::Result<Trace> {
    run(Dns::new().refresh(REFRESH), seed)
}

/// Each answer the player's channel got: (when, number, its addresses).
fn answers(trace: &Trace) -> Vec<(Duration, u32, usize)> {
    let mut seen = Vec::new();
    for e in trace.events_on("player") {
        if let EventKind::Resolution(r) = &e.kind {
            if let ResolutionOutcome::Answered {
                answer, addresses, ..
            } = &r.outcome
            {
                if !seen.iter().any(|(_, n, _)| n == answer) {
                    seen.push((e.at(), *answer, addresses.len()));
                }
            }
        }
    }
    seen
}

/// The picks of `replica` and the answers they came from.
fn picks_of<'t>(
    trace: &'t Trace,
    replica: &'t str,
) -> impl Iterator<Item = (Duration, Option<u32>)> + 't {
    trace
        .events_on("player")
        .filter_map(move |e| match &e.kind {
            EventKind::CallRouted {
                replica: r, answer, ..
            } if r.as_str() == replica => Some((e.at(), *answer)),
            _ => None,
        })
}

fn fmt_answers(answers: &[(Duration, u32, usize)]) -> String {
    let each: Vec<String> = answers
        .iter()
        .map(|(at, n, len)| format!("answer {n} at {} ({len} addresses)", fmt_duration(*at)))
        .collect();
    each.join(", ")
}

fn judge_stale(trace: &Trace) -> Report {
    let sigterm = DELETE + PRE_STOP;
    let failed = failed(trace);
    let outside = failed
        .iter()
        .filter(|c| {
            c.replica.as_deref() != Some("store-2") || c.started < sigterm || c.started > TTL
        })
        .count();
    let late: Vec<_> = picks_of(trace, "store-2")
        .filter(|(at, _)| *at > DELETE + ENDPOINT_LAG)
        .collect();
    let from_answer_1 = late.iter().all(|(_, a)| *a == Some(1));
    let answers = answers(trace);
    let checks = [
        (!failed.is_empty(), "no call failed".to_owned()),
        (
            outside == 0,
            format!(
                "{outside} failed calls were not store-2's between SIGTERM and the cache's expiry"
            ),
        ),
        (
            from_answer_1,
            "a pick of store-2 after its removal came from an answer other than 1".to_owned(),
        ),
        (
            answers
                .iter()
                .any(|(at, n, len)| *n == 2 && *len == 2 && *at == TTL),
            format!(
                "no answer 2 of two addresses at {}: {}",
                fmt_duration(TTL),
                fmt_answers(&answers)
            ),
        ),
    ];
    let happened = format!(
        "endpoint removed at {}, SIGTERM at {}; {}; {} of {} calls failed ({}), all sent to \
         store-2 from answer 1; store-2 picked {} times after its removal",
        fmt_duration(DELETE + ENDPOINT_LAG),
        fmt_duration(sigterm),
        fmt_answers(&answers),
        failed.len(),
        trace.calls_from("player").count(),
        fmt_codes(&failed),
        late.len()
    );
    Report::from_checks(happened, &checks).with_findings(trace)
}

fn judge_fresh(trace: &Trace) -> Report {
    let failed = failed(trace);
    let dropped_at = DELETE + ms(5_000);
    let answers = answers(trace);
    let late = picks_of(trace, "store-2")
        .filter(|(at, _)| *at > dropped_at)
        .count();
    let checks = [
        (
            failed.is_empty(),
            format!("{} calls failed ({})", failed.len(), fmt_codes(&failed)),
        ),
        (
            answers
                .iter()
                .any(|(at, n, len)| *n == 2 && *len == 2 && *at == dropped_at),
            format!(
                "no answer 2 of two addresses at {}: {}",
                fmt_duration(dropped_at),
                fmt_answers(&answers)
            ),
        ),
        (
            late == 0,
            format!("store-2 got {late} calls after answer 2"),
        ),
    ];
    let after = per_replica(
        trace
            .calls_from("player")
            .filter(|c| c.started > dropped_at),
    );
    let happened = format!(
        "endpoint removed at {}, SIGTERM at {}; {}; {} of {} calls failed; after answer 2: {}",
        fmt_duration(DELETE + ENDPOINT_LAG),
        fmt_duration(DELETE + PRE_STOP),
        fmt_answers(&answers),
        failed.len(),
        trace.calls_from("player").count(),
        fmt_counts(&after)
    );
    Report::from_checks(happened, &checks).with_findings(trace)
}
