//! Service tests: a scripted inner service behind [`RetryLayer`], in paused
//! tokio time (every sleep is virtual and exact to the timer's 1 ms tick).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use tokio::time::Instant;
use tonic::{Code, Status};
use tower::{Layer, Service, ServiceExt};

use super::*;

const PATH: &str = "/tt.v1.Scoreboard/Hit";

fn config(max_attempts: u32, throttling: &str) -> RetryConfig {
    format!(
        r#"{{"methodConfig":[{{"name":[{{"service":"tt.v1.Scoreboard","method":"Hit"}}],
          "retryPolicy":{{"maxAttempts":{max_attempts},"initialBackoff":"0.1s","maxBackoff":"1s",
          "backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}}}]{throttling}}}"#
    )
    .parse()
    .unwrap()
}

/// What the scripted server does on one attempt.
#[derive(Clone)]
enum Step {
    /// Trailers-only response with this code and optional pushback value.
    TrailersOnly(Code, Option<&'static str>),
    /// Response headers, then trailers with this code.
    HeadersThen(Code),
    /// Fails the inner service call (no response), as a transport error.
    TransportError(Code),
    /// Never answers.
    Hang,
}

/// One attempt as the server saw it.
#[derive(Debug)]
struct Seen {
    at: Duration,
    headers: HeaderMap,
    body: Bytes,
}

#[derive(Clone)]
struct Script {
    steps: Arc<Mutex<VecDeque<Step>>>,
    /// Used when the script runs out.
    then: Step,
    seen: Arc<Mutex<Vec<Seen>>>,
    start: Instant,
}

impl Script {
    fn new(steps: &[Step], then: Step) -> Self {
        Script {
            steps: Arc::new(Mutex::new(steps.iter().cloned().collect())),
            then,
            seen: Arc::default(),
            start: Instant::now(),
        }
    }

    fn attempts(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    fn times_ms(&self) -> Vec<f64> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.at.as_secs_f64() * 1000.0)
            .collect()
    }

    fn header(&self, attempt: usize, name: &str) -> Option<String> {
        let seen = self.seen.lock().unwrap();
        seen[attempt]
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    }

    fn service(
        &self,
    ) -> tower::util::BoxCloneService<
        http::Request<tonic::body::Body>,
        http::Response<tonic::body::Body>,
        Status,
    > {
        let script = self.clone();
        tower::service_fn(move |req: http::Request<tonic::body::Body>| {
            let script = script.clone();
            async move {
                let at = script.start.elapsed();
                let (parts, body) = req.into_parts();
                let body = body.collect().await?.to_bytes();
                script.seen.lock().unwrap().push(Seen {
                    at,
                    headers: parts.headers,
                    body,
                });
                let step = script
                    .steps
                    .lock()
                    .unwrap()
                    .pop_front()
                    .unwrap_or(script.then.clone());
                respond(step).await
            }
        })
        .boxed_clone()
    }
}

async fn respond(step: Step) -> Result<http::Response<tonic::body::Body>, Status> {
    match step {
        Step::TrailersOnly(code, pushback) => {
            let mut resp: http::Response<tonic::body::Body> =
                Status::new(code, "scripted").into_http();
            if let Some(p) = pushback {
                resp.headers_mut()
                    .insert(PUSHBACK_HEADER, HeaderValue::from_static(p));
            }
            Ok(resp)
        }
        Step::HeadersThen(code) => Ok(headers_then(code)),
        Step::TransportError(code) => Err(Status::new(code, "scripted transport error")),
        Step::Hang => std::future::pending().await,
    }
}

/// A normal response: headers, one gRPC message `"pong"`, trailers with `code`.
fn headers_then(code: Code) -> http::Response<tonic::body::Body> {
    let mut msg = BytesMut::new();
    msg.put_u8(0);
    msg.put_u32(4);
    msg.put_slice(b"pong");
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(code as i32));
    let frames: Vec<Result<Frame<Bytes>, Status>> =
        vec![Ok(Frame::data(msg.freeze())), Ok(Frame::trailers(trailers))];
    let body = tonic::body::Body::new(StreamBody::new(futures_util::stream::iter(frames)));
    http::Response::builder()
        .header("content-type", "application/grpc")
        .body(body)
        .unwrap()
}

fn request(
    path: &str,
    body: Bytes,
    timeout: Option<&'static str>,
) -> http::Request<tonic::body::Body> {
    let mut b = http::Request::builder()
        .method("POST")
        .uri(format!("http://scoreboard{path}"))
        .header("content-type", "application/grpc");
    if let Some(t) = timeout {
        b = b.header("grpc-timeout", t);
    }
    b.body(tonic::body::Body::new(Full::new(body))).unwrap()
}

fn payload() -> Bytes {
    let mut b = BytesMut::new();
    b.put_u8(0);
    b.put_u32(11);
    b.put_slice(b"rally#00042");
    b.freeze()
}

type Events = Arc<Mutex<Vec<AttemptEvent>>>;

fn layer(config: RetryConfig, seed: u64) -> (RetryLayer, Events) {
    let events: Events = Arc::default();
    let sink = events.clone();
    let layer = RetryLayer::new(config, seed).observer(Arc::new(move |e: &AttemptEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    (layer, events)
}

async fn call<S>(
    svc: &mut S,
    req: http::Request<tonic::body::Body>,
) -> Result<http::Response<tonic::body::Body>, tonic::codegen::StdError>
where
    S: Service<
        http::Request<tonic::body::Body>,
        Response = http::Response<tonic::body::Body>,
        Error = tonic::codegen::StdError,
    >,
{
    svc.ready().await?.call(req).await
}

fn status_of(resp: &http::Response<tonic::body::Body>) -> Option<Code> {
    resp.headers()
        .get("grpc-status")
        .map(|v| Code::from_bytes(v.as_bytes()))
}

fn decisions(events: &Events) -> Vec<Decision> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match &e.kind {
            AttemptEventKind::Decided(d) => Some(*d),
            _ => None,
        })
        .collect()
}

fn retry_delays(events: &Events) -> Vec<Duration> {
    decisions(events)
        .into_iter()
        .filter_map(|d| match d {
            Decision::Retry { delay, .. } => Some(delay),
            Decision::Stop(_) => None,
        })
        .collect()
}

/// The backoff delays the layer must draw for `seed`: the same generator,
/// replayed independently of the layer.
fn expected_backoffs(config: &RetryConfig, seed: u64, count: u32) -> Vec<Duration> {
    let policy = config.policy_for(PATH).unwrap();
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..count)
        .map(|n| jittered_delay(policy, Jitter::GrpcGo, n, &mut rng))
        .collect()
}

