//! A proxy that allows two concurrent streams per client connection (an
//! Envoy listener with `http2_protocol_options.max_concurrent_streams: 2`)
//! under a burst of six concurrent saves on a new connection. The client
//! opens all six before it has read the proxy's SETTINGS (hyper opens up
//! to 100 streams on a new connection before the peer's SETTINGS arrive),
//! so the proxy refuses four with RST_STREAM(REFUSED_STREAM): tonic
//! reports UNAVAILABLE, the spec's code for a request that was not
//! processed, and no handler runs for them. The next burst, on the warm
//! connection, waits in the client instead: all six succeed, two at a
//! time.

use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::{Store, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "proxy-stream-limit",
    source: "RFC 9113 §5.1.2 (SETTINGS_MAX_CONCURRENT_STREAMS, REFUSED_STREAM), §8.7; grpc doc/PROTOCOL-HTTP2.md (REFUSED_STREAM → UNAVAILABLE); Envoy http2_protocol_options.max_concurrent_streams",
    story: "A proxy's per-connection stream limit refuses part of a burst on a new connection; the same burst on a warm connection only waits.",
    checks: "limit 2 at the proxy, 6 concurrent saves twice: the cold burst has 2 OK and 4 UNAVAILABLE (REFUSED_STREAM, no handler ran), the warm burst 6 OK; 8 handler runs",
    simulate,
    judge,
};

/// Concurrent saves per burst.
const BURST: usize = 6;
/// The proxy's limit.
const LIMIT: u32 = 2;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).duration(ms(10_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(SAVE).delay(ms(100)));
    let mut envoy = Middlebox::envoy();
    envoy.max_concurrent_streams = Some(LIMIT);
    sim.middlebox("store", envoy);
    sim.client("player", |player| async move {
        let channel = player.channel("store");
        for burst in 0..2 {
            if burst > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let mut saves = tokio::task::JoinSet::new();
            for _ in 0..BURST {
                let mut store = StoreClient::new(channel.clone());
                saves.spawn(async move { store.save(SaveRequest::default()).await.is_ok() });
            }
            while saves.join_next().await.is_some() {}
        }
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    let split = calls.len().min(BURST);
    let (cold, warm) = calls.split_at(split);
    let ok = |calls: &[&grpc_chaos::trace::Call]| {
        calls
            .iter()
            .filter(|c| c.outcome().is_some_and(|o| o.is_ok()))
            .count()
    };
    let refused = cold
        .iter()
        .filter(|c| c.outcome().is_some_and(|o| o.code == "UNAVAILABLE"))
        .count();
    let runs = trace.handler_runs().len();
    let happened = format!(
        "cold burst: {} OK, {refused} UNAVAILABLE (refused at the proxy); warm burst: {} OK of {}; {runs} handler runs",
        ok(cold),
        ok(warm),
        warm.len()
    );
    let limit = LIMIT as usize;
    Report::from_checks(
        happened,
        &[
            (
                ok(cold) == limit && refused == BURST - limit,
                format!(
                    "the cold burst was not {limit} OK and {} refused",
                    BURST - limit
                ),
            ),
            (
                warm.len() == BURST && ok(warm) == BURST,
                "the warm burst did not all succeed".into(),
            ),
            (
                runs == limit + BURST,
                format!("{runs} handler runs: a refused stream reached a handler"),
            ),
        ],
    )
    .with_findings(trace)
}
