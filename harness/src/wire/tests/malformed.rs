//! Malformed input: resync for self-delimiting frames, opaque otherwise.

use super::prelude::*;

#[test]
fn wrong_size_ping_is_skipped_and_decoding_resyncs() {
    let bytes = Wire::server()
        .frame(T::Ping, 0, 0, &[1, 2, 3, 4, 5, 6, 7])
        .frame(T::Ping, 0, 3, &[0; 8])
        .frame(T::RstStream, 0, 1, &[0; 3])
        .frame(T::WindowUpdate, 0, 1, &[0; 5])
        .frame(T::Settings, flags::ACK, 0, &[0; 6])
        .frame(T::Settings, 0, 0, &[0; 5])
        .frame(T::GoAway, 0, 0, &[0; 7])
        .frame(T::Priority, 0, 1, &[0; 4])
        .frame(T::Data, 0, 0, &[0; 4])
        .ping(true, [9; 8])
        .into_bytes();
    let events = decode(S2C, &bytes);
    let bad = malformed(&events);
    assert_eq!(bad.len(), 9, "{:#?}", render(&events));
    assert!(bad.iter().all(|(_, len, _)| len.is_some()));
    assert!(bad[0].2.contains("PING of 7 octets"), "{}", bad[0].2);
    assert!(bad[1].2.contains("PING on stream 3"), "{}", bad[1].2);
    assert_eq!(
        frames(&events).last().map(|f| &f.detail),
        Some(&Detail::Ping {
            ack: true,
            opaque: [9; 8]
        })
    );
}

#[test]
fn oversized_frame_is_fatal_without_buffering_it() {
    let limits = Limits {
        max_frame_size: 16_384,
        ..Limits::default()
    };
    let mut bytes = Wire::server().into_bytes();
    bytes.extend_from_slice(&[0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 1]); // DATA, 65,536 octets
    bytes.extend(vec![0; 1000]);
    let mut dec = Decoder::with_limits(S2C, limits);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    let bad = malformed(&out);
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].0, bad[0].1), (9, None));
    assert!(bad[0].2.contains("FRAME_SIZE_ERROR"), "{}", bad[0].2);
    assert_eq!(dec.opaque_bytes(), 9 + 1000);
    dec.feed(&[0; 100], &mut out);
    assert_eq!(out.len(), 2, "nothing more is reported once opaque");
    assert_eq!(dec.opaque_bytes(), 1109);
}

#[test]
fn limits_are_clamped_to_the_rfc_range() {
    let dec = Decoder::with_limits(
        S2C,
        Limits {
            max_frame_size: 10,
            ..Limits::default()
        },
    );
    assert_eq!(dec.limits().max_frame_size, 16_384);
}

/// A DATA frame of 16,385 octets, one over the initial limit.
fn data_16385(stream: u32) -> Wire {
    Wire::server().data(stream, 16_385, false)
}

#[test]
fn a_frame_over_16384_octets_is_fatal_by_default() {
    // RFC 9113 §4.2: a receiver that advertised nothing accepts 16,384.
    let events = decode(S2C, &data_16385(1).into_bytes());
    let bad = malformed(&events);
    assert_eq!((bad.len(), bad[0].0, bad[0].1), (1, 9, None), "{bad:?}");
    assert!(
        bad[0]
            .2
            .contains("16385 octet payload, over the 16384 octet limit")
            && bad[0].2.contains("initial SETTINGS_MAX_FRAME_SIZE"),
        "{}",
        bad[0].2
    );
}

#[test]
fn a_raised_frame_size_limit_accepts_the_larger_frame_and_names_its_source() {
    let mut dec = Decoder::new(S2C);
    dec.set_max_frame_size(16_385);
    assert_eq!(dec.limits().max_frame_size, 16_385);
    let mut out = Vec::new();
    dec.feed(&data_16385(1).data(1, 16_386, true).into_bytes(), &mut out);
    let data: Vec<_> = frames(&out)
        .into_iter()
        .filter(|f| f.ty == T::Data)
        .collect();
    assert_eq!(data.len(), 1, "{:#?}", render(&out));
    assert_eq!(data[0].len, 16_385);
    let bad = malformed(&out);
    assert_eq!(bad.len(), 1, "the 16,386-octet frame is still over");
    assert!(
        bad[0].2.contains("over the 16385 octet limit")
            && bad[0]
                .2
                .contains("the SETTINGS_MAX_FRAME_SIZE the receiver advertised"),
        "{}",
        bad[0].2
    );
}

#[test]
fn set_max_frame_size_is_clamped_to_the_rfc_range() {
    let mut dec = Decoder::new(C2S);
    dec.set_max_frame_size(100);
    assert_eq!(dec.limits().max_frame_size, 16_384);
    dec.set_max_frame_size(u32::MAX);
    assert_eq!(dec.limits().max_frame_size, (1 << 24) - 1);
}

#[test]
fn feeding_until_an_event_lets_a_settings_ack_move_the_limit_in_time() {
    // ACK and an oversized DATA frame arrive in one read: the limit the
    // ACK puts in force must apply to the DATA frame behind it.
    let bytes = Wire::server()
        .settings_ack()
        .data(1, 20_000, true)
        .into_bytes();
    let mut dec = Decoder::new(S2C);
    let mut out = Vec::new();
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let before = out.len();
        let n = dec.feed_until_event(rest, &mut out);
        assert!(n > 0);
        rest = &rest[n..];
        let acked = out[before..].iter().any(|e| {
            matches!(e, Event::Frame(f) if f.detail == Detail::Settings { ack: true, values: vec![] })
        });
        if acked {
            assert_eq!(out.len(), before + 1, "stops right after the ACK");
            dec.set_max_frame_size(32_768);
        }
    }
    assert!(malformed(&out).is_empty(), "{:#?}", render(&out));
    assert_eq!(frames(&out).last().map(|f| f.len), Some(20_000));
    // Fed whole, the DATA frame is judged before anyone saw the ACK.
    let mut whole = Vec::new();
    Decoder::new(S2C).feed(&bytes, &mut whole);
    assert_eq!(malformed(&whole).len(), 1);
}

