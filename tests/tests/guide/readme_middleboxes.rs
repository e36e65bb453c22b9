//! The guide's "Middleboxes" example (`harness/src/guide/middleboxes.md`),
//! as a user would paste it. `the_guide_shows_this_file` keeps the page
//! and this file the same.

use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::recorder::event::{EventKind, PolicyEnd, TimerRanOut};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::WatchRequest;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};

/// An AWS ALB in front of the gateway: a Watch whose scores come 90 s
/// apart is cut 60 s after the first, although the player's keepalive
/// PINGs (every 20 s) are all answered.
#[test]
fn an_alb_cuts_a_quiet_watch() -> grpc_chaos::Result {
    let mut sim = Sim::builder()
        .duration(Duration::from_secs(100))
        .tick(Duration::from_millis(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let gateway = Gateway::new(s.channel("store"), DeadlineMode::Propagate, Duration::ZERO);
        s.add_service(
            gateway
                .with_watch_interval(Duration::from_secs(90))
                .into_server(),
        )
    });
    // 60 s idle timeout, PINGs do not reset it (AWS's docs); override any
    // field, e.g. `alb.connection_idle = Some(IdleTimeout::new(..))`.
    sim.middlebox("gateway", Middlebox::aws_alb().for_clients(["player"]));
    sim.client("player", |player| async move {
        let channel = player.channel_with("gateway", |e| {
            e.http2_keep_alive_interval(Duration::from_secs(20))
        });
        let watch = WatchRequest {
            match_id: "final".into(),
            count: 2,
            padding: 0,
        };
        let mut scores = ScoreboardClient::new(channel)
            .watch(watch)
            .await?
            .into_inner();
        assert!(scores.message().await?.is_some());
        // tonic: UNKNOWN "h2 protocol error: …"; the spec says UNAVAILABLE.
        assert_eq!(
            scores.message().await.unwrap_err().code(),
            tonic::Code::Unknown
        );
        Ok(())
    });
    let trace = sim.run()?;
    // Why the box closed it, typed: its idle timer, 60 s after the last
    // DATA or HEADERS (20 ms); the trace's row says "idle timeout
    // 60000ms: no DATA or HEADERS since 20ms".
    let closed = trace.events().iter().find_map(|e| match &e.kind {
        EventKind::PolicyClosed(c) => Some(c.reason.clone()),
        _ => None,
    });
    let Some(PolicyEnd::Timer(TimerRanOut::Idle { after, since, .. })) = closed else {
        panic!("not the box's idle timer: {closed:?}");
    };
    assert_eq!(
        (after, since),
        (Duration::from_secs(60), Duration::from_millis(20))
    );
    Ok(())
}

#[test]
fn the_guide_shows_this_file() {
    let page = include_str!("../../../harness/src/guide/middleboxes.md");
    let example = grpc_chaos_tests::readme_example(include_str!("readme_middleboxes.rs"));
    assert!(
        page.contains(example),
        "harness/src/guide/middleboxes.md's Middleboxes example differs from tests/tests/guide/readme_middleboxes.rs"
    );
}
