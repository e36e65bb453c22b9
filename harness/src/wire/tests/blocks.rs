//! Field blocks: kinds, gRPC fields, CONTINUATION, HPACK state, padding.

use super::prelude::*;

#[test]
fn grpc_request_fields() {
    let bytes = Wire::client()
        .headers(
            headers(1)
                .request("POST", "/tt.v1.Store/Save")
                .field("grpc-timeout", "500000u")
                .field("grpc-previous-rpc-attempts", "2"),
        )
        .into_bytes();
    let events = decode(C2S, &bytes);
    let b = blocks(&events)[0];
    assert_eq!(b.kind, BlockKind::Request);
    assert_eq!(b.method.as_deref(), Some("POST"));
    assert_eq!(b.path.as_deref(), Some("/tt.v1.Store/Save"));
    assert_eq!(b.grpc_timeout.as_deref(), Some("500000u"));
    assert_eq!(b.grpc_timeout_duration(), Some(Duration::from_millis(500)));
    assert_eq!(b.previous_rpc_attempts(), Some(2));
    assert_eq!(b.all().len(), 8);
    assert_eq!(b.get("te"), Some("trailers"));
    assert!(!b.is_truncated());
}

#[test]
fn response_then_trailers_versus_trailers_only() {
    let bytes = Wire::server()
        // stream 1: response head, a message, trailers
        .headers(headers(1).response("Tue, 01 Apr 2025 10:00:00 GMT"))
        .data(1, 10, false)
        .headers(headers(1).grpc_status(0, "").eos())
        // stream 3: immediate error as a single trailers-only block
        .headers(
            headers(3)
                .field(":status", "200")
                .field("content-type", "application/grpc")
                .grpc_status(14, "Too many pings")
                .eos(),
        )
        // stream 5: an HTTP-level error without grpc-status is a response
        .headers(headers(5).field(":status", "415").eos())
        .into_bytes();
    let events = decode(S2C, &bytes);
    let kinds: Vec<BlockKind> = blocks(&events).iter().map(|b| b.kind).collect();
    assert_eq!(
        kinds,
        [
            BlockKind::Response,
            BlockKind::Trailers,
            BlockKind::TrailersOnly,
            BlockKind::Response
        ]
    );
    let b = blocks(&events);
    assert_eq!(b[0].status_code(), Some(200));
    assert_eq!(b[1].grpc_status_code(), Some(0));
    assert_eq!(b[2].grpc_status_code(), Some(14));
    assert_eq!(b[2].grpc_message.as_deref(), Some("Too many pings"));
    assert_eq!(b[3].status_code(), Some(415));
}

#[test]
fn response_headers_with_grpc_status_but_no_end_stream_are_a_response() {
    let bytes = Wire::server()
        .headers(headers(1).field(":status", "200").grpc_status(0, ""))
        .into_bytes();
    assert_eq!(blocks(&decode(S2C, &bytes))[0].kind, BlockKind::Response);
}

#[test]
fn client_side_second_block_is_trailers() {
    let bytes = Wire::client()
        .headers(headers(1).request("POST", "/a.B/C"))
        .data(1, 5, false)
        .headers(headers(1).field("x-checksum", "abc").eos())
        .headers(headers(3).request("POST", "/a.B/D"))
        .into_bytes();
    let kinds: Vec<BlockKind> = blocks(&decode(C2S, &bytes))
        .iter()
        .map(|b| b.kind)
        .collect();
    assert_eq!(
        kinds,
        [BlockKind::Request, BlockKind::Trailers, BlockKind::Request]
    );
}

#[test]
fn headers_with_continuations_carry_the_whole_block() {
    let bytes = Wire::client()
        .headers(
            headers(1)
                .request("POST", "/tt.v1.Scoreboard/Hit")
                .field("grpc-timeout", "500m")
                .split(7),
        )
        .ping(false, [0; 8])
        .into_bytes();
    let events = decode(C2S, &bytes);
    let f = frames(&events);
    assert_eq!(f[1].ty, T::Headers);
    let Detail::Headers {
        end_headers, block, ..
    } = &f[1].detail
    else {
        panic!("{:?}", f[1]);
    };
    assert!(!end_headers);
    assert_eq!(block.path.as_deref(), Some("/tt.v1.Scoreboard/Hit"));
    assert_eq!(block.grpc_timeout.as_deref(), Some("500m"));
    let conts: Vec<&&Frame> = f.iter().filter(|f| f.ty == T::Continuation).collect();
    assert!(conts.len() > 3);
    for (i, c) in conts.iter().enumerate() {
        let last = i == conts.len() - 1;
        assert_eq!(c.detail, Detail::Continuation { end_headers: last });
        assert_eq!(c.stream_id, 1);
    }
    // Frames are reported in wire order with contiguous offsets.
    let mut at = 24;
    for frame in &f {
        assert_eq!(frame.offset, at);
        at += frame.wire_len();
    }
    assert_eq!(at, bytes.len() as u64);
    assert_eq!(f.last().map(|f| f.ty), Some(T::Ping));
}