#[test]
fn feeding_until_an_event_makes_progress_on_a_bad_preface() {
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    assert_eq!(dec.feed_until_event(b"GET / HTTP/1.1\r\n", &mut out), 16);
    assert_eq!(malformed(&out).len(), 1);
    assert!(dec.is_opaque());
}

#[test]
fn continuation_without_headers_is_fatal() {
    let bytes = Wire::client()
        .frame(T::Continuation, flags::END_HEADERS, 1, &[0x82])
        .into_bytes();
    let events = decode(C2S, &bytes);
    let bad = malformed(&events);
    assert_eq!((bad[0].0, bad[0].1), (33, None));
    assert!(
        bad[0].2.contains("without a preceding HEADERS"),
        "{}",
        bad[0].2
    );
}

#[test]
fn frame_inside_a_header_block_is_fatal_from_the_block_start() {
    // HEADERS without END_HEADERS (first 5 octets of the block), then a PING
    // where a CONTINUATION must come (RFC 9113 §6.10).
    let bytes = Wire::client()
        .headers(headers(1).request("POST", "/a.B/C").split(5))
        .into_bytes();
    let mut cut = bytes[..33 + 9 + 5].to_vec(); // preface + SETTINGS + HEADERS
    cut.extend(crate::wire::encode::ping(false, [0; 8]));
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&cut, &mut out);
    let bad = malformed(&out);
    assert_eq!(bad.len(), 1);
    // The HEADERS frame was never reported, so the opaque part starts there.
    assert_eq!((bad[0].0, bad[0].1), (33, None));
    assert!(
        bad[0].2.contains("PING on stream 0 at offset 47"),
        "{}",
        bad[0].2
    );
    assert_eq!(dec.opaque_bytes(), cut.len() as u64 - 33);
}

#[test]
fn invalid_hpack_is_fatal_compression_error() {
    // Index 0x7f + 200: beyond the static table and an empty dynamic table.
    let bytes = Wire::client()
        .headers(headers(1).raw_block(&[0xff, 0xc8, 0x01]))
        .ping(false, [0; 8])
        .into_bytes();
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    let bad = malformed(&out);
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].0, bad[0].1), (33, None));
    assert!(bad[0].2.contains("COMPRESSION_ERROR"), "{}", bad[0].2);
    assert_eq!(dec.opaque_bytes(), bytes.len() as u64 - 33);
}

#[test]
fn continuation_flood_is_capped() {
    let limits = Limits {
        max_header_block: 1000,
        ..Limits::default()
    };
    let mut w = Wire::client().frame(T::Headers, 0, 1, &[0x82]);
    for _ in 0..200 {
        w = w.frame(T::Continuation, 0, 1, &[]);
    }
    let bytes = w.into_bytes();
    let mut dec = Decoder::with_limits(C2S, limits);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    let bad = malformed(&out);
    assert_eq!(bad.len(), 1);
    assert!(bad[0].2.contains("CONTINUATION flood"), "{}", bad[0].2);
}

#[test]
fn finish_reports_a_truncated_frame() {
    let bytes = Wire::server().ping(false, [1; 8]).into_bytes();
    let mut dec = Decoder::new(S2C);
    let mut out = Vec::new();
    dec.feed(&bytes[..bytes.len() - 3], &mut out);
    dec.finish(&mut out);
    let bad = malformed(&out);
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].0, bad[0].1), (9, Some(14)));
    assert!(bad[0].2.contains("5 of 8 payload octets"), "{}", bad[0].2);
    // A clean end reports nothing.
    let mut dec = Decoder::new(S2C);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    dec.finish(&mut out);
    assert!(malformed(&out).is_empty());
}

#[test]
fn finish_reports_an_unfinished_header_block_and_partial_preface() {
    let bytes = Wire::client().frame(T::Headers, 0, 1, &[0x82]).into_bytes();
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    dec.finish(&mut out);
    assert_eq!(malformed(&out)[0].1, Some(10));
    assert!(malformed(&out)[0].2.contains("CONTINUATION expected"));

    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&PREFACE[..10], &mut out);
    dec.finish(&mut out);
    assert_eq!(malformed(&out)[0].1, Some(10));
}

/// A frame the harness injects on purpose is recorded as what it is: read
/// without §6's rules, it keeps its detail, and says which rule it breaks.
#[test]
fn a_frame_read_despite_the_rules_keeps_its_detail_and_names_the_rule() {
    let rst = encode::rst_stream(0, ErrorCode::Cancel);
    let (frame, broken) = decode::frame_despite_rules(&rst).expect("a whole frame");
    assert_eq!((frame.ty, frame.stream_id), (T::RstStream, 0));
    assert_eq!(
        frame.detail,
        Detail::RstStream {
            code: ErrorCode::Cancel
        }
    );
    let broken = broken.expect("RST_STREAM on stream 0 breaks §6.4");
    assert!(broken.starts_with("RST_STREAM on stream 0"), "{broken}");
    assert!(
        broken.contains("§6.4") && !broken.contains("offset"),
        "{broken}"
    );

    let ping = encode::ping(false, [1; 8]);
    let (frame, broken) = decode::frame_despite_rules(&ping).expect("a whole frame");
    assert_eq!((frame.ty, broken), (T::Ping, None));
    assert_eq!(
        decode::frame_despite_rules(&ping[..8]),
        None,
        "a short header"
    );
}
