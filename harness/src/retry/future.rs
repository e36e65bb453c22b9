//! [`RetryFuture`]: one call through the retry layer, attempt by attempt.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::request::Parts;
use http::{HeaderMap, HeaderValue};
use http_body::Body;
use tokio::time::Instant;
use tonic::codegen::{Bytes, StdError};
use tonic::{Code, Status};
use tower::{Service, ServiceExt};

use super::body::{CountSuccess, Replay};
use super::config::RetryPolicy;
use super::decide::{decide, DecideInput, Decision, Pushback, StopReason};
use super::event::{AttemptEvent, AttemptEventKind, AttemptOutcome};
use super::service::Shared;
use super::timeout;

/// The header that tells the server how many attempts came before this one
/// (gRFC A6 "Exposed Retry Metadata"); sent on attempt 2 onwards.
const PREVIOUS_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

pub(super) type Output = Result<http::Response<tonic::body::Body>, StdError>;

/// The future returned by [`Retry`](super::Retry): resolves to the final
/// attempt's response (or error), after any retries and their delays.
pub struct RetryFuture {
    inner: Pin<Box<dyn Future<Output = Output> + Send>>,
}

impl RetryFuture {
    pub(crate) fn new<S, B>(
        svc: S,
        shared: Arc<Shared>,
        req: http::Request<tonic::body::Body>,
    ) -> Self
    where
        S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>>
            + Clone
            + Send
            + 'static,
        S::Future: Send + 'static,
        S::Error: Into<StdError>,
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<StdError>,
    {
        RetryFuture {
            inner: Box::pin(run(svc, shared, req)),
        }
    }
}

impl Future for RetryFuture {
    type Output = Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl fmt::Debug for RetryFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryFuture").finish_non_exhaustive()
    }
}

async fn run<S, B>(mut svc: S, shared: Arc<Shared>, req: http::Request<tonic::body::Body>) -> Output
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>> + Clone,
    S::Error: Into<StdError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    if let Some(policy) = shared.config.shared_hedging_for(req.uri().path()) {
        let (parts, body) = req.into_parts();
        let call = Call::new(
            &shared,
            parts,
            Replay::new_hedged(body, shared.buffer_limit),
        );
        return super::hedged::run(svc, &shared, &call, &policy).await;
    }
    let Some(policy) = shared.config.shared_policy_for(req.uri().path()) else {
        return pass_through(svc, &shared, req).await;
    };
    let (parts, body) = req.into_parts();
    let call = Call::new(&shared, parts, Replay::new(body, shared.buffer_limit));
    let mut backoff_n = 0;
    let mut delay_before = Duration::ZERO;
    for attempt in 1..=u32::MAX {
        let (outcome, result) = match call
            .attempt(&shared, &mut svc, attempt, delay_before, None)
            .await
        {
            Attempt::Response(resp) => match trailers_only_code(resp.headers()) {
                Some(code) => {
                    let pushback = Pushback::from_headers(resp.headers());
                    let outcome = AttemptOutcome::TrailersOnly { code, pushback };
                    (outcome, Ok(resp.map(tonic::body::Body::new)))
                }
                None => {
                    // The server answered: committed, whatever the trailers say.
                    call.emit(
                        &shared,
                        attempt,
                        AttemptEventKind::Ended(AttemptOutcome::Headers),
                    );
                    let stop = Decision::Stop(StopReason::Committed);
                    call.emit(&shared, attempt, AttemptEventKind::Decided(stop));
                    return Ok(committed(resp, &shared));
                }
            },
            Attempt::Error(status) => {
                let outcome = AttemptOutcome::Error {
                    code: status.code(),
                };
                (outcome, Err(Box::new(status) as StdError))
            }
            Attempt::DeadlineExceeded => {
                (AttemptOutcome::DeadlineExceeded, Ok(deadline_exceeded()))
            }
        };
        call.emit(&shared, attempt, AttemptEventKind::Ended(outcome));
        let decision = call.decide(&shared, &policy, outcome, attempt, backoff_n);
        call.emit(&shared, attempt, AttemptEventKind::Decided(decision));
        match decision {
            Decision::Retry { delay, reason } => {
                backoff_n = reason.next_backoff_n();
                delay_before = delay;
                tokio::time::sleep(delay).await;
            }
            Decision::Stop(StopReason::Succeeded) => {
                if let Some(t) = &shared.throttler {
                    t.successful_rpc();
                }
                return result;
            }
            Decision::Stop(StopReason::Deadline) => {
                // grpc-go waits out its backoff timer until the context
                // expires; end the call at the deadline, not earlier.
                if let Some(deadline) = call.deadline {
                    tokio::time::sleep_until(deadline).await;
                }
                return Ok(deadline_exceeded());
            }
            Decision::Stop(_) => return result,
        }
    }
    // Unreachable: maxAttempts (at most 5) stops the loop long before.
    Ok(Status::internal("retry layer: attempt counter overflow").into_http())
}

/// The per-call state that does not change between attempts.
pub(super) struct Call {
    id: u64,
    path: Arc<str>,
    parts: Parts,
    pub(super) deadline: Option<Instant>,
    pub(super) replay: Replay,
}

pub(super) enum Attempt<B> {
    Response(http::Response<B>),
    Error(Status),
    DeadlineExceeded,
}