#[test]
fn header_block_waits_for_its_last_continuation() {
    let bytes = Wire::client()
        .headers(headers(1).request("GET", "/").split(4))
        .into_bytes();
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&bytes[..bytes.len() - 1], &mut out);
    assert_eq!(
        frames(&out).len(),
        1,
        "only SETTINGS before END_HEADERS arrives"
    );
    assert!(dec.pending_bytes() > 9);
    dec.feed(&bytes[bytes.len() - 1..], &mut out);
    assert_eq!(frames(&out)[1].ty, T::Headers);
    assert_eq!(dec.pending_bytes(), 0);
}

#[test]
fn grpc_message_is_percent_decoded() {
    let bytes = Wire::server()
        .headers(
            headers(1)
                .field(":status", "200")
                .grpc_status(4, "deadline%20exceeded%3A%20%E3%81%82 100%")
                .eos(),
        )
        .headers(
            headers(3)
                .field(":status", "200")
                .grpc_status(2, "bad%zz%4")
                .eos(),
        )
        .into_bytes();
    let events = decode(S2C, &bytes);
    let b = blocks(&events);
    assert_eq!(
        b[0].grpc_message.as_deref(),
        Some("deadline exceeded: あ 100%")
    );
    // Raw form stays in all().
    assert_eq!(
        b[0].get("grpc-message"),
        Some("deadline%20exceeded%3A%20%E3%81%82 100%")
    );
    // Broken escapes are kept as sent (PROTOCOL-HTTP2.md: MUST NOT error).
    assert_eq!(b[1].grpc_message.as_deref(), Some("bad%zz%4"));
    assert_eq!(percent_decode(b"%ff%FE"), "\u{fffd}\u{fffd}");
}

#[test]
fn date_is_masked_so_renders_are_stable() {
    let a = Wire::server()
        .headers(headers(1).response("Tue, 01 Apr 2025 10:00:00 GMT"))
        .into_bytes();
    let b = Wire::server()
        .headers(headers(1).response("Wed, 02 Apr 2025 11:11:11 GMT"))
        .into_bytes();
    let (ea, eb) = (decode(S2C, &a), decode(S2C, &b));
    let (ba, bb) = (blocks(&ea)[0], blocks(&eb)[0]);
    assert_eq!(ba.get("date"), Some(DATE_MASK));
    assert_eq!(ba.all(), bb.all());
    assert!(ba
        .all()
        .contains(&("date".to_owned(), "<masked>".to_owned())));
}

#[test]
fn dynamic_table_entries_carry_across_blocks() {
    // The encoder indexes fields whose name is in no table (`te`,
    // `x-tenant`), so the second request refers to them by index.
    let bytes = Wire::client()
        .headers(
            headers(1)
                .request("POST", "/tt.v1.Store/Save")
                .field("x-tenant", "blue"),
        )
        .headers(
            headers(3)
                .request("POST", "/tt.v1.Store/Save")
                .field("x-tenant", "blue"),
        )
        .into_bytes();
    let events = decode(C2S, &bytes);
    let f = frames(&events);
    assert!(f[2].len + 20 < f[1].len, "{} vs {}", f[2].len, f[1].len);
    let b = blocks(&events);
    assert_eq!(b[0].all(), b[1].all());
}

#[test]
fn huffman_coded_block_from_rfc_7541_c_4_1() {
    let block = [
        0x82, 0x86, 0x84, 0x41, 0x8c, 0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90,
        0xf4, 0xff,
    ];
    let bytes = Wire::client()
        .headers(headers(1).raw_block(&block).eos())
        .into_bytes();
    let events = decode(C2S, &bytes);
    let b = blocks(&events)[0];
    assert_eq!(b.get(":authority"), Some("www.example.com"));
    assert_eq!(b.method.as_deref(), Some("GET"));
    assert_eq!(b.path.as_deref(), Some("/"));
}

