//! "Will this channel's keepalive survive that server?" — the check a team
//! puts next to its channel configuration.
//!
//! [`check_keepalive`] takes the same `Endpoint` closure the team applies to
//! its real channel (`http2_keep_alive_interval`, `keep_alive_timeout`,
//! `keep_alive_while_idle`), a server's [`KeepalivePolicy`] and a
//! [`Traffic`] shape, runs a real tonic client against a sim server host
//! enforcing the policy for ten *simulated* minutes (about a second of wall
//! time), and answers `compatible` or `GOAWAY after N s, calls end with
//! CODE`.
//!
//! ```
//! use std::time::Duration;
//! use grpc_chaos::policy::KeepalivePolicy;
//! use grpc_chaos::check::{Traffic, check_keepalive};
//!
//! // kube-apiserver's etcd client settings (seed 000 §6.1) against a
//! // grpc-go server with default enforcement.
//! let report = check_keepalive(
//!     |e| {
//!         e.http2_keep_alive_interval(Duration::from_secs(30))
//!             .keep_alive_timeout(Duration::from_secs(10))
//!     },
//!     KeepalivePolicy::grpc_go(),
//!     Traffic::LongCall,
//! )?;
//! assert!(!report.is_compatible());
//! assert_eq!(report.goaway_after(), Some(Duration::from_millis(120_080)));
//! # Ok::<(), grpc_chaos::Error>(())
//! ```

use crate::recorder::event;
use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use http_body::Frame;
use tonic::body::Body;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Endpoint;
use tonic::{Request, Status};

use crate::policy::KeepalivePolicy;
use crate::recorder::event::{EventKind, Fate, KeepaliveVerdict, Outcome};
use crate::trace::Trace;
use crate::wire::FrameType;
use crate::Sim;

/// What the checked client does on its channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// One quick call opens the connection; then nothing but PINGs. A tonic
    /// channel only pings an idle connection with
    /// `keep_alive_while_idle(true)`. The server has no open call, so
    /// policies that do not permit PINGs without calls require 2 h.
    Idle,
    /// One call open and silent: the server sends nothing until the end of
    /// the check (a long poll, a Watch with no events). When the connection
    /// is cut, the client makes the next such call at once.
    LongCall,
    /// One server stream that delivers a message every `every` (*simulated*
    /// time). Server messages reset strikes in every modelled server, and
    /// the client's keepalive timer restarts on each frame it receives.
    /// When the connection is cut, the client opens the next stream at once.
    Streaming {
        /// Gap between the server's messages, *simulated* time.
        every: Duration,
    },
}

/// A keepalive compatibility check. [`check_keepalive`] runs one with the
/// defaults; this builder changes them.
#[derive(Clone, Debug)]
#[must_use = "call .run(configure) to run the check"]
pub struct KeepaliveCheck {
    policy: KeepalivePolicy,
    traffic: Traffic,
    duration: Duration,
    seed: u64,
}

/// The check's server host.
pub(super) const SERVER: &str = "server";
/// The check's client host.
pub(super) const CLIENT: &str = "client";
/// The probe service's method: a server stream of empty messages.
const HOLD: &str = "/grpc.chaos.KeepaliveProbe/Hold";

impl KeepaliveCheck {
    /// A check of `traffic` against `policy` for 10 simulated minutes,
    /// seed 0.
    pub fn new(policy: KeepalivePolicy, traffic: Traffic) -> Self {
        Self {
            policy,
            traffic,
            duration: Duration::from_secs(600),
            seed: 0,
        }
    }

    /// How long the client keeps going, *simulated* time (default 10 min).
    /// Long enough for several of the client's PING intervals.
    pub fn duration(mut self, duration: Duration) -> Self {
        self.duration = duration;
        self
    }

