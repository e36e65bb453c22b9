//! Part 5 of the bench (`BENCH_ONLY=health`): what client-side health
//! checking costs a replica story. `BENCH_HEALTH_CALLS` (default 1000)
//! sequential `Store/Save` calls from one player to three store replicas
//! through one balanced channel, store-1 NOT_SERVING for the middle third
//! of the calls' simulated time. *Checked:* `Sim::health("store")`, the two
//! `Fault::health` flips and `balanced_channel_health` (a Watch per replica,
//! its frames and events recorded). *Anchor:* the same replicas and calls
//! through a plain `balanced_channel`, no health service, no flips. The
//! ratio is checked / anchor CPU time (the bar: at most 1.5×).

use std::time::Duration;

use grpc_chaos::balance::BalanceConfig;
use grpc_chaos::recorder::event::HealthStatus;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::Store;

use super::balanced::{add_player, compare, measure};
use super::{Figure, SEED};

/// Each call's simulated time with the default tick and latency (a round
/// trip of 2 ms and a tick or two): the flips' times are set from it.
const PER_CALL: Duration = Duration::from_millis(3);

pub(super) fn health_rows(calls: u64, repeat: u64) {
    compare(
        "health-checked",
        "balanced_channel_health",
        calls,
        repeat,
        replica_calls,
    );
}

#[inline(never)]
fn replica_calls(calls: u64, checked: bool) -> Figure {
    let span = PER_CALL * u32::try_from(calls).unwrap_or(u32::MAX);
    let mut sim = Sim::builder()
        .seed(SEED)
        .duration(span * 4 + Duration::from_secs(60))
        .build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::default().into_server())
    });
    let mut config = BalanceConfig::new();
    if checked {
        sim.health("store");
        let flip = |status, at| Fault::health("store-1", "tt.v1.Store", status).at(at);
        sim.fault(flip(HealthStatus::NotServing, span / 3));
        sim.fault(flip(HealthStatus::Serving, span * 2 / 3));
        config = config.health_check("tt.v1.Store");
    }
    add_player(&mut sim, calls, config);
    measure(sim, calls, "health")
}
