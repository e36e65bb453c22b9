//! The life of one handler run: finished with a status, or dropped.

use crate::recorder::event;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::sync::OwnedSemaphorePermit;
use tonic::body::Body;
use tonic::Status;

use super::{Acting as _, Reply};
use crate::recorder::event::{EventKind, HostName, LayerSide, PanicSite, RunId};
use crate::recorder::{Polled, SlowPoll, SlowPolls};

/// The pushback trailer (gRFC A6).
const PUSHBACK: &str = "grpc-retry-pushback-ms";

/// A response body with no messages: one trailers frame, then the end.
struct TrailersOnlyBody(Option<http::HeaderMap>);

impl HttpBody for TrailersOnlyBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        Poll::Ready(self.0.take().map(|t| Ok(Frame::trailers(t))))
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_none()
    }
}
use super::HandlerEnv;

/// `status` with `grpc-retry-pushback-ms` when `reply` asks for it.
pub(super) fn with_pushback(status: Status, reply: Reply) -> Status {
    match reply.pushback_ms {
        Some(ms) => {
            let mut md = tonic::metadata::MetadataMap::new();
            if let Ok(v) = ms.to_string().parse() {
                md.insert(PUSHBACK, v);
            }
            Status::with_metadata(status.code(), status.message().to_owned(), md)
        }
        None => status,
    }
}

/// A response with plain headers, then `status` in trailers.
pub(super) fn after_headers(status: Status) -> http::Response<Body> {
    let (parts, _) = status.into_http::<Body>().into_parts();
    let mut trailers = parts.headers;
    trailers.remove(http::header::CONTENT_TYPE);
    let mut response = http::Response::new(Body::new(TrailersOnlyBody(Some(trailers))));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/grpc"),
    );
    response
}

/// Records how a run ended, exactly once. Dropped before that (hyper
/// dropped the handler future or the response body: RST_STREAM from the
/// peer, connection closed, host crashed) it records `HandlerDropped`.
pub(crate) struct RunGuard {
    env: Arc<HandlerEnv>,
    host: HostName,
    run: RunId,
    path: String,
    started: Duration,
    /// Where this layer's faults act, for the trace (none on a host whose
    /// builder has no layers of its own).
    side: Option<LayerSide>,
    /// A concurrency-limit slot, held until the run ends.
    permit: Option<OwnedSemaphorePermit>,
    done: bool,
    /// How far tonic read the request body (for a status it made before
    /// the handler got the request).
    seen: Option<super::seen::SeenRequest>,
}

impl RunGuard {
    pub(crate) fn new(
        env: Arc<HandlerEnv>,
        host: HostName,
        run: RunId,
        path: String,
        side: Option<LayerSide>,
        started: Duration,
    ) -> Self {
        Self {
            env,
            host,
            run,
            path,
            started,
            side,
            permit: None,
            done: false,
            seen: None,
        }
    }

    /// Watches the request body tonic reads (see [`super::seen`]).
    pub(crate) fn watching(mut self, seen: super::seen::SeenRequest) -> Self {
        self.seen = Some(seen);
        self
    }

