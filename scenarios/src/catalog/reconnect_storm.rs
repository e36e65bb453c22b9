//! A reconnect storm: 100 clients call a store every 100 ms (client *i*
//! starting at *i* ms); the store crashes at 1 s and starts again at 3 s.
//! Each client's dial to the crashed host waits for its 100 ms connect
//! timeout. tonic's channel dials again on every call after a failure (no
//! connection backoff, grpc-rust #2839), so the clients redial about ten
//! times a second each for the whole outage. The same clients
//! behind their own backoff (`services::ConnectBackoff`, grpc's
//! connection-backoff.md: 1 s, ×1.6, ±20%) dial a few times each, and pay
//! for it in recovery: each waits out its backoff after the restart.

use std::collections::BTreeMap;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::{ms, with_timeout};
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::{ConnectBackoff, Store};

const SOURCE: &str = "grpc doc/connection-backoff.md; grpc-rust #2839, #1147";

/// The catalog entry with tonic's channel as it is.
pub(super) const STORM: Scenario = Scenario {
    name: "reconnect-storm",
    source: SOURCE,
    story: "100 clients and a store that crashes and restarts: tonic's channel redials on every call, a storm of connects while the store is down.",
    checks: "store down from 1s to 3s, 100 clients calling every 100ms: connects per second in the outage, each client flagged as redialling sooner than connection backoff allows",
    simulate: storm,
    judge: judge_storm,
};

/// The catalog entry with each client backing off its connects.
pub(super) const BACKOFF: Scenario = Scenario {
    name: "reconnect-storm-backoff",
    source: SOURCE,
    story: "The same clients with connection backoff (1s, ×1.6, ±20%): a few connects each, and a later recovery.",
    checks: "same outage: at most 4 connect attempts per client in it, no client flagged, every client back by 3s after the restart",
    simulate: with_backoff,
    judge: judge_backoff,
};

const CLIENTS: u64 = 100;
const DOWN: Duration = ms(1000);
const UP: Duration = ms(3000);
const EVERY: Duration = ms(100);
const CALLS: u32 = 70;
const CONNECT_TIMEOUT: Duration = ms(100);

fn world(seed: u64, backoff: bool) -> grpc_chaos::Result<Trace> {
    // A 10 ms tick: a hundred hosts make every tick cost a hundred polls.
    let builder = Sim::builder().seed(seed).duration(ms(20_000)).tick(ms(10));
    let mut sim = builder.build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    // A crash, not a graceful shutdown: the GOAWAYs of a shutdown to 100
    // connections in one tick go out in an order the canary saw change
    // between processes.
    sim.fault(Fault::crash("store").at(DOWN));
    sim.fault(Fault::restart("store").at(UP));
    for i in 0..CLIENTS {
        sim.client(format!("player-{i:02}"), move |player| async move {
            // Staggered by a tick each, as real clients are: turmoil queues
            // at most 64 SYNs per listener per tick (and panics past it).
            tokio::time::sleep(ms(i)).await;
            let channel = player.channel_with("store", |e| e.connect_timeout(CONNECT_TIMEOUT));
            let mut store = StoreClient::new(channel);
            let mut gate = backoff.then(|| ConnectBackoff::new(seed ^ i));
            for n in 0..CALLS {
                let now = tokio::time::Instant::now();
                if gate.as_ref().is_none_or(|g| g.allows(now)) {
                    let req = SaveRequest {
                        match_id: format!("m{n}"),
                        points: 1,
                    };
                    let end = store.save(with_timeout(req, ms(500))).await.err();
                    if let Some(g) = gate.as_mut() {
                        g.ended(now, end.as_ref());
                    }
                }
                tokio::time::sleep_until(now + EVERY).await;
            }
            Ok(())
        });
    }
    sim.run()
}

fn storm(seed: u64) -> grpc_chaos::Result<Trace> {
    world(seed, false)
}

fn with_backoff(seed: u64) -> grpc_chaos::Result<Trace> {
    world(seed, true)
}

/// Connection attempts to the store in the outage, per client.
fn attempts_in_outage(trace: &Trace) -> BTreeMap<String, usize> {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    for e in trace.events() {
        if let EventKind::ConnectStarted { to, .. } = &e.kind {
            if to.as_str() == "store" && e.at() >= DOWN && e.at() < UP {
                *per.entry(e.host.to_string()).or_default() += 1;
            }
        }
    }
    per
}

/// Clients the summary flags as redialling sooner than backoff allows.
fn flagged(trace: &Trace) -> usize {
    trace.quick_redials().len()
}

/// When each client's first OK call after the restart ended.
fn recovered(trace: &Trace) -> Vec<Duration> {
    let mut first: BTreeMap<&str, Duration> = BTreeMap::new();
    for c in trace.calls() {
        let ok = c.outcome().is_some_and(|o| o.is_ok());
        if ok && c.started >= UP {
            let end = c.ended_at.unwrap_or(c.started);
            first
                .entry(c.host.as_str())
                .and_modify(|t| *t = (*t).min(end))
                .or_insert(end);
        }
    }
    first.into_values().collect()
}

/// `attempts in the outage: 1812 (peak 10 per client), 100 clients flagged; back by 3.004s`.
fn happened(trace: &Trace, flagged: usize) -> String {
    let per = attempts_in_outage(trace);
    let total: usize = per.values().sum();
    let peak = per.values().max().copied().unwrap_or(0);
    let back = recovered(trace);
    let last = back
        .iter()
        .max()
        .map_or("never".to_owned(), |t| grpc_chaos::trace::fmt_duration(*t));
    format!(
        "connect attempts while the store was down (1s-3s): {total}, {:.0}/s ({peak} at most per client); \
         {} clients flagged as redialling too soon; {} of {CLIENTS} clients back, the last at {last}",
        total as f64 / (UP - DOWN).as_secs_f64(),
        flagged,
        back.len()
    )
}

fn judge_storm(trace: &Trace) -> Report {
    // The trace's JSON, serialized and read once: the finding's count.
    let flagged = flagged(trace);
    let per = attempts_in_outage(trace);
    let least = per.values().min().copied().unwrap_or(0);
    let checks = [
        (
            per.len() as u64 == CLIENTS,
            format!("{} of {CLIENTS} clients dialled in the outage", per.len()),
        ),
        (
            least >= 10,
            format!("a client dialled only {least} times in the 2s outage"),
        ),
        (
            flagged as u64 == CLIENTS,
            format!("{flagged} clients flagged"),
        ),
    ];
    Report::from_checks(happened(trace, flagged), &checks).with_findings(trace)
}

fn judge_backoff(trace: &Trace) -> Report {
    let flagged = flagged(trace);
    let per = attempts_in_outage(trace);
    let most = per.values().max().copied().unwrap_or(0);
    let back = recovered(trace);
    let late = back.iter().filter(|t| **t > UP + ms(3000)).count();
    let checks = [
        (
            most <= 4,
            format!("a client dialled {most} times in the 2s outage"),
        ),
        (flagged == 0, format!("{flagged} clients flagged")),
        (
            back.len() as u64 == CLIENTS && late == 0,
            format!(
                "{} clients back, {late} later than 3s after the restart",
                back.len()
            ),
        ),
    ];
    Report::from_checks(happened(trace, flagged), &checks).with_findings(trace)
}
