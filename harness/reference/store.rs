use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::pb::store_server::StoreServer;
use super::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};

/// The store. Each `Save` takes `work` of *simulated* time (a disk write).
#[derive(Debug, Clone, Default)]
pub struct Store {
    work: Duration,
    totals: Arc<Mutex<HashMap<String, u32>>>,
    /// Fail every n-th Save ([`Store::failing_every`]).
    fail_every: Option<u32>,
    saves: Arc<AtomicU32>,
}

impl Store {
    /// A store whose `Save` takes `work` (*simulated* time).
    pub fn with_work(work: Duration) -> Self {
        Self {
            work,
            ..Self::default()
        }
    }

    /// A gray-failing store: every `n`-th Save (the 2nd, 4th … for 2)
    /// does its work and then fails with UNAVAILABLE `"gray failure"`, as
    /// a replica with a bad disk or a broken dependency does; the others
    /// succeed. `n` of 0 or 1 fails every Save.
    pub fn failing_every(mut self, n: u32) -> Self {
        self.fail_every = Some(n.max(1));
        self
    }

    /// The generated tonic server for this store.
    pub fn into_server(self) -> StoreServer<Self> {
        StoreServer::new(self)
    }

    fn add(&self, match_id: &str, points: u32) -> u32 {
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        let total = totals.entry(match_id.to_owned()).or_default();
        *total += points;
        *total
    }
}

#[tonic::async_trait]
impl super::pb::store_server::Store for Store {
    async fn save(&self, request: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        let req = request.into_inner();
        tokio::time::sleep(self.work).await;
        let nth = self.saves.fetch_add(1, Ordering::Relaxed) + 1;
        if self.fail_every.is_some_and(|n| nth.is_multiple_of(n)) {
            return Err(Status::unavailable("gray failure"));
        }
        let total = self.add(&req.match_id, req.points);
        tracing::info!(match_id = %req.match_id, total, "saved");
        Ok(Response::new(SaveReply { total }))
    }

    async fn load(&self, request: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        let req = request.into_inner();
        let total = self.add(&req.match_id, 0);
        Ok(Response::new(LoadReply { total }))
    }
}