    /// The seed of the run (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Runs the check with a client channel configured by `configure`.
    ///
    /// The world: a 10 ms tick (every time in the answer is a multiple of
    /// it), 1 ms links, one server host enforcing the policy with a probe
    /// service, one client host calling it as [`Traffic`] says.
    ///
    /// # Errors
    ///
    /// A run that did not complete (see [`Sim::run`]).
    pub fn run(
        &self,
        configure: impl FnOnce(Endpoint) -> Endpoint + 'static,
    ) -> crate::Result<KeepaliveReport> {
        let (traffic, duration, policy) = (self.traffic, self.duration, self.policy);
        let trace = probe_world(self.seed, traffic, duration, configure, |sim| {
            sim.keepalive_policy(SERVER, policy);
        })?;
        Ok(KeepaliveReport::from_trace(trace, duration))
    }
}

/// Checks a client channel's keepalive settings against a server's policy
/// under `traffic`, for 10 simulated minutes. See [`KeepaliveCheck`] to
/// change the duration or seed.
///
/// # Errors
///
/// A run that did not complete (see [`Sim::run`]).
pub fn check_keepalive(
    configure: impl FnOnce(Endpoint) -> Endpoint + 'static,
    policy: KeepalivePolicy,
    traffic: Traffic,
) -> crate::Result<KeepaliveReport> {
    KeepaliveCheck::new(policy, traffic).run(configure)
}

/// The checks' tick, *simulated* time.
const TICK: Duration = Duration::from_millis(10);

/// The world both checks run: a 10 ms tick, 1 ms links, the probe service
/// on [`SERVER`] with what is checked put in front of it by `place`, and
/// a [`CLIENT`] that holds calls as `traffic` says for `duration`
/// (*simulated*), opening the next one at once when one ends early (as a
/// Watch client reconnects). The run lasts `duration` + 60 s.
pub(super) fn probe_world(
    seed: u64,
    traffic: Traffic,
    duration: Duration,
    configure: impl FnOnce(Endpoint) -> Endpoint + 'static,
    place: impl FnOnce(&mut Sim),
) -> crate::Result<Trace> {
    check_probe(traffic, duration)?;
    let mut sim = Sim::builder()
        .seed(seed)
        .tick(TICK)
        .duration(duration + Duration::from_secs(60))
        .build();
    sim.server(SERVER, move |s| s.add_service(Probe { traffic, duration }));
    place(&mut sim);
    sim.client(CLIENT, move |host| async move {
        let channel = host.channel_with(SERVER, configure);
        let start = tokio::time::Instant::now();
        loop {
            let mut grpc = tonic::client::Grpc::new(channel.clone());
            let ended = hold(&mut grpc).await;
            if traffic == Traffic::Idle {
                tokio::time::sleep(duration).await;
                break;
            }
            if ended.is_ok() || start.elapsed() >= duration {
                break;
            }
        }
        Ok(())
    });
    sim.run()
}

/// The probe's own misconfigurations, before a world is built: a check of
/// no time, one longer than a run can simulate, or a stream whose messages
/// come more often than the 10 ms tick can tell apart.
fn check_probe(traffic: Traffic, duration: Duration) -> crate::Result<()> {
    let fmt = crate::units::fmt_duration;
    let wrong = |what: String| Err(crate::Error::new(crate::error::Kind::Misconfigured(what)));
    if duration.is_zero() {
        return wrong(
            "the check's duration is 0: nothing would be checked; give it the simulated time \
             the call must live (several of the client's PING intervals)"
                .into(),
        );
    }
    if duration > crate::fault::LONGEST_WAIT {
        return wrong(format!(
            "the check's duration {} is longer than a run simulates (365 days); lower it",
            fmt(duration)
        ));
    }
    if let Traffic::Streaming { every } = traffic {
        if every < TICK {
            return wrong(format!(
                "Traffic::Streaming {{ every: {} }} is shorter than the check's 10ms tick: the \
                 messages would come every tick, as fast as the simulation can run; give it at \
                 least 10ms",
                fmt(every)
            ));
        }
    }
    Ok(())
}

