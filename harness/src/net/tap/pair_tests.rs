//! The two taps of one connection, driven directly: the frame-size limit of
//! one direction follows the other's SETTINGS from the sender's ACK on
//! (RFC 9113 §6.5.3), injections set off by a frame land where they must,
//! and a named hold keeps frames until its release.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;

use super::SharedConn;
use super::{DirectionTap, Out};
use crate::fault::{Fault, FaultKind, Injection};
use crate::recorder::event::{EventKind, Fate};
use crate::wire::frame::DEFAULT_MAX_FRAME_SIZE;
use crate::wire::testing::{headers, Wire};
use crate::wire::{encode, Direction, ErrorCode, FrameType, SettingId};

const MFS: SettingId = SettingId::MaxFrameSize;

/// The player→store and store→player taps of connection 1, with `faults`.
fn taps(faults: Vec<Fault>) -> (DirectionTap, DirectionTap) {
    let env = super::tests::env_with(faults);
    let conn: SharedConn = Arc::default();
    let tap = |direction, from: &str, to: &str| {
        DirectionTap::new(
            env.clone(),
            1,
            direction,
            from.into(),
            to.into(),
            conn.clone(),
        )
    };
    (
        tap(Direction::ClientToServer, "player", "store"),
        tap(Direction::ServerToClient, "store", "player"),
    )
}

/// Feeds `bytes` to `tap` in one chunk; returns what it queued.
fn send(tap: &mut DirectionTap, bytes: Vec<u8>) -> VecDeque<Out> {
    let mut out = VecDeque::new();
    tap.on_bytes(Bytes::from(bytes), &mut out);
    out
}

fn protocol_errors(tap: &DirectionTap) -> Vec<String> {
    tap.env()
        .recorder
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::ProtocolError { reason, .. } => Some(reason.into()),
            _ => None,
        })
        .collect()
}

/// `(host, frame, fate)` of every frame recorded.
fn frames(tap: &DirectionTap) -> Vec<(String, FrameType, Fate)> {
    tap.env()
        .recorder
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Frame { frame, fate, .. } => Some((e.host.to_string(), frame, fate.get())),
            _ => None,
        })
        .collect()
}

fn injection(fault: Fault) -> Injection {
    match fault.0 {
        FaultKind::Inject(i) => i,
        _ => unreachable!("an injection"),
    }
}

#[test]
fn a_larger_frame_size_is_not_in_force_before_the_sender_acks_it() {
    let (mut player, mut store) = taps(vec![]);
    send(
        &mut store,
        Wire::bare().settings(&[(MFS, 32_768)]).into_bytes(),
    );
    send(
        &mut player,
        Wire::client().data(1, 20_000, false).into_bytes(),
    );
    let errors = protocol_errors(&player);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("20000 octet payload, over the 16384 octet limit (the initial"),
        "{}",
        errors[0]
    );
}

#[test]
fn each_ack_puts_the_oldest_unacked_settings_in_force_from_the_next_frame() {
    let (mut player, mut store) = taps(vec![]);
    // The store advertises 32,768, then 20,000: acked in that order.
    let advertised = Wire::bare()
        .settings(&[(MFS, 32_768)])
        .settings(&[(MFS, 20_000)]);
    send(&mut store, advertised.into_bytes());
    // ACK and a 30,000-octet frame in one read: the ACK's limit applies.
    let first = Wire::client().settings_ack().data(1, 30_000, false);
    let out = send(&mut player, first.into_bytes());
    assert_eq!(protocol_errors(&player), Vec::<String>::new());
    let sent: usize = out.iter().map(|o| o.bytes.len()).sum();
    assert_eq!(sent, 24 + 9 + 9 + 9 + 30_000, "passed through whole");
    // The second ACK brings 20,000 in: the same frame is now too large.
    let second = Wire::bare().settings_ack().data(1, 30_000, false);
    let out = send(&mut player, second.into_bytes());
    let errors = protocol_errors(&player);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("over the 20000 octet limit")
            && errors[0].contains("the receiver advertised"),
        "{}",
        errors[0]
    );
    let sent: usize = out.iter().map(|o| o.bytes.len()).sum();
    assert_eq!(sent, 9 + 9 + 30_000, "an oversized frame still goes out");
}

#[test]
fn a_settings_frame_the_network_lost_is_never_acked() {
    let lost = Fault::frames()
        .from("store")
        .kind(FrameType::Settings)
        .nth(1)
        .drop();
    let (mut player, mut store) = taps(vec![lost]);
    let advertised = Wire::bare()
        .settings(&[(MFS, 32_768)])
        .settings(&[(MFS, 20_000)]);
    send(&mut store, advertised.into_bytes());
    // The player only saw 20,000: its first ACK is for that one.
    send(
        &mut player,
        Wire::client()
            .settings_ack()
            .data(1, 30_000, false)
            .into_bytes(),
    );
    let errors = protocol_errors(&player);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("20000 octet limit"), "{}", errors[0]);
}

