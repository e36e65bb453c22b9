//! Chains of boxes on one host's connections (`Sim::middlebox` twice: the
//! first added nearest the client) and boxes on one link
//! (`Sim::middlebox_between`). Every run has a 10 ms tick and the default
//! 1 ms links; times are simulated.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::fault::FrameView;
use grpc_chaos::policy::{
    Activity, ConnectionPolicy, Effects, Expiry, IdleTimeout, Middlebox, Pings,
};
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::wire::{Direction, FrameType};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{Rally, SaveRequest};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};
use grpc_chaos_tests::secs;

/// A box that answers the client's PINGs itself (forwards none).
fn answers_pings() -> Middlebox {
    let mut mb = Middlebox::new("the PING-answering box");
    mb.pings = Pings::Answer;
    mb
}

/// A box whose 5 s connection idle timer only PINGs (and their ACKs)
/// reset, closing the connection at expiry.
fn pings_keep_it() -> Middlebox {
    let mut mb = Middlebox::new("the PING-timed box");
    mb.connection_idle = Some(IdleTimeout::new(secs(5), Activity::PING, Expiry::Close));
    mb
}

/// One Save, then 20 s of quiet on a channel that PINGs every second
/// while idle, through `boxes` in front of the store in that order.
fn quiet_channel_through(boxes: Vec<Middlebox>) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(20))
        .tick(Duration::from_millis(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    for mb in boxes {
        sim.middlebox("store", mb);
    }
    sim.client("player", |player| async move {
        let channel = player.channel_with("store", |e| {
            e.http2_keep_alive_interval(secs(1))
                .keep_alive_while_idle(true)
                .keep_alive_timeout(secs(10))
        });
        // The client (and its channel) lives through the quiet.
        let mut store = StoreClient::new(channel);
        store.save(SaveRequest::default()).await?;
        tokio::time::sleep(secs(19)).await;
        drop(store);
        Ok(())
    });
    sim.run()
}

fn closes(trace: &Trace) -> Vec<(Duration, String)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PolicyClosed(closed) => Some((e.at(), closed.policy.clone())),
            _ => None,
        })
        .collect()
}

/// client → PING-answering box → PING-timed box → store: the nearer box
/// swallows every PING, so none reaches the farther one, whose idle timer
/// runs out 5 s after the connection opened although the client PINGs
/// every second. The other order, client → PING-timed box → PING-answering
/// box → store, keeps the connection: the timer sees each PING on its way
/// in and each ACK the inner box sends back out through it.
#[test]
fn a_ping_answered_by_the_nearer_box_never_reaches_the_farther_one() -> grpc_chaos::Result {
    let outer_answers = quiet_channel_through(vec![answers_pings(), pings_keep_it()])?;
    let text = outer_answers.render();
    let closed = closes(&outer_answers);
    assert_eq!(closed.len(), 1, "{text}");
    let (at, policy) = &closed[0];
    assert_eq!(policy, "the PING-timed box", "{text}");
    assert!(*at >= secs(5) && *at < secs(6), "{at:?} {text}");
    assert!(
        text.contains("the PING-answering box: answers PINGs itself"),
        "{text}"
    );
    // The store never saw a PING of the player's: all were swallowed at
    // the first box, and every ACK the player got was the box's.
    let pings_at_store = outer_answers
        .events()
        .iter()
        .filter(|e| {
            e.host == "store"
                && matches!(
                    &e.kind,
                    EventKind::Frame {
                        frame: FrameType::Ping,
                        fate,
                        ..
                    } if *fate == Fate::Passed
                )
        })
        .count();
    assert_eq!(pings_at_store, 0, "{text}");

    let inner_answers = quiet_channel_through(vec![pings_keep_it(), answers_pings()])?;
    let text = inner_answers.render();
    assert!(closes(&inner_answers).is_empty(), "{text}");
    let acks = inner_answers
        .events()
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                EventKind::Frame {
                    frame: FrameType::Ping,
                    fate,
                    flags,
                    ..
                } if flags.ack() && *fate == Fate::Injected
            )
        })
        .count();
    assert!(acks >= 15, "{acks} {text}");
    Ok(())
}

