//! One hedged call (gRFC A6 "Hedging Policy"): attempts side by side, the
//! first to commit wins, the others are dropped.
//!
//! The original attempt goes at once, then one more every `hedgingDelay`
//! while [`may_send`] allows it; a non-fatal failure sends the next one at
//! once, a pushback ≥ 0 after that long ([`on_attempt_end`] decides). The
//! attempts in flight are polled together in one `FuturesUnordered`; when
//! one commits, that set is dropped before the response is returned, so the
//! losers' streams are reset (tonic's h2 sends RST_STREAM CANCEL for a
//! dropped response future) in the same instant of simulated time.
//!
//! When the request passes the replay buffer's limit, the call commits to
//! the attempt whose pull passed it (the one that had sent the most; gRFC
//! A6 "Memory Management (Buffering)": "the client will continue the
//! currently in-flight attempt on which the maximum number of messages
//! have already been sent. All other currently in-flight attempts will be
//! immediately cancelled, and no subsequent attempts will be started";
//! grpc-java `RetriableStream.commit`, which cancels the other substreams
//! and the scheduled hedge). Each attempt is `Abortable`, so the others are
//! dropped at that instant while the committed one runs on; its end is the
//! call's.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::{AbortHandle, Abortable};
use futures_util::stream::{FuturesUnordered, StreamExt};
use http_body::Body;
use tokio::time::Instant;
use tonic::codegen::{Bytes, StdError};
use tonic::Code;
use tower::Service;

use super::config::HedgingPolicy;
use super::decide::Pushback;
use super::event::{AttemptEventKind, AttemptOutcome};
use super::future::{committed, deadline_exceeded, trailers_only_code, Attempt, Call, Output};
use super::hedge::{may_send, on_attempt_end, HedgeDecision, HedgeInput, HedgeStop, NextHedge};
use super::service::Shared;

/// The call's hedging state between events.
struct State {
    /// Attempts sent so far.
    sent: u32,
    /// Why no further hedge is sent, once that is known.
    stopped: Option<HedgeStop>,
    /// When the next attempt is due; `None` when none will be sent.
    next_at: Option<Instant>,
    /// When the last attempt was sent.
    last_sent: Instant,
    /// The attempts in flight, by number, with the handle that cancels one.
    live: BTreeMap<u32, AbortHandle>,
    /// The attempt the buffer limit committed the call to, once it did.
    committed_to: Option<u32>,
}

impl State {
    /// Books the next attempt as sent at `now`: its number, the time since
    /// the previous one, and when the one after is due (`None`: the last).
    fn send(
        &mut self,
        now: Instant,
        policy: &HedgingPolicy,
        abort: AbortHandle,
    ) -> (u32, Duration, Option<Duration>) {
        self.sent += 1;
        let since_previous = if self.sent == 1 {
            Duration::ZERO
        } else {
            now - self.last_sent
        };
        self.last_sent = now;
        self.live.insert(self.sent, abort);
        self.next_at = (self.sent < policy.max_attempts()).then(|| now + policy.hedging_delay());
        (self.sent, since_previous, self.next_at.map(|at| at - now))
    }
}

