//! Encoder round trips through the decoder.

use super::prelude::*;

#[test]
fn encoded_frames_round_trip_through_the_decoder() {
    use crate::wire::encode;
    let mut bytes = encode::settings(&[(SettingId::MaxConcurrentStreams, 10)]);
    let parts = [
        encode::settings_ack(),
        encode::ping(false, [1, 2, 3, 4, 5, 6, 7, 8]),
        encode::ping(true, [8; 8]),
        encode::window_update(5, 0xffff_ffff),
        encode::rst_stream(3, ErrorCode::RefusedStream),
        encode::goaway(0xffff_ffff, ErrorCode::NoError, b""),
        encode::goaway(9, ErrorCode::EnhanceYourCalm, b"too_many_pings"),
    ];
    for p in &parts {
        bytes.extend_from_slice(p);
    }
    let events = decode(S2C, &bytes);
    assert!(malformed(&events).is_empty());
    let details: Vec<Detail> = frames(&events).iter().map(|f| f.detail.clone()).collect();
    assert_eq!(
        details,
        vec![
            Detail::Settings {
                ack: false,
                values: vec![(SettingId::MaxConcurrentStreams, 10)]
            },
            Detail::Settings {
                ack: true,
                values: vec![]
            },
            Detail::Ping {
                ack: false,
                opaque: [1, 2, 3, 4, 5, 6, 7, 8]
            },
            Detail::Ping {
                ack: true,
                opaque: [8; 8]
            },
            Detail::WindowUpdate {
                increment: 0x7fff_ffff
            },
            Detail::RstStream {
                code: ErrorCode::RefusedStream
            },
            Detail::GoAway {
                last_stream_id: 0x7fff_ffff,
                code: ErrorCode::NoError,
                debug: vec![]
            },
            Detail::GoAway {
                last_stream_id: 9,
                code: ErrorCode::EnhanceYourCalm,
                debug: b"too_many_pings".to_vec()
            },
        ]
    );
    let wire_lens: Vec<u64> = frames(&events).iter().map(|f| f.wire_len()).collect();
    let mut want = vec![15u64];
    want.extend(parts.iter().map(|p| p.len() as u64));
    assert_eq!(wire_lens, want);
}

#[test]
fn encoder_keeps_payloads_within_the_default_frame_size() {
    use crate::wire::encode;
    let long = vec![b'x'; 20_000];
    let g = encode::goaway(1, ErrorCode::NoError, &long);
    assert_eq!(g.len(), 9 + 16_384);
    let many = vec![(SettingId::EnablePush, 0); 3000];
    let s = encode::settings(&many);
    assert_eq!(s.len(), 9 + 2730 * 6);
    let mut bytes = s;
    bytes.extend(g);
    let events = decode(S2C, &bytes);
    assert!(malformed(&events).is_empty());
    assert_eq!(frames(&events).len(), 2);
}
