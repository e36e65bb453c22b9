//! Client-side health checking (gRFC A17, "Client Workflow") for one
//! replica connection of a balanced channel: a `grpc.health.v1.Health/Watch`
//! stream on the replica's own connection, and the gate that keeps the
//! replica out of rotation while its answer is not SERVING.
//!
//! What it copies, read from the sources:
//! - A17: the Watch starts as soon as the connection is up, and the
//!   replica is not picked until the first answer (the subchannel "will
//!   stay in state CONNECTING until it receives the first health-check
//!   response"); SERVING puts it in rotation, any other answer takes it out
//!   (TRANSIENT_FAILURE); a Watch that fails with UNIMPLEMENTED turns
//!   health checking off for it ("treat the channel as healthy") and is
//!   recorded, never retried; a Watch that fails otherwise, or ends, takes
//!   it out and is retried with exponential backoff, reset by a received
//!   message.
//! - A17: "when the backend sends a GOAWAY, the client will cancel the
//!   Watch() call"; the replica's connection is then replaced, as a grpc
//!   subchannel goes IDLE after a GOAWAY and round_robin reconnects it
//!   (without it, the never-ending Watch would keep a draining server's
//!   connection open: hyper's graceful shutdown waits for every stream).
//! - grpc-go `health/client.go` (`clientHealthCheck`): the backoff is
//!   `backoff.DefaultExponential` (`internal/backoff`, grpc's
//!   connection-backoff.md: 1 s base, ×1.6, ±20 % jitter, 120 s cap; the
//!   first retry waits the base with no jitter), indexed by the failures
//!   since the last received message.
//!
//! Where it differs: tower's balancer has no TRANSIENT_FAILURE channel
//! state, so when no replica is in rotation a call waits in the buffer for
//! one (grpc's round_robin fails it UNAVAILABLE, unless wait-for-ready).
//! The gate is the replica's `poll_ready`: tower's p2c checks the picked
//! replica right before it dispatches (`ReadyCache::check_ready_index`),
//! so a NOT_SERVING replica is moved to the pending set and another one
//! picked; when it is SERVING again its wake-up puts it back.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tonic_health::pb::health_client::HealthClient;
use tonic_health::pb::HealthCheckRequest;

use super::io::Liveness;
use super::rng::SplitMix64;
use super::Site;
use crate::recorder::event::{BalancerChange, HealthStatus};
use tower::util::rng::Rng;

/// connection-backoff.md's INITIAL_BACKOFF, MULTIPLIER, JITTER and
/// MAX_BACKOFF, as grpc-go's `backoff.DefaultExponential` has them.
const BASE: Duration = Duration::from_secs(1);
const MULTIPLIER: f64 = 1.6;
const JITTER: f64 = 0.2;
const MAX: Duration = Duration::from_secs(120);

/// Whether the replica may be picked, as its Watch last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// No answer yet (A17: still CONNECTING).
    Waiting,
    /// The last answer, or the failure since.
    Answered(Option<HealthStatus>),
    /// The replica answered UNIMPLEMENTED: no health checking, healthy.
    Unchecked,
    /// The server sent a GOAWAY: the Watch is cancelled and the connection
    /// is to be replaced.
    Retired,
}

/// What the replica's `poll_ready` does, as its Watch says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Admission {
    /// In rotation: it may be picked.
    Serve,
    /// The connection was sent a GOAWAY: drop it and connect anew, as a
    /// grpc subchannel goes IDLE and round_robin reconnects it.
    Retire,
}

#[derive(Debug)]
struct State {
    gate: Gate,
    /// The balancer's task, woken when the gate opens.
    waker: Option<Waker>,
}

