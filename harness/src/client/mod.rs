//! The client side of the trace: a tonic channel that records every call it
//! carries, with the status exactly as tonic will report it
//! ([`Channel`], at the crate root), the types its calls
//! answer with, and what a client body returns.

mod body;
pub(crate) mod channel;
mod future;
pub(crate) mod generic;
mod path;
mod request;

use crate::recorder::event;
use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;

pub use body::RecordedBody;
pub(crate) use channel::Channel;
pub use future::ResponseFuture;
pub use path::{method_path, PathProbe};

/// What a client body returns: `Ok(())`, or any error (`?` works on
/// `tonic::Status` and most others). An error fails the run.
pub type ClientResult = std::result::Result<(), Box<dyn std::error::Error>>;

use crate::deadline::parse_grpc_timeout;
use crate::recorder::event::{CallId, EventKind, HostName, Outcome};
use crate::recorder::{Recorder, CALL_ID, CURRENT_RUN};
use crate::spec::names::GRPC_TIMEOUT;

/// What carries a recorded channel's calls.
#[derive(Clone)]
pub(crate) enum Transport {
    /// tonic's channel to one host.
    Single(tonic::transport::Channel),
    /// A balancer over a replica set's connections ([`crate::balance`]).
    Balanced(crate::balance::Balanced),
}

/// Where calls come from and go to.
pub(crate) struct CallSite {
    pub(crate) recorder: Arc<Recorder>,
    /// Interned once per channel, not per event.
    pub(crate) from: HostName,
    pub(crate) target: HostName,
}

impl Channel {
    pub(crate) fn new(inner: tonic::transport::Channel, call: CallSite) -> Self {
        Self {
            inner: Transport::Single(inner),
            call: Arc::new(call),
        }
    }

    pub(crate) fn balanced(inner: crate::balance::Balanced, call: CallSite) -> Self {
        Self {
            inner: Transport::Balanced(inner),
            call: Arc::new(call),
        }
    }

    /// The unrecorded tonic channel underneath; `Err(self)` for a channel
    /// from [`Host::balanced_channel`](crate::Host::balanced_channel),
    /// which has no single tonic channel underneath (it balances over one
    /// connection per replica).
    pub fn into_inner(self) -> Result<tonic::transport::Channel, Self> {
        match self.inner {
            Transport::Single(channel) => Ok(channel),
            Transport::Balanced(_) => Err(self),
        }
    }
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("from", &self.call.from)
            .field("target", &self.call.target)
            .finish()
    }
}

impl tower::Service<http::Request<Body>> for Channel {
    type Response = http::Response<RecordedBody>;
    type Error = tonic::Status;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match &mut self.inner {
            Transport::Single(channel) => channel
                .poll_ready(cx)
                .map_err(|e| tonic::Status::from_error(Box::new(e))),
            Transport::Balanced(balanced) => {
                balanced.poll_ready(cx).map_err(tonic::Status::from_error)
            }
        }
    }

    fn call(&mut self, mut req: http::Request<Body>) -> Self::Future {
        let recorder = &self.call.recorder;
        let id = recorder.next_call();
        let path = req.uri().path().to_owned();
        let timeout = req
            .headers()
            .get(&GRPC_TIMEOUT)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_grpc_timeout);
        let mut v = http::HeaderValue::from(id.0);
        // Never indexed (RFC 7541 §6.2.3): every call's id is new, so adding
        // it to the HPACK table would only evict the fields that repeat.
        v.set_sensitive(true);
        req.headers_mut().insert(CALL_ID.clone(), v);
        let request_error = request::RequestError::default();
        let req = req.map(|b| {
            let watched = request::WatchedRequest::new(b, request_error.clone(), recorder.clone());
            Body::new(watched)
        });
        recorder.push(
            self.call.from,
            EventKind::CallStarted(Box::new(event::CallStarted {
                call: id,
                target: self.call.target,
                path: path.clone(),
                timeout,
                parent: CURRENT_RUN.try_with(|r| *r).ok(),
            })),
        );
        if let Some(timeout) = timeout {
            // tonic's deadline timer ends the call by then (if the channel
            // connects): the run's no-progress rule sits it out.
            recorder.timer_at(recorder.now().saturating_add(timeout));
        }
        let guard = CallGuard {
            site: self.call.clone(),
            id,
            path,
            done: false,
            request_error,
        };
        match &mut self.inner {
            Transport::Single(channel) => ResponseFuture::new(channel.call(req), guard),
            Transport::Balanced(balanced) => ResponseFuture::balanced(balanced.call(req), guard),
        }
    }
}

