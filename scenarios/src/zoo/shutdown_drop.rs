//! A graceful shutdown that drops the calls in flight: the ledger's own
//! serve fn shuts tonic down gracefully on SIGTERM
//! (`serve_with_incoming_shutdown`: GOAWAY, new calls refused, calls in
//! flight left to finish), but it also hands the same signal to its
//! handlers as the "stop working" token, and each `Save` `select!`s on
//! it: at SIGTERM every Save still working gives up with CANCELLED
//! "shutting down". The drain waits for calls the service itself has just
//! failed. The field knows it as handlers cancelled by the shutdown that
//! should have let them finish (davidbrochart/anycorn #88: the shutdown
//! cancels the task group the connection handlers run in; benoitc/gunicorn
//! #2529, requests in flight dropped by a "graceful" shutdown; grpc-go
//! #1110, the process gone before the in-flight RPC finished;
//! static-web-server #61, a hyper server whose requests failed at each
//! Kubernetes deploy because it did not wait for them; grpc.io's
//! "Server graceful stop" guide: in-flight RPCs continue until they
//! complete; read, not measured). A run without faults never shuts down,
//! so a scripted happy-path test passes.
//!
//! The fix keeps the signal for the server alone: handlers finish what
//! they took, the server drains. The invariant is the user's own, read
//! from the trace's handler runs: every Save the ledger was running when
//! its shutdown started, or accepted while draining, answered OK. The
//! space is generic: the ledger shut down, slowed, the shop–ledger link
//! cut, while the orders run.

use std::time::Duration;

use futures_util::future::{FutureExt, Shared};
use grpc_chaos::explore::Space;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::server::Shutdown;
use grpc_chaos::trace::{fmt_duration, RunEnd};
use grpc_chaos::{ServeFnHost, Sim, Trace};
use tonic::transport::Server;
use tonic::{Request, Response, Status};

use super::Bug;
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::store_server::{Store, StoreServer};
use crate::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};

/// The zoo entry.
pub const BUG: Bug = Bug {
    name: "shutdown-drops-in-flight",
    source: "grpc-go #1110; davidbrochart/anycorn #88; benoitc/gunicorn #2529; static-web-server/static-web-server #61 (hyper); grpc.io guide \"Server graceful stop\"",
    story: "A server shuts down gracefully, but its handlers take the same signal as their cue to give up: the calls in flight fail instead of draining.",
    scenario,
    space,
    invariant: (DRAINED, drained),
};

/// The invariant's name.
pub const DRAINED: &str = "calls in flight finish through a graceful shutdown";

const ORDERS: u32 = 6;
/// How long a Save works before it answers (*simulated*).
const WORK: Duration = Duration::from_millis(80);
/// The shop's pause between orders.
const PAUSE: Duration = Duration::from_millis(20);
const DEADLINE: Duration = Duration::from_secs(1);

/// The ledger's `tt.v1.Store`: each Save works, then answers; buggy, it
/// gives up when the shutdown signal fires first.
#[derive(Clone)]
struct Ledger {
    shutdown: Shared<Shutdown>,
    fixed: bool,
}

#[tonic::async_trait]
impl Store for Ledger {
    async fn save(&self, request: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        let reply = Response::new(SaveReply {
            total: request.get_ref().points,
        });
        let work = tokio::time::sleep(WORK);
        if self.fixed {
            work.await;
            return Ok(reply);
        }
        // The bug: the server's shutdown signal doubles as the handlers'
        // "stop now". `biased`: work done on the very tick of the signal
        // answers, the same in every run.
        tokio::select! {
            biased;
            () = work => Ok(reply),
            () = self.shutdown.clone() => Err(Status::cancelled("shutting down")),
        }
    }

    async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        Err(Status::unimplemented("the ledger only saves"))
    }
}

/// The ledger's `main`: tonic's graceful shutdown on the host's signal
/// (SIGTERM in production).
async fn serve(host: ServeFnHost, fixed: bool) -> Result<(), tonic::transport::Error> {
    let shutdown = host.shutdown().shared();
    let ledger = Ledger {
        shutdown: shutdown.clone(),
        fixed,
    };
    Server::builder()
        .layer(host.handler_layer())
        .add_service(StoreServer::new(ledger))
        .serve_with_incoming_shutdown(host.incoming(), shutdown)
        .await
}

/// The scenario: `shop` saves orders at `ledger`, buggy or `fixed`.
pub fn scenario(seed: u64, fixed: bool) -> Sim {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(Duration::from_secs(3))
        .build();
    sim.server_fn("ledger", move |host: ServeFnHost| serve(host, fixed));
    sim.client("shop", |c| async move {
        let mut ledger = StoreClient::new(c.channel("ledger"));
        for order in 0..ORDERS {
            let mut save = Request::new(SaveRequest {
                match_id: format!("order-{order}"),
                points: 1,
            });
            save.set_timeout(DEADLINE);
            // A failed order is the shop's to shrug off (after a shutdown
            // the ledger refuses new calls: that is what a shutdown is).
            let _ = ledger.save(save).await;
            tokio::time::sleep(PAUSE).await;
        }
        Ok(())
    });
    sim
}

/// What may break: the ledger shut down, its handlers slowed, the link
/// cut, while the orders run.
pub fn space() -> Space {
    Space::new()
        .shutdown("ledger")
        .handler_delay("ledger", Duration::from_millis(300))
        .partition("shop", "ledger")
        .window(Duration::ZERO, Duration::from_millis(600))
}

/// Every handler run on the ledger that was running when its graceful
/// shutdown started, or that it accepted while draining, answered OK.
///
/// # Errors
/// The first run that did not, and how it ended.
pub fn drained(trace: &Trace) -> Result<(), String> {
    let Some(since) = trace
        .events_on("ledger")
        .find_map(|e| matches!(e.kind, EventKind::ShutdownStarted { .. }).then(|| e.at()))
    else {
        return Ok(());
    };
    for run in trace.runs_on("ledger") {
        if run.ended_at.is_some_and(|t| t < since) {
            continue;
        }
        let ended = match &run.end {
            RunEnd::Finished { code: "OK", .. } => continue,
            RunEnd::Finished { code, message } => format!("answered {code} {message:?}"),
            RunEnd::Running => "never answered".to_owned(),
            other => format!("ended {other:?}"),
        };
        let when = run
            .ended_at
            .map_or_else(String::new, |t| format!(" at {}", fmt_duration(t)));
        let taken = if run.started <= since {
            "was in flight when"
        } else {
            "was accepted after"
        };
        return Err(format!(
            "{} {} {taken} the graceful shutdown started at {}: it {ended}{when}",
            run.id,
            run.path,
            fmt_duration(since)
        ));
    }
    Ok(())
}
