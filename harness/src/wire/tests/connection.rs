//! The preface, connection-level frames, and chunking.

use super::prelude::*;

#[test]
fn decoder_can_move_between_threads() {
    fn assert_send<T: Send + 'static>() {}
    assert_send::<Decoder>();
    assert_send::<Event>();
    let dec = Decoder::new(C2S);
    assert!(format!("{dec:?}").contains("preface"));
}

// ---- preface ----

#[test]
fn client_preface_then_settings() {
    let events = decode(C2S, &Wire::client().into_bytes());
    assert_eq!(events[0], Event::Preface { offset: 0 });
    let settings = only_frame(&events, T::Settings);
    assert_eq!(settings.offset, 24);
    assert_eq!(settings.len, 0);
    assert_eq!(events.len(), 2);
}

#[test]
fn bad_preface_is_fatal_and_counts_every_octet() {
    let mut bytes = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    bytes.extend(Wire::server().ping(false, [1; 8]).into_bytes());
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    assert_eq!(
        malformed(&out),
        vec![(0, None, "connection preface mismatch (RFC 9113 §3.4)")]
    );
    assert_eq!(out.len(), 1);
    assert!(dec.is_opaque());
    assert_eq!(dec.opaque_bytes(), bytes.len() as u64);
    assert_eq!(dec.pending_bytes(), 0);
}

#[test]
fn a_tls_client_hello_where_the_preface_belongs_is_named() {
    // A TLS 1.3 ClientHello's record header: handshake (22), legacy
    // version 3.1, a length (RFC 8446 §5.1), then the handshake type 1.
    let bytes = [0x16, 0x03, 0x01, 0x00, 0xf4, 0x01, 0x00];
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    dec.feed(&bytes, &mut out);
    assert_eq!(
        malformed(&out),
        vec![(
            0,
            None,
            "connection preface mismatch (RFC 9113 §3.4): its first octet, 22, begins a \
             TLS handshake record (RFC 8446 §5.1): the client likely speaks TLS to a \
             plaintext end"
        )]
    );
}

#[test]
fn the_tls_hint_does_not_depend_on_how_the_octets_are_cut() {
    // The fuzzer's find: 0x16 then not 0x03. Fed whole, a second-octet
    // check said "not TLS"; fed one octet at a time, "TLS".
    let bytes = [0x16, 0x4c, 0x54, 0x27, 0x31, 0x0a, 0x01, 0x54];
    let whole = decode(C2S, &bytes);
    let mut dec = Decoder::new(C2S);
    let mut cut = Vec::new();
    for b in &bytes {
        dec.feed(std::slice::from_ref(b), &mut cut);
    }
    dec.finish(&mut cut);
    assert_eq!(whole, cut);
}

#[test]
fn preface_split_anywhere_is_still_a_preface() {
    let bytes = Wire::client().into_bytes();
    for cut in 0..bytes.len() {
        let mut dec = Decoder::new(C2S);
        let mut out = Vec::new();
        dec.feed(&bytes[..cut], &mut out);
        dec.feed(&bytes[cut..], &mut out);
        assert_eq!(out, decode(C2S, &bytes), "cut at {cut}");
    }
}

#[test]
fn server_direction_expects_no_preface() {
    let events = decode(S2C, &Wire::client().into_bytes());
    // "PRI " read as a frame header: a 5 MiB payload of type 0x20 — over the
    // limit too, but not SETTINGS is what breaks the server preface.
    let bad = malformed(&events);
    assert_eq!(bad.len(), 1);
    assert!(bad[0].2.contains("not SETTINGS"), "{}", bad[0].2);
}

#[test]
fn first_frame_must_be_settings() {
    let events = decode(S2C, &Wire::bare().ping(false, [0; 8]).into_bytes());
    let bad = malformed(&events);
    assert_eq!(bad, vec![(0, None, "first frame is PING, not SETTINGS (RFC 9113 §3.4: the connection preface ends with SETTINGS)")]);
}

// ---- connection-level frames ----

#[test]
fn settings_values_in_order_with_rfc_names() {
    use SettingId::*;
    let sent = [
        (HeaderTableSize, 4096),
        (EnablePush, 0),
        (MaxConcurrentStreams, 100),
        (InitialWindowSize, 1_048_576),
        (MaxFrameSize, 16_384),
        (MaxHeaderListSize, 16_384),
        (EnableConnectProtocol, 1),
        (SettingId::Unknown(0x42), 7),
    ];
    let events = decode(S2C, &Wire::bare().settings(&sent).into_bytes());
    let f = only_frame(&events, T::Settings);
    assert_eq!(f.len, 48);
    assert_eq!(
        f.detail,
        Detail::Settings {
            ack: false,
            values: sent.to_vec()
        }
    );
    let names: Vec<String> = sent.iter().map(|(id, _)| id.to_string()).collect();
    assert_eq!(
        names,
        [
            "HEADER_TABLE_SIZE",
            "ENABLE_PUSH",
            "MAX_CONCURRENT_STREAMS",
            "INITIAL_WINDOW_SIZE",
            "MAX_FRAME_SIZE",
            "MAX_HEADER_LIST_SIZE",
            "ENABLE_CONNECT_PROTOCOL",
            "UNKNOWN(0x42)"
        ]
    );
}

#[test]
fn settings_ack() {
    let events = decode(S2C, &Wire::server().settings_ack().into_bytes());
    let f = frames(&events)[1];
    assert_eq!(
        f.detail,
        Detail::Settings {
            ack: true,
            values: vec![]
        }
    );
    assert!(f.has_flag(flags::ACK));
}