/// Runs a hedged call to its end; see the module docs.
pub(super) async fn run<S, B>(
    svc: S,
    shared: &Shared,
    call: &Call,
    policy: &HedgingPolicy,
) -> Output
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>> + Clone,
    S::Error: Into<StdError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    let now = Instant::now();
    let mut st = State {
        sent: 0,
        stopped: None,
        next_at: Some(now),
        last_sent: now,
        live: BTreeMap::new(),
        committed_to: None,
    };
    // Attempt 1 uses the readiness the caller polled; hedges use clones.
    let template = svc.clone();
    let mut first = Some(svc);
    let mut inflight = FuturesUnordered::new();
    let mut last_failure: Option<Output> = None;
    loop {
        let now = Instant::now();
        if inflight.is_empty() && call.deadline.is_some_and(|d| now >= d) {
            call.emit(
                shared,
                st.sent + 1,
                AttemptEventKind::HedgeNotSent(HedgeStop::Deadline),
            );
            return Ok(deadline_exceeded());
        }
        if st.next_at.is_some_and(|at| now >= at) {
            match allowed(&st, call, shared, policy) {
                Ok(()) => {
                    let svc = first.take().unwrap_or_else(|| template.clone());
                    let (abort, registration) = AbortHandle::new_pair();
                    let plan = st.send(now, policy, abort);
                    inflight.push(launch(call, shared, svc, plan, registration));
                }
                Err(stop) => {
                    call.emit(shared, st.sent + 1, AttemptEventKind::HedgeNotSent(stop));
                    st.stopped = Some(stop);
                    st.next_at = None;
                    if inflight.is_empty() {
                        return last_failure.unwrap_or_else(|| Ok(deadline_exceeded()));
                    }
                }
            }
            continue;
        }
        // Asleep until the next hedge is due, or (nothing in flight) the deadline.
        let wake = match (st.next_at, call.deadline) {
            (Some(at), Some(d)) if inflight.is_empty() => Some(at.min(d)),
            (at, _) => at,
        };
        tokio::select! {
            biased;
            // First: a commit cancels the others before their ends are read.
            n = std::future::poll_fn(|cx| call.replay.poll_committed_to(cx)),
                if st.committed_to.is_none() =>
            {
                if !commit_to(&mut st, call, shared, n) {
                    // It had ended already (a non-fatal failure in the same
                    // instant): committed to a failed attempt, the call fails.
                    return last_failure.unwrap_or_else(|| Ok(deadline_exceeded()));
                }
            }
            Some((n, attempt)) = inflight.next(), if !inflight.is_empty() => {
                // `None`: cancelled by a buffer-limit commit, already recorded.
                let Some(attempt) = attempt else { continue };
                st.live.remove(&n);
                call.replay.close(n);
                // Not `inflight.len()`: it may still hold cancelled attempts.
                let in_flight = u32::try_from(st.live.len()).unwrap_or(u32::MAX);
                match on_end(&mut st, call, shared, policy, n, attempt, in_flight) {
                    End::Return(result) => {
                        // Dropping the set drops the losers' response futures now.
                        drop(inflight);
                        return result;
                    }
                    End::Go(result) => last_failure = Some(result),
                }
            }
            () = sleep_until(wake), if wake.is_some() => {}
        }
    }
}

/// Whether the next attempt may be sent (the first always may).
fn allowed(
    st: &State,
    call: &Call,
    shared: &Shared,
    policy: &HedgingPolicy,
) -> Result<(), HedgeStop> {
    if st.sent == 0 {
        return Ok(());
    }
    may_send(st.sent, st.stopped, policy, shared.throttler.as_ref())?;
    if call.replay.is_committed() {
        // The recorded request is gone: a new attempt could not replay it.
        return Err(HedgeStop::BufferLimit);
    }
    Ok(())
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(at).await;
    }
}

/// One attempt, tagged with its number; every call returns the same future
/// type, so they fit in one `FuturesUnordered`. `None` when it was
/// cancelled through its `AbortHandle` (its response future is dropped).
async fn launch<S, B>(
    call: &Call,
    shared: &Shared,
    mut svc: S,
    (n, delay_before, next_in): (u32, Duration, Option<Duration>),
    registration: futures_util::future::AbortRegistration,
) -> (u32, Option<Attempt<B>>)
where
    S: Service<http::Request<tonic::body::Body>, Response = http::Response<B>>,
    S::Error: Into<StdError>,
{
    let hedge = Some(next_in);
    let attempt = call.attempt(shared, &mut svc, n, delay_before, hedge);
    (n, Abortable::new(attempt, registration).await.ok())
}

