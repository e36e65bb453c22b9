//! The fuzz targets' seeds, `fuzz/seeds/<target>/`: made here, each in its
//! target's input format, from the recorded h2 0.4.20 exchange
//! (`wire/fixtures/`, real tonic-shaped calls), the harness's encoders
//! (`wire::encode`, and the tests' `Wire`, whose field blocks loona-hpack
//! encodes) and the Huffman-coded examples of RFC 7541 Appendix C.
//! `ci/fuzz.sh` runs each target over a copy of its seeds.
//!
//! - `frame_decoder` (`fuzz/fuzz_targets/frame_decoder.rs`): a control
//!   octet (bit 0: the direction, 0 client→server; the rest: the chunk
//!   size, at least 1), then the octets of one direction.
//! - `header_block` (`fuzz/fuzz_targets/header_block.rs`): where the block
//!   is cut into a CONTINUATION (0: not cut), then the field block.
//! - `tap` (`fuzzing::run`): flags, up to 4 frame faults, then steps.
//!
//! `seeds_are_current` fails when the committed files are not what is
//! made here; `GRPC_CHAOS_WRITE_SEEDS=1 cargo test -p grpc-chaos --lib --
//! fuzz_seeds` writes them (the folders then hold exactly these files;
//! not when `CI` is set).
//! `each_seed_reaches_what_it_was_made_for` checks that each seed is what
//! its name says: a well-formed one decodes without a malformed event, a
//! tap seed makes the fates it was made for.

#![cfg(test)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::fuzzing::{run, Summary};
use crate::recorder::event::Fate;
use crate::wire::encode;
use crate::wire::frame::{flags, PREFACE};
use crate::wire::testing::{headers, unhex, Wire, H2_C2S, H2_S2C};
use crate::wire::{Decoder, Detail, Direction, ErrorCode, Event, FrameType, SettingId, DATE_MASK};

const TARGETS: [&str; 3] = ["frame_decoder", "header_block", "tap"];

