use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use grpc_chaos::deadline::{self, Deadline};
use tonic::{Request, Response, Status, Streaming};

use super::pb::scoreboard_server::ScoreboardServer;
use super::pb::store_client::StoreClient;
use super::pb::{Rally, SaveRequest, Score, WatchRequest};

/// How the gateway calls the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineMode {
    /// Passes the caller's remaining budget on (what grpc-go does when the
    /// handler's `ctx` is reused; seed 000 §4).
    Propagate,
    /// Calls the store from a spawned task with a fresh request and no
    /// deadline: the Rust shape of Go's `context.Background()` trap. The
    /// spawned call survives the handler being cancelled.
    Fresh,
    /// Passes the caller's remaining budget on, but never more than this
    /// (*simulated* time): the gateway's own upstream timeout, as a proxy's
    /// route timeout is (seed 003 #8). Shorter than the caller's deadline,
    /// it ends the call early, at the gateway, with the store call's status.
    Capped(Duration),
}

/// The gateway: `Hit` spends `think` (*simulated* time) and then saves the
/// rally's shots in the store. `Watch` streams its scores back to back, or
/// one per [`Gateway::with_watch_interval`].
#[derive(Debug, Clone)]
pub struct Gateway {
    store: StoreClient<grpc_chaos::Channel>,
    mode: DeadlineMode,
    think: Duration,
    watch_interval: Duration,
}

impl Gateway {
    /// A gateway using `store` in `mode`, spending `think` before each save.
    pub fn new(store: grpc_chaos::Channel, mode: DeadlineMode, think: Duration) -> Self {
        Self {
            store: StoreClient::new(store),
            mode,
            think,
            watch_interval: Duration::ZERO,
        }
    }

    /// `Watch` waits `interval` (*simulated* time) before each score after
    /// the first, so a stream stays open with gaps between its messages
    /// (a slow feed; the dead-peer-stream story needs a gap longer than the
    /// client's keepalive interval). Default: zero, every score at once.
    pub fn with_watch_interval(mut self, interval: Duration) -> Self {
        self.watch_interval = interval;
        self
    }

    /// The generated tonic server for this gateway.
    pub fn into_server(self) -> ScoreboardServer<Self> {
        ScoreboardServer::new(self)
    }

    async fn save(&self, incoming: &Request<Rally>) -> Result<u32, Status> {
        let rally = incoming.get_ref();
        let save = SaveRequest {
            match_id: rally.match_id.clone(),
            points: rally.shots,
        };
        match self.mode {
            DeadlineMode::Propagate => {
                let mut out = Request::new(save);
                deadline::propagate(incoming, &mut out);
                Ok(self.store.clone().save(out).await?.into_inner().total)
            }
            DeadlineMode::Capped(cap) => {
                let mut out = Request::new(save);
                let own = Deadline::after(cap);
                let callers = Deadline::from_request(incoming);
                callers.map_or(own, |d| d.min(own)).apply(&mut out);
                Ok(self.store.clone().save(out).await?.into_inner().total)
            }
            DeadlineMode::Fresh => {
                let mut store = self.store.clone();
                let task = tokio::spawn(async move { store.save(Request::new(save)).await });
                let reply = task
                    .await
                    .map_err(|e| Status::internal(format!("save task failed: {e}")))??;
                Ok(reply.into_inner().total)
            }
        }
    }
}

type ScoreStream = Pin<Box<dyn Stream<Item = Result<Score, Status>> + Send>>;

#[tonic::async_trait]
impl super::pb::scoreboard_server::Scoreboard for Gateway {
    async fn hit(&self, request: Request<Rally>) -> Result<Response<Score>, Status> {
        tokio::time::sleep(self.think).await;
        let total = self.save(&request).await?;
        Ok(Response::new(Score {
            match_id: request.into_inner().match_id,
            home: total,
            ..Score::default()
        }))
    }

    type WatchStream = ScoreStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<ScoreStream>, Status> {
        let req = request.into_inner();
        let padding = vec![0u8; req.padding as usize];
        let interval = self.watch_interval;
        let stream = futures_util::stream::iter(0..req.count).then(move |i| {
            let score = Score {
                match_id: req.match_id.clone(),
                home: i + 1,
                away: 0,
                padding: padding.clone(),
            };
            async move {
                if i > 0 && !interval.is_zero() {
                    tokio::time::sleep(interval).await;
                }
                Ok(score)
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }

    async fn upload(&self, request: Request<Streaming<Rally>>) -> Result<Response<Score>, Status> {
        let mut rallies = request.into_inner();
        let mut score = Score::default();
        while let Some(rally) = rallies.message().await? {
            score.match_id = rally.match_id;
            score.home += rally.shots;
        }
        Ok(Response::new(score))
    }

    type RallyStream = ScoreStream;

    async fn rally(
        &self,
        request: Request<Streaming<Rally>>,
    ) -> Result<Response<ScoreStream>, Status> {
        let stream = request.into_inner().scan(0u32, |total, rally| {
            let item = rally.map(|r| {
                *total += r.shots;
                Score {
                    match_id: r.match_id,
                    home: *total,
                    ..Score::default()
                }
            });
            futures_util::future::ready(Some(item))
        });
        Ok(Response::new(Box::pin(stream)))
    }
}
