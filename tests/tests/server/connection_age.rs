//! `max_connection_age` (gRFC A9) on a sim server configured as in
//! production: what tonic 0.14.9 and hyper/h2 actually send, and what the
//! client does about it.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::FrameDetail;
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::ErrorCode;
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::{codes, ms};

/// A store with `configure`d connection age; the player saves every
/// `every`, `n` times, each save taking `work` at the store.
fn aged(
    seed: u64,
    configure: fn(grpc_chaos::server::Builder) -> grpc_chaos::server::Builder,
    work: Duration,
    every: Duration,
    n: u32,
) -> Sim {
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", move |s| {
        s.configure(configure)
            .add_service(Store::with_work(work).into_server())
    });
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        for i in 0..n {
            let _ = store
                .save(SaveRequest {
                    match_id: "m1".into(),
                    points: i,
                })
                .await;
            tokio::time::sleep(every).await;
        }
        Ok(())
    });
    sim
}

/// `(time, connection, last-stream-id, code, debug data)` of every GOAWAY
/// the store sent.
fn goaways(trace: &grpc_chaos::Trace) -> Vec<(Duration, u32, u32, ErrorCode, Vec<u8>)> {
    trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                conn,
                detail: FrameDetail::GoAway(g),
                ..
            } => Some((e.at(), *conn, g.last_stream_id, g.code, g.debug.to_vec())),
            _ => None,
        })
        .collect()
}

#[test]
fn at_its_age_a_connection_is_drained_and_the_client_redials() -> grpc_chaos::Result {
    let trace = aged(1, |b| b.max_connection_age(ms(1000)), ms(0), ms(300), 6).run()?;
    assert_eq!(codes(&trace), ["OK"; 6]);
    // tonic sleeps exactly the age from the accept, no jitter (A9 asks
    // ±10%), then hyper's graceful shutdown: GOAWAY(NO_ERROR, 2^31-1) with
    // no debug data (grpc-go sends "max_age"), a PING, and on its ACK
    // GOAWAY with the last stream taken.
    let g = goaways(&trace);
    assert_eq!(g.len(), 2, "{g:?}");
    assert_eq!(
        g[0],
        (ms(1001), 1, (1 << 31) - 1, ErrorCode::NoError, Vec::new())
    );
    assert_eq!(g[1].3, ErrorCode::NoError, "{g:?}");
    assert!(g[1].2 < (1 << 31) - 1, "the last stream taken: {g:?}");
    let conns: std::collections::BTreeSet<u32> = trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Frame { conn, .. } => Some(*conn),
            _ => None,
        })
        .collect();
    assert_eq!(conns.len(), 2, "one redial: {conns:?}");
    insta::assert_snapshot!(trace.render_with(&RenderOptions::default()));
    Ok(())
}

#[test]
fn with_a_grace_tonic_sends_no_goaway_and_cuts_the_connection_at_age_plus_grace(
) -> grpc_chaos::Result {
    // tonic 0.14.9 `connection_timeout_future`: with a grace set it sleeps
    // age + grace and then drops the connection; the graceful shutdown at
    // the age happens only when no grace is set.
    let trace = aged(
        2,
        |b| {
            b.max_connection_age(ms(1000))
                .max_connection_age_grace(ms(500))
        },
        ms(300),
        ms(0),
        6,
    )
    .run()?;
    assert!(goaways(&trace).is_empty(), "{:?}", goaways(&trace));
    let calls = trace.calls();
    let cut: Vec<_> = calls
        .iter()
        .filter(|c| c.outcome().is_some_and(|o| !o.is_ok()))
        .collect();
    assert_eq!(cut.len(), 1, "the call in flight at 1501ms is cut");
    assert_eq!(cut[0].ended_at, Some(ms(1502)));
    insta::assert_snapshot!(trace.render());
    Ok(())
}
