//! The handler layer: a tower service in front of every sim server's routes.
//!
//! It records each request's life (start with the incoming `grpc-timeout`,
//! queueing, finish with a status, or drop when hyper cancels it) and
//! applies the handler faults that match it, in the order they were added.
//! It sits outermost among the server's own layers ([`HandlerLayer`]); the
//! faults marked [`inside_layers`](crate::fault::HandlerFault::inside_layers)
//! act in a second, recording-free layer right in front of the routes
//! ([`InsideService`]), against the run the outer layer started.

mod inside;
mod layer;
mod run;
mod seen;

use crate::recorder::event;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use tokio::sync::OwnedSemaphorePermit;
use tonic::body::Body;
use tonic::Status;

pub(crate) use crate::fault::{Action, HandlerRule, Reply};
pub(crate) use inside::InsideService;
pub use layer::HandlerLayer;
pub use run::HandlerBody;
use run::RunGuard;

use crate::deadline::{parse_grpc_timeout, tonic_reads_grpc_timeout, Arrival};
use crate::error::Problems;
use crate::net::PeerInfo;
use crate::recorder::event::{CallId, EventKind, HostName, LayerSide, PanicSite, RunId};
use crate::recorder::{Polled, Recorder, SlowPolls, CALL_ID, CURRENT_RUN};
use crate::spec::names::GRPC_TIMEOUT;
use crate::units::panic_message;

/// What the handler layer needs of the run, and no more: the recorder,
/// the handler faults in the order added, where a panicking handler is
/// reported, the run's seed (named in that report), and where polls that
/// held their thread too long go.
pub(crate) struct HandlerEnv {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) rules: Arc<[HandlerRule]>,
    pub(crate) problems: Arc<Problems>,
    pub(crate) seed: u64,
    pub(crate) slow: Arc<SlowPolls>,
}

