//! Frame rules a test writes itself (`FrameFault::rule`): their order among
//! the frame faults, their own checks and words.

use std::time::Duration;

use grpc_chaos::fault::{FrameRule, FrameView, RunCheck, Verdict};
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Error, Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

fn world() -> Sim {
    let mut sim = Sim::builder()
        .seed(1)
        .duration(Duration::from_secs(5))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |player| async move {
        let _ = StoreClient::new(player.channel("store"))
            .save(SaveRequest::default())
            .await;
        Ok(())
    });
    sim
}

fn player_settings(trace: &Trace) -> Vec<Fate> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                frame: FrameType::Settings,
                fate,
                ..
            } if e.host == "player" => Some(fate.get()),
            _ => None,
        })
        .collect()
}

/// A rule that passes leaves the frame to the frame faults added after it:
/// the drop behind it acts, and the passing rule is reported as never
/// fired, in its own words.
#[test]
fn a_rule_that_passes_leaves_the_frame_to_the_next_fault() -> grpc_chaos::Result {
    struct Watches(u32);
    impl FrameRule for Watches {
        fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
            self.0 += 1;
            Verdict::Pass
        }
        fn describe(&self) -> String {
            "watch".to_owned()
        }
    }
    let mut sim = world();
    let settings = || {
        Fault::frames()
            .from("player")
            .kind(FrameType::Settings)
            .ack(true)
    };
    sim.fault(settings().rule(Watches(0)));
    sim.fault(settings().drop());
    let trace = sim.run()?;
    // The player's SETTINGS passes; its SETTINGS ACK is dropped.
    assert_eq!(
        player_settings(&trace),
        [Fate::Passed, Fate::Dropped],
        "{}",
        trace.render()
    );
    assert!(
        trace
            .render()
            .contains("fault never fired: frame fault: watch SETTINGS ACK from player"),
        "{}",
        trace.render()
    );
    Ok(())
}

/// A rule's own check runs before the run and fails it with its words.
#[test]
fn a_rule_check_fails_the_run_before_it_starts() {
    struct Late(Duration);
    impl FrameRule for Late {
        fn on_frame(&mut self, _: &FrameView<'_>) -> Verdict {
            Verdict::HoldUntil(self.0)
        }
        fn check(&self, run: &RunCheck<'_>) -> Result<(), Error> {
            if self.0 > run.duration() {
                return Err(run.after_end("my late rule", self.0));
            }
            Ok(())
        }
    }
    let mut sim = world();
    sim.fault(Fault::frames().rule(Late(Duration::from_secs(9))));
    let err = sim.run().expect_err("after the end");
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.to_string().contains("my late rule"), "{err}");
}

/// The store's reply with its last octet flipped: `SaveReply { total }`'s
/// varint no longer ends, so the player's tonic-prost decoder refuses the
/// whole message (INTERNAL "failed to decode Protobuf message: …", the
/// spec's code for a response proto that does not parse). The call ends
/// as that decode failure, not as dropped by the caller.
#[test]
fn a_response_that_does_not_parse_ends_the_call_as_undecodable() -> grpc_chaos::Result {
    use grpc_chaos::trace::CallEnd;
    use std::sync::{Arc, Mutex};
    let mut sim = Sim::builder().seed(1).build();
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
    let data = Fault::frames().from("store").kind(FrameType::Data);
    sim.fault(data.rule(flip_last_octet));
    let seen = Arc::new(Mutex::new(None));
    let said = seen.clone();
    sim.client("player", move |player| async move {
        let status = StoreClient::new(player.channel("store"))
            .save(SaveRequest {
                match_id: "m1".into(),
                points: 1,
            })
            .await
            .unwrap_err();
        *said.lock().unwrap() = Some((status.code(), status.message().to_owned()));
        Ok(())
    });
    let trace = sim.run()?;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        Some((
            tonic::Code::Internal,
            "failed to decode Protobuf message: SaveReply.total: invalid varint".to_owned()
        ))
    );
    let call = &trace.calls()[0];
    assert_eq!(
        call.end,
        CallEnd::Undecodable { message_len: 2 },
        "{}",
        trace.render()
    );
    let text = trace.render();
    assert!(
        text.contains(&format!(
            "{} call /tt.v1.Store/Save ended INTERNAL: its decoder could not parse the 2-byte response message as protobuf (tonic-prost: \"failed to decode Protobuf message: …\")",
            call.id
        )),
        "{text}"
    );
    assert!(!text.contains("dropped by the caller"), "{text}");
    Ok(())
}

/// A streaming caller that stops right after a message that parses is
/// still one that dropped its call: the trace cannot tell it from a
/// decoder that refused the message for its type, and does not guess.
#[test]
fn a_caller_that_stops_after_a_good_message_dropped_its_call() -> grpc_chaos::Result {
    use grpc_chaos::trace::CallEnd;
    use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
    use grpc_chaos_scenarios::services::pb::WatchRequest;
    use grpc_chaos_scenarios::services::{DeadlineMode, Gateway};
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.client("player", |player| async move {
        let req = WatchRequest {
            match_id: "m1".into(),
            count: 3,
            padding: 0,
        };
        let mut scores = ScoreboardClient::new(player.channel("gateway"))
            .watch(req)
            .await?
            .into_inner();
        let first = scores.message().await;
        assert!(matches!(first, Ok(Some(_))));
        drop(scores);
        tokio::time::sleep(Duration::from_millis(10)).await;
        Ok(())
    });
    let trace = sim.run()?;
    let call = &trace.calls_from("player").next().expect("the Watch");
    assert_eq!(call.end, CallEnd::Dropped, "{}", trace.render());
    Ok(())
}