    pub(crate) fn run(&self) -> RunId {
        self.run
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    fn push(&self, kind: EventKind) {
        self.env.recorder.push(self.host, kind);
    }

    /// [`RunGuard::push`] at `at`, a clock reading the caller already has.
    fn push_at(&self, at: Duration, kind: EventKind) {
        self.env.recorder.push_at(at, self.host, kind);
    }

    /// Where this run's slow polls go.
    pub(crate) fn slow_polls(&self) -> &SlowPolls {
        &self.env.slow
    }

    /// Notes a poll of `polled` that held the thread for `wall` (*wall*
    /// time), outside the event log.
    pub(crate) fn slow_poll(&self, polled: Polled, wall: Duration) {
        self.env.slow.note(SlowPoll {
            host: self.host,
            run: self.run,
            path: self.path.clone(),
            polled,
            wall,
            at: self.now(),
        });
    }

    /// Records that the handler panicked at `site` with `message`, as the
    /// run's end (the stream's reset that follows is recorded as a frame),
    /// says so on stderr and fails the run.
    pub(crate) fn panicked(&mut self, message: String, site: PanicSite) {
        eprintln!(
            "grpc-chaos: handler {} on host `{}` panicked: {message} (CHAOS_SEED={})",
            self.path, self.host, self.env.seed
        );
        self.env
            .problems
            .handler_panicked(&self.host, &self.path, &message);
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.permit = None;
        self.push(EventKind::HandlerPanicked(Box::new(
            event::HandlerPanicked {
                run: self.run,
                path: self.path.clone(),
                message,
                site,
            },
        )));
    }

    pub(crate) fn finish(&mut self, status: &Status) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.permit = None;
        let now = self.now();
        let ran = now.saturating_sub(self.started);
        let why = self.seen.as_ref().and_then(|seen| {
            let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            super::seen::rejected_because(status, &seen)
        });
        if let Some(why) = why {
            let (spec, rule) = crate::spec::classify_server(status.code(), status.message());
            self.push_at(
                now,
                EventKind::HandlerRejected(Box::new(event::HandlerRejected {
                    run: self.run,
                    path: self.path.clone(),
                    outcome: event::Outcome {
                        code: crate::spec::code_name(status.code()),
                        message: status.message().to_owned(),
                        spec_code: crate::spec::code_name(spec),
                        rule,
                    },
                    why,
                    ran,
                })),
            );
            return;
        }
        self.push_at(
            now,
            EventKind::HandlerFinished(Box::new(event::HandlerFinished {
                run: self.run,
                path: self.path.clone(),
                code: crate::spec::code_name(status.code()),
                message: status.message().to_owned(),
                ran,
            })),
        );
    }

    /// Answers with `status` as a trailers-only response.
    pub(crate) fn respond(mut self, status: Status) -> http::Response<HandlerBody> {
        self.finish(&status);
        status
            .into_http::<Body>()
            .map(|b| HandlerBody::new(b, self))
    }

    /// Answers with `status` as `reply` says: trailers-only (as
    /// [`RunGuard::respond`]) or after response headers, with
    /// `grpc-retry-pushback-ms` when asked.
    pub(crate) fn respond_with(self, status: Status, reply: Reply) -> http::Response<HandlerBody> {
        let status = with_pushback(status, reply);
        if !reply.after_headers {
            return self.respond(status);
        }
        // The status goes into trailers after plain response headers: the
        // handler layer's body records the run's end when they are sent.
        after_headers(status).map(|b| HandlerBody::new(b, self))
    }

    /// Passes the handler's response on, watching for its status.
    pub(crate) fn wrap(mut self, response: http::Response<Body>) -> http::Response<HandlerBody> {
        if let Some(status) = crate::spec::trailer_status(response.headers()) {
            self.finish(&status); // trailers-only: the status is in the headers
        }
        response.map(|b| HandlerBody::new(b, self))
    }
}

impl super::Acting for RunGuard {
    fn record(&self, kind: EventKind) {
        self.push(kind);
    }

    fn run_path(&self) -> (RunId, &str) {
        (self.run, &self.path)
    }

    fn side(&self) -> Option<LayerSide> {
        self.side
    }

    fn now(&self) -> Duration {
        self.env.recorder.now()
    }

    fn keep_permit(&mut self, permit: OwnedSemaphorePermit) {
        self.permit = Some(permit);
    }

    fn timer_at(&self, at: Duration) {
        self.env.recorder.timer_at(at);
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let ran = self.now().saturating_sub(self.started);
        let path = std::mem::take(&mut self.path);
        self.push(EventKind::HandlerDropped(Box::new(
            crate::recorder::event::HandlerDropped {
                run: self.run,
                path,
                ran,
                // Told when the trace is built (`trace/query/server_timeouts.rs`).
                timed_out: None,
            },
        )));
    }
}

