//! A handler that panics: the caller and the wire see what tonic's server
//! does in production, measured outside the simulation with tonic 0.14.9,
//! hyper 1.12.0, h2 0.4.20 and tokio 1.54.1 on 127.0.0.1 (the guide's
//! page, harness/src/guide/handler_panics.md): hyper's task for the stream dies, h2 resets the
//! stream with RST_STREAM(CANCEL), the client sees CANCELLED, and the next
//! call on the same connection works. The sim catches the panic to record
//! it and fail the run, and asks hyper for that same reset.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use grpc_chaos::recorder::event::FrameDetail;
use grpc_chaos::recorder::event::{EventKind, PanicSite};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::scoreboard_server::{Scoreboard, ScoreboardServer};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::store_server::{Store, StoreServer};
use grpc_chaos_scenarios::services::pb::{
    LoadReply, LoadRequest, Rally, SaveReply, SaveRequest, Score, WatchRequest,
};
use tonic::codegen::tokio_stream::Stream;
use tonic::{Request, Response, Status, Streaming};

/// A Store whose `Save` panics 5 ms into the call, before it answers.
#[derive(Debug, Clone, Copy)]
struct PanickingStore;

#[tonic::async_trait]
impl Store for PanickingStore {
    async fn save(&self, _: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        tokio::time::sleep(Duration::from_millis(5)).await;
        panic!("boom before the response")
    }

    async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        Ok(Response::new(LoadReply { total: 7 }))
    }
}

/// How a [`PanickingBoard`]'s Watch stream panics.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Watch {
    /// One small Score, then 20 ms later a panic.
    AfterPause,
    /// One small Score, then at once a panic (tonic's encoder still holds
    /// the Score: nothing of the body reaches hyper).
    AtOnce,
    /// One 40 KiB Score (over tonic's 32 KiB yield threshold: tonic hands
    /// it to hyper), then at once a panic.
    AfterBigMessage,
}

/// A Scoreboard whose Watch stream panics as `watch` says.
#[derive(Debug, Clone, Copy)]
struct PanickingBoard {
    watch: Watch,
}

type Scores = Pin<Box<dyn Stream<Item = Result<Score, Status>> + Send>>;

/// The scores of [`PanickingBoard`]'s Watch.
struct Panicking {
    watch: Watch,
    sent: bool,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Stream for Panicking {
    type Item = Result<Score, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if !self.sent {
            self.sent = true;
            let padding = match self.watch {
                Watch::AfterBigMessage => vec![7; 40 * 1024],
                _ => Vec::new(),
            };
            return Poll::Ready(Some(Ok(Score {
                match_id: "m1".into(),
                home: 1,
                away: 0,
                padding,
            })));
        }
        if self.watch == Watch::AfterPause {
            let pause = self
                .pause
                .get_or_insert_with(|| Box::pin(tokio::time::sleep(Duration::from_millis(20))));
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        panic!("boom mid-stream")
    }
}

#[tonic::async_trait]
impl Scoreboard for PanickingBoard {
    async fn hit(&self, _: Request<Rally>) -> Result<Response<Score>, Status> {
        Err(Status::unimplemented("not here"))
    }

    type WatchStream = Scores;

    async fn watch(&self, _: Request<WatchRequest>) -> Result<Response<Scores>, Status> {
        Ok(Response::new(Box::pin(Panicking {
            watch: self.watch,
            sent: false,
            pause: None,
        })))
    }

    async fn upload(&self, _: Request<Streaming<Rally>>) -> Result<Response<Score>, Status> {
        Err(Status::unimplemented("not here"))
    }

    type RallyStream = Scores;

    async fn rally(&self, _: Request<Streaming<Rally>>) -> Result<Response<Scores>, Status> {
        Err(Status::unimplemented("not here"))
    }
}

use std::future::Future as _;

/// The frames `host` sent on stream `stream`: `HEADERS`, `DATA`,
/// `RST_STREAM CANCEL`.
fn frames(trace: &Trace, host: &str, stream: u32) -> Vec<String> {
    trace
        .events_on(host)
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                stream: s, detail, ..
            } if *s == stream => Some(match detail {
                FrameDetail::RstStream { code } => format!("RST_STREAM {code}"),
                FrameDetail::Headers(_) => "HEADERS".to_owned(),
                FrameDetail::Data { .. } => "DATA".to_owned(),
                other => format!("{other:?}"),
            }),
            _ => None,
        })
        .collect()
}