/// Observed gaps between attempts, against the decided delays: tokio's timer
/// wakes on the next whole millisecond, so a gap is the delay plus < 1 ms.
fn assert_gaps_match(script: &Script, delays: &[Duration]) {
    let times = script.times_ms();
    assert_eq!(times.len(), delays.len() + 1, "attempt times {times:?}");
    for (i, d) in delays.iter().enumerate() {
        let gap = times[i + 1] - times[i];
        let want = d.as_secs_f64() * 1000.0;
        assert!(
            gap >= want && gap < want + 1.0,
            "gap {i}: {gap} ms for a delay of {want} ms"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn fails_first_two_then_succeeds_with_seeded_backoff() {
    let cfg = config(4, "");
    let script = Script::new(
        &[
            Step::TrailersOnly(Code::Unavailable, None),
            Step::TrailersOnly(Code::Unavailable, None),
        ],
        Step::HeadersThen(Code::Ok),
    );
    let (layer, events) = layer(cfg.clone(), 7);
    let mut svc = layer.layer(script.service());
    let resp = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), None, "a normal response is passed on");
    let body = resp.into_body().collect().await.unwrap();
    assert_eq!(body.trailers().unwrap()["grpc-status"], "0");

    assert_eq!(script.attempts(), 3);
    let delays = retry_delays(&events);
    assert_eq!(delays, expected_backoffs(&cfg, 7, 2));
    // Pinned for rand 0.9's SmallRng (64-bit): a change here changes traces.
    assert_eq!(
        delays,
        [
            Duration::from_nanos(82_214_417),
            Duration::from_nanos(173_769_268)
        ]
    );
    assert!(delay_window(cfg.policy_for(PATH).unwrap(), Jitter::GrpcGo, 0).contains(delays[0]));
    assert!(delay_window(cfg.policy_for(PATH).unwrap(), Jitter::GrpcGo, 1).contains(delays[1]));
    assert_gaps_match(&script, &delays);

    // The request is replayed byte for byte; attempts ≥ 2 say how many came before.
    let seen = script.seen.lock().unwrap();
    assert!(seen.iter().all(|s| s.body == payload()));
    drop(seen);
    assert_eq!(script.header(0, "grpc-previous-rpc-attempts"), None);
    assert_eq!(
        script.header(1, "grpc-previous-rpc-attempts").as_deref(),
        Some("1")
    );
    assert_eq!(
        script.header(2, "grpc-previous-rpc-attempts").as_deref(),
        Some("2")
    );

    let lines: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        lines,
        [
            "/tt.v1.Scoreboard/Hit attempt 1 started after 0ms",
            "/tt.v1.Scoreboard/Hit attempt 1 ended: trailers-only UNAVAILABLE",
            "/tt.v1.Scoreboard/Hit attempt 1 decided: retry after 82.214ms (backoff n=0)",
            "/tt.v1.Scoreboard/Hit attempt 2 started after 82.214ms",
            "/tt.v1.Scoreboard/Hit attempt 2 ended: trailers-only UNAVAILABLE",
            "/tt.v1.Scoreboard/Hit attempt 2 decided: retry after 173.769ms (backoff n=1)",
            "/tt.v1.Scoreboard/Hit attempt 3 started after 173.769ms",
            "/tt.v1.Scoreboard/Hit attempt 3 ended: response headers (committed)",
            "/tt.v1.Scoreboard/Hit attempt 3 decided: stop: committed",
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn gives_up_after_max_attempts_with_the_last_status() {
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(config(4, ""), 1);
    let mut svc = layer.layer(script.service());
    let resp = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), Some(Code::Unavailable));
    assert_eq!(script.attempts(), 4);
    assert_eq!(
        decisions(&events).last(),
        Some(&Decision::Stop(StopReason::MaxAttempts))
    );
    assert_gaps_match(&script, &retry_delays(&events));
}

#[tokio::test(start_paused = true)]
async fn max_attempts_above_five_makes_five() {
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let cfg = config(9, "");
    assert_eq!(cfg.policy_for(PATH).unwrap().requested_max_attempts(), 9);
    let (layer, events) = layer(cfg, 1);
    let mut svc = layer.layer(script.service());
    call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(script.attempts(), 5);
    // Backoff grows 100 → 200 → 400 → 800 ms (±20 %), never past maxBackoff.
    let ms: Vec<u128> = retry_delays(&events)
        .iter()
        .map(Duration::as_millis)
        .collect();
    assert!(
        ms[0] >= 80 && ms[1] >= 160 && ms[2] >= 320 && ms[3] >= 640 && ms[3] < 960,
        "{ms:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn non_retryable_code_makes_exactly_one_attempt() {
    let script = Script::new(&[], Step::TrailersOnly(Code::Internal, None));
    let (layer, events) = layer(config(4, ""), 1);
    let mut svc = layer.layer(script.service());
    let resp = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), Some(Code::Internal));
    assert_eq!(script.attempts(), 1);
    assert_eq!(
        decisions(&events),
        [Decision::Stop(StopReason::NotRetryableCode)]
    );
}

