//! A deadline propagated on one path but lost after a retry: the gateway
//! relays each Save to the store with what is left of its caller's
//! deadline, and when the store answers UNAVAILABLE it tries once more
//! with a request built afresh, which carries no `grpc-timeout`: the retry
//! runs unbounded, the `context.Background()` trap on the retry path only
//! (grpc.io Deadlines guide, "deadline propagation"; PROTOCOL-HTTP2.md,
//! `grpc-timeout`; read, not measured). A run without faults never takes
//! that path, so a scripted happy-path test passes.
//!
//! The fix propagates the deadline on every attempt. The invariant is the
//! trace's own [`Trace::assert_deadline_propagated`] over shop → gateway →
//! store: every call on each hop carries at most what its caller had left.
//! The space is generic: the store failing UNAVAILABLE, slowed or
//! crashed, the gateway–store link cut.

use std::time::Duration;

use grpc_chaos::deadline;
use grpc_chaos::explore::Space;
use grpc_chaos::{Sim, Trace};
use tonic::{Code, Request, Response, Status};

use super::Bug;
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::store_server::StoreServer;
use crate::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
use crate::services::Store;

/// The zoo entry.
pub const BUG: Bug = Bug {
    name: "deadline-lost-on-retry",
    source: "grpc.io Deadlines guide (deadline propagation); PROTOCOL-HTTP2.md (grpc-timeout)",
    story: "A gateway propagates its caller's deadline, but its retry builds a fresh request: the retried call has no deadline.",
    scenario,
    space,
    invariant: (DEADLINE_PROPAGATED, deadline_propagated),
};

/// The invariant's name.
pub const DEADLINE_PROPAGATED: &str = "deadline propagated shop→gateway→store";

const ORDERS: u32 = 5;
const DEADLINE: Duration = Duration::from_millis(500);
/// The shop's pause between orders (*simulated*).
const PAUSE: Duration = Duration::from_millis(100);
/// How long a Save takes at the store.
const WORK: Duration = Duration::from_millis(10);
/// The gateway's wait before its one retry.
const BACKOFF: Duration = Duration::from_millis(20);

/// The gateway's `tt.v1.Store`: relays each Save, once more on
/// UNAVAILABLE; `fixed`, every attempt carries the caller's deadline.
#[derive(Clone)]
struct Relay {
    store: StoreClient<grpc_chaos::Channel>,
    fixed: bool,
}

#[tonic::async_trait]
impl crate::services::pb::store_server::Store for Relay {
    async fn save(&self, request: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        let mut store = self.store.clone();
        let mut first = Request::new(request.get_ref().clone());
        deadline::propagate(&request, &mut first);
        match store.save(first).await {
            Err(status) if status.code() == Code::Unavailable => {
                tokio::time::sleep(BACKOFF).await;
                // The bug: the retry builds its request afresh.
                let mut again = Request::new(request.get_ref().clone());
                if self.fixed {
                    deadline::propagate(&request, &mut again);
                }
                store.save(again).await
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
        let store = StoreClient::new(s.channel("store"));
        s.add_service(StoreServer::new(Relay { store, fixed }))
    });
    sim.client("shop", |c| async move {
        let mut gateway = StoreClient::new(c.channel("gateway"));
        for order in 0..ORDERS {
            let mut save = Request::new(SaveRequest {
                match_id: format!("order-{order}"),
                points: 1,
            });
            save.set_timeout(DEADLINE);
            // A failed order is the shop's to shrug off.
            let _ = gateway.save(save).await;
            tokio::time::sleep(PAUSE).await;
        }
        Ok(())
    });
    sim
}

/// What may break: the store's handlers failing UNAVAILABLE or slowed,
/// the store crashed, the gateway–store link cut, while the orders run.
pub fn space() -> Space {
    Space::new()
        .handler_fail("store", Code::Unavailable)
        .handler_delay("store", Duration::from_millis(300))
        .crash("store")
        .partition("gateway", "store")
        .window(Duration::ZERO, Duration::from_millis(600))
}

/// Every call on shop → gateway → store carried a `grpc-timeout` no
/// larger than its caller had left ([`Trace::assert_deadline_propagated`]).
///
/// # Errors
/// The first hop's call that did not.
pub fn deadline_propagated(trace: &Trace) -> Result<(), String> {
    trace
        .assert_deadline_propagated(["shop", "gateway", "store"])
        // The rule and what broke, without where the violation wrote the
        // run's trace (a path of the machine's).
        .map_err(|v| format!("{}: {}", v.rule(), v.detail()))
}