#[test]
fn injected_settings_count_among_the_senders_settings() {
    let (mut player, mut store) = taps(vec![]);
    send(&mut store, Wire::bare().settings(&[]).into_bytes());
    let raise = injection(
        Fault::inject("store", "player")
            .settings(&[(MFS, 65_536)])
            .at(std::time::Duration::ZERO),
    );
    let mut out = VecDeque::new();
    store.inject(&raise, None, &mut out);
    assert_eq!(out[0].bytes.as_ref(), encode::settings(&[(MFS, 65_536)]));
    // The first ACK is for the store's own SETTINGS, the second for the
    // injected one.
    let bytes = Wire::client()
        .settings_ack()
        .data(1, DEFAULT_MAX_FRAME_SIZE as usize, false)
        .settings_ack()
        .data(1, 65_536, false);
    send(&mut player, bytes.into_bytes());
    assert_eq!(protocol_errors(&player), Vec::<String>::new());
    let injected = frames(&store)
        .into_iter()
        .filter(|(_, f, fate)| *f == FrameType::Settings && *fate == Fate::Injected)
        .count();
    assert_eq!(injected, 1);
}

#[test]
fn an_injection_after_a_frame_goes_right_behind_it_in_the_same_direction() {
    let ping = Fault::inject("player", "store")
        .ping(false, [7; 8])
        .after(Fault::frames().from("player").kind(FrameType::Headers));
    let (mut player, _store) = taps(vec![ping]);
    let bytes = Wire::client()
        .headers(headers(1).request("POST", "/a.B/C"))
        .headers(headers(3).request("POST", "/a.B/C"))
        .ping(false, [1; 8]);
    let out = send(&mut player, bytes.into_bytes());
    let kinds: Vec<u8> = out
        .iter()
        .filter(|o| o.bytes.len() >= 9 && o.bytes[..3] != *b"PRI")
        .map(|o| o.bytes[3])
        .collect();
    // SETTINGS, HEADERS, the injected PING, HEADERS, the player's PING:
    // once per connection.
    assert_eq!(kinds, [0x4, 0x1, 0x6, 0x1, 0x6], "{kinds:?}");
    let injected = out
        .iter()
        .position(|o| o.bytes.as_ref() == encode::ping(false, [7; 8]))
        .expect("injected");
    assert_eq!(out[injected - 1].bytes[3], 0x1, "right behind the HEADERS");
}

#[test]
fn an_injection_after_a_frame_of_the_other_direction_is_posted_to_its_writer() {
    let goaway = Fault::inject("store", "player")
        .goaway(ErrorCode::NoError, 1, b"")
        .after(
            Fault::frames()
                .from("player")
                .kind(FrameType::Headers)
                .nth(2),
        );
    let (mut player, mut store) = taps(vec![goaway]);
    let one = Wire::client().headers(headers(1).request("POST", "/a.B/C"));
    let mut posted = VecDeque::new();
    send(&mut player, one.into_bytes());
    store.take_posted(&mut posted);
    assert!(posted.is_empty(), "the 1st HEADERS is not the trigger");
    let mut more = Wire::bare();
    for stream in [3, 5] {
        more = more.headers(headers(stream).request("POST", "/a.B/C"));
    }
    send(&mut player, more.into_bytes());
    store.take_posted(&mut posted);
    let sent: Vec<&[u8]> = posted.iter().map(|o| o.bytes.as_ref()).collect();
    assert_eq!(sent, [encode::goaway(1, ErrorCode::NoError, b"")]);
    assert!(frames(&store).contains(&("store".into(), FrameType::GoAway, Fate::Injected)));
}

#[test]
fn a_named_hold_keeps_frames_and_what_follows_until_released() {
    let hold = Fault::frames()
        .from("player")
        .kind(FrameType::Ping)
        .hold("pings");
    let (mut player, _store) = taps(vec![hold]);
    let bytes = Wire::client().ping(false, [1; 8]).window_update(0, 100);
    let out = send(&mut player, bytes.into_bytes());
    let now = player.env().recorder.now();
    let held = out.iter().position(|o| o.hold.is_some()).expect("held");
    assert!(!player.is_due(&out[held], || now));
    assert!(out.iter().skip(held).all(|o| o.kept.is_some()));
    let fates: Vec<Fate> = frames(&player).into_iter().map(|(_, _, f)| f).collect();
    assert_eq!(fates, [Fate::Passed, Fate::Held, Fate::BehindHeld]);
    let released = player.env().frames.release("release(\"pings\")", "pings");
    assert_eq!(released.ok().flatten(), Some("player"));
    assert!(player.is_due(&out[held], || now));
    // Released: the hold is over for later frames.
    send(&mut player, Wire::bare().ping(false, [2; 8]).into_bytes());
    assert_eq!(frames(&player).last().map(|f| f.2), Some(Fate::Passed));
}