/// What a seed must do, checked by `each_seed_reaches_what_it_was_made_for`.
enum Expect {
    /// Decodes without a `Malformed` event (`true`) or with one.
    WellFormed(bool),
    /// A header block that decodes to these fields, in order, each time.
    Fields(&'static [(&'static str, &'static str)]),
    /// The tap's run passes its checks and this holds of what it recorded.
    Tap(fn(&Summary) -> bool),
}

struct Seed {
    target: &'static str,
    name: &'static str,
    bytes: Vec<u8>,
    expect: Expect,
}

/// Every seed, in a fixed order.
fn seeds() -> Vec<Seed> {
    let mut all = frame_decoder_seeds();
    all.extend(header_block_seeds());
    all.extend(tap_seeds());
    all
}

// ---- The recorded exchange ----

/// The recorded octets of one direction: client→server starts with the
/// preface.
fn recorded(direction: Direction) -> Vec<u8> {
    unhex(match direction {
        Direction::ClientToServer => H2_C2S,
        Direction::ServerToClient => H2_S2C,
    })
}

/// The frames of one recorded direction, each with its 9-octet header;
/// client→server's first carries the preface in front of it.
fn recorded_frames(direction: Direction) -> Vec<Vec<u8>> {
    let bytes = recorded(direction);
    let mut rest = &bytes[..];
    let mut preface: &[u8] = &[];
    if direction == Direction::ClientToServer {
        (preface, rest) = rest.split_at(PREFACE.len());
    }
    let mut out = Vec::new();
    while rest.len() >= 9 {
        let len = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
        let (frame, tail) = rest.split_at(9 + len);
        out.push(frame.to_vec());
        rest = tail;
    }
    assert!(rest.is_empty(), "the recording is whole frames");
    out[0].splice(0..0, preface.iter().copied());
    out
}

/// A frame's type and flags (its preface, if any, skipped).
fn kind(frame: &[u8]) -> (FrameType, u8) {
    let f = frame.strip_prefix(&PREFACE[..]).unwrap_or(frame);
    (FrameType::from(f[3]), f[4])
}

/// `frame` with a DATA payload of more than 64 octets (the recording's two
/// 1 kB messages) replaced by one 11-octet gRPC message, flags kept: the
/// same conversation in fewer octets.
fn shortened(frame: &[u8]) -> Vec<u8> {
    let (ty, fl) = kind(frame);
    if ty != FrameType::Data || frame.len() <= 9 + 64 {
        return frame.to_vec();
    }
    let stream = u32::from_be_bytes([frame[5], frame[6], frame[7], frame[8]]);
    encode::frame(ty, fl, stream, &encode::grpc_message(b"shortened!!"))
}

/// The field blocks of one recorded direction's HEADERS frames (the
/// recording has no CONTINUATION, padding or priority).
fn recorded_blocks(direction: Direction) -> Vec<Vec<u8>> {
    recorded_frames(direction)
        .iter()
        .filter(|f| kind(f).0 == FrameType::Headers)
        .map(|f| {
            let f = f.strip_prefix(&PREFACE[..]).unwrap_or(f);
            assert_eq!(f[4] & (flags::PADDED | flags::PRIORITY), 0);
            f[9..].to_vec()
        })
        .collect()
}

// ---- frame_decoder ----

/// A `frame_decoder` input: `bytes` in `direction`, fed `chunk` octets at a
/// time (1 to 127).
fn decoder_input(direction: Direction, chunk: u8, bytes: &[u8]) -> Vec<u8> {
    let mut out = vec![(chunk << 1) | u8::from(direction == Direction::ServerToClient)];
    out.extend_from_slice(bytes);
    out
}

fn frame_decoder_seeds() -> Vec<Seed> {
    use Direction::{ClientToServer as C2S, ServerToClient as S2C};
    let short = |d| {
        recorded_frames(d)
            .iter()
            .flat_map(|f| shortened(f))
            .collect::<Vec<_>>()
    };
    let request = |stream| headers(stream).request("POST", "/tt.v1.Store/Save");
    let message = |text: &[u8], eos| encode::data(1, &encode::grpc_message(text), eos);
    // The second message's prefix is cut between two frames (a message
    // may span DATA frames, gRPC's PROTOCOL-HTTP2.md).
    let mut two_messages = encode::grpc_message(b"one");
    two_messages.extend(encode::grpc_message(b"two"));
    let (two_a, two_b) = two_messages.split_at(10);
    let every_setting = [
        (SettingId::HeaderTableSize, 0),
        (SettingId::EnablePush, 0),
        (SettingId::MaxConcurrentStreams, 100),
        (SettingId::InitialWindowSize, 1 << 20),
        (SettingId::MaxFrameSize, 1 << 15),
        (SettingId::MaxHeaderListSize, 16 << 10),
        (SettingId::EnableConnectProtocol, 1),
        (SettingId::Unknown(0xf0), 7),
    ];
    let trailers = headers(1).grpc_status(0, "").eos();
    let mut push = vec![0, 0, 0, 2];
    push.extend(encode::hpack_literal(&[(":method", "GET"), (":path", "/")]));
    let mut oversized = encode::frame(FrameType::Data, 0, 1, b"0123");
    oversized[..3].copy_from_slice(&[0xff, 0xff, 0xff]);
    let mut cut_short = Wire::client().headers(request(1)).into_bytes();
    cut_short.truncate(cut_short.len() - 20);
    // An input libFuzzer once saved as a crash of this target, while the
    // targets were being written (`crash-f78613b0…`, its SHA-1): SETTINGS
    // on stream 0x180000, an undefined frame type 0x26, 194 zero octets and
    // a cut field block. It has not crashed since (release fuzz build and
    // debug, 2026-12-03); kept so every fuzz run starts from it.
    let mut old_crash = unhex("00000004000018000000002600a903000000260000030000000000000403");
    old_crash.resize(old_crash.len() + 194, 0);
    old_crash.extend(unhex("2f0200073a6d657468010b737400000000000101000007"));

    #[rustfmt::skip]
    let list: Vec<(&str, Direction, u8, Vec<u8>, bool)> = vec![
        // The recording as it is, and with its two large messages shortened
        // fed an octet at a time.
        ("recorded-c2s", C2S, 7, recorded(C2S), true),
        ("recorded-s2c", S2C, 7, recorded(S2C), true),
        ("recorded-c2s-shortened-by-octet", C2S, 1, short(C2S), true),
        ("recorded-s2c-shortened-by-octet", S2C, 1, short(S2C), true),
        // Made with the harness's encoders, client side.
        ("c2s-unary", C2S, 9, Wire::client().settings_ack().window_update(0, 983_041)
            .headers(request(1).field("grpc-timeout", "500m")).raw(&message(b"hello", true))
            .ping(false, [1, 2, 3, 4, 5, 6, 7, 8]).goaway(0, ErrorCode::NoError, b"").into_bytes(), true),
        ("c2s-continuations", C2S, 13, Wire::client()
            .headers(request(1).field("x-trace-bin", "AAECAw").split(7).eos()).into_bytes(), true),
        ("c2s-padded-priority", C2S, 16, Wire::client().headers(request(1).padded(4).priority())
            .padded_data(1, 12, 3, true).into_bytes(), true),
        ("c2s-every-setting", C2S, 5, Wire::client().settings(&every_setting).settings_ack()
            .into_bytes(), true),
        ("c2s-streaming", C2S, 11, Wire::client().headers(request(1))
            .raw(&encode::data(1, two_a, false)).raw(&encode::data(1, two_b, false))
            .window_update(1, 65_535).raw(&message(b"", true)).into_bytes(), true),
        ("c2s-cancel", C2S, 3, Wire::client().headers(request(1)).rst(1, ErrorCode::Cancel)
            .headers(request(3)).rst(3, ErrorCode::Unknown(0x77)).into_bytes(), true),
        ("c2s-goaway-debug", C2S, 30, Wire::client()
            .goaway(7, ErrorCode::EnhanceYourCalm, b"too_many_pings").into_bytes(), true),
        ("c2s-priority-and-unknown", C2S, 8, Wire::client()
            .frame(FrameType::Priority, 0, 1, &[0x80, 0, 0, 3, 15])
            .frame(FrameType::Unknown(0xb), 0xff, 0, b"extension").into_bytes(), true),
        // Malformed on purpose.
        ("c2s-not-a-preface", C2S, 6, b"GET / HTTP/1.1\r\nhost: store\r\n\r\n".to_vec(), false),
        ("c2s-oversized-frame", C2S, 127, Wire::client().raw(&oversized).into_bytes(), false),
        ("c2s-hpack-index-0", C2S, 9, Wire::client()
            .headers(headers(1).raw_block(&[0x80])).into_bytes(), false),
        ("c2s-data-on-stream-0", C2S, 9, Wire::client()
            .raw(&encode::frame(FrameType::Data, 0, 0, b"x")).into_bytes(), false),
        ("c2s-ends-mid-frame", C2S, 4, cut_short, false),
        // The fuzzer's find of 2026-12-04 (`crash-e24d2237…`): octet 22 (a
        // TLS handshake record's content type) then not 3, fed an octet at
        // a time, was named TLS, and fed whole, not.
        ("c2s-tls-type-then-not-tls", C2S, 1, b"\x16LT'1\n\x01TTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(), false),
        ("c2s-tls-client-hello", C2S, 1, vec![0x16, 0x03, 0x01, 0x00, 0xf4, 0x01, 0x00, 0x00], false),
        // Server side.
        ("s2c-unary", S2C, 9, Wire::server().settings_ack()
            .headers(headers(1).response("Tue, 01 Apr 2025 10:00:00 GMT"))
            .raw(&message(b"world", false)).headers(trailers).into_bytes(), true),
        ("s2c-trailers-only", S2C, 17, Wire::server().headers(headers(3).field(":status", "200")
            .field("content-type", "application/grpc").grpc_status(4, "Timeout%20expired").eos())
            .into_bytes(), true),
        ("s2c-push-promise", S2C, 9, Wire::server()
            .frame(FrameType::PushPromise, flags::END_HEADERS, 1, &push).into_bytes(), true),
        ("s2c-graceful-shutdown", S2C, 12, Wire::server().goaway(0x7fff_ffff, ErrorCode::NoError, b"")
            .ping(false, [9; 8]).ping(true, [1; 8]).goaway(1, ErrorCode::NoError, b"").into_bytes(), true),
        ("s2c-refused", S2C, 2, Wire::server().settings(&[(SettingId::MaxConcurrentStreams, 0)])
            .rst(1, ErrorCode::RefusedStream).into_bytes(), true),
        ("s2c-a-client-preface", S2C, 9, Wire::client().into_bytes(), false),
        ("s2c-old-crash-f78613", S2C, 2, old_crash, false),
    ];
    list.into_iter()
        .map(|(name, d, chunk, bytes, ok)| Seed {
            target: "frame_decoder",
            name,
            bytes: decoder_input(d, chunk, &bytes),
            expect: Expect::WellFormed(ok),
        })
        .collect()
}

// ---- header_block ----

/// RFC 7541 C.4.1–C.4.3: three requests, Huffman-coded, one table.
const RFC7541_C4: [&[u8]; 3] = [
    &[
        0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90,
        0xf4, 0xff,
    ],
    &[
        0x82, 0x86, 0x84, 0xbe, 0x58, 0x86, 0xa8, 0xeb, 0x10, 0x64, 0x9c, 0xbf,
    ],
    &[
        0x82, 0x87, 0x85, 0xbf, 0x40, 0x88, 0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f, 0x89,
        0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf,
    ],
];

/// The RFC's decoded fields for C.4.1 to C.4.3 as one block.
const RFC7541_C4_FIELDS: &[(&str, &str)] = &[
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    (":method", "GET"),
    (":scheme", "http"),
    (":path", "/"),
    (":authority", "www.example.com"),
    ("cache-control", "no-cache"),
    (":method", "GET"),
    (":scheme", "https"),
    (":path", "/index.html"),
    (":authority", "www.example.com"),
    ("custom-key", "custom-value"),
];

/// A `header_block` input: `block`, cut after `cut` octets (0: not cut).
fn block_input(cut: u8, block: &[u8]) -> Vec<u8> {
    let mut out = vec![cut];
    out.extend_from_slice(block);
    out
}

/// `fields` as a fresh loona-hpack encoder writes them (literals with
/// incremental indexing where the static table has no entry).
fn loona(fields: &[(&str, &str)]) -> Vec<u8> {
    loona_hpack::Encoder::new().encode(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
}

fn header_block_seeds() -> Vec<Seed> {
    use Expect::{Fields, WellFormed};
    const REQUEST: &[(&str, &str)] = &[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/tt.v1.Store/Save"),
        (":authority", "store:50051"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("grpc-timeout", "500m"),
    ];
    const RESPONSE: &[(&str, &str)] = &[
        (":status", "200"),
        ("content-type", "application/grpc"),
        ("date", "Tue, 01 Apr 2025 10:00:00 GMT"),
    ];
    // The decoder masks the wall-clock `date` (`wire::DATE_MASK`).
    const RESPONSE_DECODED: &[(&str, &str)] = &[
        (":status", "200"),
        ("content-type", "application/grpc"),
        ("date", DATE_MASK),
    ];
    const TRAILERS_ONLY: &[(&str, &str)] = &[
        (":status", "200"),
        ("content-type", "application/grpc"),
        ("grpc-status", "4"),
        ("grpc-message", "Timeout%20expired"),
    ];
    const METADATA: &[(&str, &str)] = &[
        (":method", "POST"),
        (":path", "/tt.v1.Store/Save"),
        ("x-request-id", "7f3a0c"),
        ("x-trace-bin", "AAECAwQFBgc"),
        ("grpc-encoding", "identity"),
    ];
    let c2s = recorded_blocks(Direction::ClientToServer);
    let s2c = recorded_blocks(Direction::ServerToClient);
    let long_value = "v".repeat(300);
    let mut evicting = vec![0x21]; // table size 1: nothing fits
    evicting.extend(loona(&[("x-a", "b")]));
    evicting.push(0xbe);
    #[rustfmt::skip]
    let list: Vec<(&str, u8, Vec<u8>, Expect)> = vec![
        // What h2 sent (Huffman, indexing): the first request and response
        // on their own, and each direction's blocks run together, which is
        // one block that refers to its own earlier entries.
        ("recorded-request", 0, c2s[0].clone(), WellFormed(true)),
        ("recorded-requests", 40, c2s.concat(), WellFormed(true)),
        ("recorded-response", 0, s2c[0].clone(), WellFormed(true)),
        ("recorded-responses", 9, s2c.concat(), WellFormed(true)),
        // A later block alone refers to entries its table lacks.
        ("recorded-second-request-alone", 0, c2s[1].clone(), WellFormed(false)),
        ("rfc7541-c4-requests", 0, RFC7541_C4.concat(), Fields(RFC7541_C4_FIELDS)),
        ("rfc7541-c4-1-cut", 5, RFC7541_C4[0].to_vec(), Fields(&RFC7541_C4_FIELDS[..4])),
        ("loona-request", 0, loona(REQUEST), Fields(REQUEST)),
        ("loona-request-cut", 3, loona(REQUEST), Fields(REQUEST)),
        ("loona-response", 0, loona(RESPONSE), Fields(RESPONSE_DECODED)),
        ("loona-trailers-only", 11, loona(TRAILERS_ONLY), Fields(TRAILERS_ONLY)),
        ("loona-metadata", 0, loona(METADATA), Fields(METADATA)),
        ("literal-request", 0, encode::hpack_literal(REQUEST), Fields(REQUEST)),
        ("literal-trailers", 2, encode::hpack_literal(&[("grpc-status", "0")]),
            Fields(&[("grpc-status", "0")])),
        ("literal-long-value", 0, encode::hpack_literal(&[("x-long", &long_value)]),
            WellFormed(true)),
        ("size-update-then-indexed", 0, vec![0x3f, 0xe1, 0x1f, 0x82], Fields(&[(":method", "GET")])),
        ("empty", 0, vec![], Fields(&[])),
        // Malformed on purpose (RFC 7541 §4.2, §5.1, §6.1, §5.2).
        ("index-0", 0, vec![0x80], WellFormed(false)),
        ("index-past-the-table", 0, vec![0x82, 0xc0], WellFormed(false)),
        ("size-update-after-a-field", 0, vec![0x82, 0x20], WellFormed(false)),
        ("size-update-evicts-then-indexed", 0, evicting, WellFormed(false)),
        ("integer-too-long", 0, vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f], WellFormed(false)),
        ("name-past-the-end", 0, vec![0x40, 12, b'x', b'-'], WellFormed(false)),
        ("value-missing", 0, vec![0x00, 1, b'a'], WellFormed(false)),
        ("huffman-eos", 0, vec![0x00, 0x81, 0x61, 0x84, 0xff, 0xff, 0xff, 0xff], WellFormed(false)),
    ];
    list.into_iter()
        .map(|(name, cut, block, expect)| Seed {
            target: "header_block",
            name,
            bytes: block_input(cut, &block),
            expect,
        })
        .collect()
}

/// The octets `fuzz/fuzz_targets/header_block.rs` builds from its input:
/// a client's start, then the block on streams 1 and 3, cut at `cut`.
fn header_block_wire(cut: u8, block: &[u8]) -> Vec<u8> {
    let mut wire = PREFACE.to_vec();
    wire.extend(encode::settings(&[]));
    for stream in [1, 3] {
        let cut = usize::from(cut);
        if cut == 0 || cut >= block.len() {
            wire.extend(encode::headers(stream, block, true, true));
        } else {
            let (first, rest) = block.split_at(cut);
            wire.extend(encode::headers(stream, first, true, false));
            wire.extend(encode::continuation(stream, rest, true));
        }
    }
    wire
}

// ---- tap ----

/// Input steps that write `bytes` on `side` (0: client→server), `chunk`
/// octets (at most 255) a write.
fn writes(side: u8, bytes: &[u8], chunk: usize) -> Vec<u8> {
    let mut ops = Vec::new();
    for piece in bytes.chunks(chunk.min(255)) {
        ops.extend([side, piece.len() as u8]);
        ops.extend_from_slice(piece);
    }
    ops
}

/// The recorded exchange, shortened, as steps: one frame of each side in
/// turn, each in one write; `between` after every client frame.
fn exchange(between: &[u8]) -> Vec<u8> {
    let c2s = recorded_frames(Direction::ClientToServer);
    let s2c = recorded_frames(Direction::ServerToClient);
    let mut ops = Vec::new();
    for i in 0..c2s.len().max(s2c.len()) {
        if let Some(f) = c2s.get(i) {
            ops.extend(writes(0, &shortened(f), 255));
            ops.extend_from_slice(between);
        }
        if let Some(f) = s2c.get(i) {
            ops.extend(writes(1, &shortened(f), 255));
        }
    }
    ops
}

/// The step that moves the clock on by `ms` (even, at most 510)
/// simulated milliseconds.
fn advance(ms: u16) -> [u8; 2] {
    [2, (ms / 2) as u8]
}

/// The step that releases hold "a" (0) or "b" (1).
fn release(hold: u8) -> u8 {
    3 | (hold << 2)
}

/// Frame fault filters (`fuzzing::faults`): a kind (`on`), or any
/// (`ANY`); from either host, or only `PLAYER` (the client) or `STORE`
/// (the server); `NTH` (the arg's `% 4 + 1`-th match), `ACK` (the arg's
/// 0x10 bit).
fn on(kind: FrameType, filter: u8) -> u8 {
    kind.code() | filter
}
const ANY: u8 = 0x0f;
const PLAYER: u8 = 0x10;
const STORE: u8 = 0x20;
const NTH: u8 = 0x40;
const ACK: u8 = 0x80;

/// Actions: drop, delay or hold until the arg × 5 ms, hold "a" (`| HOLD_B`:
/// "b"), or a script of `n` verdicts (`script(n)`), read after the rule
/// with `arg % 24` octets of junk after them.
const DROP: u8 = 0;
const DELAY: u8 = 1;
const HOLD_UNTIL: u8 = 2;
const HOLD: u8 = 3;
const HOLD_B: u8 = 0x80;
fn script(n: u8) -> u8 {
    4 | ((n - 1) << 3)
}

/// Script verdicts (`fuzzing::Script`): the low 3 bits pick it, the rest is
/// its argument.
const PASS: u8 = 0;
const V_DROP: u8 = 1;
fn v_delay(arg: u8) -> u8 {
    2 | (arg << 3)
}
fn v_hold_until(arg: u8) -> u8 {
    3 | (arg << 3)
}
const V_HOLD: u8 = 4;
const V_EMPTY: u8 = 5;
/// One octet flipped (even arg) or the frame cut short (odd).
fn v_mangle(arg: u8) -> u8 {
    6 | (arg << 3)
}
/// A PING (arg bit 0 clear) or the junk (set), the frame after it if bit
/// 2 is set.
fn v_insert(arg: u8) -> u8 {
    7 | (arg << 3)
}

/// Flags: a valid client start, a valid server start, the socket gone at
/// the end.
const START_C2S: u8 = 1;
const START_S2C: u8 = 2;
const GONE: u8 = 4;

/// A `tap` input: flags, the rules (each its filter, arg, action and what
/// a script reads), then the steps.
fn tap_input(flags: u8, rules: &[&[u8]], steps: &[u8]) -> Vec<u8> {
    let mut out = vec![flags, rules.len() as u8];
    for rule in rules {
        out.extend_from_slice(rule);
    }
    out.extend_from_slice(steps);
    out
}

fn count(s: &Summary, side: usize, f: fn(&Fate) -> bool) -> usize {
    s.fates[side].iter().filter(|x| f(x)).count()
}
/// On both sides.
fn both(s: &Summary, f: fn(&Fate) -> bool) -> usize {
    count(s, 0, f) + count(s, 1, f)
}
fn passed(f: &Fate) -> bool {
    *f == Fate::Passed
}
fn dropped(f: &Fate) -> bool {
    *f == Fate::Dropped
}
fn delayed(f: &Fate) -> bool {
    matches!(f, Fate::Delayed { .. })
}
fn held(f: &Fate) -> bool {
    *f == Fate::Held
}
fn replaced(f: &Fate) -> bool {
    matches!(f, Fate::Replaced { .. })
}

/// A `tap` seed: its name, its octets, what its run must have recorded.
type TapSeed = (&'static str, Vec<u8>, fn(&Summary) -> bool);

fn tap_seeds() -> Vec<Seed> {
    let plain = exchange(&[]);
    let short = |d| {
        recorded_frames(d)
            .iter()
            .flat_map(|f| shortened(f))
            .collect::<Vec<_>>()
    };
    let (c2s, s2c) = (
        short(Direction::ClientToServer),
        short(Direction::ServerToClient),
    );
    let mut by_7 = writes(0, &c2s, 7);
    by_7.extend(writes(1, &s2c, 7));
    let mut by_3 = writes(0, &c2s, 3);
    by_3.extend(writes(1, &s2c, 3));
    // A request block cut into a HEADERS and two CONTINUATIONs.
    let mut continued = writes(0, &encode::headers(1, &block_a(), false, false), 255);
    continued.extend(writes(0, &encode::continuation(1, &block_b(), false), 255));
    continued.extend(writes(0, &encode::continuation(1, &block_c(), true), 255));
    continued.extend(writes(
        0,
        &encode::data(1, &encode::grpc_message(b"x"), true),
        255,
    ));
    continued.push(release(0));
    // Frames of the harness's own after a valid start on both sides.
    let mut own = writes(0, &encode::window_update(0, 1 << 20), 255);
    let block = encode::hpack_literal(&[(":method", "POST"), (":path", "/tt.v1.Store/Save")]);
    own.extend(writes(0, &encode::headers(1, &block, false, true), 255));
    own.extend(writes(
        0,
        &encode::data(1, &encode::grpc_message(b"hi"), true),
        255,
    ));
    own.extend(writes(1, &encode::ping(false, [3; 8]), 255));
    own.extend(writes(0, &encode::ping(true, [3; 8]), 255));
    own.extend(writes(1, &encode::rst_stream(1, ErrorCode::Cancel), 255));
    let mut garbage = writes(0, b"GET / HTTP/1.1\r\nhost: store\r\n\r\n", 255);
    garbage.extend(writes(1, b"HTTP/1.1 400 Bad Request\r\n\r\n", 255));
    let half = (plain.len() / 2..plain.len())
        .find(|&i| is_step_start(&plain, i))
        .unwrap_or(plain.len());
    let with_release = |hold| [&plain[..half], &[release(hold)], &plain[half..]].concat();
    let every_verdict = [
        PASS,
        V_DROP,
        v_delay(4),
        v_hold_until(4),
        V_HOLD,
        V_EMPTY,
        v_mangle(2),
        v_insert(0),
    ];
    let inserts = [v_insert(4), v_insert(1), v_insert(5), v_mangle(3)];
    let script_all: Vec<u8> = [&[ANY, 5, script(8)][..], &every_verdict, b"junk!"].concat();
    let script_inserts: Vec<u8> = [&[ANY, 12, script(4)][..], &inserts, b"not a frame!"].concat();
    let empty_headers: Vec<u8> = [&[on(T::Headers, PLAYER), 0, script(1)][..], &[V_EMPTY]].concat();

    use FrameType as T;
    #[rustfmt::skip]
    let list: Vec<TapSeed> = vec![
        ("exchange", tap_input(0, &[], &plain),
            |s| (0..2).all(|i| s.fates[i].len() >= 8 && count(s, i, passed) == s.fates[i].len())),
        ("exchange-by-7-octets", tap_input(0, &[], &by_7),
            |s| (0..2).all(|i| s.fates[i].len() >= 8 && count(s, i, passed) == s.fates[i].len())),
        ("own-frames", tap_input(START_C2S | START_S2C, &[], &own),
            |s| s.fates[0].len() == 5 && s.fates[1].len() == 3),
        ("not-http2", tap_input(0, &[], &garbage),
            |s| s.fates[0].is_empty() && s.fates[1].is_empty()),
        ("drop-data", tap_input(0, &[&[on(T::Data, 0), 0, DROP]], &plain),
            |s| count(s, 0, dropped) == 3 && count(s, 1, dropped) == 1),
        ("drop-the-second-request", tap_input(0, &[&[on(T::Headers, PLAYER | NTH), 1, DROP]], &plain),
            |s| count(s, 0, dropped) == 1 && count(s, 1, dropped) == 0),
        ("delay-headers", tap_input(0, &[&[on(T::Headers, 0), 20, DELAY]], &exchange(&advance(30))),
            |s| (0..2).all(|i| count(s, i, delayed) >= 2) && s.released.iter().all(|&r| r >= 2)),
        ("hold-pings-until", tap_input(0, &[&[on(T::Ping, 0), 200, HOLD_UNTIL]], &exchange(&advance(20))),
            |s| count(s, 0, delayed) >= 1 && count(s, 1, delayed) >= 1),
        ("delay-settings-acks", tap_input(0, &[&[on(T::Settings, ACK), 0x10 | 4, DELAY]], &plain),
            |s| (0..2).all(|i| count(s, i, delayed) == 1)),
        ("hold-window-updates", tap_input(0, &[&[on(T::WindowUpdate, 0), 0, HOLD]], &with_release(0)),
            |s| count(s, 0, held) >= 1 && s.released[0] >= 1),
        ("hold-the-server", tap_input(0, &[&[ANY | STORE, 0, HOLD | HOLD_B]], &with_release(1)),
            |s| count(s, 0, held) == 0 && count(s, 1, held) >= 1),
        ("script-every-verdict", tap_input(0, &[&script_all], &exchange(&advance(10))),
            |s| both(s, dropped) >= 1 && both(s, delayed) >= 1 && both(s, held) >= 1
                && both(s, replaced) >= 2),
        ("script-inserts", tap_input(0, &[&script_inserts], &plain),
            |s| (0..2).all(|i| count(s, i, replaced) >= 3)),
        ("drop-pings-not-acks", tap_input(0, &[&[on(T::Ping, ACK), 0, DROP]], &plain),
            |s| count(s, 0, dropped) == 1 && count(s, 1, dropped) == 1),
        ("delay-the-third-data", tap_input(0, &[&[on(T::Data, NTH), 42, DELAY]], &exchange(&advance(20))),
            |s| count(s, 0, delayed) == 1 && count(s, 1, delayed) == 0 && s.released[0] >= 1),
        ("delay-data-by-3-octets", tap_input(0, &[&[on(T::Data, 0), 2, DELAY]], &by_3),
            |s| count(s, 0, delayed) == 3 && count(s, 1, delayed) == 1),
        ("hold-continuations", tap_input(START_C2S, &[&[on(T::Continuation, 0), 0, HOLD]], &continued),
            |s| count(s, 0, held) == 2 && s.released[0] >= 2),
        ("socket-gone-while-delayed", tap_input(GONE, &[&[on(T::Headers, 0), 40, DELAY]], &plain),
            |s| s.undelivered[0] >= 1 && s.undelivered[1] >= 1),
        ("socket-gone-while-held", tap_input(GONE, &[&[on(T::Data, PLAYER), 0, HOLD]], &plain),
            |s| s.undelivered[0] >= 1 && s.undelivered[1] == 0),
        ("four-rules", tap_input(0, &[
                &[on(T::RstStream, 0), 0, DROP], &[on(T::Ping, 0), 10, DELAY],
                &[on(T::GoAway, 0), 60, HOLD_UNTIL], &empty_headers,
            ], &exchange(&[2, 5, release(0)])),
            |s| count(s, 0, dropped) == 1 && count(s, 0, replaced) == 3
                && (0..2).all(|i| count(s, i, delayed) >= 1)),
    ];
    list.into_iter()
        .map(|(name, bytes, check)| Seed {
            target: "tap",
            name,
            bytes,
            expect: Expect::Tap(check),
        })
        .collect()
}

/// A request's field block in three pieces (HPACK literals, `wire::encode`).
fn request_block() -> Vec<u8> {
    encode::hpack_literal(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/tt.v1.Store/Save"),
        (":authority", "store:50051"),
    ])
}
fn block_a() -> Vec<u8> {
    request_block()[..20].to_vec()
}
fn block_b() -> Vec<u8> {
    request_block()[20..40].to_vec()
}
fn block_c() -> Vec<u8> {
    request_block()[40..].to_vec()
}

/// Whether a step starts at `at` in `steps` (writes only).
fn is_step_start(steps: &[u8], at: usize) -> bool {
    let mut i = 0;
    while i < at {
        i += 2 + usize::from(steps[i + 1]);
    }
    i == at
}

// ---- The files ----

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds")
}

/// The committed files of `target`: name → octets.
fn committed(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .map(|e| {
            let path = e.expect("a directory entry").path();
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&path).expect("a readable seed"))
        })
        .collect()
}