#[test]
fn header_list_over_the_limit_is_truncated_not_fatal() {
    let limits = Limits {
        max_header_list: 400,
        ..Limits::default()
    };
    let big = "x".repeat(300);
    let bytes = Wire::client()
        .headers(headers(1).request("POST", "/a.B/C").field("x-big", &big))
        .headers(headers(3).request("POST", "/a.B/C"))
        .into_bytes();
    let mut dec = Decoder::with_limits(C2S, limits);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    let b = blocks(&out);
    assert!(b[0].is_truncated());
    assert_eq!(b[0].path.as_deref(), Some("/a.B/C"));
    assert!(b[0].get("x-big").is_none());
    // The HPACK context stayed in step: the next block decodes.
    assert!(!b[1].is_truncated());
    assert_eq!(b[1].path.as_deref(), Some("/a.B/C"));
}

#[test]
fn push_promise_block_is_decoded() {
    let mut enc = loona_hpack::Encoder::new();
    let block = enc.encode([(&b":method"[..], &b"GET"[..]), (b":path", b"/pushed")]);
    let mut payload = 2u32.to_be_bytes().to_vec();
    payload.extend_from_slice(&block);
    let bytes = Wire::server()
        .frame(T::PushPromise, flags::END_HEADERS, 1, &payload)
        .into_bytes();
    let events = decode(S2C, &bytes);
    let f = only_frame(&events, T::PushPromise);
    let Detail::PushPromise {
        promised_stream_id,
        block,
        ..
    } = &f.detail
    else {
        panic!("{f:?}");
    };
    assert_eq!(*promised_stream_id, 2);
    assert_eq!(block.path.as_deref(), Some("/pushed"));
}

// ---- padding ----

#[test]
fn padding_on_data_and_headers() {
    let bytes = Wire::client()
        .headers(headers(1).request("POST", "/a.B/C").padded(4).priority())
        .padded_data(1, 5, 3, true)
        .padded_data(3, 0, 0, false)
        .into_bytes();
    let events = decode(C2S, &bytes);
    assert!(malformed(&events).is_empty(), "{:#?}", render(&events));
    let f = frames(&events);
    let Detail::Headers {
        padded_len, block, ..
    } = &f[1].detail
    else {
        panic!("{:?}", f[1]);
    };
    assert_eq!(*padded_len, Some(4));
    assert_eq!(block.path.as_deref(), Some("/a.B/C"));
    assert_eq!(
        f[2].detail,
        Detail::Data {
            end_stream: true,
            padded_len: Some(3),
            data_len: 5,
            // The first data octet, not the Pad Length before it.
            compressed_flag: Some(0xAB),
        }
    );
    assert_eq!(f[2].len, 1 + 5 + 3);
    assert_eq!(
        f[3].detail,
        Detail::Data {
            end_stream: false,
            padded_len: Some(0),
            data_len: 0,
            compressed_flag: None,
        }
    );
}

#[test]
fn data_padding_longer_than_payload_is_skipped() {
    let bytes = Wire::client()
        .frame(T::Data, flags::PADDED, 1, &[5, 1, 2])
        .data(1, 2, true)
        .into_bytes();
    let events = decode(C2S, &bytes);
    let bad = malformed(&events);
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].0, bad[0].1), (33, Some(12)));
    assert!(bad[0].2.contains("padding"), "{}", bad[0].2);
    assert_eq!(frames(&events).last().map(|f| f.ty), Some(T::Data));
}

#[test]
fn headers_padding_longer_than_fragment_is_fatal() {
    let bytes = Wire::client()
        .frame(
            T::Headers,
            flags::PADDED | flags::END_HEADERS,
            1,
            &[9, 0x82],
        )
        .into_bytes();
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    assert_eq!(malformed(&out)[0].1, None);
    assert!(dec.is_opaque());
}

/// A stream's message framing is followed until the stream ends in this
/// direction, on DATA or on its trailers: a server's finished calls leave
/// nothing behind.
#[test]
fn a_stream_ended_by_its_trailers_is_no_longer_followed() {
    let mut wire = Wire::server();
    for stream in [1, 3, 5] {
        wire = wire
            .headers(headers(stream).response("Tue, 01 Apr 2025 10:00:00 GMT"))
            .data(stream, 10, false)
            .headers(headers(stream).grpc_status(0, "").eos());
    }
    // Stream 7 is still open after its message.
    let bytes = wire
        .headers(headers(7).response("Tue, 01 Apr 2025 10:00:00 GMT"))
        .data(7, 10, false)
        .into_bytes();
    let mut decoder = Decoder::new(S2C);
    let mut events = Vec::new();
    decoder.feed(&bytes, &mut events);
    assert_eq!(blocks(&events).len(), 7);
    assert_eq!(decoder.followed_streams(), 1, "only stream 7");
}
