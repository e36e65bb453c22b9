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

use grpc_chaos::recorder::event::HealthStatus;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

use super::{detail, isolated, row, Figure, Meter, Rounds, SEED};

/// Each call's simulated time with the default tick and latency (a round
/// trip of 2 ms and a tick or two): the flips' times are set from it.
const PER_CALL: Duration = Duration::from_millis(3);

pub(super) fn health_rows(calls: u64, repeat: u64) {
    let rounds = Rounds::run(repeat, || {
        [
            isolated(|| measured_health_checked(calls)),
            isolated(|| measured_health_unchecked(calls)),
        ]
    });
    let [checked, anchor] = rounds.best();
    // checked / anchor CPU: 1.00x = health checking costs nothing.
    let cost = |r: &[Figure; 2]| r[0].cpu.as_secs_f64() / r[1].cpu.as_secs_f64();
    row(
        &format!("{calls} balanced Saves, health-checked: calls / CPU s"),
        checked,
        anchor,
        checked.cpu.as_secs_f64() / anchor.cpu.as_secs_f64(),
        rounds.paired(cost),
    );
    detail("  grpc-chaos, balanced_channel_health", checked, "calls");
    detail("  grpc-chaos, balanced_channel", anchor, "calls");
}

#[inline(never)]
fn measured_health_checked(calls: u64) -> Figure {
    replica_calls(calls, true)
}

#[inline(never)]
fn measured_health_unchecked(calls: u64) -> Figure {
    replica_calls(calls, false)
}

fn replica_calls(calls: u64, checked: bool) -> Figure {
    let span = PER_CALL * u32::try_from(calls).unwrap_or(u32::MAX);
    let mut sim = Sim::builder()
        .seed(SEED)
        .duration(span * 4 + Duration::from_secs(60))
        .build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::default().into_server())
    });
    if checked {
        sim.health("store");
        let flip = |status, at| Fault::health("store-1", "tt.v1.Store", status).at(at);
        sim.fault(flip(HealthStatus::NotServing, span / 3));
        sim.fault(flip(HealthStatus::Serving, span * 2 / 3));
    }
    sim.client("bench", move |player| async move {
        let channel = if checked {
            player.balanced_channel_health("store", "tt.v1.Store", |e| e)
        } else {
            player.balanced_channel("store")
        };
        let store = StoreClient::new(channel);
        for n in 0..calls {
            let req = SaveRequest {
                match_id: format!("m{n}"),
                points: 1,
            };
            store.clone().save(req).await?;
        }
        Ok(())
    });
    let meter = Meter::start();
    let trace = sim
        .run()
        .unwrap_or_else(|e| panic!("health story failed: {e}"));
    let on_one = trace
        .calls_from("bench")
        .filter(|c| c.replica.as_deref() == Some("store-1"))
        .count();
    let note = format!(
        " ({} trace events, {on_one} calls on store-1)",
        trace.events().len()
    );
    meter.figure(calls as f64, note)
}
