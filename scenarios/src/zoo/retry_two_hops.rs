//! A retry that multiplies across two hops: `shop` saves through
//! `gateway`, which relays each Save to `store`; both hops retry
//! UNAVAILABLE up to 3 attempts (gRFC A6 service config). While the store
//! fails, the gateway's three attempts fail, it answers UNAVAILABLE, and
//! the shop retries the whole chain: up to 3 × 3 = 9 Saves at the store
//! for one order (Google SRE book ch. 22, "retry at one layer"; the
//! catalog's `retry-storm` scripts the same with the store down for good;
//! read, not measured).
//!
//! The fix keeps both retries and has the hop that already retried say so:
//! the gateway answers its exhausted retries with `grpc-retry-pushback-ms:
//! -1`, which gRFC A6 ("Pushback") makes the shop's layer stop on. The
//! invariant is the user's own: no order costs the store more Saves than
//! one layer's `maxAttempts`, each store Save traced back through the
//! gateway's handler to the shop's order. The space is generic: the store
//! failing, slowed or crashed, the gateway–store link cut.

use std::collections::HashMap;
use std::time::Duration;

use grpc_chaos::recorder::event::CallId;
use grpc_chaos::retry::Retry;
use grpc_chaos::{Channel, Sim, Trace};
use tonic::metadata::MetadataValue;
use tonic::{Code, Request, Response, Status};

use super::Bug;
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::store_server::StoreServer;
use crate::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
use crate::services::{Store, SAVE};

/// The zoo entry.
pub const BUG: Bug = Bug {
    name: "retry-two-hops",
    source: "gRFC A6 (retry policy, pushback); Google SRE book ch. 22 (retries at several layers)",
    story: "Two hops each retry 3 times: while the store fails, one order costs it up to 9 Saves.",
    scenario,
    space,
    invariant: (ATTEMPTS_PER_ORDER, attempts_per_order),
};

/// The invariant's name.
pub const ATTEMPTS_PER_ORDER: &str = "store Saves per order";

/// Each hop's policy: 3 attempts on UNAVAILABLE, 10 ms ×2 up to 100 ms.
const POLICY: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;
/// One layer's `maxAttempts`: what one order may cost the store.
const MAX_ATTEMPTS: usize = 3;
const ORDERS: u32 = 5;
/// The shop's pause between orders (*simulated*).
const PAUSE: Duration = Duration::from_millis(100);
/// How long a Save takes at the store.
const WORK: Duration = Duration::from_millis(10);

/// The gateway's `tt.v1.Store`: relays each Save through its retrying
/// channel; `fixed`, its exhausted retries come back with pushback -1.
#[derive(Clone)]
struct Relay {
    store: StoreClient<Retry<Channel>>,
    fixed: bool,
}

#[tonic::async_trait]
impl crate::services::pb::store_server::Store for Relay {
    async fn save(&self, request: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        let mut store = self.store.clone();
        match store.save(request.into_inner()).await {
            Err(mut status) if self.fixed && status.code() == Code::Unavailable => {
                // gRFC A6 "Pushback": a negative value tells the caller's
                // retry layer not to retry; this hop already did.
                status
                    .metadata_mut()
                    .insert("grpc-retry-pushback-ms", MetadataValue::from_static("-1"));
                Err(status)
            }
            other => other,
        }
    }

    async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        Err(Status::unimplemented("the relay only saves"))
    }
}

/// The scenario: `shop` → `gateway` → `store`, the gateway buggy or
/// `fixed`.
pub fn scenario(seed: u64, fixed: bool) -> Sim {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(Duration::from_secs(3))
        .build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(WORK).into_server())
    });
    sim.server("gateway", move |s| {
        let store = match s.retry_channel("store", POLICY) {
            Ok(c) => StoreClient::new(c),
            Err(e) => panic!("the zoo's retry policy: {e}"),
        };
        s.add_service(StoreServer::new(Relay { store, fixed }))
    });
    sim.client("shop", |c| async move {
        let mut gateway = StoreClient::new(c.retry_channel("gateway", POLICY)?);
        for order in 0..ORDERS {
            let save = SaveRequest {
                match_id: format!("order-{order}"),
                points: 1,
            };
            // A failed order is the shop's to shrug off; the store's load
            // must stay bounded.
            let _ = gateway.save(save).await;
            tokio::time::sleep(PAUSE).await;
        }
        Ok(())
    });
    sim
}

/// What may break: the store's handlers failing UNAVAILABLE or slowed,
/// the store crashed, the gateway–store link cut, while the orders run.
pub fn space() -> grpc_chaos::explore::Space {
    grpc_chaos::explore::Space::new()
        .handler_fail("store", Code::Unavailable)
        .handler_delay("store", Duration::from_millis(300))
        .crash("store")
        .partition("gateway", "store")
        .window(Duration::ZERO, Duration::from_millis(600))
}

/// How many Saves reached the store for each of the shop's orders, in
/// order: each store Save traced back to the shop's call (store run → the
/// gateway's call → its handler run → the shop's attempt), the shop's
/// attempts grouped into its orders (logical calls). A Save that cannot
/// be traced back is counted under no order.
pub fn saves_per_order(trace: &Trace) -> Vec<usize> {
    let orders = trace.retried_calls();
    let order_of: HashMap<CallId, usize> = orders
        .iter()
        .filter(|c| c.host == "shop")
        .enumerate()
        .flat_map(|(i, c)| c.attempts.iter().filter_map(move |a| Some((a.call?, i))))
        .collect();
    let mut saves = vec![0; order_of.values().max().map_or(0, |m| m + 1)];
    for run in trace.runs_on("store").filter(|r| r.path == SAVE) {
        let order = run
            .call
            .and_then(|c| trace.call(c))
            .and_then(|c| c.parent)
            .and_then(|gateway| trace.run(gateway))
            .and_then(|gateway| gateway.call)
            .and_then(|attempt| order_of.get(&attempt));
        if let Some(&order) = order {
            saves[order] += 1;
        }
    }
    saves
}

/// No order of the shop cost the store more than one layer's
/// `maxAttempts` Saves ([`saves_per_order`]).
///
/// # Errors
/// The first order with the most Saves at the store, and how many.
pub fn attempts_per_order(trace: &Trace) -> Result<(), String> {
    let saves = saves_per_order(trace);
    let worst = saves.iter().copied().max().unwrap_or(0);
    match saves.iter().position(|&n| n == worst) {
        Some(order) if worst > MAX_ATTEMPTS => Err(format!(
            "order {} cost the store {worst} Saves, more than one layer's {MAX_ATTEMPTS} attempts",
            order + 1
        )),
        _ => Ok(()),
    }
}
