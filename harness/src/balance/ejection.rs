//! Outlier detection (gRFC A50) in a balanced channel: the
//! [`Detector`] every replica of the channel shares, the task that sweeps
//! it every interval, the gate in each replica's `poll_ready`, and the
//! response wrapper that counts how each call ended.
//!
//! Like health checking's gate (`health.rs`), an ejected replica's
//! `poll_ready` is pending: tower's p2c checks the picked replica right
//! before dispatching, moves it to its pending set and picks another one;
//! the return wakes it back (grpc-go: the subchannel wrapper reports
//! TRANSIENT_FAILURE to the child policy while ejected).
//!
//! What counts: grpc-go counts in its picker's `Done` callback, a failure
//! for any `DoneInfo.Err` (any status but OK, a deadline included). Here
//! the replica's response is watched: a transport error or a caller's
//! timeout (tonic's, inside the replica's channel), a trailers-only
//! response with a status other than OK, trailers with one, a body that
//! ends without trailers or fails, and a response dropped before its end
//! (the caller gave up) are failures.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};

use super::detector::{Decision, Detector};
use super::outlier::OutlierDetection;
use super::rng::SplitMix64;
use super::{BoxError, Site};
use crate::recorder::event::BalancerChange;

struct State {
    detector: Detector,
    /// Each replica's balancer waker, while it waits to return.
    wakers: Vec<Option<Waker>>,
}

/// One channel's outlier detection.
pub(super) struct Ejector {
    state: Mutex<State>,
}

impl Ejector {
    pub(super) fn new(config: OutlierDetection, replicas: usize, seed: u64) -> Self {
        Self {
            state: Mutex::new(State {
                detector: Detector::new(config, replicas, SplitMix64::new(seed)),
                wakers: vec![None; replicas],
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves a usable state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Pending while replica `index` is ejected (`cx` woken at its return).
    pub(super) fn poll_admit(&self, index: usize, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.lock();
        if !state.detector.is_ejected(index) {
            return Poll::Ready(());
        }
        match &mut state.wakers[index] {
            Some(w) => w.clone_from(cx.waker()),
            slot @ None => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    fn count(&self, index: usize, ok: bool) {
        self.lock().detector.count(index, ok);
    }

    /// Sweeps every interval of *simulated* time, for as long as the
    /// channel lives (`site` is held weakly: the task ends with it).
    pub(super) async fn run(site: std::sync::Weak<Site>) {
        let start = tokio::time::Instant::now();
        let Some(interval) = site
            .upgrade()
            .and_then(|s| s.outlier.as_ref().map(|e| e.lock().detector.interval()))
        else {
            return;
        };
        let mut next = start;
        loop {
            next += interval;
            tokio::time::sleep_until(next).await;
            let Some(site) = site.upgrade() else { return };
            let Some(ejector) = site.outlier.as_ref() else {
                return;
            };
            ejector.sweep(&site, next - start);
        }
    }

    fn sweep(&self, site: &Site, now: Duration) {
        let mut state = self.lock();
        let decisions = state.detector.sweep(now);
        let names = site.set.replicas();
        for decision in decisions {
            match decision {
                Decision::Eject {
                    replica,
                    why,
                    successes,
                    calls,
                    ejected_for,
                } => site.record(
                    &names[replica],
                    BalancerChange::Ejected {
                        why,
                        successes,
                        calls,
                        ejected_for,
                    },
                ),
                Decision::Return { replica, after } => {
                    site.record(&names[replica], BalancerChange::Unejected { after });
                    if let Some(w) = state.wakers[replica].take() {
                        w.wake();
                    }
                }
            }
        }
    }
}

/// Counts how the call to replica `index` ends, once.
struct Tally {
    ejector: Arc<Ejector>,
    index: usize,
    done: bool,
}

impl Tally {
    fn end(&mut self, ok: bool) {
        if !std::mem::replace(&mut self.done, true) {
            self.ejector.count(self.index, ok);
        }
    }
}

impl Drop for Tally {
    fn drop(&mut self) {
        // Dropped before its status: the caller gave up on it.
        self.end(false);
    }
}

/// Whether a `grpc-status` header value is OK.
fn is_ok(status: Option<&http::HeaderValue>) -> Option<bool> {
    status.map(|v| v.as_bytes() == b"0")
}

/// `response`, counted for replica `index` as it ends.
pub(super) async fn counted(
    ejector: Arc<Ejector>,
    index: usize,
    response: super::BoxFuture<Result<http::Response<tonic::body::Body>, BoxError>>,
) -> Result<http::Response<tonic::body::Body>, BoxError> {
    let mut tally = Tally {
        ejector,
        index,
        done: false,
    };
    let response = match response.await {
        Ok(response) => response,
        Err(e) => {
            tally.end(false);
            return Err(e);
        }
    };
    // Trailers-only: the status is in the headers (or an HTTP error).
    if let Some(ok) = is_ok(response.headers().get("grpc-status")) {
        tally.end(ok);
        return Ok(response);
    }
    if !response.status().is_success() {
        tally.end(false);
        return Ok(response);
    }
    Ok(response.map(|body| tonic::body::Body::new(Counted { body, tally })))
}

/// A response body that counts its call when its trailers come.
struct Counted {
    body: tonic::body::Body,
    tally: Tally,
}

impl Body for Counted {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(trailers) = frame.trailers_ref() {
                    let ok = is_ok(trailers.get("grpc-status")).unwrap_or(false);
                    this.tally.end(ok);
                }
            }
            // Failed, or ended without trailers: tonic reports an error.
            Poll::Ready(Some(Err(_))) | Poll::Ready(None) => this.tally.end(false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