/// One call of the probe, read to its end.
pub(super) async fn hold(grpc: &mut tonic::client::Grpc<crate::Channel>) -> Result<(), Status> {
    grpc.ready()
        .await
        .map_err(|e| Status::unavailable(e.to_string()))?;
    let path = http::uri::PathAndQuery::from_static(HOLD);
    let mut stream = grpc
        .server_streaming(Request::new(Bytes::new()), path, RawCodec)
        .await?
        .into_inner();
    while stream.message().await?.is_some() {}
    Ok(())
}

/// The answer of a [`KeepaliveCheck`], with the run's trace.
///
/// `Debug` shows the verdict fields and a line about the trace (seed,
/// events, end), not the trace itself: ten *simulated* minutes of PINGs are
/// kilobytes. Render the trace for that.
#[derive(Clone)]
pub struct KeepaliveReport {
    /// PINGs the server judged, over the whole run.
    pub pings: usize,
    /// Of those, PINGs that were strikes (the ones that triggered a GOAWAY
    /// included).
    pub strikes: usize,
    /// GOAWAY(ENHANCE_YOUR_CALM, "too_many_pings") frames the server sent.
    pub goaways: usize,
    /// When the first GOAWAY went out, *simulated* time since the start
    /// (the first call starts at 0), and which PING on its connection
    /// (1-based) triggered it.
    pub first_goaway: Option<(Duration, usize)>,
    /// How the first call that did not end OK ended, as tonic reported it
    /// and as the spec requires (`None` when every call ended OK or none
    /// was open when the connection was cut).
    pub calls_end: Option<Outcome>,
    /// How long the client ran, *simulated* time.
    pub duration: Duration,
    /// The run, for a closer look (`report.trace.render()`).
    pub trace: Trace,
}

impl KeepaliveReport {
    fn from_trace(trace: Trace, duration: Duration) -> Self {
        let mut pings = 0;
        let mut strikes = 0;
        let mut per_conn: std::collections::HashMap<u32, usize> = Default::default();
        let mut cut_at_ping = std::collections::HashMap::new();
        for e in trace.events() {
            if let EventKind::KeepalivePing(keepalive_ping) = &e.kind {
                let event::KeepalivePing { conn, verdict, .. } = &**keepalive_ping;
                pings += 1;
                if *verdict != KeepaliveVerdict::Ok {
                    strikes += 1;
                }
                let n = per_conn.entry(*conn).or_default();
                *n += 1;
                if *verdict == KeepaliveVerdict::TooManyPings {
                    cut_at_ping.insert(*conn, *n);
                }
            }
        }
        let goaways: Vec<(Duration, u32)> = trace
            .events()
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Frame {
                    conn,
                    frame: FrameType::GoAway,
                    fate,
                    ..
                } if *fate == Fate::Injected => Some((e.at(), *conn)),
                _ => None,
            })
            .collect();
        let first_goaway = goaways
            .first()
            .map(|(at, conn)| (*at, cut_at_ping.get(conn).copied().unwrap_or(0)));
        let calls_end = trace
            .calls()
            .iter()
            .filter_map(|c| c.outcome())
            .find(|o| !o.is_ok())
            .cloned();
        Self {
            pings,
            strikes,
            goaways: goaways.len(),
            first_goaway,
            calls_end,
            duration,
            trace,
        }
    }

    /// No GOAWAY in the whole run.
    pub fn is_compatible(&self) -> bool {
        self.goaways == 0
    }

    /// When the first GOAWAY went out, *simulated* time since the start.
    pub fn goaway_after(&self) -> Option<Duration> {
        self.first_goaway.map(|(at, _)| at)
    }
}

impl fmt::Debug for KeepaliveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let trace = format!(
            "seed {}, {} events, ended at {:?}; render it to read it",
            self.trace.seed(),
            self.trace.events().len(),
            self.trace.ended_at()
        );
        f.debug_struct("KeepaliveReport")
            .field("pings", &self.pings)
            .field("strikes", &self.strikes)
            .field("goaways", &self.goaways)
            .field("first_goaway", &self.first_goaway)
            .field("calls_end", &self.calls_end)
            .field("duration", &self.duration)
            .field("trace", &format_args!("{trace}"))
            .finish()
    }
}

