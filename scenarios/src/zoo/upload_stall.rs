//! A client-streaming call deadlocked on flow control: a recorder uploads
//! rallies to an archive with no deadline; the archive reads them and
//! saves every tenth to the store, awaiting each Save before it reads on.
//! When one Save hangs, the archive stops reading mid-upload, hyper stops
//! granting credit once the stream's window is full (hyper's server
//! advertises 1 MiB, `proto/h2/server.rs` `DEFAULT_STREAM_WINDOW`; read),
//! and the recorder's sends wait on that window forever: no error, no
//! timeout, nothing moving (RFC 9113 §5.2, §6.9; grpc-go #3586: a Send
//! blocked on flow control stays blocked "until the RPC deadline (if any)
//! is reached, or the connection dies"; grpc-node #666, a client-streaming
//! call to a server that stopped answering hangs its caller;
//! micronaut-projects/micronaut-core #13255, a client's write stalled on
//! flow control by a server that stopped reading; read, not measured). A run without faults
//! never stops reading, so a scripted happy-path test passes.
//!
//! The fix gives each upload a deadline: the stuck upload ends
//! DEADLINE_EXCEEDED, its RST_STREAM drops the archive's handler and the
//! Save it waits on. The invariant is the user's own: every upload ends,
//! and when one does not, the message says what it waits on (the trace's
//! [`Trace::stalls`]). The space is generic: the store's handlers hung,
//! slowed or failing, the store crashed, while the uploads run; never the
//! archive, never the instant.

use std::time::Duration;

use grpc_chaos::explore::Space;
use grpc_chaos::trace::{CallEnd, StallEnd};
use grpc_chaos::{Sim, Trace};
use tonic::{Code, Request, Response, Status, Streaming};

use super::Bug;
use crate::services::pb::scoreboard_client::ScoreboardClient;
use crate::services::pb::scoreboard_server::{Scoreboard, ScoreboardServer};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::{Rally, SaveRequest, Score, WatchRequest};
use crate::services::Store;

/// The zoo entry.
pub const BUG: Bug = Bug {
    name: "upload-stuck-on-window",
    source: "grpc-go #3586; grpc-node #666; micronaut-projects/micronaut-core #13255; RFC 9113 §6.9",
    story: "An upload with no deadline: the server stops reading it while a call of its own hangs, and the client's sends wait on the stream window forever.",
    scenario,
    space,
    invariant: (UPLOADS_END, uploads_end),
};

/// The invariant's name.
pub const UPLOADS_END: &str = "every upload ends";

const UPLOADS: u32 = 3;
/// Rallies per upload, each carrying [`PADDING`] bytes: 1.25 MiB, more
/// than the archive's stream window.
const RALLIES: u32 = 80;
const PADDING: usize = 16 * 1024;
/// The archive saves every this many rallies.
const BATCH: u32 = 10;
/// How long a Save takes at the store (*simulated*).
const WORK: Duration = Duration::from_millis(2);
/// The recorder's pause between uploads.
const PAUSE: Duration = Duration::from_millis(150);
/// The fixed recorder's deadline per upload.
const DEADLINE: Duration = Duration::from_secs(1);

/// The archive's `tt.v1.Scoreboard`: only `Upload`, which saves every
/// [`BATCH`] rallies to the store before it reads on.
#[derive(Clone)]
struct Archive {
    store: StoreClient<grpc_chaos::Channel>,
}

type Scores = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Score, Status>> + Send>>;

#[tonic::async_trait]
impl Scoreboard for Archive {
    async fn hit(&self, _: Request<Rally>) -> Result<Response<Score>, Status> {
        Err(Status::unimplemented("the archive only takes uploads"))
    }

    type WatchStream = Scores;

    async fn watch(&self, _: Request<WatchRequest>) -> Result<Response<Scores>, Status> {
        Err(Status::unimplemented("the archive only takes uploads"))
    }

    async fn upload(&self, request: Request<Streaming<Rally>>) -> Result<Response<Score>, Status> {
        let mut store = self.store.clone();
        let mut rallies = request.into_inner();
        let mut score = Score::default();
        let mut read = 0;
        while let Some(rally) = rallies.message().await? {
            read += 1;
            score.home += rally.shots;
            if read % BATCH == 0 {
                // Reading waits on the Save: while it hangs, nothing reads
                // the stream and no credit goes back to the uploader.
                let save = SaveRequest {
                    match_id: rally.match_id,
                    points: score.home,
                };
                store.save(save).await?;
            }
        }
        Ok(Response::new(score))
    }

    type RallyStream = Scores;

    async fn rally(&self, _: Request<Streaming<Rally>>) -> Result<Response<Scores>, Status> {
        Err(Status::unimplemented("the archive only takes uploads"))
    }
}

/// The scenario: `recorder` uploads to `archive`, which saves to `store`;
/// the recorder without a deadline, or with one (`fixed`).
pub fn scenario(seed: u64, fixed: bool) -> Sim {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(Duration::from_secs(3))
        .build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(WORK).into_server())
    });
    sim.server("archive", |s| {
        let store = StoreClient::new(s.channel("store"));
        s.add_service(ScoreboardServer::new(Archive { store }))
    });
    sim.client("recorder", move |c| async move {
        let mut archive = ScoreboardClient::new(c.channel("archive"));
        for upload in 0..UPLOADS {
            let rallies = (0..RALLIES).map(move |n| Rally {
                match_id: format!("match-{upload}"),
                player: "p".repeat(PADDING),
                shots: n % 3 + 1,
            });
            let mut req = Request::new(futures_util::stream::iter(rallies));
            if fixed {
                req.set_timeout(DEADLINE);
            }
            // A failed upload is the recorder's to retry another day; one
            // that never ends is the bug.
            let _ = archive.upload(req).await;
            tokio::time::sleep(PAUSE).await;
        }
        Ok(())
    });
    sim
}

/// What may break: the store's handlers hung, slowed or failing, the
/// store crashed, while the uploads run.
pub fn space() -> Space {
    Space::new()
        .handler_hang("store")
        .handler_delay("store", Duration::from_millis(300))
        .handler_fail("store", Code::Unavailable)
        .crash("store")
        .window(Duration::ZERO, Duration::from_millis(600))
}

/// Every upload the recorder made ended by the end of the run.
///
/// # Errors
/// The first that did not, and what its sends wait on when the trace
/// shows a flow-control stall still open at the end.
pub fn uploads_end(trace: &Trace) -> Result<(), String> {
    let Some(call) = trace
        .calls_from("recorder")
        .find(|c| matches!(c.end, CallEnd::Open))
    else {
        return Ok(());
    };
    let deadline = match call.timeout {
        None => "no deadline".to_owned(),
        Some(t) => format!("deadline {}", grpc_chaos::trace::fmt_duration(t)),
    };
    let mut why = format!(
        "{} {} to {} never ended ({deadline})",
        call.id, call.path, call.target
    );
    let stall = trace.stalls(Duration::ZERO).into_iter().find(|s| {
        s.sender == call.host
            && s.receiver == call.target
            && s.end == StallEnd::Open
            && s.since >= call.started
    });
    if let Some(stall) = stall {
        why.push_str(&format!("; its sends: {stall}"));
    }
    Err(why)
}