impl Call {
    fn new(shared: &Shared, parts: Parts, replay: Replay) -> Self {
        Call {
            id: shared.next_call(),
            path: parts.uri.path().into(),
            deadline: timeout::parse(&parts.headers).map(|t| Instant::now() + t),
            replay,
            parts,
        }
    }

    pub(super) fn emit(&self, shared: &Shared, attempt: u32, kind: AttemptEventKind) {
        if shared.observer.is_some() {
            shared.emit(AttemptEvent {
                call: self.id,
                path: self.path.clone(),
                attempt,
                kind,
            });
        }
    }

    /// Sends attempt number `attempt` (1-based) and waits for its response
    /// headers, bounded by the call's deadline. Emits `Started` right
    /// before calling `svc`, after it is ready. `hedge`: `Some` for a hedged
    /// call, with when its next hedge is due.
    pub(super) async fn attempt<S, B>(
        &self,
        shared: &Shared,
        svc: &mut S,
        attempt: u32,
        delay_before: Duration,
        hedge: Option<Option<Duration>>,
    ) -> Attempt<B>
    where
        S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>>,
        S::Error: Into<StdError>,
    {
        let send = async {
            if attempt > 1 {
                // Attempt 1 uses the readiness the caller already polled.
                svc.ready().await.map_err(Into::into)?;
            }
            let mut head = self.parts.clone();
            if attempt > 1 {
                head.headers
                    .insert(PREVIOUS_ATTEMPTS, HeaderValue::from(attempt - 1));
                if let Some(deadline) = self.deadline {
                    // Each attempt carries the budget that is left, as grpc-go
                    // derives grpc-timeout from the context deadline per stream.
                    let left = deadline.saturating_duration_since(Instant::now());
                    head.headers
                        .insert(timeout::GRPC_TIMEOUT, timeout::encode(left));
                }
            }
            let body = match hedge {
                Some(_) => self.replay.body_for_hedge(attempt),
                None => self.replay.body_for_next_attempt(),
            };
            let req = http::Request::from_parts(head, body);
            let started = AttemptEventKind::Started {
                delay_before,
                hedged: hedge.is_some(),
                next_hedge_in: hedge.flatten(),
            };
            self.emit(shared, attempt, started);
            svc.call(req).await.map_err(Into::into)
        };
        let result: Result<http::Response<B>, StdError> = match self.deadline {
            Some(deadline) => match tokio::time::timeout_at(deadline, send).await {
                Ok(result) => result,
                Err(_elapsed) => return Attempt::DeadlineExceeded,
            },
            None => send.await,
        };
        match result {
            Ok(resp) => Attempt::Response(resp),
            // The inner channel's own grpc-timeout timer fires at the same
            // instant as ours; whichever is polled first, it is the deadline.
            Err(_) if self.deadline.is_some_and(|d| Instant::now() >= d) => {
                Attempt::DeadlineExceeded
            }
            Err(err) => Attempt::Error(Status::from_error(err)),
        }
    }

    fn decide(
        &self,
        shared: &Shared,
        policy: &RetryPolicy,
        outcome: AttemptOutcome,
        attempt: u32,
        backoff_n: u32,
    ) -> Decision {
        let (code, pushback) = match outcome {
            AttemptOutcome::TrailersOnly { code, pushback } => (code, pushback),
            other => (other.code().unwrap_or(Code::Unknown), Pushback::Absent),
        };
        let input = DecideInput {
            code,
            headers_received: false,
            buffered_bytes: self.replay.bytes(),
            buffer_limit: shared.buffer_limit,
            pushback,
            attempts: attempt,
            backoff_n,
            remaining: self
                .deadline
                .map(|d| d.saturating_duration_since(Instant::now())),
        };
        let mut rng = shared.rng.lock().unwrap_or_else(|e| e.into_inner());
        decide(
            &input,
            Some(policy),
            shared.throttler.as_ref(),
            shared.jitter,
            &mut *rng,
        )
    }
}

/// A method without a retry policy: one attempt, untouched; only its
/// success is reported to the token bucket (grpc-go counts every call).
async fn pass_through<S, B>(
    mut svc: S,
    shared: &Shared,
    req: http::Request<tonic::body::Body>,
) -> Output
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>>,
    S::Error: Into<StdError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    let resp = svc.call(req).await.map_err(Into::into)?;
    match trailers_only_code(resp.headers()) {
        Some(code) => {
            if let (Code::Ok, Some(t)) = (code, &shared.throttler) {
                t.successful_rpc();
            }
            Ok(resp.map(tonic::body::Body::new))
        }
        None => Ok(committed(resp, shared)),
    }
}

/// The status of a trailers-only response (`grpc-status` among the headers).
pub(super) fn trailers_only_code(headers: &HeaderMap) -> Option<Code> {
    headers
        .get(&crate::spec::names::GRPC_STATUS)
        .map(|v| Code::from_bytes(v.as_bytes()))
}

pub(super) fn committed<B>(
    resp: http::Response<B>,
    shared: &Shared,
) -> http::Response<tonic::body::Body>
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    match &shared.throttler {
        Some(t) => {
            let t = t.clone();
            resp.map(|b| tonic::body::Body::new(CountSuccess::new(b, t)))
        }
        None => resp.map(tonic::body::Body::new),
    }
}

/// What grpc-go reports when the context deadline ends a call.
pub(super) fn deadline_exceeded() -> http::Response<tonic::body::Body> {
    Status::deadline_exceeded("deadline exceeded").into_http()
}
