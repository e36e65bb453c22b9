//! Stale work (`server::effect`, `Trace::stale_work`,
//! `assert_no_stale_work`): a store that reserves on every Save, behind a
//! partition that holds a Save until long after its caller gave up — the
//! planted bug — and the same store where the caller's end comes after the
//! reservation, or the cancellation reaches the handler first.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::StaleKind;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::store_server::{Store, StoreServer};
use grpc_chaos_scenarios::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
use grpc_chaos_tests::ms;
use tonic::{Request, Response, Status};

/// A store that reserves stock at the start of each Save (the effect),
/// then works `work` and answers.
struct Reserving {
    work: Duration,
}

#[tonic::async_trait]
impl Store for Reserving {
    async fn save(&self, _: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
        grpc_chaos::server::effect("reserve");
        tokio::time::sleep(self.work).await;
        // The same mark through a log line of one's own.
        tracing::info!(effect = "confirm", order = 7, "confirmed");
        Ok(Response::new(SaveReply { total: 1 }))
    }

    async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
        Ok(Response::new(LoadReply { total: 0 }))
    }
}

/// A player that makes one Save at 0 ms (the connection comes up), then
/// one at 200 ms with a `deadline`, against the reserving store, and stays
/// 4 s more.
fn run(work: Duration, deadline: Duration, faults: Vec<Fault>) -> Trace {
    let mut sim = Sim::builder()
        .seed(3)
        .duration(Duration::from_secs(10))
        .build();
    sim.server("store", move |s| {
        s.add_service(StoreServer::new(Reserving { work }))
    });
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", move |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        store.save(SaveRequest::default()).await?;
        tokio::time::sleep(ms(200)).await;
        let mut late = Request::new(SaveRequest::default());
        late.set_timeout(deadline);
        // Its outcome is in the trace; the tests read it there.
        let _ = tokio::time::timeout(deadline, store.save(late)).await;
        // The run lasts as long as the player: past any repair.
        tokio::time::sleep(Duration::from_secs(4)).await;
        Ok(())
    });
    sim.run().expect("run")
}

#[test]
fn a_save_held_by_a_partition_reserves_long_after_its_caller_gave_up() {
    // The user's story (#26): the partition holds the Save, the caller
    // gives up at 708 ms (its Save left at 208 ms with 500 ms), and at the repair the store
    // reserves anyway, then drops the run when the held RST_STREAM lands.
    let partition = vec![
        Fault::partition("player", "store").at(ms(100)),
        Fault::repair("player", "store").at(ms(3_000)),
    ];
    let trace = run(ms(5), ms(500), partition);
    let stale = trace.stale_work();
    let kinds: Vec<(String, StaleKind)> = stale
        .iter()
        .map(|s| (s.run.id.to_string(), s.kind.clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("h2".to_owned(), StaleKind::Started),
            (
                "h2".to_owned(),
                StaleKind::Effect {
                    name: "reserve".into()
                }
            ),
        ],
        "{stale:?}"
    );
    assert!(stale.iter().all(|s| s.abandoned_at == ms(708)), "{stale:?}");
    assert!(stale[0].late_by() > ms(2_000), "{stale:?}");
    let v = trace.assert_no_stale_work().expect_err("stale");
    assert!(
        v.detail()
            .starts_with("h2 /tt.v1.Store/Save on store (from player) started at 3"),
        "{v}"
    );
    assert!(
        v.detail().ends_with("after its caller gave up at 708ms"),
        "{v}"
    );
    // The trace shows the effect, and which run made it.
    let text = trace.render();
    assert!(text.contains("effect reserve by h2: side effect"), "{text}");
}

#[test]
fn a_reservation_before_the_deadline_is_not_stale() {
    let trace = run(ms(5), ms(500), vec![]);
    trace.assert_no_stale_work().expect("no stale work");
    let effects: Vec<(String, Option<String>)> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Effect(f) => Some((f.name.clone(), f.run.map(|r| r.to_string()))),
            _ => None,
        })
        .collect();
    let by = |name: &str, run: &str| (name.to_owned(), Some(run.to_owned()));
    assert_eq!(
        effects,
        [
            by("reserve", "h1"),
            by("confirm", "h1"),
            by("reserve", "h2"),
            by("confirm", "h2")
        ]
    );
    let text = trace.render();
    assert!(
        text.contains("effect confirm by h1: confirmed order=7"),
        "{text}"
    );
}

#[test]
fn a_cancellation_that_reaches_the_handler_first_stops_the_late_effect() {
    // 300 ms of work against a 100 ms deadline: the client's timeout drops
    // the call, tonic resets the stream, the handler is dropped before its
    // "confirm": the reserve came before the deadline, so nothing is stale.
    let trace = run(ms(300), ms(100), vec![]);
    trace.assert_no_stale_work().expect("no stale work");
    let confirms = trace
        .events()
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Effect(f) if f.name == "confirm"))
        .count();
    assert_eq!(confirms, 1, "only the first Save confirmed");
}
