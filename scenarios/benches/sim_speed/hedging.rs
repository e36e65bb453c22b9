//! Part 8 of the bench (`BENCH_ONLY=hedging`): what the hedging layer
//! (gRFC A6 `hedgingPolicy`) costs a replica story. `BENCH_HEDGING_CALLS`
//! (default 1000) sequential `Store/Save` calls from one player to three
//! store replicas through one balanced channel. *Hedged:* behind
//! `Host::retry_layer` with up to 3 attempts 50 ms apart (*simulated*);
//! the store answers in 5 ms, so no hedge goes out and the row measures
//! the layer itself: its timer, replay buffer and recorded attempts.
//! *Anchor:* the same calls through the plain balanced channel. The ratio
//! is hedged / anchor CPU time (the issue's bar: at most 1.5×).

use std::time::Duration;

use grpc_chaos::retry::RetryConfig;
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

use super::balanced::{compare, measure};
use super::{Figure, SEED};

const HEDGE: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.05s",
                    "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}"#;

pub(super) fn hedging_rows(calls: u64, repeat: u64) {
    compare(
        "hedged",
        "retry_layer (hedgingPolicy)",
        calls,
        repeat,
        replica_calls,
    );
}

#[inline(never)]
fn replica_calls(calls: u64, hedged: bool) -> Figure {
    let mut sim = Sim::builder()
        .seed(SEED)
        .duration(Duration::from_millis(20 * calls) + Duration::from_secs(60))
        .build();
    sim.servers("store", 3, |s| {
        s.add_service(Store::with_work(Duration::from_millis(5)).into_server())
    });
    // The two clients differ in type: one loop, written once.
    macro_rules! saves {
        ($store:expr) => {{
            let store = $store;
            for n in 0..calls {
                let req = SaveRequest {
                    match_id: format!("m{n}"),
                    points: 1,
                };
                let _ = store.clone().save(req).await;
            }
            Ok(())
        }};
    }
    sim.client("bench", move |player| async move {
        let channel = player.balanced_channel("store");
        if hedged {
            let config: RetryConfig = HEDGE.parse().expect("a valid policy");
            let layer = player.retry_layer("store", config);
            saves!(StoreClient::new(tower::Layer::layer(&layer, channel)))
        } else {
            saves!(StoreClient::new(channel))
        }
    });
    measure(sim, calls, "hedging")
}
