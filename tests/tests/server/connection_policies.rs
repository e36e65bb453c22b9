//! Connection policies a test writes itself (`Sim::connection_policy`):
//! a box that answers the client's PINGs and forwards none, and the
//! misconfigurations a policy can have.

use std::time::Duration;

use grpc_chaos::fault::FrameView;
use grpc_chaos::policy::{ConnectionPolicy, Effects};
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{Fate, FrameDetail};
use grpc_chaos::wire::{Direction, FrameType};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::{Store, SAVE};

/// Answers the client's PINGs itself and swallows them (envoy #2086: Envoy
/// answers PINGs; the backend never sees one).
struct AnswersPings {
    alters_client: bool,
}

impl ConnectionPolicy for AnswersPings {
    fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        let ping = frame.direction() == Direction::ClientToServer
            && frame.frame_type() == FrameType::Ping
            && !frame.ack();
        if let (true, FrameDetail::Ping { payload }) = (ping, frame.detail()) {
            fx.ping_ack(Direction::ServerToClient, *payload);
            fx.swallow();
        }
    }

    fn alters(&self, direction: Direction) -> bool {
        self.alters_client || direction == Direction::ServerToClient
    }

    fn name(&self) -> String {
        "a PING-answering box".to_owned()
    }
}

/// PING frames: (time, host that wrote it, ACK, fate).
fn pings(trace: &Trace) -> Vec<(Duration, String, bool, Fate)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                frame: FrameType::Ping,
                flags,
                fate,
                ..
            } => Some((e.at(), e.host.to_string(), flags.ack(), fate.get())),
            _ => None,
        })
        .collect()
}

fn world(alters_client: bool) -> Sim {
    let mut sim = Sim::builder()
        .seed(3)
        .duration(Duration::from_secs(30))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .delay(Duration::from_secs(12)),
    );
    sim.connection_policy("store", move |_| AnswersPings { alters_client });
    sim.client("player", |player| async move {
        let channel = player.channel_with("store", |e| {
            e.http2_keep_alive_interval(Duration::from_secs(5))
                .keep_alive_timeout(Duration::from_secs(1))
        });
        StoreClient::new(channel)
            .save(SaveRequest::default())
            .await?;
        Ok(())
    });
    sim
}

#[test]
fn a_ping_answering_box_acks_every_ping_and_the_server_sees_none() -> grpc_chaos::Result {
    let trace = world(true).run()?;
    let pings = pings(&trace);
    // Two PINGs from the player during the 12 s call, each swallowed by
    // the box and answered at once in the store's name; the store itself
    // writes no PING ACK.
    let swallowed: Vec<_> = pings
        .iter()
        .filter(|p| p.1 == "player" && !p.2)
        .map(|p| p.3)
        .collect();
    assert_eq!(
        swallowed,
        [Fate::Swallowed, Fate::Swallowed],
        "{}",
        trace.render()
    );
    let acks: Vec<_> = pings.iter().filter(|p| p.1 == "store" && p.2).collect();
    assert_eq!(acks.len(), 2, "{}", trace.render());
    assert!(acks.iter().all(|p| p.3 == Fate::Injected));
    assert!(trace
        .render()
        .contains("c1 s0 PING 3b7cdb7a0b8716b4 [swallowed by a connection policy]"));
    assert_eq!(trace.calls()[0].outcome().map(|o| o.code), Some("OK"));
    Ok(())
}

#[test]
fn a_policy_that_alters_a_direction_it_disowned_fails_the_run() {
    let err = world(false).run().expect_err("misconfigured");
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string().contains(
            "a PING-answering box acted on the client → server direction of c1, which its `alters` says it does not alter"
        ),
        "{err}"
    );
}

#[test]
fn a_policy_on_a_client_host_or_without_the_tap_is_rejected() {
    let mut sim = Sim::builder().build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.connection_policy("player", |_| AnswersPings {
        alters_client: true,
    });
    let err = sim.run().expect_err("a client host");
    assert!(
        err.to_string().contains("`player` is a client host"),
        "{err}"
    );

    let mut sim = Sim::builder().wire_tap(false).build();
    sim.server("store", |s| s);
    sim.client("player", |_| async { Ok(()) });
    sim.connection_policy("store", |_| AnswersPings {
        alters_client: true,
    });
    let err = sim.run().expect_err("no tap");
    assert!(
        err.to_string()
            .contains("a connection policy acts in the wire tap"),
        "{err}"
    );
}
