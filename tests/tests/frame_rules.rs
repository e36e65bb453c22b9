//! Frame rules a test writes itself (`FrameFault::rule`): their order among
//! the frame faults, their own checks and words.

use std::time::Duration;

use grpc_chaos::fault::{FrameRule, FrameView, RunCheck, Verdict};
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Error, EventKind, Fault, Sim, Trace};
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
