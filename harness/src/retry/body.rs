//! Request bodies that can be replayed, and response bodies that report a
//! successful call to the token bucket.
//!
//! The request body is *not* read ahead: the first attempt starts at once
//! and streams it, while every frame pulled from the caller's body is
//! recorded (grpc-go `stream.go` `replayBuffer`). A retry replays the
//! recorded frames and then keeps pulling from the caller's body. This keeps
//! client-streaming and bidi calls working (a request stream that waits for
//! the response never deadlocks), and costs nothing more for unary calls.
//!
//! Once more than the buffer limit of DATA bytes has been pulled, the call is
//! committed: recording stops and no further attempt is started.
//!
//! A hedged call's attempts read one buffer side by side; only an attempt
//! that has replayed every recorded frame pulls the caller's body, so the
//! one whose pull passes the limit is an attempt "on which the maximum
//! number of messages have already been sent". The call commits to it
//! (gRFC A6 "Memory Management (Buffering)"; grpc-java `RetriableStream`
//! `BufferSizeTracer.outboundWireSize` commits to the substream whose write
//! overflowed): every other attempt's body sends nothing more, and
//! [`Replay::poll_committed_to`] tells the hedging loop, which cancels them.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::Status;

use super::throttle::Throttler;

/// A recorded request frame.
#[derive(Clone)]
enum Recorded {
    Data(Bytes),
    Trailers(HeaderMap),
}

impl Recorded {
    fn to_frame(&self) -> Frame<Bytes> {
        match self {
            Recorded::Data(b) => Frame::data(b.clone()),
            Recorded::Trailers(t) => Frame::trailers(t.clone()),
        }
    }
}

struct ReplayState {
    /// The caller's body; `None` once it has ended or failed.
    source: Option<tonic::body::Body>,
    /// Frames pulled so far, up to the commit point.
    frames: Vec<Recorded>,
    /// DATA bytes pulled from the source so far.
    bytes: u64,
    limit: u64,
    committed: bool,
    /// The source's error, replayed to later attempts.
    error: Option<Status>,
    /// The attempt allowed to read; older attempts' bodies fail.
    generation: u32,
    /// Hedged calls: every attempt reads (they run side by side), so no
    /// body is superseded, and every attempt waiting on the source is
    /// woken when it yields (the source keeps only the last waker).
    hedged: bool,
    waiters: Vec<Waker>,
    /// Hedged calls: the attempt the buffer limit committed the call to.
    committed_to: Option<u32>,
    /// Hedged calls: attempts that ended; their bodies pull no more.
    closed: Vec<u32>,
    /// Hedged calls: the hedging loop, waiting for `committed_to`.
    commit_waker: Option<Waker>,
}

/// The call's side of the replay buffer.
#[derive(Clone)]
pub(crate) struct Replay {
    state: Arc<Mutex<ReplayState>>,
}

impl Replay {
    pub(crate) fn new(source: tonic::body::Body, limit: u64) -> Self {
        Replay {
            state: Arc::new(Mutex::new(ReplayState {
                source: Some(source),
                frames: Vec::new(),
                bytes: 0,
                limit,
                committed: false,
                error: None,
                generation: 0,
                hedged: false,
                waiters: Vec::new(),
                committed_to: None,
                closed: Vec::new(),
                commit_waker: None,
            })),
        }
    }

    /// A replay buffer for a hedged call: bodies handed out stay valid side
    /// by side (gRFC A6 "Hedging Policy": every hedge sends the same request).
    pub(crate) fn new_hedged(source: tonic::body::Body, limit: u64) -> Self {
        let replay = Replay::new(source, limit);
        replay.lock().hedged = true;
        replay
    }

    /// Whether more than the buffer limit of DATA bytes has been pulled: the
    /// recorded frames are gone, so no new attempt can be started.
    pub(crate) fn is_committed(&self) -> bool {
        self.lock().committed
    }

    fn lock(&self) -> MutexGuard<'_, ReplayState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A body for hedge number `attempt` of a hedged call: replays from the
    /// start, side by side with the others.
    pub(crate) fn body_for_hedge(&self, attempt: u32) -> tonic::body::Body {
        {
            // As for retries, the newest body is the one `is_end_stream`
            // answers for.
            let mut s = self.lock();
            s.generation = s.generation.max(attempt);
        }
        tonic::body::Body::new(ReplayBody {
            replay: self.clone(),
            generation: attempt,
            pos: 0,
        })
    }

