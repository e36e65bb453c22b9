//! Part 7 of the bench (`BENCH_ONLY=outlier`): what outlier detection
//! (gRFC A50) costs a replica story. `BENCH_OUTLIER_CALLS` (default 1000)
//! sequential `Store/Save` calls from one player to five store replicas,
//! store-1 failing every 2nd Save, through one balanced channel.
//! *Detected:* `balanced_channel_outlier_detection` with a 1 s interval
//! (*simulated*; the calls take about 3 s, so it sweeps and ejects),
//! every call's end counted. *Anchor:* the same replicas and calls through
//! a plain `balanced_channel`. The ratio is detected / anchor CPU time.

use std::time::Duration;

use grpc_chaos::balance::{BalanceConfig, OutlierDetection, SuccessRateEjection};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::Store;

use super::balanced::{add_player, compare, measure};
use super::{Figure, SEED};

pub(super) fn outlier_rows(calls: u64, repeat: u64) {
    let channel = "balanced_channel_outlier_detection";
    compare("outlier detection", channel, calls, repeat, replica_calls);
}

#[inline(never)]
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
    let mut config = BalanceConfig::new();
    if detected {
        let sr = SuccessRateEjection::default().request_volume(5);
        let od = OutlierDetection::default()
            .interval(Duration::from_secs(1))
            .success_rate_ejection(Some(sr));
        config = config.outlier_detection(od);
    }
    add_player(&mut sim, calls, config);
    measure(sim, calls, "outlier")
}