#[test]
fn window_update_increments_connection_and_stream() {
    let bytes = Wire::client()
        .window_update(0, 983_041)
        .window_update(1, 65_535)
        // Reserved bits set on the wire are ignored on receipt (§4.1, §6.9).
        .frame(
            T::WindowUpdate,
            0,
            0x8000_0003,
            &0x8000_0010u32.to_be_bytes(),
        )
        .into_bytes();
    let events = decode(C2S, &bytes);
    let got: Vec<(u32, Detail)> = frames(&events)[1..]
        .iter()
        .map(|f| (f.stream_id, f.detail.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (0, Detail::WindowUpdate { increment: 983_041 }),
            (1, Detail::WindowUpdate { increment: 65_535 }),
            (3, Detail::WindowUpdate { increment: 16 }),
        ]
    );
}

#[test]
fn rst_stream_and_goaway_codes_render_with_rfc_names() {
    let bytes = Wire::client()
        .rst(1, ErrorCode::Cancel)
        .rst(3, ErrorCode::NoError)
        .rst(5, ErrorCode::from(0x1f))
        .into_bytes();
    let events = decode(C2S, &bytes);
    let codes: Vec<String> = frames(&events)
        .iter()
        .filter_map(|f| match f.detail {
            Detail::RstStream { code } => Some(format!("{} {}", f.ty, code)),
            _ => None,
        })
        .collect();
    assert_eq!(
        codes,
        [
            "RST_STREAM CANCEL",
            "RST_STREAM NO_ERROR",
            "RST_STREAM UNKNOWN(0x1f)"
        ]
    );
}

#[test]
fn every_frame_type_and_error_code_has_its_rfc_name() {
    let types: Vec<String> = (0u8..=10).map(|c| FrameType::from(c).to_string()).collect();
    assert_eq!(
        types,
        [
            "DATA",
            "HEADERS",
            "PRIORITY",
            "RST_STREAM",
            "SETTINGS",
            "PUSH_PROMISE",
            "PING",
            "GOAWAY",
            "WINDOW_UPDATE",
            "CONTINUATION",
            "UNKNOWN(0x0a)"
        ]
    );
    let codes: Vec<String> = (0u32..=14)
        .map(|c| ErrorCode::from(c).to_string())
        .collect();
    assert_eq!(
        codes,
        [
            "NO_ERROR",
            "PROTOCOL_ERROR",
            "INTERNAL_ERROR",
            "FLOW_CONTROL_ERROR",
            "SETTINGS_TIMEOUT",
            "STREAM_CLOSED",
            "FRAME_SIZE_ERROR",
            "REFUSED_STREAM",
            "CANCEL",
            "COMPRESSION_ERROR",
            "CONNECT_ERROR",
            "ENHANCE_YOUR_CALM",
            "INADEQUATE_SECURITY",
            "HTTP_1_1_REQUIRED",
            "UNKNOWN(0x0e)"
        ]
    );
    for c in 0u32..=14 {
        assert_eq!(ErrorCode::from(c).code(), c);
    }
    for c in 0u8..=255 {
        assert_eq!(FrameType::from(c).code(), c);
    }
}

#[test]
fn goaway_last_stream_id_code_and_debug_data() {
    let bytes = Wire::server()
        .goaway(7, ErrorCode::EnhanceYourCalm, b"too_many_pings")
        .into_bytes();
    let events = decode(S2C, &bytes);
    let f = only_frame(&events, T::GoAway);
    assert_eq!(f.stream_id, 0);
    assert_eq!(f.len, 8 + 14);
    assert_eq!(
        f.detail,
        Detail::GoAway {
            last_stream_id: 7,
            code: ErrorCode::EnhanceYourCalm,
            debug: b"too_many_pings".to_vec()
        }
    );
    if let Detail::GoAway { code, .. } = &f.detail {
        assert_eq!(code.to_string(), "ENHANCE_YOUR_CALM");
    }
}

#[test]
fn ping_opaque_and_ack() {
    let opaque = [0xde, 0xad, 0xbe, 0xef, 0, 1, 2, 3];
    let bytes = Wire::server()
        .ping(false, opaque)
        .ping(true, opaque)
        .into_bytes();
    let events = decode(S2C, &bytes);
    let pings: Vec<&Detail> = frames(&events)[1..].iter().map(|f| &f.detail).collect();
    assert_eq!(
        pings,
        [
            &Detail::Ping { ack: false, opaque },
            &Detail::Ping { ack: true, opaque }
        ]
    );
}

#[test]
fn unknown_frame_types_are_reported_and_skipped() {
    let bytes = Wire::server()
        .frame(T::Unknown(0xfa), 0x3, 9, b"whatever")
        .ping(false, [5; 8])
        .into_bytes();
    let events = decode(S2C, &bytes);
    let f = frames(&events);
    assert_eq!(
        (f[1].ty, &f[1].detail, f[1].len),
        (T::Unknown(0xfa), &Detail::Unknown, 8)
    );
    assert_eq!(f[2].ty, T::Ping);
    assert!(malformed(&events).is_empty());
}

// ---- chunking ----

#[test]
fn byte_at_a_time_equals_one_feed() {
    let bytes = Wire::client()
        .headers(headers(1).request("POST", "/a.B/C").split(6).padded(2))
        .padded_data(1, 20, 2, true)
        .ping(false, [3; 8])
        .window_update(0, 1000)
        .rst(1, ErrorCode::Cancel)
        .into_bytes();
    let whole = decode(C2S, &bytes);
    let mut dec = Decoder::new(C2S);
    let mut out = Vec::new();
    for b in &bytes {
        dec.feed(std::slice::from_ref(b), &mut out);
    }
    assert_eq!(out, whole);
}