#[tokio::test(start_paused = true)]
async fn headers_then_failure_is_committed_and_not_retried() {
    let script = Script::new(&[], Step::HeadersThen(Code::Unavailable));
    let (layer, events) = layer(config(4, ""), 1);
    let mut svc = layer.layer(script.service());
    let resp = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    let body = resp.into_body().collect().await.unwrap();
    assert_eq!(body.trailers().unwrap()["grpc-status"], "14");
    assert_eq!(script.attempts(), 1);
    assert_eq!(decisions(&events), [Decision::Stop(StopReason::Committed)]);
}

#[tokio::test(start_paused = true)]
async fn pushback_waits_exactly_and_resets_the_backoff() {
    let script = Script::new(
        &[
            Step::TrailersOnly(Code::Unavailable, None),
            Step::TrailersOnly(Code::Unavailable, Some("250")),
            Step::TrailersOnly(Code::Unavailable, None),
        ],
        Step::TrailersOnly(Code::Ok, None),
    );
    let cfg = config(5, "");
    let (layer, events) = layer(cfg.clone(), 3);
    let mut svc = layer.layer(script.service());
    let resp = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), Some(Code::Ok));
    assert_eq!(script.attempts(), 4);
    let d = decisions(&events);
    assert!(matches!(
        d[0],
        Decision::Retry {
            reason: RetryReason::Backoff { n: 0 },
            ..
        }
    ));
    assert_eq!(
        d[1],
        Decision::Retry {
            delay: Duration::from_millis(250),
            reason: RetryReason::Pushback { ms: 250 }
        }
    );
    // After the pushback the exponent starts again at 0: 80..120 ms, not 160..240.
    let Decision::Retry { delay, reason } = d[2] else {
        panic!("{d:?}")
    };
    assert_eq!(reason, RetryReason::Backoff { n: 0 });
    assert!(delay_window(cfg.policy_for(PATH).unwrap(), Jitter::GrpcGo, 0).contains(delay));
    assert_eq!(d[3], Decision::Stop(StopReason::Succeeded));
    let times = script.times_ms();
    assert_eq!(times[2] - times[1], 250.0, "a pushback is exact");
}