/// Records the end of a call exactly once: with a status, or as dropped.
pub(crate) struct CallGuard {
    site: Arc<CallSite>,
    id: CallId,
    path: String,
    done: bool,
    /// What tonic's encoder ended the request body with, if it did.
    request_error: request::RequestError,
}

impl CallGuard {
    pub(crate) fn finish(&mut self, status: &tonic::Status) {
        let mut outcome = outcome(status);
        if let Some((spec, rule)) = self.encoder_failed(status) {
            outcome.spec_code = crate::spec::code_name(spec);
            outcome.rule = Some(rule);
        }
        self.end_with(outcome);
    }

    /// Records a status tonic inferred from the HTTP status of a response
    /// without `grpc-status` (see [`body::inferred_status`]): generated
    /// locally by construction, so mapped by `http-grpc-status-mapping.md`
    /// where tonic's table differs from it.
    pub(crate) fn finish_inferred(&mut self, status: &tonic::Status, http: http::StatusCode) {
        let mut outcome = outcome(status);
        if let Some((spec, rule)) = crate::spec::classify_http(http) {
            if spec != status.code() {
                outcome.spec_code = crate::spec::code_name(spec);
                outcome.rule = Some(rule);
            }
        }
        self.end_with(outcome);
    }

    fn end_with(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.site.recorder.push(
            self.site.from,
            EventKind::CallEnded {
                call: self.id,
                path: std::mem::take(&mut self.path).into(),
                outcome: Box::new(outcome),
            },
        );
    }

    /// The spec's code when `status` is tonic's INTERNAL for a stream it
    /// reset because its own encoder failed on a message over
    /// `max_encoding_message_size` (the request body ended with that error,
    /// seen here; see [`crate::spec::rules::ENCODE_LIMIT`]).
    fn encoder_failed(&self, status: &tonic::Status) -> Option<(tonic::Code, &'static str)> {
        if status.code() != tonic::Code::Internal || std::error::Error::source(status).is_none() {
            return None;
        }
        let seen = self.request_error.lock().unwrap_or_else(|p| p.into_inner());
        let failed = seen.as_ref()?;
        let (code, message) = (failed.code(), failed.message());
        (code == tonic::Code::OutOfRange && message.starts_with(crate::spec::ENCODE_LIMIT_WORDS))
            .then_some((
                tonic::Code::ResourceExhausted,
                crate::spec::rules::ENCODE_LIMIT,
            ))
    }

    /// Notes that a message's bytes of the response passed: progress for
    /// the run's no-progress rule, which no frame shows with the wire tap
    /// off.
    pub(crate) fn progressed(&self) {
        self.site.recorder.progressed();
    }

    /// Records that the caller's decoder could not parse a whole response
    /// message of `len` octets (see [`EventKind::CallUndecodable`]).
    pub(crate) fn undecodable(&mut self, len: u32) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.site.recorder.push(
            self.site.from,
            EventKind::CallUndecodable(Box::new(crate::recorder::event::CallUndecodable {
                call: self.id,
                path: std::mem::take(&mut self.path),
                message_len: len,
            })),
        );
    }

    /// Records that the caller's decoder stopped reading the response at a
    /// message header (see [`EventKind::CallStoppedReading`]).
    pub(crate) fn stopped_reading(&mut self, len: u32, received: u64, flag: u8) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        self.site.recorder.push(
            self.site.from,
            EventKind::CallStoppedReading(Box::new(crate::recorder::event::CallStoppedReading {
                call: self.id,
                path: std::mem::take(&mut self.path),
                message_len: len,
                received,
                flag,
            })),
        );
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if !self.done {
            self.site.recorder.push(
                self.site.from,
                EventKind::CallDropped {
                    call: self.id,
                    path: std::mem::take(&mut self.path),
                },
            );
        }
    }
}

/// The trace's view of a status: tonic's code and message, the spec's code.
pub(crate) fn outcome(status: &tonic::Status) -> Outcome {
    let (spec, rule) = crate::spec::classify(status);
    Outcome {
        code: crate::spec::code_name(status.code()),
        message: status.message().to_owned(),
        spec_code: crate::spec::code_name(spec),
        rule,
    }
}