    /// Hedged calls: attempt `attempt` ended; its body (which h2 may still
    /// poll) pulls nothing more, so it can neither take frames from the
    /// others nor commit the call (grpc-java ignores a closed substream's
    /// writes the same way).
    pub(crate) fn close(&self, attempt: u32) {
        self.lock().closed.push(attempt);
    }

    /// Hedged calls: ready with the attempt the call committed to when its
    /// request passed the buffer limit; pending until then.
    pub(crate) fn poll_committed_to(&self, cx: &mut Context<'_>) -> Poll<u32> {
        let mut s = self.lock();
        match s.committed_to {
            Some(n) => Poll::Ready(n),
            None => {
                s.commit_waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    /// A body for the next attempt: replays from the start. Bodies handed
    /// out earlier stop working, so only the live attempt pulls the source
    /// (and its waker is the one registered there).
    pub(crate) fn body_for_next_attempt(&self) -> tonic::body::Body {
        let generation = {
            let mut s = self.lock();
            s.generation += 1;
            s.generation
        };
        tonic::body::Body::new(ReplayBody {
            replay: self.clone(),
            generation,
            pos: 0,
        })
    }

    /// DATA bytes pulled from the caller's body so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.lock().bytes
    }
}

/// One attempt's view of the replay buffer.
struct ReplayBody {
    replay: Replay,
    generation: u32,
    /// Next recorded frame to replay.
    pos: usize,
}

impl Body for ReplayBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = &mut *self;
        let mut s = this.replay.lock();
        if !s.hedged && s.generation != this.generation {
            return Poll::Ready(Some(Err(Status::cancelled(
                "request body superseded by a retry attempt",
            ))));
        }
        if s.committed_to.is_some_and(|n| n != this.generation)
            || (s.hedged && s.closed.contains(&this.generation))
        {
            // Never ready again: the hedging loop drops this attempt's
            // response future, so h2 resets its stream with CANCEL (an
            // error here would make hyper reset it with INTERNAL_ERROR and
            // fail the attempt before the loop cancels it).
            return Poll::Pending;
        }
        if this.pos < s.frames.len() {
            this.pos += 1;
            return Poll::Ready(Some(Ok(s.frames[this.pos - 1].to_frame())));
        }
        if let Some(err) = &s.error {
            return Poll::Ready(Some(Err(err.clone())));
        }
        let Some(source) = s.source.as_mut() else {
            return Poll::Ready(None);
        };
        let polled = Pin::new(source).poll_frame(cx);
        if polled.is_pending() {
            if s.hedged && !s.waiters.iter().any(|w| w.will_wake(cx.waker())) {
                s.waiters.push(cx.waker().clone());
            }
            return Poll::Pending;
        }
        // Whoever waited on the source may now replay what was pulled.
        s.waiters.drain(..).for_each(Waker::wake);
        match polled {
            Poll::Pending => Poll::Pending,
            Poll::Ready(None) => {
                s.source = None;
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(err))) => {
                s.source = None;
                s.error = Some(err.clone());
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(Some(Ok(frame))) => {
                let recorded = match frame.data_ref() {
                    Some(data) => {
                        s.bytes += data.len() as u64;
                        Recorded::Data(data.clone())
                    }
                    None => match frame.trailers_ref() {
                        Some(t) => Recorded::Trailers(t.clone()),
                        // Unknown frame kinds are passed on but cannot be replayed.
                        None => return Poll::Ready(Some(Ok(frame))),
                    },
                };
                if !s.committed && s.bytes > s.limit {
                    // Past the limit: stop recording; no attempt will replay.
                    s.committed = true;
                    s.frames = Vec::new();
                    if s.hedged {
                        // gRFC A6 "Memory Management (Buffering)": a hedged
                        // call commits to the attempt that sent the most,
                        // this one; the others are cancelled.
                        s.committed_to = Some(this.generation);
                        if let Some(w) = s.commit_waker.take() {
                            w.wake();
                        }
                        // The others, waiting on the source, stop pulling.
                        s.waiters.clear();
                    }
                }
                if !s.committed {
                    s.frames.push(recorded);
                }
                this.pos = s.frames.len();
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        let s = self.replay.lock();
        s.generation == self.generation
            && self.pos >= s.frames.len()
            && s.source.is_none()
            && s.error.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

pin_project! {
    /// A committed response's body: passes every frame on, and reports the
    /// call as successful to the token bucket when the trailers say
    /// `grpc-status: 0` (grpc-go calls `successfulRPC` once per call that
    /// ends with OK).
    pub(crate) struct CountSuccess<B> {
        #[pin]
        inner: B,
        throttler: Option<Throttler>,
    }
}

impl<B> CountSuccess<B> {
    pub(crate) fn new(inner: B, throttler: Throttler) -> Self {
        CountSuccess {
            inner,
            throttler: Some(throttler),
        }
    }
}

impl<B: Body> Body for CountSuccess<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let polled = this.inner.poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            let ok = frame
                .trailers_ref()
                .and_then(|t| t.get(&crate::spec::names::GRPC_STATUS))
                .is_some_and(|v| v.as_bytes() == b"0");
            if ok {
                if let Some(t) = this.throttler.take() {
                    t.successful_rpc();
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    fn chunks(parts: &[&'static [u8]]) -> tonic::body::Body {
        let frames: Vec<Result<Frame<Bytes>, Status>> = parts
            .iter()
            .map(|p| Ok(Frame::data(Bytes::from_static(p))))
            .collect();
        tonic::body::Body::new(StreamBody::new(futures_util::stream::iter(frames)))
    }

    async fn collect(body: tonic::body::Body) -> Result<Vec<u8>, Status> {
        Ok(body.collect().await?.to_bytes().to_vec())
    }

    #[tokio::test]
    async fn replays_byte_identically() {
        let replay = Replay::new(chunks(&[b"hello ", b"world"]), 1024);
        let first = collect(replay.body_for_next_attempt()).await.unwrap();
        let second = collect(replay.body_for_next_attempt()).await.unwrap();
        assert_eq!(first, b"hello world");
        assert_eq!(second, first);
        assert_eq!(replay.bytes(), 11);
    }

    #[tokio::test]
    async fn a_retry_mid_stream_replays_then_continues() {
        let replay = Replay::new(chunks(&[b"a", b"b", b"c"]), 1024);
        let mut first = replay.body_for_next_attempt();
        let f = first.frame().await.unwrap().unwrap();
        assert_eq!(f.into_data().unwrap(), "a");
        let second = collect(replay.body_for_next_attempt()).await.unwrap();
        assert_eq!(second, b"abc");
        // The superseded body fails rather than stealing frames.
        assert!(first.frame().await.unwrap().is_err());
    }

    #[tokio::test]
    async fn over_the_limit_commits_and_still_streams_everything() {
        let replay = Replay::new(chunks(&[b"1234", b"5678", b"9"]), 8);
        let first = collect(replay.body_for_next_attempt()).await.unwrap();
        assert_eq!(first, b"123456789");
        assert_eq!(replay.bytes(), 9);
        assert!(replay.lock().committed);
    }

    #[tokio::test]
    async fn a_hedge_that_pulls_past_the_limit_is_the_one_committed_to() {
        // gRFC A6 "Memory Management (Buffering)": the call continues on
        // the attempt that sent the most; the others send nothing more.
        let replay = Replay::new_hedged(chunks(&[b"1234", b"5678", b"9"]), 8);
        let (mut one, mut two) = (replay.body_for_hedge(1), replay.body_for_hedge(2));
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(replay.poll_committed_to(&mut cx).is_pending());
        // Hedge 2 pulls "1234" and "5678" (8 bytes: at the limit, recorded).
        for _ in 0..2 {
            two.frame().await.unwrap().unwrap();
        }
        // Hedge 1 replays them, then pulls "9": past the limit.
        for want in ["1234", "5678", "9"] {
            let f = one.frame().await.unwrap().unwrap();
            assert_eq!(f.into_data().unwrap(), want);
        }
        assert_eq!(replay.poll_committed_to(&mut cx), Poll::Ready(1));
        // Hedge 2 would have missed "9": it is held back, not fed the rest.
        assert!(Pin::new(&mut two).poll_frame(&mut cx).is_pending());
        assert!(
            one.frame().await.is_none(),
            "the committed one ends normally"
        );
    }

    #[tokio::test]
    async fn a_hedge_that_ended_pulls_nothing_more() {
        let replay = Replay::new_hedged(chunks(&[b"a", b"b"]), 1024);
        let (mut one, two) = (replay.body_for_hedge(1), replay.body_for_hedge(2));
        one.frame().await.unwrap().unwrap();
        replay.close(1);
        let waker = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut one).poll_frame(&mut cx).is_pending());
        assert_eq!(collect(two).await.unwrap(), b"ab", "the other reads it all");
    }

    #[tokio::test]
    async fn exactly_at_the_limit_is_not_committed() {
        let replay = Replay::new(chunks(&[b"1234", b"5678"]), 8);
        collect(replay.body_for_next_attempt()).await.unwrap();
        assert!(!replay.lock().committed);
        assert_eq!(
            collect(replay.body_for_next_attempt()).await.unwrap(),
            b"12345678"
        );
    }
}