#[tokio::test(start_paused = true)]
async fn pushback_zero_retries_immediately() {
    let script = Script::new(
        &[Step::TrailersOnly(Code::Unavailable, Some("0"))],
        Step::TrailersOnly(Code::Ok, None),
    );
    let (layer, _) = layer(config(4, ""), 3);
    let mut svc = layer.layer(script.service());
    call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(script.times_ms(), [0.0, 0.0]);
}

#[tokio::test(start_paused = true)]
async fn negative_pushback_stops_and_costs_a_token() {
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, Some("-1")));
    let (layer, events) = layer(
        config(4, r#","retryThrottling":{"maxTokens":10,"tokenRatio":0.1}"#),
        3,
    );
    let mut svc = layer.layer(script.service());
    let resp = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), Some(Code::Unavailable));
    assert_eq!(script.attempts(), 1);
    assert_eq!(
        decisions(&events),
        [Decision::Stop(StopReason::PushbackStop)]
    );
    assert_eq!(svc.throttler().unwrap().tokens(), 9.0);
}

#[tokio::test(start_paused = true)]
async fn a_backoff_past_the_deadline_ends_at_the_deadline() {
    // 250 ms budget: attempt 2 after ~100 ms; the next backoff (160..240 ms) cannot fit.
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(config(5, ""), 7);
    let mut svc = layer.layer(script.service());
    let start = Instant::now();
    let resp = call(&mut svc, request(PATH, payload(), Some("250m")))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), Some(Code::DeadlineExceeded));
    assert_eq!(
        start.elapsed(),
        Duration::from_millis(250),
        "the call ends at the deadline"
    );
    assert_eq!(script.attempts(), 2);
    assert_eq!(
        decisions(&events).last(),
        Some(&Decision::Stop(StopReason::Deadline))
    );
    // Attempt 1 carries the caller's header; attempt 2 what is left, rounded up.
    assert_eq!(script.header(0, "grpc-timeout").as_deref(), Some("250m"));
    let left_ms = 250.0 - script.times_ms()[1];
    let sent = script.header(1, "grpc-timeout").unwrap();
    let sent_us: f64 = sent.trim_end_matches('u').parse().unwrap();
    assert!(
        sent.ends_with('u') && sent_us >= left_ms * 1000.0 && sent_us < left_ms * 1000.0 + 1.0,
        "{sent} vs {left_ms}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_in_flight_is_deadline_exceeded() {
    let script = Script::new(&[], Step::Hang);
    let (layer, events) = layer(config(4, ""), 7);
    let mut svc = layer.layer(script.service());
    let start = Instant::now();
    let resp = call(&mut svc, request(PATH, payload(), Some("100m")))
        .await
        .unwrap();
    assert_eq!(status_of(&resp), Some(Code::DeadlineExceeded));
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(script.attempts(), 1);
    let ended = events.lock().unwrap()[1].kind.clone();
    assert_eq!(
        ended,
        AttemptEventKind::Ended(AttemptOutcome::DeadlineExceeded)
    );
    assert_eq!(
        decisions(&events),
        [Decision::Stop(StopReason::NotRetryableCode)]
    );
}