/// `compatible (19 PINGs in 600s, 0 strikes)` or `GOAWAY after 120.08s
/// (PING #4 on the connection), calls end with UNAVAILABLE (tonic: UNKNOWN
/// "transport error"); 4 GOAWAYs in 600s`.
impl fmt::Display for KeepaliveReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = |d: Duration| format!("{}s", d.as_millis() as f64 / 1000.0);
        let Some((at, nth)) = self.first_goaway else {
            return write!(
                f,
                "compatible ({} PINGs in {}, {} strikes)",
                self.pings,
                secs(self.duration),
                self.strikes
            );
        };
        write!(
            f,
            "GOAWAY after {} (PING #{nth} on the connection)",
            secs(at)
        )?;
        match &self.calls_end {
            Some(o) if o.code == o.spec_code => {
                write!(f, ", calls end with {} {:?}", o.code, o.message)?
            }
            Some(o) => write!(
                f,
                ", calls end with {} (tonic: {} {:?})",
                o.spec_code, o.code, o.message
            )?,
            None => f.write_str(", no call was open")?,
        }
        let plural = if self.goaways == 1 { "" } else { "s" };
        write!(
            f,
            "; {} GOAWAY{plural} in {}",
            self.goaways,
            secs(self.duration)
        )
    }
}

/// The probe service: one server-streaming method whose responses follow
/// the [`Traffic`] shape, until `duration` after the start of the run.
#[derive(Clone)]
pub(super) struct Probe {
    pub(super) traffic: Traffic,
    pub(super) duration: Duration,
}

impl tonic::server::NamedService for Probe {
    const NAME: &'static str = "grpc.chaos.KeepaliveProbe";
}

impl tower::Service<http::Request<Body>> for Probe {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _request: http::Request<Body>) -> Self::Future {
        let (traffic, duration) = (self.traffic, self.duration);
        Box::pin(async move {
            let body = match traffic {
                Traffic::Idle => return Ok(trailers_only()),
                Traffic::LongCall => {
                    tokio::time::sleep(remaining(duration)).await;
                    return Ok(trailers_only());
                }
                Traffic::Streaming { every } => Ticks {
                    every,
                    left: u64::try_from(remaining(duration).as_millis() / every.as_millis().max(1))
                        .unwrap_or(u64::MAX),
                    sleep: Box::pin(tokio::time::sleep(every)),
                    done: false,
                },
            };
            Ok(grpc_response().body(Body::new(body)).unwrap_or_default())
        })
    }
}

/// Simulated time from now until `end` (since the start of the run): calls
/// are held until the end of the check, whenever they started.
fn remaining(end: Duration) -> Duration {
    end.saturating_sub(turmoil::sim_elapsed().unwrap_or_default())
}

fn grpc_response() -> http::response::Builder {
    http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
}

/// A trailers-only OK response (gRPC `PROTOCOL-HTTP2.md`).
fn trailers_only() -> http::Response<Body> {
    grpc_response()
        .header("grpc-status", "0")
        .body(Body::empty())
        .unwrap_or_default()
}

/// A response body: an empty gRPC message every `every`, `left` times,
/// then `grpc-status: 0` trailers.
struct Ticks {
    every: Duration,
    left: u64,
    sleep: Pin<Box<tokio::time::Sleep>>,
    done: bool,
}

impl http_body::Body for Ticks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if self.left == 0 {
            self.done = true;
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        if self.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let next = tokio::time::Instant::now() + self.every;
        self.sleep.as_mut().reset(next);
        self.left -= 1;
        // An empty message: not compressed, length 0.
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&[0; 5])))))
    }
}

/// Passes message bytes through unchanged (the probe's messages are empty).
#[derive(Clone, Copy, Debug, Default)]
struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
