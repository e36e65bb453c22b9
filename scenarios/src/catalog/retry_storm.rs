//! Seed 000 §8 and seed 003 #4: retries multiply across layers. The player
//! retries (service config, 3 attempts), the gateway's handler retries
//! (application loop, 3 tries) and the gateway's store client retries
//! (service config, 3 attempts): with the store down, one player call
//! becomes 3 × 3 × 3 = 27 Saves at the store. The fix the seed gives —
//! retry at one layer only — brings it to 3.

use grpc_chaos::retry::Retry;
use grpc_chaos::{Channel, Fault, Host, Sim, Trace};
use tonic::{Code, Request, Response, Status};

use super::retry_world::{self as rw, parse};
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::store_server::StoreServer;
use crate::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
use crate::services::SAVE;

/// The storm: every layer retries.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "retry-storm",
    source: "Google SRE book ch. 22 (retries at several layers); gRFC A6",
    story: "Retries at three layers multiply: one player call becomes 27 calls to a store that is down.",
    checks: "3 layers × 3 attempts, store down: 27 Saves reach the store per player call",
    simulate: simulate_storm,
    judge: judge_storm,
};

/// The fix: only the store client retries.
pub(super) const FIX: Scenario = Scenario {
    name: "retry-storm-fix",
    source: "Google SRE book ch. 22 (retry at one layer); gRFC A6",
    story: "Retrying at one layer only keeps the load on a failing store at three calls per player call.",
    checks: "retry at one layer only (the store client): 3 Saves per player call",
    simulate: simulate_fix,
    judge: judge_fix,
};

/// Every layer's policy: 3 attempts on UNAVAILABLE, 0.1 s ×2 up to 1 s.
const POLICY: &str = r#"{"methodConfig": [{"name": [{"service": "tt.v1.Store"}],
  "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
                  "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}}]}"#;

/// How the gateway's relay reaches the store.
#[derive(Clone)]
enum Downstream {
    Plain(StoreClient<Channel>),
    Retrying(StoreClient<Retry<Channel>>),
}

/// A `tt.v1.Store` on the gateway that relays Saves to the store, trying
/// up to `tries` times itself on UNAVAILABLE (an application retry loop).
#[derive(Clone)]
struct Relay {
    store: Downstream,
    tries: u32,
}

impl Relay {
    async fn save_once(&self, msg: SaveRequest) -> Result<Response<SaveReply>, Status> {
        match self.store.clone() {
            Downstream::Plain(mut c) => c.save(msg).await,
            Downstream::Retrying(mut c) => c.save(msg).await,
        }
    }
}

#[tonic::async_trait]
impl crate::services::pb::store_server::Store for Relay {
    async fn save(&self, request: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        let msg = request.into_inner();
        let mut last = Status::unavailable("no try made");
        for _ in 0..self.tries {
            match self.save_once(msg.clone()).await {
                Err(s) if s.code() == Code::Unavailable => last = s,
                other => return other,
            }
        }
        Err(last)
    }

    async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        Err(Status::unimplemented("the relay only saves"))
    }
}

/// Who retries in a run.
#[derive(Clone, Copy)]
struct Layers {
    player: bool,
    gateway_tries: u32,
    store_client: bool,
}

fn simulate(seed: u64, layers: Layers) -> grpc_chaos::Result<Trace> {
    let mut sim = rw::store_sim(Sim::builder().seed(seed));
    sim.server("gateway", move |s| {
        let store = if layers.store_client {
            match s.retry_channel("store", POLICY) {
                Ok(c) => Downstream::Retrying(StoreClient::new(c)),
                Err(e) => panic!("catalog retry policy: {e}"),
            }
        } else {
            Downstream::Plain(StoreClient::new(s.channel("store")))
        };
        s.add_service(StoreServer::new(Relay {
            store,
            tries: layers.gateway_tries,
        }))
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .abort(Code::Unavailable, "store down"),
    );
    sim.client("player", move |player: Host| async move {
        let result = if layers.player {
            StoreClient::new(player.retry_channel("gateway", POLICY)?)
                .save(rw::save())
                .await
        } else {
            StoreClient::new(player.channel("gateway"))
                .save(rw::save())
                .await
        };
        let err = result.expect_err("the store is down");
        tracing::info!(code = ?err.code(), "player gave up");
        Ok(())
    });
    sim.run()
}

fn simulate_storm(seed: u64) -> grpc_chaos::Result<Trace> {
    simulate(
        seed,
        Layers {
            player: true,
            gateway_tries: 3,
            store_client: true,
        },
    )
}

fn simulate_fix(seed: u64) -> grpc_chaos::Result<Trace> {
    simulate(
        seed,
        Layers {
            player: false,
            gateway_tries: 1,
            store_client: true,
        },
    )
}

/// Store Saves per logical player call.
fn amplification(trace: &Trace) -> (usize, usize) {
    let player_calls = trace
        .retried_calls()
        .iter()
        .filter(|c| c.host == "player")
        .count()
        .max(usize::from(trace.calls_from("player").next().is_some()));
    (rw::store_saves(trace), player_calls)
}

fn judge(trace: &Trace, want: usize) -> Report {
    let (saves, calls) = amplification(trace);
    let gateway = trace.attempts("gateway", SAVE);
    let (conforms, why) = rw::conforms(trace, &parse(POLICY));
    let factor = saves.checked_div(calls).unwrap_or(0);
    Report::from_checks(
        format!(
            "player calls: {calls}; Saves at the gateway: {gateway}; Saves at the store: {saves}; amplification ×{factor}"
        ),
        &[
            (calls == 1, format!("{calls} player calls, not 1")),
            (saves == want, format!("{saves} Saves at the store, not {want}")),
            (conforms, why),
        ],
    )
    .with_findings(trace)
}

fn judge_storm(trace: &Trace) -> Report {
    judge(trace, 27)
}

fn judge_fix(trace: &Trace) -> Report {
    judge(trace, 3)
}