impl HandlerEnv {
    /// The handler faults matching a request for `path` on `host` now:
    /// those acting before the server's own layers, or (`inside`) those
    /// acting inside them; in the order they were added (the order they
    /// act in). A rule counts as fired when it acts, not here: one behind
    /// a fault that answers the request never reaches it.
    pub(crate) fn handler_rules(&self, host: &str, path: &str, inside: bool) -> Vec<HandlerRule> {
        if self.rules.is_empty() {
            // The usual case: no clock read (a lookup in turmoil's world)
            // on every request.
            return Vec::new();
        }
        let now = self.recorder.now();
        self.rules
            .iter()
            .filter(|r| r.inside == inside && r.matches(host, path, now))
            .cloned()
            .collect()
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The header a retrying client sends on attempt 2 onwards (gRFC A6
/// "Exposed Retry Metadata").
const PREVIOUS_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

/// The service [`HandlerLayer`] makes: records and faults the requests of
/// one host, then passes them on to the server's own layers and routes.
/// Only the harness makes one.
#[derive(Clone)]
pub struct HandlerService<S> {
    inner: S,
    host: HostName,
    env: Arc<HandlerEnv>,
    /// Whether the host's builder has layers of its own (set once the
    /// user's configure closure returned), for [`LayerSide`] in the trace.
    layered: Arc<AtomicBool>,
}

impl<S> std::fmt::Debug for HandlerService<S> {
    // Without `S: Debug`: the server's own stack rarely is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerService")
            .field("host", &self.host)
            .finish_non_exhaustive()
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<Body>> for HandlerService<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = http::Response<HandlerBody>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Self::Response, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        // The clone-and-swap idiom: the service that was polled ready is the
        // one that gets the call.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let side = self
            .layered
            .load(Ordering::Relaxed)
            .then_some(LayerSide::OutsideLayers);
        let seen = seen::SeenRequest::default();
        let mut req = req.map(|b| Body::new(seen::WatchedBody::new(b, seen.clone())));
        let guard = self.start(&mut req, side).watching(seen);
        let rules = self.env.handler_rules(&self.host, guard.path(), false);
        Box::pin(serve(inner, req, guard, rules))
    }
}

/// The handler run a request belongs to, as a request extension: the layer
/// inside the server's own layers ([`inside::InsideService`]) records its
/// faults against the run the outer layer started.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunTag(pub(crate) RunId);

impl<S> HandlerService<S> {
    /// Records the request's arrival and returns the guard of its run.
    fn start(&self, req: &mut http::Request<Body>, side: Option<LayerSide>) -> RunGuard {
        let recorder = &self.env.recorder;
        let path = req.uri().path().to_owned();
        let raw_timeout = req.headers().get(&GRPC_TIMEOUT);
        let timeout = raw_timeout
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout);
        let call = req
            .headers()
            .get(&CALL_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .map(CallId);
        let from = req
            .extensions()
            .get::<PeerInfo>()
            .map_or_else(|| HostName::new("?"), |p| p.peer);
        let run = recorder.next_run();
        let nth = recorder.count_request(self.host, &path);
        // One clock read for the arrival's events and the run's start.
        let now = recorder.now();
        recorder.push_at(
            now,
            self.host,
            EventKind::HandlerStarted(Box::new(event::HandlerStarted {
                run,
                path: path.clone(),
                from,
                call,
                timeout,
                nth,
            })),
        );
        // A grpc-timeout the spec does not allow: said, with what tonic's
        // server makes of it (its own timer sits outside this layer).
        if let Some(raw) = raw_timeout {
            if timeout.is_none() {
                recorder.push_at(
                    now,
                    self.host,
                    EventKind::GrpcTimeoutInvalid(Box::new(event::GrpcTimeoutInvalid {
                        run,
                        path: path.clone(),
                        raw: String::from_utf8_lossy(raw.as_bytes()).into_owned(),
                        tonic_reads: tonic_reads_grpc_timeout(raw.as_bytes()),
                    })),
                );
            }
        }
        if let Some(previous) = req
            .headers()
            .get(PREVIOUS_ATTEMPTS)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
        {
            recorder.push_at(
                now,
                self.host,
                EventKind::RetryArrived {
                    run,
                    path: path.clone(),
                    previous,
                },
            );
        }
        req.extensions_mut()
            .insert(Arrival(tokio::time::Instant::now()));
        req.extensions_mut().insert(RunTag(run));
        RunGuard::new(self.env.clone(), self.host, run, path, side, now)
    }
}

/// Applies the matching faults, then runs the handler (for a host with
/// layers of its own: the layers, then the routes).
async fn serve<S, B>(
    mut inner: S,
    req: http::Request<Body>,
    mut guard: RunGuard,
    rules: Vec<HandlerRule>,
) -> Result<http::Response<HandlerBody>, BoxError>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>>,
    S::Error: Into<BoxError>,
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    // In the order added: delays and limits add up; the first fault that
    // answers ends the request, and the ones after it never see it.
    for rule in &rules {
        rule.mark_fired();
        if let Some((status, reply)) = apply(rule, &mut guard).await {
            return Ok(guard.respond_with(status, reply));
        }
    }
    let run = guard.run();
    let handler = AssertUnwindSafe(inner.call(req)).catch_unwind();
    // Its own statement: the timed future borrows the guard, which the
    // arms below consume.
    let outcome = Timed {
        inner: CURRENT_RUN.scope(run, handler),
        guard: &guard,
    }
    .await;
    match outcome {
        Ok(Ok(response)) => Ok(guard.wrap(response.map(Body::new))),
        // A layer of the server's own failed the request: tonic's
        // `RecoverError` answers an error that is a `Status` with that
        // status, so answer it here the same way and record it. Any other
        // error goes on to hyper, which resets the stream; the run is then
        // recorded as dropped.
        Ok(Err(e)) => match Status::try_from_error(e.into()) {
            Ok(status) => Ok(guard.respond(status)),
            Err(e) => Err(e),
        },
        // tonic's server would let the panic end hyper's task for the
        // stream; the sim asks hyper for the reset that ending makes (see
        // `PanicReset`). Nothing of the stream's was sent yet, so the wire
        // is the same.
        Err(panic) => {
            guard.panicked(panic_message(&*panic), PanicSite::Handler);
            Err(Box::new(PanicReset::new()))
        }
    }
}

/// What the handler layer hands hyper for a handler that panicked, in
/// place of the panic: hyper answers a service's error, or a response
/// body's, by resetting the stream with the h2 reason it finds in the
/// error's source chain (hyper 1.12 `proto/h2/server.rs` `poll2`,
/// `proto/h2/mod.rs` `on_user_err`, `error.rs` `h2_reason`); this one
/// carries CANCEL, the reason of the reset h2 sends when a panic drops the
/// stream's task (h2 0.4.20 `proto/streams/streams.rs` `maybe_cancel`;
/// measured, see [`PanicSite`]). It is neither a `Status` nor an
/// `h2::Error` itself, so tonic's `RecoverError` (which would answer
/// either as a status) passes it on (tonic 0.14.9 `status.rs`
/// `try_from_error`).
///
/// The reset hyper sends for an error is an explicit one (h2
/// `send_reset`), and the one h2 sends for a dropped task is scheduled
/// (`schedule_implicit_reset`): the frame is the same, RST_STREAM(CANCEL);
/// the difference is what h2 still held for the stream, see
/// [`HandlerBody`].
#[derive(Debug)]
pub(crate) struct PanicReset(h2::Error);

impl PanicReset {
    pub(crate) fn new() -> Self {
        Self(h2::Error::from(h2::Reason::CANCEL))
    }
}

impl std::fmt::Display for PanicReset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the handler panicked: stream reset with CANCEL, as tonic's server does")
    }
}

