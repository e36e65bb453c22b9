//! The recording's scenarios in the sim: a tonic client on `player`, the
//! box on `store`, and a backend that behaves as the request's
//! `calib-backend` metadata says, as `calibration/nginx/h2peer.py`'s
//! backend does (`BEHAVIOURS` there). The client's schedule is
//! `calibration/nginx/record.py`'s, scenario by scenario.

use std::pin::Pin;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use grpc_chaos::policy::Middlebox;
use grpc_chaos::Channel;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::scoreboard_server::{Scoreboard, ScoreboardServer};
use grpc_chaos_scenarios::services::pb::{Rally, Score, WatchRequest};
use grpc_chaos_tests::ms;
use tonic::codegen::tokio_stream::Stream;
use tonic::metadata::MetadataValue;
use tonic::{Request, Response, Status, Streaming};

type Scores = Pin<Box<dyn Stream<Item = Result<Score, Status>> + Send>>;

/// The backend: each method does what `calib-backend` asks.
#[derive(Debug, Clone, Copy)]
struct Backend;

fn behaviour<T>(r: &Request<T>) -> String {
    r.metadata()
        .get("calib-backend")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("silent")
        .to_owned()
}

/// A response stream: `first` (a message after a wait) if any, then
/// `then`: `None` waits for good, `Some(at)` ends the stream OK after `at`.
fn scores(first: Option<Duration>, then: Option<Duration>) -> Scores {
    let first = stream::iter(first).then(|wait| async move {
        tokio::time::sleep(wait).await;
        Ok(Score::default())
    });
    let end = stream::once(async move {
        match then {
            Some(at) => tokio::time::sleep(at).await,
            None => std::future::pending::<()>().await,
        }
    })
    .filter_map(|()| async { None });
    Box::pin(first.chain(end))
}

#[tonic::async_trait]
impl Scoreboard for Backend {
    async fn hit(&self, r: Request<Rally>) -> Result<Response<Score>, Status> {
        if behaviour(&r) != "ok" {
            std::future::pending::<()>().await;
        }
        Ok(Response::new(Score::default()))
    }

    type WatchStream = Scores;

    async fn watch(&self, r: Request<WatchRequest>) -> Result<Response<Scores>, Status> {
        Ok(Response::new(match behaviour(&r).as_str() {
            "headers-then-silent" => scores(Some(ms(1000)), None),
            // The PINGs come from the server's keepalive (see `run`).
            "pings" => scores(None, Some(ms(5000))),
            _ => scores(None, None),
        }))
    }

    async fn upload(&self, _: Request<Streaming<Rally>>) -> Result<Response<Score>, Status> {
        std::future::pending::<()>().await;
        Err(Status::internal("never"))
    }

    type RallyStream = Scores;

    async fn rally(&self, _: Request<Streaming<Rally>>) -> Result<Response<Scores>, Status> {
        Ok(Response::new(scores(None, None)))
    }
}

fn with_behaviour<T>(message: T, b: &'static str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert("calib-backend", MetadataValue::from_static(b));
    r
}

/// A client stream: a Rally every `every`, `count` times, then its end
/// (`end`) or a wait for good.
fn rallies(every: Duration, count: usize, end: bool) -> impl Stream<Item = Rally> + Send {
    let sent = stream::iter(0..count).then(move |_| async move {
        tokio::time::sleep(every).await;
        Rally::default()
    });
    let tail = stream::once(async move {
        if !end {
            std::future::pending::<()>().await;
        }
    })
    .filter_map(|()| async { None });
    sent.chain(tail)
}

/// The client side of `scenario`, bounded by the recording's window.
async fn drive(scenario: &str, channel: Channel) {
    let mut c = ScoreboardClient::new(channel.clone());
    let half = ms(500);
    let call = async {
        match scenario {
            "settings_and_unary" => {
                tokio::time::sleep(ms(300)).await;
                let _ = c.hit(with_behaviour(Rally::default(), "ok")).await;
            }
            // tonic dials on the first call (its channel is lazy, and
            // tower's `ready` does not reach the connector), so the sim
            // has no connection without a request: a known mismatch.
            "never_used" => std::future::pending::<()>().await,
            // With PINGs every second in idle_with_pings (see `run`).
            "idle_after_call" | "idle_with_pings" => {
                let _ = c.hit(with_behaviour(Rally::default(), "ok")).await;
                std::future::pending::<()>().await;
            }
            "unary_silent_backend" => {
                let _ = c.hit(with_behaviour(Rally::default(), "silent")).await;
            }
            "upload_messages_then_end" => {
                let _ = c
                    .upload(with_behaviour(rallies(half, 6, true), "silent"))
                    .await;
            }
            "upload_messages_no_end" => {
                let _ = c
                    .upload(with_behaviour(rallies(half, 6, false), "silent"))
                    .await;
            }
            "silent_client_stream" => {
                let _ = c
                    .upload(with_behaviour(rallies(half, 0, false), "silent"))
                    .await;
            }
            "headers_then_silent" | "backend_pings" => {
                let b = if scenario == "backend_pings" {
                    "pings"
                } else {
                    "headers-then-silent"
                };
                if let Ok(r) = c.watch(with_behaviour(WatchRequest::default(), b)).await {
                    let mut s = r.into_inner();
                    while let Ok(Some(_)) = s.message().await {}
                }
            }
            "client_data_after_headers" => {
                let out = rallies(half, 8, false);
                if let Ok(r) = c.rally(with_behaviour(out, "headers-only")).await {
                    let mut s = r.into_inner();
                    while let Ok(Some(_)) = s.message().await {}
                }
            }
            other => panic!("no sim scenario {other}"),
        }
        // As record.py's client: it reads on for 0.5 s after the call's end.
        tokio::time::sleep(half).await;
    };
    let _ = tokio::time::timeout(window(scenario), call).await;
}

/// How long `record.py` reads in `scenario`, from its request.
pub fn window(scenario: &str) -> Duration {
    ms(match scenario {
        "settings_and_unary" => 1_200,
        "never_used" | "idle_after_call" => 11_000,
        "unary_silent_backend" | "silent_client_stream" => 6_000,
        "upload_messages_then_end" | "upload_messages_no_end" | "idle_with_pings" => 9_000,
        _ => 7_000,
    })
}

/// Runs `scenario` with the box `mb` in front of the backend.
pub fn run(scenario: &'static str, mb: Middlebox) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(27).duration(ms(14_000)).build();
    let pings = scenario == "backend_pings";
    sim.server("store", move |s| {
        let s = if pings {
            // The backend's PINGs, as h2peer's every 0.6 s.
            s.configure(|b| b.http2_keepalive_interval(Some(ms(600))))
        } else {
            s
        };
        s.add_service(ScoreboardServer::new(Backend))
    });
    sim.middlebox("store", mb);
    sim.client("player", move |player| async move {
        let channel = if scenario == "idle_with_pings" {
            // The client's PINGs every second, as record.py's.
            player.channel_with("store", |e| {
                e.http2_keep_alive_interval(ms(1000))
                    .keep_alive_while_idle(true)
                    .keep_alive_timeout(ms(20_000))
            })
        } else {
            player.channel("store")
        };
        drive(scenario, channel).await;
        Ok(())
    });
    sim.run()
}
