//! Property tests: chunking never matters, every octet is accounted for, and
//! no input panics. Case count: proptest's default of 256, overridable with
//! `PROPTEST_CASES`.

use proptest::prelude::*;

use super::frame::{FrameType as T, PREFACE};
use super::testing::{headers, unhex, Wire, H2_C2S, H2_S2C};
use super::*;

/// One step of a plausible gRPC conversation in one direction.
#[derive(Clone, Debug)]
enum Op {
    Headers {
        stream: u32,
        path: usize,
        timeout: Option<u32>,
        split: Option<usize>,
        pad: Option<u8>,
        eos: bool,
    },
    Trailers {
        stream: u32,
        status: u32,
        message: String,
    },
    Data {
        stream: u32,
        len: usize,
        pad: Option<u8>,
        eos: bool,
    },
    Ping(bool, [u8; 8]),
    WindowUpdate(u32, u32),
    Rst(u32, u32),
    Settings(Vec<(u16, u32)>),
    SettingsAck,
    GoAway(u32, u32, Vec<u8>),
    Unknown(u8, Vec<u8>),
}

const PATHS: [&str; 3] = [
    "/tt.v1.Store/Save",
    "/tt.v1.Scoreboard/Hit",
    "/grpc.health.v1.Health/Check",
];

fn stream() -> impl Strategy<Value = u32> {
    (0u32..8).prop_map(|n| 2 * n + 1)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (stream(), 0..PATHS.len(), proptest::option::of(1u32..99_999_999), proptest::option::of(1usize..24),
              proptest::option::of(any::<u8>()), any::<bool>())
            .prop_map(|(stream, path, timeout, split, pad, eos)| Op::Headers { stream, path, timeout, split, pad, eos }),
        2 => (stream(), 0u32..17, "[ -~]{0,20}").prop_map(|(stream, status, message)| Op::Trailers { stream, status, message }),
        4 => (stream(), 0usize..400, proptest::option::of(any::<u8>()), any::<bool>())
            .prop_map(|(stream, len, pad, eos)| Op::Data { stream, len, pad, eos }),
        2 => (any::<bool>(), any::<[u8; 8]>()).prop_map(|(ack, o)| Op::Ping(ack, o)),
        2 => (0u32..9, 1u32..0x7fff_ffff).prop_map(|(s, i)| Op::WindowUpdate(s, i)),
        1 => (stream(), 0u32..20).prop_map(|(s, c)| Op::Rst(s, c)),
        1 => proptest::collection::vec((0u16..10, any::<u32>()), 0..6).prop_map(Op::Settings),
        1 => Just(Op::SettingsAck),
        1 => (any::<u32>(), 0u32..20, proptest::collection::vec(any::<u8>(), 0..30))
            .prop_map(|(l, c, d)| Op::GoAway(l, c, d)),
        1 => (10u8.., proptest::collection::vec(any::<u8>(), 0..30)).prop_map(|(t, p)| Op::Unknown(t, p)),
    ]
}

fn build(direction: Direction, ops: &[Op]) -> Vec<u8> {
    let mut w = match direction {
        Direction::ClientToServer => Wire::client(),
        Direction::ServerToClient => Wire::server(),
    };
    for op in ops {
        w = match op.clone() {
            Op::Headers {
                stream,
                path,
                timeout,
                split,
                pad,
                eos,
            } => {
                let mut h = headers(stream)
                    .request("POST", PATHS[path])
                    .field("date", "Thu, 01 Jan 1970");
                if let Some(t) = timeout {
                    h = h.field("grpc-timeout", &format!("{t}m"));
                }
                if let Some(n) = split {
                    h = h.split(n);
                }
                if let Some(p) = pad {
                    h = h.padded(p);
                }
                w.headers(if eos { h.eos() } else { h })
            }
            Op::Trailers {
                stream,
                status,
                message,
            } => w.headers(headers(stream).grpc_status(status, &message).eos()),
            Op::Data {
                stream,
                len,
                pad: Some(p),
                eos,
            } => w.padded_data(stream, len, p, eos),
            Op::Data {
                stream,
                len,
                pad: None,
                eos,
            } => w.data(stream, len, eos),
            Op::Ping(ack, o) => w.ping(ack, o),
            Op::WindowUpdate(s, i) => w.window_update(s, i),
            Op::Rst(s, c) => w.rst(s, ErrorCode::from(c)),
            Op::Settings(v) => {
                let v: Vec<(SettingId, u32)> = v
                    .into_iter()
                    .map(|(i, x)| (SettingId::from(i), x))
                    .collect();
                w.settings(&v)
            }
            Op::SettingsAck => w.settings_ack(),
            Op::GoAway(l, c, d) => w.goaway(l, ErrorCode::from(c), &d),
            Op::Unknown(t, p) => w.frame(T::Unknown(t), 0, 1, &p),
        };
    }
    w.into_bytes()
}

fn direction() -> impl Strategy<Value = Direction> {
    prop_oneof![
        Just(Direction::ClientToServer),
        Just(Direction::ServerToClient)
    ]
}