/// The Watch of one replica connection; dropping it ends the Watch.
pub(super) struct Watch {
    state: Arc<Mutex<State>>,
    task: tokio::task::AbortHandle,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Watch {
    /// Starts the Watch for `service` on `channel`, the replica's
    /// connection, on the current (host's) runtime.
    pub(super) fn start(
        site: Arc<Site>,
        replica: Arc<str>,
        service: Arc<str>,
        channel: tonic::transport::Channel,
        alive: Arc<Liveness>,
    ) -> Self {
        let state = Arc::new(Mutex::new(State {
            gate: Gate::Waiting,
            waker: None,
        }));
        let seed = crate::retry::channel_seed(site.seed, &site.from, &replica);
        let watcher = Watcher {
            site,
            replica,
            service,
            state: state.clone(),
            rng: SplitMix64::new(seed),
        };
        let task = tokio::spawn(watcher.run(channel, alive)).abort_handle();
        Self { state, task }
    }

    /// Ready while the replica is in rotation, or when its connection is
    /// to be retired; otherwise pending, and `cx` is woken when that
    /// changes.
    pub(super) fn poll_admit(&self, cx: &mut Context<'_>) -> Poll<Admission> {
        let mut state = lock(&self.state);
        match state.gate {
            Gate::Unchecked | Gate::Answered(Some(HealthStatus::Serving)) => {
                Poll::Ready(Admission::Serve)
            }
            Gate::Retired => Poll::Ready(Admission::Retire),
            _ => {
                match &mut state.waker {
                    Some(w) => w.clone_from(cx.waker()),
                    None => state.waker = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }
}

/// The task side of a [`Watch`].
struct Watcher {
    site: Arc<Site>,
    replica: Arc<str>,
    service: Arc<str>,
    state: Arc<Mutex<State>>,
    rng: SplitMix64,
}

/// How one Watch call ended.
enum Ended {
    Unimplemented,
    /// The server sent a GOAWAY.
    GoAway,
    /// Failed or ended, and whether a message came first.
    Failed {
        error: String,
        answered: bool,
    },
}

impl Watcher {
    async fn run(mut self, channel: tonic::transport::Channel, alive: Arc<Liveness>) {
        // Failures since the last received message (grpc-go's `tryCnt`).
        let mut failures = 0u32;
        loop {
            let ended = {
                let watch = std::pin::pin!(self.watch_once(channel.clone()));
                let goaway = std::pin::pin!(alive.goaway());
                match futures_util::future::select(watch, goaway).await {
                    futures_util::future::Either::Left((ended, _)) => ended,
                    // Dropping the Watch resets its stream (RST_STREAM CANCEL).
                    futures_util::future::Either::Right(_) => Ended::GoAway,
                }
            };
            match ended {
                Ended::Unimplemented => {
                    self.record(BalancerChange::HealthUnimplemented);
                    self.set(Gate::Unchecked);
                    return;
                }
                Ended::GoAway => {
                    self.record(BalancerChange::HealthWatchCancelled);
                    self.set(Gate::Retired);
                    return;
                }
                Ended::Failed { error, answered } => {
                    if alive.is_closed() {
                        // The connection is gone: the replica redials and
                        // starts a new Watch on the new connection.
                        self.set(Gate::Answered(None));
                        return;
                    }
                    if answered {
                        failures = 0;
                    }
                    let retry_in = backoff(&mut self.rng, failures);
                    failures = failures.saturating_add(1);
                    self.record(BalancerChange::HealthWatchFailed { error, retry_in });
                    self.set(Gate::Answered(None));
                    tokio::time::sleep(retry_in).await;
                }
            }
        }
    }

    /// One Watch call, its answers applied as they come.
    async fn watch_once(&self, channel: tonic::transport::Channel) -> Ended {
        let request = HealthCheckRequest {
            service: self.service.to_string(),
        };
        let mut stream = match HealthClient::new(channel).watch(request).await {
            Ok(response) => response.into_inner(),
            Err(status) => return ended(&status, false),
        };
        let mut answered = false;
        loop {
            match stream.message().await {
                Ok(Some(answer)) => {
                    answered = true;
                    self.answer(HealthStatus::from_wire(answer.status));
                }
                Ok(None) => {
                    // Trailers with OK: the server ended the stream.
                    return Ended::Failed {
                        error: crate::spec::code_name(tonic::Code::Ok).to_owned(),
                        answered,
                    };
                }
                Err(status) => return ended(&status, answered),
            }
        }
    }

    /// A status the Watch answered: recorded when it differs from the last.
    fn answer(&self, status: HealthStatus) {
        let last = lock(&self.state).gate;
        if last != Gate::Answered(Some(status)) {
            self.record(BalancerChange::Health { status });
        }
        self.set(Gate::Answered(Some(status)));
    }

    fn set(&self, gate: Gate) {
        let mut state = lock(&self.state);
        state.gate = gate;
        if let Some(w) = state.waker.take() {
            w.wake();
        }
    }

    fn record(&self, change: BalancerChange) {
        self.site.record(&self.replica, change);
    }
}

/// grpc-go's `Exponential::Backoff(retries)`: the base for the first
/// retry; then base × 1.6^retries, capped, ±20 % (drawn from `rng`).
fn backoff(rng: &mut SplitMix64, retries: u32) -> Duration {
    if retries == 0 {
        return BASE;
    }
    // 1.6^11 × 1 s is past the cap already: no need to grow further.
    let grown = BASE.as_secs_f64() * MULTIPLIER.powi(retries.min(11) as i32);
    let capped = grown.min(MAX.as_secs_f64());
    // A uniform draw in [0, 1) from the top 53 bits.
    let unit = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let jittered = capped * (1.0 + JITTER * (unit * 2.0 - 1.0));
    Duration::from_secs_f64(jittered.max(0.0))
}

fn ended(status: &tonic::Status, answered: bool) -> Ended {
    if status.code() == tonic::Code::Unimplemented {
        return Ended::Unimplemented;
    }
    let code = crate::spec::code_name(status.code());
    let error = if status.message().is_empty() {
        code.to_owned()
    } else {
        format!("{code} {:?}", status.message())
    };
    Ended::Failed { error, answered }
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    // A panic while holding the lock leaves a usable state.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_is_grpcs_connection_backoff() {
        let mut rng = SplitMix64::new(1);
        assert_eq!(
            backoff(&mut rng, 0),
            Duration::from_secs(1),
            "no jitter at first"
        );
        for retries in 1..40 {
            let d = backoff(&mut rng, retries).as_secs_f64();
            let want = 1.6f64.powi(retries as i32).min(120.0);
            assert!(d >= want * 0.8 && d <= want * 1.2, "{retries}: {d}");
        }
        let (mut a, mut b) = (SplitMix64::new(9), SplitMix64::new(9));
        assert_eq!(backoff(&mut a, 3), backoff(&mut b, 3), "seeded");
    }

    #[test]
    fn wire_numbers_map_to_the_protos_names() {
        let names: Vec<&str> = (0..5)
            .map(|n| HealthStatus::from_wire(n).proto_name())
            .collect();
        assert_eq!(
            names,
            [
                "UNKNOWN",
                "SERVING",
                "NOT_SERVING",
                "SERVICE_UNKNOWN",
                "UNKNOWN"
            ]
        );
    }
}