pin_project! {
    /// A handler's response body, as [`HandlerService`](super::HandlerService)
    /// passes it on: the handler's own body, recording the run's end when
    /// the trailers go out.
    ///
    /// A panic while hyper polls it is caught, recorded, and answered with
    /// the error that makes hyper reset the stream with CANCEL
    /// ([`PanicReset`](super::PanicReset)), as the task's end does in
    /// production (measured, [`PanicSite`]). What h2 still holds for the
    /// stream is where the two can differ: h2's reset for a dropped task
    /// sends response headers it holds and discards held DATA (h2 0.4.20
    /// `proto/streams/prioritize.rs` `pop_frame`), hyper's reset for an
    /// error discards both (`send.rs` `send_reset`). So when the body had
    /// handed hyper nothing since it last waited, the body waits one turn
    /// of the scheduler first, in which h2's connection task sends the
    /// headers of this very poll, if any; then the reset. When it had
    /// handed hyper frames in this poll, their DATA is discarded either
    /// way, and the reset goes at once; headers of this same poll are then
    /// lost with it ([`PanicSite::BodyHeadersUnsent`]).
    pub struct HandlerBody {
        #[pin]
        inner: Body,
        guard: RunGuard,
        polls: BodyPolls,
    }
}

/// How far a response body got, for a panic in it (see [`HandlerBody`]).
#[derive(Default)]
struct BodyPolls {
    /// It has waited (returned `Pending`) at least once.
    waited: bool,
    /// It handed hyper a frame since it last waited (or since the start):
    /// in this poll of hyper's stream task.
    handed: bool,
    /// It panicked: never poll it again.
    panicked: bool,
    /// The reset still to hand hyper, after the turn it waits.
    reset: Option<Status>,
}

impl BodyPolls {
    /// Records the panic and answers hyper: the reset now, or after one
    /// turn of the scheduler.
    fn panicked(
        &mut self,
        guard: &mut RunGuard,
        panic: &(dyn std::any::Any + Send),
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let site = if self.handed && !self.waited {
            PanicSite::BodyHeadersUnsent
        } else {
            PanicSite::Body
        };
        guard.panicked(crate::units::panic_message(panic), site);
        self.panicked = true;
        let mut reset = Status::cancelled("handler panicked");
        reset.set_source(Arc::new(super::PanicReset::new()));
        if self.handed {
            return Poll::Ready(Some(Err(reset)));
        }
        self.reset = Some(reset);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl HandlerBody {
    fn new(inner: Body, guard: RunGuard) -> Self {
        Self {
            inner,
            guard,
            polls: BodyPolls::default(),
        }
    }
}

impl HttpBody for HandlerBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let mut this = self.project();
        if this.polls.panicked {
            return Poll::Ready(this.polls.reset.take().map(Err));
        }
        let (inner, guard) = (&mut this.inner, &*this.guard);
        let polled = guard.slow_polls().time(
            || std::panic::catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll_frame(cx))),
            |wall| guard.slow_poll(Polled::Body, wall),
        );
        let frame = match polled {
            Ok(Poll::Ready(frame)) => frame,
            Ok(Poll::Pending) => {
                this.polls.waited = true;
                this.polls.handed = false;
                return Poll::Pending;
            }
            Err(panic) => return this.polls.panicked(this.guard, &*panic, cx),
        };
        this.polls.handed = true;
        match &frame {
            Some(Ok(f)) => {
                if let Some(trailers) = f.trailers_ref() {
                    let status = crate::spec::trailer_status(trailers)
                        .unwrap_or_else(|| Status::unknown("trailers without grpc-status"));
                    this.guard.finish(&status);
                }
            }
            Some(Err(status)) => this.guard.finish(status),
            None => this.guard.finish(&Status::ok("")),
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        if self.polls.panicked {
            return self.polls.reset.is_none();
        }
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
