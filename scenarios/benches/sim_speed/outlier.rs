//! Part 7 of the bench (`BENCH_ONLY=outlier`): what outlier detection
//! (gRFC A50) costs a replica story. `BENCH_OUTLIER_CALLS` (default 1000)
//! sequential `Store/Save` calls from one player to five store replicas,
//! store-1 failing every 2nd Save, through one balanced channel.
//! *Detected:* `balanced_channel_outlier_detection` with a 1 s interval
//! (*simulated*; the calls take about 3 s, so it sweeps and ejects),
//! every call's end counted. *Anchor:* the same replicas and calls through
//! a plain `balanced_channel`. The ratio is detected / anchor CPU time.

use std::time::Duration;

use grpc_chaos::balance::{OutlierDetection, SuccessRateEjection};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

use super::{detail, isolated, row, Figure, Meter, Rounds, SEED};

pub(super) fn outlier_rows(calls: u64, repeat: u64) {
    let rounds = Rounds::run(repeat, || {
        [
            isolated(|| measured_outlier_detected(calls)),
            isolated(|| measured_outlier_plain(calls)),
        ]
    });
    let [detected, anchor] = rounds.best();
    // detected / anchor CPU: 1.00x = outlier detection costs nothing.
    let cost = |r: &[Figure; 2]| r[0].cpu.as_secs_f64() / r[1].cpu.as_secs_f64();
    row(
        &format!("{calls} balanced Saves, outlier detection: calls / CPU s"),
        detected,
        anchor,
        detected.cpu.as_secs_f64() / anchor.cpu.as_secs_f64(),
        rounds.paired(cost),
    );
    detail(
        "  grpc-chaos, balanced_channel_outlier_detection",
        detected,
        "calls",
    );
    detail("  grpc-chaos, balanced_channel", anchor, "calls");
}

#[inline(never)]
fn measured_outlier_detected(calls: u64) -> Figure {
    replica_calls(calls, true)
}

#[inline(never)]
fn measured_outlier_plain(calls: u64) -> Figure {
    replica_calls(calls, false)
}

fn replica_calls(calls: u64, detected: bool) -> Figure {
    let mut sim = Sim::builder()
        .seed(SEED)
        .duration(Duration::from_millis(12 * calls) + Duration::from_secs(60))
        .build();
    sim.servers("store", 5, |s| {
        let store = Store::default();
        let store = if s.name() == "store-1" {
            store.failing_every(2)
        } else {
            store
        };
        s.add_service(store.into_server())
    });
    sim.client("bench", move |player| async move {
        let channel = if detected {
            let sr = SuccessRateEjection::default().request_volume(5);
            let od = OutlierDetection::default()
                .interval(Duration::from_secs(1))
                .success_rate_ejection(Some(sr));
            player.balanced_channel_outlier_detection("store", od, |e| e)
        } else {
            player.balanced_channel("store")
        };
        let store = StoreClient::new(channel);
        for n in 0..calls {
            let req = SaveRequest {
                match_id: format!("m{n}"),
                points: 1,
            };
            // store-1's failures are the story: not an error here.
            let _ = store.clone().save(req).await;
        }
        Ok(())
    });
    let meter = Meter::start();
    let trace = sim
        .run()
        .unwrap_or_else(|e| panic!("outlier story failed: {e}"));
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
