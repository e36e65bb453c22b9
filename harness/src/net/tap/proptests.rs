//! Property tests of the tap itself: `DirectionTap::on_bytes` fed directly,
//! with no runtime, so that a case costs little. However the sender's
//! writes cut a stream, the recorder gets the same events and the same
//! bytes are handed on with the same release times; no input panics, and
//! bytes no rule touched are handed on as they came. Case count:
//! proptest's default of 256, overridable with `PROPTEST_CASES`
//! (`ci/check.sh` runs 10,000).
//!
//! `ci/check.sh` counts the properties as the lines that start with four
//! spaces and `fn `: helpers stay at the top level.

#![cfg(test)]

use std::collections::VecDeque;
use std::sync::LazyLock;
use std::time::Duration;

use bytes::Bytes;
use proptest::prelude::*;

use super::tests::tap_for;
use super::Out;
use crate::fault::Fault;
use crate::recorder::event::{Event, EventKind, Fate};
use crate::wire::testing::{unhex, Wire, H2_C2S, H2_S2C};
use crate::wire::{self, Decoder, Direction, FrameType};

// Parsed once: parsing the hex text in a debug build costs as much as
// feeding the tap.
static RECORDED_C2S: LazyLock<Vec<u8>> = LazyLock::new(|| unhex(H2_C2S));
static RECORDED_S2C: LazyLock<Vec<u8>> = LazyLock::new(|| unhex(H2_S2C));

/// A frame rule as plain data: each tap needs a fault of its own, since a
/// rule's `nth` counter is shared by its clones.
#[derive(Clone, Copy, Debug)]
enum Rule {
    /// Matches no frame: the tap cuts at frame boundaries, touching nothing.
    Idle,
    Drop(FrameType, Option<u32>),
    Delay(FrameType, u64),
    HoldUntil(FrameType, u64),
}

fn fault(rule: Rule) -> Fault {
    let frames = Fault::frames();
    match rule {
        Rule::Idle => frames.from("nobody").drop(),
        Rule::Drop(kind, Some(n)) => frames.kind(kind).nth(n).drop(),
        Rule::Drop(kind, None) => frames.kind(kind).drop(),
        Rule::Delay(kind, ms) => frames.kind(kind).delay(Duration::from_millis(ms)),
        Rule::HoldUntil(kind, ms) => frames.kind(kind).hold_until(Duration::from_millis(ms)),
    }
}

fn rule() -> impl Strategy<Value = Rule> {
    // Every RFC 9113 frame type, DATA (0) to CONTINUATION (9).
    let kind = || (0u8..10).prop_map(FrameType::from);
    prop_oneof![
        Just(Rule::Idle),
        (kind(), proptest::option::of(1u32..4)).prop_map(|(k, n)| Rule::Drop(k, n)),
        (kind(), 1u64..100).prop_map(|(k, ms)| Rule::Delay(k, ms)),
        // 0: a hold that is already over when the frame is written.
        (kind(), 0u64..100).prop_map(|(k, ms)| Rule::HoldUntil(k, ms)),
    ]
}

fn direction(server: bool) -> Direction {
    if server {
        Direction::ServerToClient
    } else {
        Direction::ClientToServer
    }
}

/// `bytes` cut into pieces of the sizes in `cuts`, cycled (a 0 is an empty
/// write); with no non-zero size, one piece.
fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    if cuts.iter().all(|&c| c == 0) {
        return vec![bytes];
    }
    let mut pieces = Vec::new();
    let mut rest = bytes;
    for &cut in cuts.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (piece, tail) = rest.split_at(cut.min(rest.len()));
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// What a tap did with a stream.
#[derive(Debug, PartialEq)]
struct Fed {
    events: Vec<Event>,
    /// The bytes handed on, in order, as runs with one release time.
    out: Vec<(Option<Duration>, Vec<u8>)>,
    /// Bytes kept for the rest of a frame (cutting at frame boundaries).
    pending: Vec<u8>,
    /// Bytes the decoder holds for the rest of a frame.
    undecoded: u64,
    cut: bool,
}

/// Feeds `bytes`, cut by `cuts`, to a fresh tap with `rule` (none: the tap
/// only watches). The recorder's clock stays at 0: no runtime, no turmoil.
fn feed(direction: Direction, rule: Option<Rule>, bytes: &[u8], cuts: &[usize]) -> Fed {
    let mut tap = tap_for(direction, rule.map(fault).into_iter().collect());
    let mut out = VecDeque::new();
    for piece in chunks(bytes, cuts) {
        tap.on_bytes(Bytes::copy_from_slice(piece), &mut out);
    }
    Fed {
        events: tap.env().recorder.events(),
        out: runs(&out),
        pending: tap.pending.to_vec(),
        undecoded: tap.decoder.pending_bytes(),
        cut: tap.cut,
    }
}

/// The queue as runs of bytes with one release time: how the items are
/// cut depends on the writes, what leaves when does not.
fn runs(out: &VecDeque<Out>) -> Vec<(Option<Duration>, Vec<u8>)> {
    let mut runs: Vec<(Option<Duration>, Vec<u8>)> = Vec::new();
    for o in out.iter().filter(|o| !o.bytes.is_empty()) {
        match runs.last_mut() {
            Some((release, bytes)) if *release == o.release => bytes.extend_from_slice(&o.bytes),
            _ => runs.push((o.release, o.bytes.to_vec())),
        }
    }
    runs
}

