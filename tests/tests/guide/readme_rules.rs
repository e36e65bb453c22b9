//! The guide's "Your own frame rules and connection policies" example
//! (`harness/src/guide/rules_and_policies.md`), as a user would paste it.
//! `the_guide_shows_this_file` keeps the page and this file the same.

use std::time::Duration;

use grpc_chaos::fault::{FrameView, Verdict};
use grpc_chaos::policy::{ConnectionPolicy, Effects};
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};
use tonic::Code;

/// A rule of your own: flip the last octet of the first request message
/// the player sends (the protobuf's last byte: `points`' varint).
#[test]
fn a_flipped_octet_in_a_request_fails_the_call() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let mut done = false;
    let flip_last_octet = move |frame: &FrameView<'_>| {
        if done || frame.payload().is_empty() {
            return Verdict::Pass;
        }
        done = true;
        let mut bytes = frame.bytes().to_vec();
        bytes[frame.bytes().len() - 1] ^= 0xff;
        Verdict::Replace(bytes.into())
    };
    let data = Fault::frames().from("player").kind(FrameType::Data);
    sim.fault(data.rule(flip_last_octet));
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel("store"));
        let status = store.save(one_point()).await.unwrap_err();
        // The server's decoder fails; tonic answers INTERNAL (the spec's
        // code for a request proto that does not parse).
        assert_eq!(
            (status.code(), status.message()),
            (Code::Internal, BAD_VARINT)
        );
        Ok(())
    });
    let trace = sim.run()?;
    // Both sides of the replacement: what the player sent, what arrived.
    let text = trace.render();
    assert!(text.contains("c1 s1 DATA 11 bytes [replaced: 1 octet differs, first at octet 19"));
    assert!(
        text.contains("c1 s1 DATA 11 bytes [arrived instead]"),
        "{text}"
    );
    Ok(())
}

const BAD_VARINT: &str = "failed to decode Protobuf message: SaveRequest.points: invalid varint";

fn one_point() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 1,
    }
}

/// A connection policy of your own: a proxy that closes a connection which
/// carried no DATA, either way, for `idle` (simulated time).
struct IdleTimer {
    idle: Duration,
}

impl ConnectionPolicy for IdleTimer {
    fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        if frame.frame_type() == FrameType::Data {
            fx.timer_at(frame.now() + self.idle);
        }
    }

    fn on_timer(&mut self, fx: &mut Effects) {
        fx.close(format!(
            "no DATA for {}",
            grpc_chaos::trace::fmt_duration(self.idle)
        ));
    }

    fn name(&self) -> String {
        "the proxy's idle timer".to_owned()
    }
}

#[test]
fn an_idle_timer_closes_the_connection_under_a_slow_call() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .delay(Duration::from_secs(2)),
    );
    sim.connection_policy("store", |_conn| IdleTimer {
        idle: Duration::from_millis(500),
    });
    sim.client("player", |player| async move {
        let status = StoreClient::new(player.channel("store"))
            .save(SaveRequest::default())
            .await
            .unwrap_err();
        // tonic's words for a connection that closed under a call.
        assert_eq!(
            (status.code(), status.message()),
            (Code::Unknown, "transport error")
        );
        Ok(())
    });
    let trace = sim.run()?;
    // The request's last DATA left at 1ms: the timer fired 500ms later.
    let closed = trace.events().iter().find_map(|e| match &e.kind {
        EventKind::PolicyClosed(c) => Some((e.at(), c.policy.as_str(), c.reason.said())),
        _ => None,
    });
    let at = Duration::from_millis(501);
    assert_eq!(
        closed,
        Some((at, "the proxy's idle timer", Some("no DATA for 500ms")))
    );
    assert_eq!(
        trace.calls()[0].outcome().map(|o| o.spec_code),
        Some("UNAVAILABLE")
    );
    Ok(())
}

#[test]
fn the_guide_shows_this_file() {
    let page = include_str!("../../../harness/src/guide/rules_and_policies.md");
    let example = grpc_chaos_tests::readme_example(include_str!("readme_rules.rs"));
    assert!(
        page.contains(example),
        "harness/src/guide/rules_and_policies.md's frame rule and connection policy example differs from tests/tests/guide/readme_rules.rs"
    );
}
