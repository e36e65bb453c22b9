//! The handler layer: a tower service in front of every sim server's routes.
//!
//! It records each request's life (start with the incoming `grpc-timeout`,
//! queueing, finish with a status, or drop when hyper cancels it) and
//! applies the handler faults that match it, in the order they were added.

mod layer;
mod rule;
mod run;

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::FutureExt;
use tonic::body::Body;
use tonic::Status;

pub(crate) use layer::HandlerLayer;
pub(crate) use rule::{Action, HandlerRule, Reply};
pub(crate) use run::HandlerBody;
use run::RunGuard;

use crate::deadline::{parse_grpc_timeout, Arrival};
use crate::net::PeerInfo;
use crate::recorder::event::{CallId, EventKind};
use crate::recorder::{CALL_ID_HEADER, CURRENT_RUN};
use crate::sim::Shared;

/// The header a retrying client sends on attempt 2 onwards (gRFC A6
/// "Exposed Retry Metadata").
const PREVIOUS_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

/// Records and faults the requests of one host. See the module docs.
#[derive(Clone)]
pub(crate) struct HandlerService<S> {
    inner: S,
    host: Arc<str>,
    shared: Arc<Shared>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> tower::Service<http::Request<Body>> for HandlerService<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<HandlerBody>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<Body>) -> Self::Future {
        // The clone-and-swap idiom: the service that was polled ready is the
        // one that gets the call.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let guard = self.start(&mut req);
        let rules = self.shared.handler_rules(&self.host, guard.path());
        Box::pin(serve(inner, req, guard, rules))
    }
}

impl<S> HandlerService<S> {
    /// Records the request's arrival and returns the guard of its run.
    fn start(&self, req: &mut http::Request<Body>) -> RunGuard {
        let recorder = &self.shared.recorder;
        let path = req.uri().path().to_owned();
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
        let timeout = header("grpc-timeout").and_then(parse_grpc_timeout);
        let call = header(CALL_ID_HEADER)
            .and_then(|v| v.parse().ok())
            .map(CallId);
        let from = req
            .extensions()
            .get::<PeerInfo>()
            .map_or_else(|| "?".to_owned(), |p| p.peer.to_string());
        let run = recorder.next_run();
        let nth = recorder.count_request(&self.host, &path);
        recorder.push(
            &self.host,
            EventKind::HandlerStarted {
                run,
                path: path.clone(),
                from,
                call,
                timeout,
                nth,
            },
        );
        if let Some(previous) = req
            .headers()
            .get(PREVIOUS_ATTEMPTS)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
        {
            recorder.push(
                &self.host,
                EventKind::RetryArrived {
                    run,
                    path: path.clone(),
                    previous,
                },
            );
        }
        req.extensions_mut()
            .insert(Arrival(tokio::time::Instant::now()));
        RunGuard::new(self.shared.clone(), self.host.clone(), run, path)
    }
}

/// Applies the matching faults, then runs the handler.
async fn serve<S>(
    mut inner: S,
    req: http::Request<Body>,
    mut guard: RunGuard,
    rules: Vec<HandlerRule>,
) -> Result<http::Response<HandlerBody>, Infallible>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>,
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
    match CURRENT_RUN.scope(run, handler).await {
        Ok(Ok(response)) => Ok(guard.wrap(response)),
        Ok(Err(never)) => match never {},
        Err(panic) => {
            guard.panicked(panic_message(&*panic));
            Ok(guard.respond(Status::internal("handler panicked")))
        }
    }
}

/// Applies one fault; `Some(status, reply)` answers the request without the
/// handler.
async fn apply(rule: &HandlerRule, guard: &mut RunGuard) -> Option<(Status, Reply)> {
    match &rule.action {
        Action::Delay(d) => {
            guard.fault_fired(format!("delay {}", crate::trace::fmt_duration(*d)));
            tokio::time::sleep(*d).await;
            None
        }
        Action::Abort(code, message, reply) => {
            let status = Status::new(*code, message.clone());
            let name = crate::spec::code_name(*code);
            guard.fault_fired(format!("abort {name}{}", reply.describe()));
            Some((status, *reply))
        }
        Action::Hang => {
            guard.fault_fired("hang".to_owned());
            std::future::pending::<()>().await;
            None
        }
        Action::FailFirst(n, code, reply) => {
            let k = rule.count();
            (k <= *n).then(|| {
                let name = crate::spec::code_name(*code);
                guard.fault_fired(format!("fail {k}/{n} with {name}{}", reply.describe()));
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

/// The text of a panic's payload (`panic!` gives a `&str` or a `String`).
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}
