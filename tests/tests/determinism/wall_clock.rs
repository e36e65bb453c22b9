//! The stack under test reads the wall clock in a few places (the guide's
//! determinism page, harness/src/guide/determinism.md); a run must not depend on how
//! fast the machine runs it. These tests stop the simulation's thread for
//! longer than any such timeout, on purpose, and compare the traces.

use std::time::Duration;

use grpc_chaos::trace::RenderOptions;
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::WatchRequest;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};

/// A Watch the player cancels after three scores while the gateway keeps
/// sending one per simulated ms; then the player's thread is blocked for
/// `stall` of *wall* time (a loaded CI machine), while the gateway's DATA
/// for the cancelled stream is still in flight.
fn cancel_a_watch_then_stall(stall: Duration) -> grpc_chaos::Result<String> {
    let mut sim = Sim::builder().seed(3).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        let gateway = Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO)
            .with_watch_interval(Duration::from_millis(1));
        s.add_service(gateway.into_server())
    });
    sim.client("player", move |player| async move {
        let request = WatchRequest {
            match_id: "m1".into(),
            count: 100,
            padding: 64,
        };
        // Kept to the end: dropping the client would close the connection.
        let mut client = ScoreboardClient::new(player.channel("gateway"));
        let mut scores = client.watch(request).await?.into_inner();
        for _ in 0..3 {
            scores.message().await?;
        }
        // Dropping the stream resets it (RST_STREAM CANCEL): h2 remembers
        // a stream it reset for `reset_stream_duration`, measured on
        // `std::time::Instant`, and ignores the peer's frames for it
        // meanwhile.
        drop(scores);
        // A real sleep, deliberately: wall time passes, simulated time
        // does not.
        std::thread::sleep(stall);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(client);
        Ok(())
    });
    Ok(sim.run()?.render_with(&RenderOptions::everything()))
}

/// h2's default keeps a reset stream for 1 s of wall time (h2 0.4
/// `proto/streams/recv.rs`, `clear_expired_reset_streams`); past that, DATA
/// still arriving for it is answered with RST_STREAM(STREAM_CLOSED). The
/// harness sets `Endpoint::http2_reset_stream_duration` on every channel
/// it makes so that only the count of reset streams matters, never the
/// wall clock.
#[test]
fn a_stalled_machine_after_a_client_reset_gives_the_same_trace() -> grpc_chaos::Result {
    let unstalled = cancel_a_watch_then_stall(Duration::ZERO)?;
    let stalled = cancel_a_watch_then_stall(Duration::from_millis(1_300))?;
    // The case is the one the stall could change: the gateway wrote DATA
    // for the stream at or after the player reset it, so it arrived after.
    let at = |line: &str| {
        line.split_whitespace()
            .next()
            .and_then(|t| t.parse::<f64>().ok())
    };
    let reset = unstalled
        .lines()
        .find(|l| l.contains("player→gateway") && l.contains("s1 RST_STREAM CANCEL"))
        .and_then(at)
        .expect("the player reset its Watch");
    assert!(
        unstalled.lines().any(|l| l.contains("gateway→player")
            && l.contains("s1 DATA")
            && at(l).is_some_and(|t| t >= reset)),
        "no DATA after the reset: the test would prove nothing\n{unstalled}"
    );
    assert!(!stalled.contains("STREAM_CLOSED"), "{stalled}");
    assert_eq!(unstalled, stalled);
    Ok(())
}
