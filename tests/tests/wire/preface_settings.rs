//! RFC 9113 §3.4: each endpoint's connection preface ends with (client) or
//! is (server) a SETTINGS frame, which MUST be the first frame it sends. A
//! frame rule that drops that SETTINGS, or puts another frame in its
//! place, leaves the receiver a preface that breaks the rule; the trace
//! says so, since the Rust stack does not.
//!
//! Measured with tonic 0.14.9 / h2 0.4.20 (these tests pin it):
//! - the server's SETTINGS dropped: the client takes the server's SETTINGS
//!   ACK and WINDOW_UPDATE as its first frames without a word, never acks
//!   SETTINGS it never got, and the call ends OK; no GOAWAY, no error,
//!   through the rest of the run;
//! - the client's SETTINGS dropped: the server takes the client's
//!   WINDOW_UPDATE and HEADERS right after the 24-octet magic (h2's server
//!   checks only the magic, `server.rs` `ReadPreface`), never acks, and
//!   the call ends OK;
//! - either SETTINGS replaced by a PING: the receiver answers the PING
//!   with its ACK and the call ends OK;
//! - h2 has no timer for SETTINGS never acked (RFC 9113 §6.5.3 lets an
//!   endpoint answer that with SETTINGS_TIMEOUT; h2 0.4.20 never does,
//!   code): the connection stays open and quiet for the second after the
//!   call, and the only GOAWAY is the client's NO_ERROR when its channel
//!   is dropped.

use grpc_chaos::fault::{FrameFault, FrameView, Verdict};
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::Fate;
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::{encode, FrameType};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

/// What the trace says about the preface SETTINGS dropped.
const WITHOUT: &str = "a connection preface without its SETTINGS (RFC 9113 §3.4)";

/// What it says about a frame in its place.
const IN_PLACE: &str = "the first frame, not the preface's SETTINGS (RFC 9113 §3.4)";

/// The first SETTINGS (without ACK) `from` writes: its preface's.
fn first_settings(from: &str) -> FrameFault {
    Fault::frames()
        .from(from)
        .kind(FrameType::Settings)
        .ack(false)
        .nth(1)
}

/// A PING in place of the frame.
fn a_ping(_: &FrameView<'_>) -> Verdict {
    Verdict::Replace(encode::ping(false, [1; 8]).into())
}

/// A store, the player's one save through `faults`, then a second with
/// the connection open and quiet (for h2 to object, if it would): the
/// trace, and the save's status code.
fn one_save(faults: Vec<Fault>) -> (Trace, String) {
    let mut sim = Sim::builder().seed(1).duration(ms(2_000)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", |c| async move {
        let mut req = tonic::Request::new(SaveRequest::default());
        req.set_timeout(ms(500));
        let mut store = StoreClient::new(c.channel("store"));
        store.save(req).await?;
        // The connection stays open a second longer.
        tokio::time::sleep(ms(1_000)).await;
        drop(store);
        Ok(())
    });
    let trace = sim.run().expect("the save succeeds and the body returns");
    let code = trace
        .calls_from("player")
        .next()
        .and_then(|c| c.outcome())
        .map(|o| o.code.to_owned())
        .expect("the save ended");
    (trace, code)
}

/// `(frame, ack, fate, invalid, fate_invalid)` of every frame `from` wrote.
type Row = (FrameType, bool, Fate, Option<String>, Option<String>);

fn frames_of(trace: &Trace, from: &str) -> Vec<Row> {
    trace
        .events_on(from)
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                frame, flags, fate, ..
            } => Some((
                *frame,
                flags.ack(),
                fate.get(),
                fate.invalid().map(str::to_owned),
                fate.fate_invalid().map(str::to_owned),
            )),
            _ => None,
        })
        .collect()
}

/// The frames `from` wrote that other frames replaced, each with the rule
/// it breaks.
fn arrived_instead(trace: &Trace, from: &str) -> Vec<(FrameType, Option<String>)> {
    trace
        .events_on(from)
        .filter_map(|e| match &e.kind {
            EventKind::FrameReplaced(r) => Some((r.frame, r.invalid.as_deref().map(str::to_owned))),
            _ => None,
        })
        .collect()
}

fn settings_acks(frames: &[Row]) -> usize {
    frames
        .iter()
        .filter(|(f, ack, ..)| *f == FrameType::Settings && *ack)
        .count()
}

fn goaways(frames: &[Row]) -> usize {
    frames
        .iter()
        .filter(|(f, ..)| *f == FrameType::GoAway)
        .count()
}

