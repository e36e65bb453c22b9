//! One replica's connection in a balanced channel: the service tower's
//! balancer picks among. It is tonic's `Connection` with its lazy
//! `Reconnect` (tonic 0.14.9 `transport/channel/service/connection.rs`,
//! `reconnect.rs`), rebuilt over the harness's connector:
//!
//! - idle → connecting on the first `poll_ready` (the balancer polls every
//!   new replica at once, so all are dialled on the first call), pending
//!   until the connection is up;
//! - a failed connect leaves it *ready* with the error stored, and the next
//!   call sent to it fails with that error (tonic: `is_lazy`); the call
//!   after that redials;
//! - a connection that has closed is noticed at the next `poll_ready` (the
//!   balancer's check right before dispatching to it), and redialled: the
//!   balancer moves that call to another replica;
//! - with health checking ([`super::health`], gRFC A17), a connection
//!   that is up is pending until its Watch answers SERVING, pending again
//!   while the answer is anything else, and replaced after a GOAWAY;
//! - with outlier detection ([`super::ejection`], gRFC A50), it is pending
//!   while ejected, and each call's end is counted;
//! - its load is always 0 (`impl Load for Connection` in tonic), so
//!   power-of-two-choices compares equal loads and picks the first of two
//!   random replicas: a uniform pick among the ready ones.
//!
//! Where it differs from tonic: each connection is a whole
//! `tonic::transport::Channel` made with the user's `Endpoint` (so every
//! option, `timeout` and `concurrency_limit` included, acts as tonic makes
//! it act), whose own buffer sits between the balancer and hyper; and a
//! closed connection is learnt from hyper dropping its socket
//! ([`super::io::Liveness`]), not from `SendRequest::poll_ready`.

use std::sync::Arc;
use std::task::{Context, Poll};

use tonic::body::Body;

use super::health::{Admission, Watch};
use super::io::{connector, DialOptions, Liveness};
use super::{BoxError, BoxFuture, Site};
use crate::recorder::event::{BalancerChange, CallId, EventKind};
use crate::recorder::CALL_ID;

type Connected = (tonic::transport::Channel, Arc<Liveness>);

enum State {
    Idle,
    Connecting(BoxFuture<Result<Connected, tonic::transport::Error>>),
    /// Up, with its health Watch when the channel checks health.
    Connected(tonic::transport::Channel, Arc<Liveness>, Option<Watch>),
}

/// A replica's connection, as the balancer sees it.
pub(super) struct Replica {
    site: Arc<Site>,
    name: Arc<str>,
    /// Its index in the set (outlier detection's counters).
    index: usize,
    state: State,
    /// A connect error, returned by the next call (tonic's lazy reconnect).
    error: Option<BoxError>,
    /// Connections dialled so far, so that a redial says so in the trace.
    dials: Arc<std::sync::atomic::AtomicU32>,
}

impl Replica {
    pub(super) fn new(site: Arc<Site>, name: Arc<str>) -> Self {
        let index = site.set.index_of(&name).unwrap_or(usize::MAX);
        Self {
            site,
            name,
            index,
            state: State::Idle,
            error: None,
            dials: Default::default(),
        }
    }

    fn record(&self, change: BalancerChange) {
        self.site.record(&self.name, change);
    }

    /// Starts a connection: a tonic channel with the user's endpoint
    /// settings over a connector that dials this replica once.
    fn connect(&self) -> BoxFuture<Result<Connected, tonic::transport::Error>> {
        let endpoint = (self.site.configure)(crate::net::endpoint(&self.name));
        let alive = Arc::new(Liveness::default());
        let connector = connector(
            self.site.wiring.clone(),
            self.site.from.clone(),
            self.name.clone(),
            alive.clone(),
            self.dials.clone(),
            DialOptions {
                connect_timeout: endpoint.get_connect_timeout(),
                scan_goaway: self.site.health.is_some(),
                tls: self.site.tls.clone(),
            },
        );
        Box::pin(async move {
            let channel = endpoint.connect_with_connector(connector).await?;
            Ok((channel, alive))
        })
    }
}