#[test]
fn seeds_are_current() {
    // Never in CI: there the committed files are what is checked.
    let write = std::env::var_os("GRPC_CHAOS_WRITE_SEEDS").is_some_and(|v| v == "1")
        && std::env::var_os("CI").is_none();
    let all = seeds();
    let mut stale = Vec::new();
    for target in TARGETS {
        let dir = seeds_dir().join(target);
        let made: BTreeMap<String, Vec<u8>> = all
            .iter()
            .filter(|s| s.target == target)
            .map(|s| (s.name.to_owned(), s.bytes.clone()))
            .collect();
        assert!(made.len() >= 16, "{target}: {} seeds", made.len());
        let found = committed(&dir);
        if found == made {
            continue;
        }
        if !write {
            stale.push(target);
            continue;
        }
        std::fs::create_dir_all(&dir).expect("the seeds folder");
        for name in found.keys().filter(|n| !made.contains_key(*n)) {
            std::fs::remove_file(dir.join(name)).expect("an old seed removed");
        }
        for (name, bytes) in &made {
            std::fs::write(dir.join(name), bytes).expect("a seed written");
        }
    }
    assert!(
        stale.is_empty(),
        "fuzz/seeds/ differs from what harness/src/net/tap/fuzz_seeds.rs makes for {stale:?}; \
         write them with `GRPC_CHAOS_WRITE_SEEDS=1 cargo test -p grpc-chaos --lib -- fuzz_seeds`"
    );
}