#[tokio::test(start_paused = true)]
async fn transport_errors_are_retried_and_the_last_one_returned() {
    let script = Script::new(&[], Step::TransportError(Code::Unavailable));
    let (layer, _) = layer(config(3, ""), 7);
    let mut svc = layer.layer(script.service());
    let err = call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap_err();
    let status = Status::from_error(err);
    assert_eq!(status.code(), Code::Unavailable);
    assert_eq!(status.message(), "scripted transport error");
    assert_eq!(script.attempts(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_token_bucket_is_shared_by_clones_and_refilled_by_successes() {
    // maxTokens 3: the 1st failure leaves 2 (> 1.5, retry), the 2nd leaves 1 (throttled).
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(
        config(5, r#","retryThrottling":{"maxTokens":3,"tokenRatio":0.5}"#),
        7,
    );
    let mut svc = layer.layer(script.service());
    call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(script.attempts(), 2);
    assert_eq!(
        decisions(&events).last(),
        Some(&Decision::Stop(StopReason::Throttled))
    );

    let mut clone = svc.clone();
    call(&mut clone, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(script.attempts(), 3, "the clone is throttled at once");
    assert_eq!(svc.throttler().unwrap().tokens(), 0.0);

    // Successes (committed OK and trailers-only OK) add tokenRatio each.
    let ok = Script::new(
        &[Step::TrailersOnly(Code::Ok, None)],
        Step::HeadersThen(Code::Ok),
    );
    let mut ok_svc = Retry::new(ok.service(), svc.shared.clone());
    call(&mut ok_svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(svc.throttler().unwrap().tokens(), 0.5);
    let resp = call(&mut ok_svc, request(PATH, payload(), None))
        .await
        .unwrap();
    assert_eq!(
        svc.throttler().unwrap().tokens(),
        0.5,
        "counted when the trailers arrive"
    );
    resp.into_body().collect().await.unwrap();
    assert_eq!(svc.throttler().unwrap().tokens(), 1.0);
}

#[tokio::test(start_paused = true)]
async fn more_than_256_kib_commits_the_call() {
    let big = Bytes::from(vec![7u8; 256 * 1024 + 1]);
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(config(4, ""), 7);
    let mut svc = layer.layer(script.service());
    call(&mut svc, request(PATH, big.clone(), None))
        .await
        .unwrap();
    assert_eq!(script.attempts(), 1);
    assert_eq!(
        script.seen.lock().unwrap()[0].body,
        big,
        "the whole body still goes out"
    );
    assert_eq!(
        decisions(&events),
        [Decision::Stop(StopReason::BufferLimit)]
    );

    let exact = Bytes::from(vec![7u8; 256 * 1024]);
    let script = Script::new(
        &[Step::TrailersOnly(Code::Unavailable, None)],
        Step::TrailersOnly(Code::Ok, None),
    );
    let mut svc = layer.layer(script.service());
    call(&mut svc, request(PATH, exact.clone(), None))
        .await
        .unwrap();
    assert_eq!(script.attempts(), 2);
    assert_eq!(script.seen.lock().unwrap()[1].body, exact);
}

#[tokio::test(start_paused = true)]
async fn a_method_without_policy_passes_through() {
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(config(4, ""), 7);
    let mut svc = layer.layer(script.service());
    let resp = call(
        &mut svc,
        request("/tt.v1.Scoreboard/Miss", payload(), Some("1S")),
    )
    .await
    .unwrap();
    assert_eq!(status_of(&resp), Some(Code::Unavailable));
    assert_eq!(script.attempts(), 1);
    assert!(events.lock().unwrap().is_empty());
    assert_eq!(script.header(0, "grpc-timeout").as_deref(), Some("1S"));
}

async fn delays_for_seed(seed: u64) -> Vec<Duration> {
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(config(5, ""), seed);
    let mut svc = layer.layer(script.service());
    call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    retry_delays(&events)
}

#[tokio::test(start_paused = true)]
async fn same_seed_same_delays_other_seed_other_jitter() {
    let a = delays_for_seed(11).await;
    assert_eq!(a.len(), 4);
    assert_eq!(a, delays_for_seed(11).await);
    assert_ne!(a, delays_for_seed(12).await);
}

#[tokio::test(start_paused = true)]
async fn a6_uniform_jitter_is_selectable() {
    let cfg = config(5, "");
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, events) = layer(cfg.clone(), 5);
    let mut svc = layer.jitter(Jitter::A6Uniform).layer(script.service());
    call(&mut svc, request(PATH, payload(), None))
        .await
        .unwrap();
    for (n, d) in retry_delays(&events).into_iter().enumerate() {
        assert!(
            delay_window(cfg.policy_for(PATH).unwrap(), Jitter::A6Uniform, n as u32).contains(d)
        );
    }
}

/// A codec that sends and receives raw bytes, so a real tonic client can
/// drive the layer without generated code.
#[derive(Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
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

impl tonic::codec::Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;

    fn decode(&mut self, src: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        use bytes::Buf;
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

async fn tonic_unary<S>(svc: S, timeout: Option<Duration>) -> Result<Bytes, Status>
where
    S: tonic::client::GrpcService<tonic::body::Body>,
    S::Error: Into<tonic::codegen::StdError>,
    S::ResponseBody: http_body::Body<Data = Bytes> + Send + 'static,
    <S::ResponseBody as http_body::Body>::Error: Into<tonic::codegen::StdError>,
{
    let mut grpc = tonic::client::Grpc::new(svc);
    grpc.ready()
        .await
        .map_err(|e| Status::from_error(e.into()))?;
    let mut req = tonic::Request::new(Bytes::from_static(b"rally"));
    if let Some(t) = timeout {
        req.set_timeout(t);
    }
    let path = http::uri::PathAndQuery::from_static(PATH);
    Ok(grpc.unary(req, path, RawCodec).await?.into_inner())
}

#[tokio::test(start_paused = true)]
async fn a_tonic_client_sees_the_retried_result() {
    let script = Script::new(
        &[Step::TrailersOnly(Code::Unavailable, None)],
        Step::HeadersThen(Code::Ok),
    );
    let (layer, _) = layer(
        config(4, r#","retryThrottling":{"maxTokens":10,"tokenRatio":0.1}"#),
        7,
    );
    let svc = layer.layer(script.service());
    let reply = tonic_unary(svc.clone(), None).await.unwrap();
    assert_eq!(reply, "pong");
    assert_eq!(script.attempts(), 2);
    // Both attempts carried the same framed message.
    let seen = script.seen.lock().unwrap();
    assert_eq!(seen[0].body, seen[1].body);
    assert_eq!(&seen[0].body[5..], b"rally");
    drop(seen);
    // One failure (−1), then the OK call (+0.1) once tonic read the trailers.
    assert!((svc.throttler().unwrap().tokens() - 9.1).abs() < 1e-9);
}

#[tokio::test(start_paused = true)]
async fn a_tonic_client_sees_deadline_exceeded() {
    let script = Script::new(&[], Step::TrailersOnly(Code::Unavailable, None));
    let (layer, _) = layer(config(5, ""), 7);
    let svc = layer.layer(script.service());
    let start = Instant::now();
    let err = tonic_unary(svc, Some(Duration::from_millis(250)))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded);
    assert_eq!(start.elapsed(), Duration::from_millis(250));
    assert_eq!(script.header(0, "grpc-timeout").as_deref(), Some("250000u"));
}