/// One frame as a [`Watcher`] saw it: who, which way, what, its fate.
type Sighting = (&'static str, Direction, FrameType, bool, Fate);

/// A policy that only writes down the frames it is shown, in a log shared
/// by the whole chain (so the log's order is the order of the calls).
struct Watcher {
    name: &'static str,
    log: Arc<Mutex<Vec<Sighting>>>,
}

impl ConnectionPolicy for Watcher {
    fn on_frame(&mut self, frame: &FrameView<'_>, _fx: &mut Effects) {
        self.log.lock().unwrap().push((
            self.name,
            frame.direction(),
            frame.frame_type(),
            frame.ack(),
            frame.fate(),
        ));
    }

    fn alters(&self, _direction: Direction) -> bool {
        false
    }
}

/// client → outer watcher → PING-answering box → inner watcher → store:
/// a client frame reaches the outer watcher before the inner one, a server
/// frame the inner one first; the client's PING stops at the box (the
/// inner watcher never sees it); the box's ACK passes only the outer
/// watcher, marked injected.
#[test]
fn frames_pass_a_chain_in_order_and_a_sent_frame_only_the_boxes_towards_its_end(
) -> grpc_chaos::Result {
    let log: Arc<Mutex<Vec<Sighting>>> = Arc::default();
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(3))
        .tick(Duration::from_millis(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let outer = log.clone();
    sim.connection_policy("store", move |_| Watcher {
        name: "outer",
        log: outer.clone(),
    });
    sim.middlebox("store", answers_pings());
    let inner = log.clone();
    sim.connection_policy("store", move |_| Watcher {
        name: "inner",
        log: inner.clone(),
    });
    sim.client("player", |player| async move {
        let channel = player.channel_with("store", |e| {
            e.http2_keep_alive_interval(secs(1))
                .keep_alive_while_idle(true)
        });
        let mut store = StoreClient::new(channel);
        store.save(SaveRequest::default()).await?;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        drop(store);
        Ok(())
    });
    let trace = sim.run()?;
    let text = trace.render();
    let log = log.lock().unwrap().clone();

    // Every frame the client wrote and the outer watcher saw, the inner
    // one saw right after, except PINGs; each server frame the other way.
    let pos = |who: &str, dir: Direction, ty: FrameType| {
        log.iter()
            .position(|(w, d, t, ack, _)| *w == who && *d == dir && *t == ty && !ack)
    };
    let c2s = Direction::ClientToServer;
    let s2c = Direction::ServerToClient;
    assert!(
        pos("outer", c2s, FrameType::Headers) < pos("inner", c2s, FrameType::Headers),
        "{log:?}"
    );
    assert!(
        pos("inner", s2c, FrameType::Headers) < pos("outer", s2c, FrameType::Headers),
        "{log:?}"
    );
    let seen = |who: &str, dir: Direction, ack: bool, fate: Fate| {
        log.iter()
            .filter(|(w, d, t, a, f)| {
                *w == who && *d == dir && *t == FrameType::Ping && *a == ack && *f == fate
            })
            .count()
    };
    let client_pings = seen("outer", c2s, false, Fate::Passed);
    assert!(client_pings >= 2, "{log:?} {text}");
    assert_eq!(seen("inner", c2s, false, Fate::Passed), 0, "{log:?}");
    // The box's ACKs, one per PING, pass the outer watcher only.
    assert_eq!(
        seen("outer", s2c, true, Fate::Injected),
        client_pings,
        "{log:?}"
    );
    assert_eq!(seen("inner", s2c, true, Fate::Injected), 0, "{log:?}");
    assert!(
        log.iter()
            .all(|(w, _, t, ack, _)| !(*w == "inner" && *t == FrameType::Ping && *ack)),
        "{log:?}"
    );
    Ok(())
}

/// `Sim::middlebox_between("gateway", "store", ..)`: only the gateway's
/// own connection to the store passes the box (a server host dials too);
/// the player's connection to the store does not.
#[test]
fn a_box_between_two_named_hosts_touches_only_that_link() -> grpc_chaos::Result {
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(10))
        .tick(Duration::from_millis(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    let mut mb = Middlebox::new("the store's sidecar");
    mb.connection_idle = Some(IdleTimeout::new(
        secs(2),
        Activity::DATA_OR_HEADERS,
        Expiry::Close,
    ));
    sim.middlebox_between("gateway", "store", mb);
    sim.client("player", |player| async move {
        ScoreboardClient::new(player.channel("gateway"))
            .hit(Rally::default())
            .await?;
        StoreClient::new(player.channel("store"))
            .save(SaveRequest::default())
            .await?;
        tokio::time::sleep(secs(5)).await;
        Ok(())
    });
    let trace = sim.run()?;
    let text = trace.render();
    let closed: Vec<(String, String)> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PolicyClosed(closed) => Some((closed.to.to_string(), closed.policy.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        closed,
        vec![("gateway".to_owned(), "the store's sidecar".to_owned())],
        "{text}"
    );
    Ok(())
}

fn bad(setup: impl FnOnce(&mut Sim)) -> grpc_chaos::Error {
    let mut sim = Sim::builder().duration(secs(1)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| s);
    sim.client("player", |_| async { Ok(()) });
    setup(&mut sim);
    sim.run().expect_err("a misconfiguration")
}

#[test]
fn a_box_between_an_unknown_host_and_a_server_lists_the_known_hosts() {
    let err = bad(|sim| {
        sim.middlebox_between("gatewya", "store", Middlebox::envoy());
    });
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string().contains(
            "the middlebox Envoy on `store` lists `gatewya` in for_clients, which is not a host \
             of this sim; list the hosts that dial `store` through the box (known hosts: \
             gateway, player, store)"
        ),
        "{err}"
    );
}

#[test]
fn a_box_between_a_host_and_an_unknown_server_lists_the_known_hosts() {
    let err = bad(|sim| {
        sim.middlebox_between("gateway", "stroe", Middlebox::envoy());
    });
    assert!(
        err.to_string()
            .contains("unknown host `stroe` in the middlebox Envoy; known hosts: "),
        "{err}"
    );
    assert!(err.to_string().contains("gateway"), "{err}");
}

#[test]
fn a_box_between_a_host_and_itself_is_an_error() {
    let err = bad(|sim| {
        sim.middlebox_between("store", "store", Middlebox::envoy());
    });
    assert!(err.is_misconfigured(), "{err}");
    assert!(
        err.to_string()
            .contains("the middlebox Envoy sits between `store` and itself"),
        "{err}"
    );
}