#[test]
fn the_servers_preface_settings_dropped_is_flagged_and_h2_carries_on() {
    let (trace, code) = one_save(vec![first_settings("store").drop()]);
    assert_eq!(code, "OK", "measured: the client never checks");
    let store = frames_of(&trace, "store");
    let player = frames_of(&trace, "player");
    assert_eq!(
        store[0],
        (
            FrameType::Settings,
            false,
            Fate::Dropped,
            None,
            Some(WITHOUT.into())
        )
    );
    // Only the first SETTINGS is the preface's: nothing else is flagged.
    assert!(
        store[1..]
            .iter()
            .chain(&player)
            .all(|r| r.3.is_none() && r.4.is_none()),
        "{store:?} {player:?}"
    );
    // The player never acks SETTINGS it never got; the store acks the
    // player's; nobody goes away.
    assert_eq!((settings_acks(&player), settings_acks(&store)), (0, 1));
    assert_eq!(goaways(&store), 0, "{store:?}");
    assert!(
        trace
            .to_json()
            .contains(&format!(r#""fate_invalid": "{WITHOUT}""#)),
        "the JSON says it too"
    );
}

#[test]
fn the_clients_preface_settings_dropped_is_flagged_and_h2_carries_on() {
    let (trace, code) = one_save(vec![first_settings("player").drop()]);
    assert_eq!(code, "OK", "measured: h2's server checks only the magic");
    let player = frames_of(&trace, "player");
    let store = frames_of(&trace, "store");
    assert_eq!(
        player[0],
        (
            FrameType::Settings,
            false,
            Fate::Dropped,
            None,
            Some(WITHOUT.into())
        )
    );
    // What the store got first instead: the player's WINDOW_UPDATE.
    assert_eq!(player[1].0, FrameType::WindowUpdate);
    assert_eq!((settings_acks(&store), settings_acks(&player)), (0, 1));
    assert_eq!(goaways(&store), 0, "{store:?}");
    // The player's only GOAWAY is its last frame: its channel dropped.
    assert_eq!(goaways(&player), 1, "{player:?}");
    assert_eq!(player.last().map(|r| r.0), Some(FrameType::GoAway));
}

#[test]
fn a_frame_in_place_of_a_preface_settings_is_flagged_on_what_arrived() {
    for from in ["store", "player"] {
        let (trace, code) = one_save(vec![first_settings(from).rule(a_ping)]);
        assert_eq!(code, "OK", "{from}: measured, h2 acks the PING and goes on");
        let frames = frames_of(&trace, from);
        // The replaced frame is valid; what arrived in its place is not.
        assert!(
            matches!(
                frames[0],
                (
                    FrameType::Settings,
                    false,
                    Fate::Replaced { .. },
                    None,
                    None
                )
            ),
            "{from}: {frames:?}"
        );
        assert_eq!(
            arrived_instead(&trace, from),
            [(FrameType::Ping, Some(IN_PLACE.to_owned()))],
            "{from}"
        );
        let other = if from == "store" { "player" } else { "store" };
        let answered = frames_of(&trace, other)
            .iter()
            .filter(|(f, ack, ..)| *f == FrameType::Ping && *ack)
            .count();
        assert_eq!(answered, 1, "{from}: the receiver acked the PING");
    }
}

#[test]
fn a_settings_in_place_of_the_prefaces_or_a_delay_breaks_nothing() {
    let settings = |_: &FrameView<'_>| Verdict::Replace(encode::settings(&[]).into());
    let (trace, _) = one_save(vec![first_settings("store").rule(settings)]);
    assert_eq!(
        arrived_instead(&trace, "store"),
        [(FrameType::Settings, None)]
    );
    assert!(frames_of(&trace, "store")[0].4.is_none());
    // Delayed, the SETTINGS is still the first frame.
    let (trace, code) = one_save(vec![first_settings("store").delay(ms(50))]);
    assert_eq!(code, "OK");
    let store = frames_of(&trace, "store");
    assert!(
        matches!(
            store[0],
            (FrameType::Settings, false, Fate::Delayed { .. }, None, None)
        ),
        "{store:?}"
    );
}

#[test]
fn what_is_injected_in_its_place_decides() {
    // A SETTINGS injected right behind the dropped one stands in for it:
    // the store's preface is whole.
    let (trace, code) = one_save(vec![
        first_settings("store").drop(),
        Fault::inject("store", "player")
            .settings(&[])
            .after(first_settings("store")),
    ]);
    assert_eq!(code, "OK");
    let store = frames_of(&trace, "store");
    assert_eq!(
        store[0],
        (FrameType::Settings, false, Fate::Dropped, None, None)
    );
    assert_eq!(store[1].0, FrameType::Settings, "{store:?}");
    assert_eq!(store[1].2, Fate::Injected, "{store:?}");
    // A PING does not.
    let (trace, _) = one_save(vec![
        first_settings("store").drop(),
        Fault::inject("store", "player")
            .ping(false, [2; 8])
            .after(first_settings("store")),
    ]);
    let store = frames_of(&trace, "store");
    assert_eq!(store[0].4.as_deref(), Some(WITHOUT), "{store:?}");
}

/// Both shapes in one short trace: the store's preface SETTINGS dropped
/// (the fate breaks the rule), the player's replaced by a PING (the frame
/// that arrived breaks it).
#[test]
fn preface_settings_removed_both_ways_snapshot() {
    let (trace, code) = one_save(vec![
        first_settings("store").drop(),
        first_settings("player").rule(a_ping),
    ]);
    assert_eq!(code, "OK");
    insta::assert_snapshot!(trace.render_with(&RenderOptions::everything()));
}
