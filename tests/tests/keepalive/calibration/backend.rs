//! The sim's side of a recorded scenario: a tonic client on `player`, the
//! box on `store`, and a backend that behaves as the request's
//! `calib-backend` metadata says, as `calibration/common/h2peer.py`'s
//! backend does (`BEHAVIOURS` there).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use grpc_chaos::policy::Middlebox;
use grpc_chaos::Channel;
use grpc_chaos::Fault;
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
pub struct Backend;

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
            // The reset at 1 s is injected (see `run`'s `faults`).
            "headers-then-reset" => scores(Some(ms(500)), None),
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

pub fn with_behaviour<T>(message: T, b: &'static str) -> Request<T> {
    let mut r = Request::new(message);
    r.metadata_mut()
        .insert("calib-backend", MetadataValue::from_static(b));
    r
}

/// A client stream: a Rally every `every`, `count` times, then its end
/// (`end`) or a wait for good.
pub fn rallies(every: Duration, count: usize, end: bool) -> impl Stream<Item = Rally> + Send {
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

/// The client side of a scenario every recording has
/// (`calibration/common/recording.py`'s `shared_scenarios`); `false` when
/// `scenario` is none of them.
pub async fn shared(scenario: &str, c: &mut ScoreboardClient<Channel>) -> bool {
    match scenario {
        "settings_and_unary" => {
            tokio::time::sleep(ms(300)).await;
            let _ = c.hit(with_behaviour(Rally::default(), "ok")).await;
        }
        // tonic dials on the first call (its channel is lazy, and tower's
        // `ready` does not reach the connector), so the sim has no
        // connection without a request: a known mismatch.
        "never_used" => std::future::pending::<()>().await,
        "idle_after_call" => {
            let _ = c.hit(with_behaviour(Rally::default(), "ok")).await;
            std::future::pending::<()>().await;
        }
        _ => return false,
    }
    true
}

/// Runs `call`, then reads on for 0.5 s as record.py's client does after
/// a call's end, all within `window`.
pub async fn bounded(window: Duration, call: impl Future<Output = ()>) {
    let call = async {
        call.await;
        tokio::time::sleep(ms(500)).await;
    };
    let _ = tokio::time::timeout(window, call).await;
}

/// Whose keepalive PINGs the world sends.
#[derive(Debug, Clone, Copy)]
pub struct Pings {
    /// The backend's, every 0.6 s (h2peer's `pings` behaviour).
    pub backend: bool,
    /// The client's, every second.
    pub client: bool,
}

/// Runs `drive` on `player` with the box `mb` in front of the backend on
/// `store`, and `faults`.
pub fn run<F>(
    mb: Middlebox,
    pings: Pings,
    faults: Vec<Fault>,
    drive: impl FnOnce(Channel) -> F + Send + 'static,
) -> grpc_chaos::Result<Trace>
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut sim = Sim::builder().seed(27).duration(ms(14_000)).build();
    sim.server("store", move |s| {
        let s = if pings.backend {
            s.configure(|b| b.http2_keepalive_interval(Some(ms(600))))
        } else {
            s
        };
        s.add_service(ScoreboardServer::new(Backend))
    });
    sim.middlebox("store", mb);
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", move |player| async move {
        let channel = if pings.client {
            player.channel_with("store", |e| {
                e.http2_keep_alive_interval(ms(1000))
                    .keep_alive_while_idle(true)
                    .keep_alive_timeout(ms(20_000))
            })
        } else {
            player.channel("store")
        };
        drive(channel).await;
        Ok(())
    });
    sim.run()
}