/// Feeds `bytes` cut into pieces of the given sizes, cycled; a 0 is an
/// empty feed. With no non-zero size, everything goes in one feed.
fn feed_chunked(mut dec: Decoder, bytes: &[u8], cuts: &[usize]) -> (Vec<Event>, Decoder) {
    let mut out = Vec::new();
    if cuts.iter().all(|&c| c == 0) {
        dec.feed(bytes, &mut out);
        return (out, dec);
    }
    let mut rest = bytes;
    for &cut in cuts.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let n = cut.min(rest.len());
        dec.feed(&rest[..n], &mut out);
        rest = &rest[n..];
    }
    (out, dec)
}

/// Every octet fed is covered by exactly one event, opaque, or pending, and
/// events tile the stream in order.
fn check_accounting(events: &[Event], dec: &Decoder) -> Result<(), TestCaseError> {
    let mut at = 0u64;
    let mut opaque_from = None;
    for e in events {
        prop_assert!(
            opaque_from.is_none(),
            "event after a fatal Malformed: {e:?}"
        );
        prop_assert_eq!(
            e.offset(),
            at,
            "event does not start where the previous ended: {:?}",
            e
        );
        match e.wire_len() {
            Some(n) => at += n,
            None => opaque_from = Some(at),
        }
    }
    let covered = at;
    prop_assert_eq!(
        covered + dec.opaque_bytes() + dec.pending_bytes(),
        dec.bytes_fed()
    );
    // `finish` also makes the decoder opaque, without an event.
    prop_assert!(opaque_from.is_none() || dec.is_opaque());
    Ok(())
}

fn valid_prefix(direction: Direction) -> Vec<u8> {
    match direction {
        Direction::ClientToServer => Wire::client().into_bytes(),
        Direction::ServerToClient => Wire::server().into_bytes(),
    }
}