/// Everything handed on, then what is still pending.
fn all_bytes(fed: &Fed) -> Vec<u8> {
    let out = fed.out.iter().flat_map(|(_, b)| b.iter());
    out.chain(fed.pending.iter()).copied().collect()
}

/// The recorded fate of each frame, in stream order.
fn fates(fed: &Fed) -> Vec<Fate> {
    let fate = |e: &Event| match &e.kind {
        EventKind::Frame { fate, .. } => Some(fate.get()),
        _ => None,
    };
    fed.events.iter().filter_map(fate).collect()
}

/// `bytes` without the frames the tap recorded as dropped: the decoder
/// gives each frame's place, the recorder its fate, one per frame in order.
fn without_dropped(direction: Direction, bytes: &[u8], fed: &Fed) -> Vec<u8> {
    let fates = fates(fed);
    if !fates.contains(&Fate::Dropped) {
        return bytes.to_vec();
    }
    let mut events = Vec::new();
    Decoder::new(direction).feed(bytes, &mut events);
    let frames: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            wire::Event::Frame(f) => Some((f.offset, f.wire_len())),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), fates.len(), "one recorded fate per frame");
    let mut kept = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for ((offset, len), fate) in frames.into_iter().zip(fates) {
        if fate == Fate::Dropped {
            let offset = usize::try_from(offset).unwrap_or(usize::MAX);
            kept.extend_from_slice(&bytes[at..offset]);
            at = offset + usize::try_from(len).unwrap_or(usize::MAX);
        }
    }
    kept.extend_from_slice(&bytes[at..]);
    kept
}

/// Every byte is handed on or pending, in order, except exactly the
/// frames recorded as dropped; and only an incomplete frame is pending
/// (cutting), or nothing (watching).
fn check_bytes(direction: Direction, bytes: &[u8], fed: &Fed) -> Result<(), TestCaseError> {
    prop_assert_eq!(all_bytes(fed), without_dropped(direction, bytes, fed));
    let incomplete = if fed.cut { fed.undecoded } else { 0 };
    prop_assert_eq!(fed.pending.len() as u64, incomplete);
    Ok(())
}

fn valid_start(direction: Direction) -> Vec<u8> {
    match direction {
        Direction::ClientToServer => Wire::client().into_bytes(),
        Direction::ServerToClient => Wire::server().into_bytes(),
    }
}

proptest! {
    /// (a) The recorded h2 exchange, cut anywhere, gives the same recorded
    /// frames (kinds, streams, details, fates) and the same bytes at the
    /// same release times as written whole, watching or cutting under a
    /// rule; and only the dropped frames are missing.
    #[test]
    fn recorded_exchange_chunking_does_not_matter(
        server in any::<bool>(),
        rule in proptest::option::of(rule()),
        cuts in proptest::collection::vec(0usize..200, 1..40),
    ) {
        let direction = direction(server);
        let bytes: &[u8] = if server { &RECORDED_S2C } else { &RECORDED_C2S };
        let whole = feed(direction, rule, bytes, &[]);
        prop_assert!(whole.pending.is_empty(), "the recording ends on a whole frame");
        prop_assert!(fates(&whole).len() >= 10);
        check_bytes(direction, bytes, &whole)?;
        let chunked = feed(direction, rule, bytes, &cuts);
        prop_assert_eq!(chunked, whole);
    }

    /// (b) Arbitrary octets, alone or after a valid start, never panic;
    /// every octet is handed on or pending, in order, but the frames a
    /// rule dropped.
    #[test]
    fn arbitrary_bytes_pass_untouched(
        server in any::<bool>(),
        prefixed in any::<bool>(),
        noise in proptest::collection::vec(any::<u8>(), 0..2048),
        rule in proptest::option::of(rule()),
        cuts in proptest::collection::vec(0usize..300, 1..20),
    ) {
        let direction = direction(server);
        let mut bytes = if prefixed { valid_start(direction) } else { Vec::new() };
        bytes.extend_from_slice(&noise);
        let fed = feed(direction, rule, &bytes, &cuts);
        check_bytes(direction, &bytes, &fed)?;
    }

    /// (b2) Frame-shaped noise after a valid start, so that rules meet
    /// frames of every type, flag and stream: no panic, chunking does not
    /// matter, and exactly the dropped frames are missing.
    #[test]
    fn frame_shaped_noise_chunking_does_not_matter(
        server in any::<bool>(),
        frames in proptest::collection::vec(
            (0u8..12, any::<u8>(), prop_oneof![Just(0u32), 1u32..9, any::<u32>()],
             proptest::collection::vec(any::<u8>(), 0..40)),
            0..30),
        rule in rule(),
        cuts in proptest::collection::vec(0usize..100, 1..10),
    ) {
        let direction = direction(server);
        let mut w = Wire::bare().raw(&valid_start(direction));
        for (ty, flags, stream, payload) in &frames {
            w = w.frame(FrameType::from(*ty), *flags, *stream, payload);
        }
        let bytes = w.into_bytes();
        let whole = feed(direction, Some(rule), &bytes, &[]);
        let chunked = feed(direction, Some(rule), &bytes, &cuts);
        prop_assert_eq!(&chunked, &whole);
        check_bytes(direction, &bytes, &whole)?;
    }
}