/// The root cause of a connect error, for the trace.
fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

impl tower::Service<http::Request<Body>> for Replica {
    type Response = http::Response<Body>;
    type Error = BoxError;
    type Future = BoxFuture<Result<http::Response<Body>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Ejected (gRFC A50): out of rotation whatever its connection does.
        if let Some(ejector) = &self.site.outlier {
            if ejector.poll_admit(self.index, cx).is_pending() {
                return Poll::Pending;
            }
        }
        if self.error.is_some() {
            return Poll::Ready(Ok(()));
        }
        loop {
            match &mut self.state {
                State::Idle => {
                    self.record(BalancerChange::Connecting);
                    self.state = State::Connecting(self.connect());
                }
                State::Connecting(connecting) => match connecting.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Ok((channel, alive))) => {
                        let watch = self.site.health.clone().map(|service| {
                            self.record(BalancerChange::HealthChecking);
                            Watch::start(
                                self.site.clone(),
                                self.name.clone(),
                                service,
                                channel.clone(),
                                alive.clone(),
                            )
                        });
                        if watch.is_none() {
                            self.record(BalancerChange::Ready);
                        }
                        self.state = State::Connected(channel, alive, watch);
                    }
                    Poll::Ready(Err(e)) => {
                        self.record(BalancerChange::ConnectFailed {
                            error: root_cause(&e),
                        });
                        self.state = State::Idle;
                        self.error = Some(e.into());
                        return Poll::Ready(Ok(()));
                    }
                },
                State::Connected(channel, alive, watch) => {
                    if alive.is_closed() {
                        self.record(BalancerChange::Closed);
                        self.state = State::Idle;
                        continue;
                    }
                    // Out of rotation while its health is not SERVING;
                    // replaced after a GOAWAY.
                    if let Some(watch) = watch {
                        match watch.poll_admit(cx) {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(Admission::Retire) => {
                                self.state = State::Idle;
                                continue;
                            }
                            Poll::Ready(Admission::Serve) => {}
                        }
                    }
                    match tower::Service::poll_ready(channel, cx) {
                        Poll::Ready(Ok(())) => return Poll::Ready(Ok(())),
                        Poll::Pending => return Poll::Pending,
                        // Its buffer's worker is gone: as a failed
                        // `SendRequest`, redial.
                        Poll::Ready(Err(_)) => {
                            self.record(BalancerChange::Closed);
                            self.state = State::Idle;
                        }
                    }
                }
            }
        }
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let call = req
            .headers()
            .get(&CALL_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .map(CallId);
        if let Some(call) = call {
            self.site.wiring.tap.recorder.push(
                &self.site.from,
                EventKind::CallRouted {
                    call,
                    replica: (&self.name).into(),
                    answer: self.site.dns.as_ref().map(|_| {
                        self.site
                            .applied_answer
                            .load(std::sync::atomic::Ordering::Relaxed)
                    }),
                },
            );
        }
        let response = self.send(req);
        match &self.site.outlier {
            Some(ejector) => Box::pin(super::ejection::counted(
                ejector.clone(),
                self.index,
                response,
            )),
            None => response,
        }
    }
}

impl Replica {
    /// Sends `req` on the connection (or fails it with the stored connect
    /// error).
    fn send(
        &mut self,
        req: http::Request<Body>,
    ) -> BoxFuture<Result<http::Response<Body>, BoxError>> {
        if let Some(e) = self.error.take() {
            return Box::pin(std::future::ready(Err(e)));
        }
        match &mut self.state {
            State::Connected(channel, ..) => {
                let response = tower::Service::call(channel, req);
                Box::pin(async move { response.await.map_err(Into::into) })
            }
            // tower calls only after a ready poll_ready; tonic panics here.
            _ => {
                let e = format!("the balancer called {} before it was ready", self.name);
                Box::pin(std::future::ready(Err(e.into())))
            }
        }
    }
}

impl tower::load::Load for Replica {
    type Metric = usize;

    /// Always 0, as tonic's `Connection` reports.
    fn load(&self) -> usize {
        0
    }
}