/// Every event of `bytes` fed whole in `direction`, then its end.
fn decode_all(direction: Direction, bytes: &[u8]) -> Vec<Event> {
    let mut decoder = Decoder::new(direction);
    let mut events = Vec::new();
    decoder.feed(bytes, &mut events);
    decoder.finish(&mut events);
    events
}

fn malformed(events: &[Event]) -> Vec<&Event> {
    events
        .iter()
        .filter(|e| matches!(e, Event::Malformed { .. }))
        .collect()
}

#[test]
fn each_seed_reaches_what_it_was_made_for() {
    let mut wrong = Vec::new();
    for seed in seeds() {
        let name = format!("{}/{}", seed.target, seed.name);
        if let Err(why) = check(&seed) {
            wrong.push(format!("{name}: {why}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Whether `seed` does what it was made for; if not, what it did.
fn check(seed: &Seed) -> Result<(), String> {
    match (seed.target, &seed.expect) {
        ("frame_decoder", Expect::WellFormed(ok)) => {
            let direction = if seed.bytes[0] & 1 == 0 {
                Direction::ClientToServer
            } else {
                Direction::ServerToClient
            };
            let events = decode_all(direction, &seed.bytes[1..]);
            let frames = events
                .iter()
                .filter(|e| matches!(e, Event::Frame(_)))
                .count();
            let bad = malformed(&events);
            if bad.is_empty() != *ok || (*ok && frames < 2) {
                return Err(format!("{frames} frames, malformed: {bad:?}"));
            }
        }
        ("header_block", expect) => {
            let wire = header_block_wire(seed.bytes[0], &seed.bytes[1..]);
            let events = decode_all(Direction::ClientToServer, &wire);
            let bad = malformed(&events);
            let blocks: Vec<_> = events
                .iter()
                .filter_map(|e| match e {
                    Event::Frame(f) => match &f.detail {
                        Detail::Headers { block, .. } => Some(block.all().to_vec()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect();
            let fine = match expect {
                Expect::WellFormed(ok) => bad.is_empty() == *ok && (!ok || blocks.len() == 2),
                Expect::Fields(fields) => {
                    let want: Vec<_> = fields
                        .iter()
                        .map(|(n, v)| (n.to_string(), v.to_string()))
                        .collect();
                    bad.is_empty() && blocks == [want.clone(), want]
                }
                Expect::Tap(_) => false,
            };
            if !fine {
                return Err(format!("blocks {blocks:?}, malformed: {bad:?}"));
            }
        }
        ("tap", Expect::Tap(check)) => {
            let summary = run(&seed.bytes);
            if !check(&summary) {
                return Err(format!("{summary:?}"));
            }
        }
        _ => return Err("no such target or expectation".into()),
    }
    Ok(())
}