proptest! {
    /// (1) A recorded-looking stream gives the same events however it is cut.
    #[test]
    fn chunking_does_not_matter(
        direction in direction(),
        ops in proptest::collection::vec(op(), 1..40),
        cuts in proptest::collection::vec(0usize..80, 1..50),
    ) {
        let bytes = build(direction, &ops);
        let (whole, dec) = feed_chunked(Decoder::new(direction), &bytes, &[]);
        prop_assert!(whole.iter().all(|e| !matches!(e, Event::Malformed { .. })), "{whole:#?}");
        prop_assert_eq!(dec.pending_bytes(), 0);
        check_accounting(&whole, &dec)?;
        let (chunked, dec) = feed_chunked(Decoder::new(direction), &bytes, &cuts);
        prop_assert_eq!(&chunked, &whole);
        check_accounting(&chunked, &dec)?;
    }

    /// (1b) The recorded h2 exchange, cut anywhere, decodes the same.
    #[test]
    fn recorded_h2_chunking_does_not_matter(
        server in any::<bool>(),
        cuts in proptest::collection::vec(0usize..200, 1..40),
    ) {
        let (direction, hex) = if server {
            (Direction::ServerToClient, H2_S2C)
        } else {
            (Direction::ClientToServer, H2_C2S)
        };
        let bytes = unhex(hex);
        let (whole, _) = feed_chunked(Decoder::new(direction), &bytes, &[]);
        let (chunked, dec) = feed_chunked(Decoder::new(direction), &bytes, &cuts);
        prop_assert_eq!(&chunked, &whole);
        check_accounting(&chunked, &dec)?;
        prop_assert_eq!(dec.pending_bytes(), 0);
    }

    /// (2) Arbitrary octets, with or without a valid start, never panic and
    /// are all accounted for, before and after `finish`.
    #[test]
    fn arbitrary_bytes_are_accounted_for(
        direction in direction(),
        prefixed in any::<bool>(),
        noise in proptest::collection::vec(any::<u8>(), 0..2048),
        cuts in proptest::collection::vec(0usize..300, 1..20),
    ) {
        let mut bytes = if prefixed { valid_prefix(direction) } else { Vec::new() };
        bytes.extend_from_slice(&noise);
        let (mut events, mut dec) = feed_chunked(Decoder::new(direction), &bytes, &cuts);
        check_accounting(&events, &dec)?;
        dec.finish(&mut events);
        check_accounting(&events, &dec)?;
        prop_assert_eq!(dec.pending_bytes(), 0);
    }

    /// (2b) Frame-shaped noise: valid headers with random types, flags,
    /// stream ids and payloads reach every frame parser, not only the first.
    #[test]
    fn frame_shaped_noise_is_accounted_for(
        direction in direction(),
        frames in proptest::collection::vec(
            (0u8..12, any::<u8>(), prop_oneof![Just(0u32), 1u32..9, any::<u32>()], proptest::collection::vec(any::<u8>(), 0..40)),
            0..30),
        cuts in proptest::collection::vec(1usize..100, 1..10),
    ) {
        let mut w = Wire::bare().raw(&valid_prefix(direction));
        for (ty, flags, stream, payload) in &frames {
            w = w.frame(FrameType::from(*ty), *flags, *stream, payload);
        }
        let bytes = w.into_bytes();
        let (whole, _) = feed_chunked(Decoder::new(direction), &bytes, &[]);
        let (mut events, mut dec) = feed_chunked(Decoder::new(direction), &bytes, &cuts);
        prop_assert_eq!(&events, &whole);
        check_accounting(&events, &dec)?;
        dec.finish(&mut events);
        check_accounting(&events, &dec)?;
    }

    /// (3a) A stream cut short: `finish` reports the partial frame once.
    #[test]
    fn truncated_stream_is_reported_by_finish(
        direction in direction(),
        ops in proptest::collection::vec(op(), 1..20),
        cut in any::<proptest::sample::Index>(),
    ) {
        let bytes = build(direction, &ops);
        let end = cut.index(bytes.len());
        let (mut events, mut dec) = feed_chunked(Decoder::new(direction), &bytes[..end], &[]);
        let pending = dec.pending_bytes();
        dec.finish(&mut events);
        check_accounting(&events, &dec)?;
        let bad: Vec<&Event> = events.iter().filter(|e| matches!(e, Event::Malformed { .. })).collect();
        if pending == 0 {
            prop_assert!(bad.is_empty());
        } else {
            prop_assert_eq!(bad.len(), 1);
            prop_assert_eq!(bad[0].wire_len(), Some(pending));
        }
    }

    /// (3b) A length over the limit is fatal at that frame.
    #[test]
    fn oversized_length_is_fatal(
        direction in direction(),
        ops in proptest::collection::vec(op(), 0..10),
        len in 16_385u32..(1 << 24),
        ty in any::<u8>(),
        tail in proptest::collection::vec(any::<u8>(), 0..500),
    ) {
        let mut bytes = build(direction, &ops);
        let at = bytes.len() as u64;
        bytes.extend_from_slice(&len.to_be_bytes()[1..]);
        bytes.extend_from_slice(&[ty, 0, 0, 0, 0, 1]);
        bytes.extend_from_slice(&tail);
        let limits = Limits { max_frame_size: 16_384, ..Limits::default() };
        let (events, dec) = feed_chunked(Decoder::with_limits(direction, limits), &bytes, &[]);
        check_accounting(&events, &dec)?;
        let last = events.last();
        let fatal = matches!(last, Some(Event::Malformed { len: None, .. }));
        prop_assert!(fatal, "{:?}", last);
        // The block before it may have been pending only if it was incomplete,
        // which `build` never produces.
        prop_assert_eq!(last.map(Event::offset), Some(at));
        prop_assert_eq!(dec.opaque_bytes(), 9 + tail.len() as u64);
    }

    /// (3c) Invalid HPACK is a fatal COMPRESSION_ERROR, never a panic.
    #[test]
    fn invalid_hpack_is_fatal(
        ops in proptest::collection::vec(op(), 0..10),
        bad in prop_oneof![
            Just(vec![0xff, 0xff, 0xff, 0x7f]),             // index far beyond both tables
            Just(vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), // integer too long
            Just(vec![0x00, 0x84, 0xff, 0xff, 0xff, 0xff]), // Huffman string holding EOS
            Just(vec![0x3f, 0xff, 0xff, 0xff, 0x7f]),       // table size update far over the cap
            Just(vec![0x00, 0x7f, 0x10]),                   // string longer than the block
            Just(vec![0x82, 0x20]),                         // size update after a field (RFC 7541 §4.2)
        ],
        tail in proptest::collection::vec(any::<u8>(), 0..40),
        split in proptest::option::of(1usize..8),
    ) {
        let direction = Direction::ClientToServer;
        // Bytes after the bad representation change nothing.
        let mut block = bad.clone();
        block.extend_from_slice(&tail);
        let mut h = headers(99).raw_block(&block);
        if let Some(n) = split {
            h = h.split(n);
        }
        let mut bytes = build(direction, &ops);
        let at = bytes.len() as u64;
        bytes.extend(Wire::bare().headers(h).ping(false, [0; 8]).into_bytes());
        let (events, dec) = feed_chunked(Decoder::new(direction), &bytes, &[]);
        check_accounting(&events, &dec)?;
        match events.last() {
            Some(Event::Malformed { offset, len: None, reason }) => {
                prop_assert_eq!(*offset, at);
                prop_assert!(reason.contains("COMPRESSION_ERROR"), "{}", reason);
            }
            other => prop_assert!(false, "expected a fatal Malformed, got {:?}", other),
        }
    }

    /// (3d) Random field blocks decode or fail cleanly.
    #[test]
    fn random_field_blocks_never_panic(
        direction in direction(),
        blocks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..6),
    ) {
        let mut w = Wire::bare().raw(&valid_prefix(direction));
        for (i, b) in blocks.iter().enumerate() {
            w = w.headers(headers(2 * i as u32 + 1).raw_block(b));
        }
        let bytes = w.into_bytes();
        let (events, dec) = feed_chunked(Decoder::new(direction), &bytes, &[]);
        check_accounting(&events, &dec)?;
    }
}

#[test]
fn preface_constant_is_the_rfc_one() {
    assert_eq!(PREFACE, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
}