/// `(site, message)` of every handler panic the trace recorded.
fn panics(trace: &Trace) -> Vec<(PanicSite, String)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::HandlerPanicked(p) => Some((p.site, p.message.clone())),
            _ => None,
        })
        .collect()
}

/// The connections of the trace: `c1`, `c2`, ….
fn connections(trace: &Trace) -> Vec<u32> {
    let mut conns: Vec<u32> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame { conn, .. } => Some(*conn),
            _ => None,
        })
        .collect();
    conns.dedup();
    conns.sort_unstable();
    conns.dedup();
    conns
}

/// Runs `sim`, which must fail with a handler panic, and returns its trace.
fn panicked_run(sim: Sim) -> Trace {
    match sim.run() {
        Ok(trace) => panic!("a handler panic must fail the run:\n{}", trace.render()),
        Err(err) => {
            assert!(err.is_handler_panic(), "{err}");
            err.trace().expect("the trace").clone()
        }
    }
}

/// Measured: `RST_STREAM stream=1 code=CANCEL` and nothing else from the
/// server on the stream, `code=Cancelled message="h2 protocol error: http2
/// error"` at the client, twice, then the third call on the same
/// connection answered (the proxy in front of the server saw one
/// connection).
#[test]
fn a_panic_before_the_response_resets_the_stream_and_the_connection_carries_on() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let said = seen.clone();
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(StoreServer::new(PanickingStore)));
    sim.client("player", move |c| async move {
        let mut client = StoreClient::new(c.channel("store"));
        for _ in 0..2 {
            let save = SaveRequest {
                match_id: "m1".into(),
                points: 1,
            };
            let err = client.save(save).await.expect_err("Save panics");
            said.lock()
                .unwrap()
                .push(format!("{:?} {}", err.code(), err.message()));
        }
        let load = LoadRequest {
            match_id: "m1".into(),
        };
        let total = client.load(load).await?.into_inner().total;
        said.lock().unwrap().push(format!("Load {total}"));
        Ok(())
    });
    let trace = panicked_run(sim);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "Cancelled h2 protocol error: http2 error",
            "Cancelled h2 protocol error: http2 error",
            "Load 7"
        ]
    );
    assert_eq!(frames(&trace, "store", 1), ["RST_STREAM CANCEL"]);
    assert_eq!(frames(&trace, "store", 3), ["RST_STREAM CANCEL"]);
    assert_eq!(frames(&trace, "store", 5), ["HEADERS", "DATA", "HEADERS"]);
    assert_eq!(connections(&trace), [1], "{}", trace.render());
    let boom = "boom before the response".to_owned();
    assert_eq!(
        panics(&trace),
        [
            (PanicSite::Handler, boom.clone()),
            (PanicSite::Handler, boom)
        ]
    );
    let text = trace.render();
    assert!(
        text.contains(
            "h1 handler /tt.v1.Store/Save panicked: \"boom before the response\"; stream reset \
             (RST_STREAM CANCEL), as tonic's server does"
        ),
        "{text}"
    );
    let ends: Vec<_> = trace
        .calls()
        .iter()
        .map(|c| c.outcome().map(|o| o.code))
        .collect();
    assert_eq!(ends, [Some("CANCELLED"), Some("CANCELLED"), Some("OK")]);
}