impl std::error::Error for PanicReset {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

pin_project_lite::pin_project! {
    /// The handler's future, each poll timed on the *wall* clock against
    /// the run's slow-poll threshold (reported outside the trace, see
    /// [`crate::trace::SlowPoll`]).
    struct Timed<'a, F> {
        #[pin]
        inner: F,
        guard: &'a RunGuard,
    }
}

impl<F: Future> Future for Timed<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let guard = *this.guard;
        let inner = this.inner;
        guard.slow_polls().time(
            || inner.poll(cx),
            |wall| guard.slow_poll(Polled::Handler, wall),
        )
    }
}

/// What a fault acts through: the run it acts on, and where the trace
/// records it.
pub(crate) trait Acting {
    /// Records `kind` on the run's host.
    fn record(&self, kind: EventKind);
    /// The run the faults act on, and its method path.
    fn run_path(&self) -> (RunId, &str);
    /// Which side of the server's layers the faults act on, when the
    /// server has layers.
    fn side(&self) -> Option<LayerSide>;
    /// *Simulated* time now.
    fn now(&self) -> Duration;
    /// Keeps a concurrency-limit slot until the run's response ends.
    fn keep_permit(&mut self, permit: OwnedSemaphorePermit);
    /// Notes that a fault's timer is set for `at`, *simulated* time
    /// (`Recorder::timer_at`).
    fn timer_at(&self, at: Duration);

    fn fault_fired(&self, action: event::FaultAction) {
        let (run, path) = self.run_path();
        self.record(EventKind::FaultFired(Box::new(event::FaultFired {
            run,
            path: path.to_owned(),
            action,
            side: self.side(),
        })));
    }

    fn dequeued(&mut self, queued_at: Duration, permit: OwnedSemaphorePermit) {
        let queued = self.now().saturating_sub(queued_at);
        if !queued.is_zero() {
            let (run, path) = self.run_path();
            self.record(EventKind::HandlerDequeued(Box::new(
                crate::recorder::event::HandlerDequeued {
                    run,
                    path: path.to_owned(),
                    queued,
                },
            )));
        }
        self.keep_permit(permit);
    }
}

/// Applies one fault; `Some(status, reply)` answers the request without the
/// handler.
async fn apply(rule: &HandlerRule, guard: &mut impl Acting) -> Option<(Status, Reply)> {
    match &rule.action {
        Action::Delay(d) => {
            guard.fault_fired(event::FaultAction::Delay { by: *d });
            // A delay is a wait the run's no-progress rule must sit out.
            guard.timer_at(guard.now().saturating_add(*d));
            tokio::time::sleep(*d).await;
            None
        }
        Action::Abort(code, message, reply) => {
            let status = Status::new(*code, message.clone());
            guard.fault_fired(event::FaultAction::Abort {
                code: crate::spec::code_name(*code),
                reply: reply.recorded(),
            });
            Some((status, *reply))
        }
        Action::Hang => {
            guard.fault_fired(event::FaultAction::Hang);
            std::future::pending::<()>().await;
            None
        }
        Action::FailFirst(n, code, reply) => {
            let k = rule.count();
            (k <= *n).then(|| {
                guard.fault_fired(event::FaultAction::FailFirst {
                    nth: k,
                    of: *n,
                    code: crate::spec::code_name(*code),
                    reply: reply.recorded(),
                });
                (
                    Status::new(*code, format!("injected failure {k}/{n}")),
                    *reply,
                )
            })
        }
        Action::ConcurrencyLimit(n) => {
            let limiter = rule.limiter(*n);
            let queued_at = guard.now();
            // The semaphore is never closed, so acquire cannot fail; a
            // request that cannot get a slot simply keeps waiting.
            if let Ok(permit) = limiter.acquire_owned().await {
                guard.dequeued(queued_at, permit);
            }
            None
        }
    }
}