/// The request passed the buffer limit while attempt `n` pulled it: the
/// call commits to `n`, cancels every other attempt in flight and sends no
/// more hedges (gRFC A6 "Memory Management (Buffering)"). `false` when `n`
/// is no longer in flight.
fn commit_to(st: &mut State, call: &Call, shared: &Shared, n: u32) -> bool {
    st.committed_to = Some(n);
    st.stopped = Some(HedgeStop::BufferLimit);
    st.next_at = None;
    let live = st.live.contains_key(&n);
    if live {
        call.emit(
            shared,
            n,
            AttemptEventKind::Committed(HedgeStop::BufferLimit),
        );
    }
    let others: Vec<u32> = st.live.keys().copied().filter(|m| *m != n).collect();
    for m in others {
        if let Some(handle) = st.live.remove(&m) {
            call.emit(
                shared,
                m,
                AttemptEventKind::Cancelled {
                    winner: Some(n),
                    buffer_limit: true,
                },
            );
            handle.abort();
        }
    }
    live
}

/// After an attempt ended: return this result, or go on (keeping it as the
/// latest failure).
enum End {
    Return(Output),
    Go(Output),
}

fn on_end<B>(
    st: &mut State,
    call: &Call,
    shared: &Shared,
    policy: &HedgingPolicy,
    n: u32,
    attempt: Attempt<B>,
    in_flight: u32,
) -> End
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<StdError>,
{
    let (outcome, result) = match attempt {
        Attempt::DeadlineExceeded => {
            call.emit(
                shared,
                n,
                AttemptEventKind::Ended(AttemptOutcome::DeadlineExceeded),
            );
            let fail = HedgeDecision::Fail(HedgeStop::Deadline);
            call.emit(shared, n, AttemptEventKind::Hedged(fail));
            cancel_live(st, call, shared, None);
            return End::Return(Ok(deadline_exceeded()));
        }
        Attempt::Response(resp) => match trailers_only_code(resp.headers()) {
            Some(code) => {
                let pushback = Pushback::from_headers(resp.headers());
                let outcome = AttemptOutcome::TrailersOnly { code, pushback };
                (outcome, Ok(resp.map(tonic::body::Body::new)))
            }
            None => (AttemptOutcome::Headers, Ok(committed(resp, shared))),
        },
        Attempt::Error(status) => (
            AttemptOutcome::Error {
                code: status.code(),
            },
            Err(Box::new(status) as StdError),
        ),
    };
    let pushback = match outcome {
        AttemptOutcome::TrailersOnly { pushback, .. } => pushback,
        _ => Pushback::Absent,
    };
    let input = HedgeInput {
        code: outcome.code().unwrap_or(Code::Unknown),
        headers_received: outcome == AttemptOutcome::Headers,
        pushback,
        sent: st.sent,
        in_flight,
        stopped: st.stopped,
    };
    let decision = on_attempt_end(&input, policy, shared.throttler.as_ref());
    call.emit(shared, n, AttemptEventKind::Ended(outcome));
    call.emit(shared, n, AttemptEventKind::Hedged(decision));
    let now = Instant::now();
    match decision {
        HedgeDecision::Commit => {
            if let (Some(Code::Ok), false, Some(t)) =
                (outcome.code(), input.headers_received, &shared.throttler)
            {
                t.successful_rpc();
            }
            cancel_live(st, call, shared, Some(n));
            return End::Return(result);
        }
        HedgeDecision::Fail(_) => return End::Return(result),
        HedgeDecision::Continue(NextHedge::Now) => st.next_at = Some(now),
        HedgeDecision::Continue(NextHedge::After(d)) => st.next_at = Some(now + d),
        HedgeDecision::Continue(NextHedge::Never(stop)) => {
            st.stopped = Some(stop);
            st.next_at = None;
        }
    }
    End::Go(result)
}

/// Records the cancellation of every attempt still in flight; the caller
/// drops them right after.
fn cancel_live(st: &mut State, call: &Call, shared: &Shared, winner: Option<u32>) {
    for n in std::mem::take(&mut st.live).into_keys() {
        call.emit(
            shared,
            n,
            AttemptEventKind::Cancelled {
                winner,
                buffer_limit: false,
            },
        );
    }
}