/// Runs two Watch calls on one channel against a board whose stream
/// panics as `watch` says; returns what the client saw and the trace.
fn watch_twice(watch: Watch) -> (Vec<String>, Trace) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let said = seen.clone();
    let mut sim = Sim::builder().seed(1).build();
    sim.server("board", move |s| {
        s.add_service(ScoreboardServer::new(PanickingBoard { watch }))
    });
    sim.client("player", move |c| async move {
        let mut client = ScoreboardClient::new(c.channel("board"));
        for _ in 0..2 {
            let request = WatchRequest {
                match_id: "m1".into(),
                count: 3,
                padding: 0,
            };
            let mut scores = match client.watch(request).await {
                Ok(response) => response.into_inner(),
                Err(e) => {
                    let seen = format!("call {:?} {}", e.code(), e.message());
                    said.lock().unwrap().push(seen);
                    continue;
                }
            };
            loop {
                let seen = match scores.message().await {
                    Ok(Some(score)) => format!("score of {} bytes", score.padding.len()),
                    Ok(None) => "end".to_owned(),
                    Err(e) => format!("stream {:?} {}", e.code(), e.message()),
                };
                let more = seen.starts_with("score");
                said.lock().unwrap().push(seen);
                if !more {
                    break;
                }
            }
        }
        Ok(())
    });
    let trace = panicked_run(sim);
    let seen = seen.lock().unwrap().clone();
    (seen, trace)
}

/// Measured: `HEADERS`, `DATA` (the Score), 20 ms later `RST_STREAM
/// code=CANCEL`; the client reads the Score, then `Cancelled "h2 protocol
/// error: error reading a body from connection"`; the second Watch on the
/// same connection the same.
#[test]
fn a_panic_mid_stream_resets_it_after_the_messages_sent() {
    let (seen, trace) = watch_twice(Watch::AfterPause);
    let reset = "stream Cancelled h2 protocol error: error reading a body from connection";
    assert_eq!(seen, ["score of 0 bytes", reset, "score of 0 bytes", reset]);
    for stream in [1, 3] {
        assert_eq!(
            frames(&trace, "board", stream),
            ["HEADERS", "DATA", "RST_STREAM CANCEL"]
        );
    }
    assert_eq!(connections(&trace), [1]);
    let boom = "boom mid-stream".to_owned();
    assert_eq!(
        panics(&trace),
        [(PanicSite::Body, boom.clone()), (PanicSite::Body, boom)]
    );
    let text = trace.render();
    assert!(
        text.contains(
            "h1 handler /tt.v1.Scoreboard/Watch panicked in its response body: \"boom mid-stream\"; \
             stream reset (RST_STREAM CANCEL), as tonic's server does"
        ),
        "{text}"
    );
}

/// Measured: `HEADERS` then `RST_STREAM code=CANCEL` (the Score never left
/// tonic's encoder); the client gets the response, then `Cancelled "h2
/// protocol error: error reading a body from connection"` reading it. The
/// response headers h2 still held when the body panicked go out before the
/// reset, in production as here.
#[test]
fn a_panic_in_the_first_poll_of_the_body_sends_the_headers_then_the_reset() {
    let (seen, trace) = watch_twice(Watch::AtOnce);
    let reset = "stream Cancelled h2 protocol error: error reading a body from connection";
    assert_eq!(seen, [reset, reset]);
    for stream in [1, 3] {
        assert_eq!(
            frames(&trace, "board", stream),
            ["HEADERS", "RST_STREAM CANCEL"]
        );
    }
    assert_eq!(
        panics(&trace).iter().map(|p| p.0).collect::<Vec<_>>(),
        [PanicSite::Body, PanicSite::Body]
    );
}

/// Measured: `HEADERS` then `RST_STREAM code=CANCEL`, the 40 KiB DATA
/// discarded by h2's reset; the client gets the response, then `Cancelled
/// "…error reading a body from connection"`. Here the sim differs, and the
/// trace says so: its reset discards the headers with the DATA, and the
/// client's call fails before any response.
#[test]
fn a_panic_after_a_big_first_message_loses_the_headers_as_the_trace_says() {
    let (seen, trace) = watch_twice(Watch::AfterBigMessage);
    let reset = "call Cancelled h2 protocol error: http2 error";
    assert_eq!(seen, [reset, reset]);
    for stream in [1, 3] {
        assert_eq!(frames(&trace, "board", stream), ["RST_STREAM CANCEL"]);
    }
    assert_eq!(
        panics(&trace).iter().map(|p| p.0).collect::<Vec<_>>(),
        [PanicSite::BodyHeadersUnsent, PanicSite::BodyHeadersUnsent]
    );
    let text = trace.render();
    assert!(
        text.contains(
            "panicked in its response body: \"boom mid-stream\"; stream reset (RST_STREAM CANCEL) \
             without the response headers h2 still held; tonic's server sends them first"
        ),
        "{text}"
    );
}
