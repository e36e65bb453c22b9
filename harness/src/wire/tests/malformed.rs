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
