//! Hostile peers: the raw HTTP/2 attacks of the field, each from a client
//! that speaks the protocol itself (`Host::raw_connect`, bytes built with
//! `grpc_chaos::wire::encode`), against a tonic server in the sim. Each
//! test asserts what tonic's stack (h2 0.4.20 under hyper 1.12, measured
//! here) answers — GOAWAY with which code, RST_STREAM, a close — and that
//! the trace shows both sides: the attacker's frames at the attacker, the
//! server's reaction at the server, and what never arrived.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{Fate, FrameDetail, UndeliveredCause};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::{encode, frame::PREFACE, ErrorCode, FrameType, SettingId};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The request HEADERS of a Save on `stream`, as a literal block.
fn save_headers(stream: u32, end_stream: bool) -> Vec<u8> {
    let block = encode::hpack_literal(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/tt.v1.Store/Save"),
        (":authority", "store:50051"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]);
    encode::headers(stream, &block, end_stream, true)
}

/// A valid start: the preface and an empty SETTINGS.
fn hello() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    out.extend(encode::settings(&[]));
    out
}

/// What the attacker saw: the server's bytes, and how its reads ended.
#[derive(Debug, Default, Clone)]
struct Seen {
    bytes: Vec<u8>,
    /// `Some("eof")`, `Some("reset")`, or `None` when it stopped reading.
    end: Option<&'static str>,
    /// Writes that failed, with their error.
    write_error: Option<String>,
}

type Shared<T> = std::rc::Rc<std::cell::RefCell<T>>;

/// A `store` and an attacker `mallory` that connects at 5 ms, writes each
/// of `writes` in turn, then reads until the connection ends or `stall`
/// (*simulated*) passes without a byte.
fn attack(seed: u64, writes: Vec<Vec<u8>>, stall: Duration) -> (Trace, Seen) {
    let seen: Shared<Seen> = Default::default();
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let out = seen.clone();
    sim.client("mallory", move |host| async move {
        tokio::time::sleep(ms(5)).await;
        let mut conn = host.raw_connect("store").await?;
        let mut seen = Seen::default();
        for w in &writes {
            if let Err(e) = conn.write_all(w).await {
                seen.write_error = Some(e.to_string());
                break;
            }
        }
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match tokio::time::timeout(stall, conn.read(&mut buf)).await {
                Ok(Ok(0)) => {
                    seen.end = Some("eof");
                    break;
                }
                Ok(Err(_)) => {
                    seen.end = Some("reset");
                    break;
                }
                Ok(Ok(n)) => seen.bytes.extend_from_slice(&buf[..n]),
                Err(_) => break,
            }
        }
        *out.borrow_mut() = seen;
        Ok(())
    });
    let trace = match sim.run() {
        Ok(trace) => trace,
        Err(e) => panic!("the harness must go on: {e}"),
    };
    let seen = seen.borrow().clone();
    (trace, seen)
}

fn everything(trace: &Trace) -> String {
    trace.render_with(&RenderOptions::everything())
}

impl Seen {
    /// Frame types (RFC 9113 §6) in the bytes that reached mallory.
    fn frame_types(&self) -> Vec<u8> {
        let (mut at, mut types) = (0, Vec::new());
        while self.bytes.len() >= at + 9 {
            let b = &self.bytes[at..];
            let len = u32::from_be_bytes([0, b[0], b[1], b[2]]) as usize;
            types.push(b[3]);
            at += 9 + len;
        }
        types
    }
}

/// The frames `host` wrote to `to`, as recorded: type and payload.
fn frames(trace: &Trace, host: &str, to: &str) -> Vec<(FrameType, FrameDetail)> {
    trace
        .events_on(host)
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                to: t,
                frame,
                detail,
                fate,
                ..
            } if t == to => {
                // Everything mallory wrote passed the tap at the sender.
                assert_ne!(*fate, Fate::ReadAtReceiver, "{e:?}");
                Some((*frame, detail.clone()))
            }
            _ => None,
        })
        .collect()
}

fn count(frames: &[(FrameType, FrameDetail)], ty: FrameType) -> usize {
    frames.iter().filter(|(t, _)| *t == ty).count()
}

/// The store's GOAWAY to mallory: code, last-stream-id, debug text.
fn goaway(trace: &Trace) -> Option<(ErrorCode, u32, String)> {
    frames(trace, "store", "mallory")
        .into_iter()
        .find_map(|(_, d)| match d {
            FrameDetail::GoAway(g) => Some((
                g.code,
                g.last_stream_id,
                String::from_utf8_lossy(&g.debug).into(),
            )),
            _ => None,
        })
}

/// What the store wrote that never left it, and why.
fn undelivered(trace: &Trace) -> Option<(Vec<(u32, FrameType)>, UndeliveredCause)> {
    trace.events_on("store").find_map(|e| match &e.kind {
        EventKind::FramesUndelivered { frames, cause, .. } => Some((frames.to_vec(), *cause)),
        _ => None,
    })
}

/// Whether `host` closed its end with the peer's bytes unread (a RST), and
/// how many of them it never read.
fn reset_sent(trace: &Trace, host: &str) -> Option<Option<u64>> {
    trace.events_on(host).find_map(|e| match &e.kind {
        EventKind::ConnResetSent { unread, .. } => Some(*unread),
        _ => None,
    })
}

fn protocol_errors(trace: &Trace, host: &str) -> Vec<String> {
    trace
        .events_on(host)
        .filter_map(|e| match &e.kind {
            EventKind::ProtocolError { reason, .. } => Some(reason.to_string()),
            _ => None,
        })
        .collect()
}

/// The store's GOAWAY with the error it names (and its SETTINGS ACK first)
/// reached mallory, then a FIN: the connection error of RFC 9113 §5.4.1,
/// delivered in full.
fn assert_goaway_delivered(trace: &Trace, seen: &Seen, code: ErrorCode) {
    let render = everything(trace);
    assert_eq!(goaway(trace).map(|g| g.0), Some(code), "{render}");
    assert_eq!(
        seen.frame_types(),
        [4, 4, 7],
        "SETTINGS, ACK, GOAWAY: {seen:?}"
    );
    assert_eq!(seen.end, Some("eof"), "{seen:?}");
    assert_eq!(undelivered(trace), None, "{render}");
    assert_eq!(reset_sent(trace, "store"), None, "{render}");
}

/// The store's answer never reached mallory: h2 wrote its GOAWAY, then
/// hyper dropped the connection with mallory's bytes unread, so turmoil
/// (as TCP, RFC 9293 §3.10.4) sent RST and tore the socket down first.
/// Only the server's opening SETTINGS arrived; the trace says so.
fn assert_goaway_lost_to_the_reset(trace: &Trace, seen: &Seen) {
    let render = everything(trace);
    assert_eq!(seen.frame_types(), [4], "only SETTINGS arrived: {seen:?}");
    assert_eq!(seen.end, Some("reset"), "{seen:?}");
    let unread = reset_sent(trace, "store").flatten();
    assert!(unread.is_some_and(|n| n > 0), "{render}");
    assert_eq!(
        undelivered(trace),
        Some((
            vec![(0, FrameType::Settings), (0, FrameType::GoAway)],
            UndeliveredCause::OwnReset
        )),
        "{render}"
    );
    assert!(
        render.contains(
            "store→mallory        c1 never delivered: s0 SETTINGS, s0 GOAWAY: store had reset \
             the connection (closed with unread bytes)"
        ),
        "{render}"
    );
}

#[test]
fn an_invalid_preface_is_closed_without_a_goaway() {
    // 24 octets, like the preface, with `XX` where `SM` belongs.
    let bad = b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".to_vec();
    let (trace, seen) = attack(1, vec![bad], ms(2_000));
    let render = everything(&trace);
    // mallory's side: the decoder names the mismatch.
    assert_eq!(
        protocol_errors(&trace, "mallory"),
        ["connection preface mismatch (RFC 9113 §3.4)"],
        "{render}"
    );
    // h2 sent SETTINGS before reading (RFC 9113 §3.4), then only a FIN:
    // no GOAWAY for a peer that never spoke HTTP/2.
    assert_eq!(goaway(&trace), None, "{render}");
    assert_eq!(seen.frame_types(), [4], "{seen:?}");
    assert_eq!(seen.end, Some("eof"), "{seen:?}");
    assert!(
        render.contains("store→mallory        c1 closed"),
        "{render}"
    );
}

#[test]
fn an_oversized_data_frame_is_a_frame_size_error_whose_goaway_never_arrives() {
    // 16,385 octets, one over the SETTINGS_MAX_FRAME_SIZE tonic advertises.
    let writes = vec![hello(), encode::data(1, &[0; 16_385], false)];
    let (trace, seen) = attack(2, writes, ms(2_000));
    let render = everything(&trace);
    assert!(
        protocol_errors(&trace, "mallory")[0].contains("has a 16385 octet payload"),
        "{render}"
    );
    assert_eq!(
        goaway(&trace),
        Some((ErrorCode::FrameSizeError, 0, String::new())),
        "{render}"
    );
    // h2 stopped at the frame header; the 16 KiB behind it were unread.
    assert_goaway_lost_to_the_reset(&trace, &seen);
}

#[test]
fn a_frame_length_of_16_mib_gets_goaway_frame_size_error() {
    // A HEADERS frame header announcing 2^24 - 1 octets, and no payload.
    let mut head = encode::headers(1, &[], false, true);
    head[..3].copy_from_slice(&[0xff, 0xff, 0xff]);
    let (trace, seen) = attack(3, vec![hello(), head], ms(2_000));
    let render = everything(&trace);
    assert!(
        protocol_errors(&trace, "mallory")[0].contains("has a 16777215 octet payload"),
        "{render}"
    );
    assert_goaway_delivered(&trace, &seen, ErrorCode::FrameSizeError);
}

#[test]
fn an_hpack_bomb_gets_goaway_enhance_your_calm() {
    // One 4,000-octet field put in the dynamic table (RFC 7541 §6.2.1),
    // then referenced 2,000 times by index 62, one octet each: 2 KiB on
    // the wire, 8 MB of decoded header list.
    let mut stored = encode::hpack_literal(&[("x-bomb", &"a".repeat(4_000))]);
    stored[0] = 0x40; // literal with incremental indexing, new name
    let mut refs = encode::hpack_literal(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/tt.v1.Store/Save"),
        (":authority", "store"),
    ]);
    refs.extend(std::iter::repeat_n(0x80 | 62, 2_000)); // indexed field 62
    let mut bomb = hello();
    bomb.extend(encode::headers(1, &stored, false, false));
    bomb.extend(encode::continuation(1, &refs, true));
    let (trace, seen) = attack(4, vec![bomb], ms(2_000));
    let render = everything(&trace);
    // mallory's side: the HEADERS and its CONTINUATION, decoded by the tap
    // (whose own header-list limit keeps what it shows bounded).
    let sent = frames(&trace, "mallory", "store");
    assert_eq!(count(&sent, FrameType::Headers), 1, "{render}");
    assert_eq!(count(&sent, FrameType::Continuation), 1, "{render}");
    // Past a multiple of its 16 KiB MAX_HEADER_LIST_SIZE h2 stops decoding
    // and gives up on the whole connection, not only the stream (h2
    // `frame/headers.rs` `HeaderBlock::load`, `codec/framed_read.rs`).
    assert_eq!(
        goaway(&trace),
        Some((
            ErrorCode::EnhanceYourCalm,
            0,
            "header_list_way_too_large".into()
        )),
        "{render}"
    );
    assert_goaway_delivered(&trace, &seen, ErrorCode::EnhanceYourCalm);
    assert_eq!(trace.handler_runs().len(), 0, "no handler ran: {render}");
}

#[test]
fn a_continuation_flood_gets_goaway_too_many_continuations() {
    // HEADERS without END_HEADERS, then 2,000 CONTINUATIONs that never
    // end the block (CVE-2024-27316 family).
    let mut flood = hello();
    let start = encode::hpack_literal(&[(":method", "POST")]);
    flood.extend(encode::headers(1, &start, false, false));
    let piece = encode::hpack_literal(&[("x-a", "b")]);
    for _ in 0..2_000 {
        flood.extend(encode::continuation(1, &piece, false));
    }
    let (trace, seen) = attack(5, vec![flood], ms(2_000));
    let render = everything(&trace);
    // mallory's side: the tap holds a field block until END_HEADERS, so
    // the flood shows when mallory's end closes, as what it never ended.
    assert_eq!(
        protocol_errors(&trace, "mallory"),
        [
            "connection ended inside the field block of stream 1 (HEADERS after 2000 \
          CONTINUATION frames, 32023 octets; CONTINUATION expected, RFC 9113 §6.10)"
        ],
        "{render}"
    );
    assert_eq!(
        goaway(&trace),
        Some((
            ErrorCode::EnhanceYourCalm,
            0,
            "too_many_continuations".into()
        )),
        "{render}"
    );
    assert_goaway_lost_to_the_reset(&trace, &seen);
}

#[test]
fn invalid_settings_get_goaway_protocol_error() {
    // ENABLE_PUSH must be 0 or 1 (RFC 9113 §6.5.2): PROTOCOL_ERROR, as
    // the RFC says.
    let mut push = hello();
    push.extend(encode::settings(&[(SettingId::EnablePush, 2)]));
    let (trace, seen) = attack(6, vec![push], ms(2_000));
    let sent = frames(&trace, "mallory", "store");
    assert_eq!(
        count(&sent, FrameType::Settings),
        2,
        "{}",
        everything(&trace)
    );
    assert_goaway_delivered(&trace, &seen, ErrorCode::ProtocolError);

    // INITIAL_WINDOW_SIZE above 2^31 - 1: RFC 9113 §6.5.2 asks for
    // FLOW_CONTROL_ERROR; h2 0.4.20 answers PROTOCOL_ERROR (measured).
    let mut window = hello();
    window.extend(encode::settings(&[(SettingId::InitialWindowSize, 1 << 31)]));
    let (trace, seen) = attack(7, vec![window], ms(2_000));
    assert_goaway_delivered(&trace, &seen, ErrorCode::ProtocolError);
}

#[test]
fn a_window_update_overflow_gets_goaway_flow_control_error() {
    // 65,535 + (2^31 - 1) is past the largest window (RFC 9113 §6.9.1).
    let mut overflow = hello();
    overflow.extend(encode::window_update(0, 0x7fff_ffff));
    let (trace, seen) = attack(8, vec![overflow], ms(2_000));
    let sent = frames(&trace, "mallory", "store");
    assert_eq!(
        sent.last(),
        Some(&(
            FrameType::WindowUpdate,
            FrameDetail::WindowUpdate {
                increment: 0x7fff_ffff
            }
        )),
        "{}",
        everything(&trace)
    );
    assert_goaway_delivered(&trace, &seen, ErrorCode::FlowControlError);
}

#[test]
fn a_ping_flood_is_answered_ping_for_ping() {
    // h2 has no PING-flood guard (grpc-go and nginx count them): all 2,000
    // are acked, and the connection stays open.
    let mut flood = hello();
    for i in 0..2_000u64 {
        flood.extend(encode::ping(false, i.to_be_bytes()));
    }
    let (trace, seen) = attack(9, vec![flood], ms(500));
    let render = everything(&trace);
    let sent = frames(&trace, "mallory", "store");
    assert_eq!(count(&sent, FrameType::Ping), 2_000, "{render}");
    let acks = frames(&trace, "store", "mallory")
        .into_iter()
        .filter(|(_, d)| matches!(d, FrameDetail::Ping { .. }))
        .count();
    assert_eq!(acks, 2_000, "{render}");
    assert_eq!(goaway(&trace), None, "{render}");
    let types = seen.frame_types();
    assert_eq!(types.iter().filter(|t| **t == 6).count(), 2_000, "{seen:?}");
    assert_eq!(seen.end, None, "still open when mallory stopped reading");
}

#[test]
fn rapid_reset_cve_2023_44487_gets_goaway_too_many_resets() {
    // 1,000 requests, each cancelled right after its HEADERS.
    let mut rapid = hello();
    for i in 0..1_000u32 {
        rapid.extend(save_headers(2 * i + 1, false));
        rapid.extend(encode::rst_stream(2 * i + 1, ErrorCode::Cancel));
    }
    let (trace, seen) = attack(10, vec![rapid], ms(2_000));
    let render = everything(&trace);
    let sent = frames(&trace, "mallory", "store");
    assert_eq!(count(&sent, FrameType::Headers), 1_000, "{render}");
    assert_eq!(count(&sent, FrameType::RstStream), 1_000, "{render}");
    // h2 allows 20 streams reset by the peer before the server accepted
    // them (`DEFAULT_REMOTE_RESET_STREAM_MAX`; tonic's
    // `http2_max_pending_accept_reset_streams` is unset): the 21st reset
    // (stream 41) is one too many (h2 `proto/streams/recv.rs`).
    assert_eq!(
        goaway(&trace),
        Some((ErrorCode::EnhanceYourCalm, 41, "too_many_resets".into())),
        "{render}"
    );
    assert_goaway_lost_to_the_reset(&trace, &seen);
}

#[test]
fn a_raw_turmoil_stream_is_recorded_where_the_server_reads_it() {
    // The same rapid reset from a socket the harness did not open: its
    // frames are recorded as the store read them, as far as it read.
    let mut rapid = hello();
    for i in 0..100u32 {
        rapid.extend(save_headers(2 * i + 1, false));
        rapid.extend(encode::rst_stream(2 * i + 1, ErrorCode::Cancel));
    }
    let mut sim = Sim::builder().seed(11).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("mallory", move |_| async move {
        tokio::time::sleep(ms(5)).await;
        let mut stream = turmoil::net::TcpStream::connect(("store", 50051)).await?;
        stream.write_all(&rapid).await?;
        let mut buf = [0u8; 1024];
        while let Ok(n) = stream.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
        Ok(())
    });
    let trace = sim.run().expect("run");
    let render = everything(&trace);
    let read: Vec<_> = trace
        .events_on("mallory")
        .filter_map(|e| match &e.kind {
            EventKind::Frame { frame, fate, .. } => Some((*frame, fate.get())),
            _ => None,
        })
        .collect();
    assert!(
        read.iter().all(|(_, f)| *f == Fate::ReadAtReceiver),
        "{render}"
    );
    let resets = read
        .iter()
        .filter(|(t, _)| *t == FrameType::RstStream)
        .count();
    assert!(
        (21..100).contains(&resets),
        "as far as h2 read: {resets}: {render}"
    );
    assert!(
        render.contains(
            "mallory→store        c1 s1 RST_STREAM CANCEL [raw peer: recorded when store read it]"
        ),
        "{render}"
    );
    assert_eq!(
        goaway(&trace),
        Some((ErrorCode::EnhanceYourCalm, 41, "too_many_resets".into())),
        "{render}"
    );
    // The store reset; how much mallory had sent is not known.
    assert_eq!(reset_sent(&trace, "store"), Some(None), "{render}");
}

/// A store whose Save is 100 ms slow, and a player whose one Save carries
/// `grpc-timeout: <value>` set by hand, as a broken or hostile client
/// would send it.
fn save_with_raw_timeout(value: &'static str) -> Trace {
    use grpc_chaos_scenarios::services::pb::{store_client::StoreClient, SaveRequest};
    let mut sim = Sim::builder().seed(12).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        grpc_chaos::Fault::handler("store")
            .method(grpc_chaos_scenarios::services::SAVE)
            .delay(ms(100)),
    );
    sim.client("player", move |c| async move {
        let mut req = tonic::Request::new(SaveRequest::default());
        req.metadata_mut().insert("grpc-timeout", value.parse()?);
        let _ = StoreClient::new(c.channel("store")).save(req).await;
        Ok(())
    });
    sim.run().expect("run")
}

#[test]
fn a_malformed_grpc_timeout_is_recorded_with_what_tonic_made_of_it() {
    // Not a timeout at all: tonic's server ignores it, and the save runs
    // its 100 ms to the end.
    let trace = save_with_raw_timeout("5x");
    let render = trace.render();
    assert!(
        render
            .contains("player→store         c1 s1 HEADERS POST /tt.v1.Store/Save grpc-timeout=5x"),
        "the frame shows it as sent: {render}"
    );
    assert!(
        render.contains(
            "store                h1 handler /tt.v1.Store/Save: grpc-timeout \"5x\" is invalid \
             (1-8 digits and a unit H M S m u n, PROTOCOL-HTTP2); tonic's server ignores it: no \
             deadline"
        ),
        "{render}"
    );
    let call = trace.calls_from("player").next().expect("one call");
    assert_eq!(call.outcome().map(|o| o.code), Some("OK"), "{render}");
    let json: serde_json::Value = serde_json::from_str(&trace.to_json()).expect("json");
    let invalid = json["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["event"] == "grpc_timeout_invalid")
        .expect("recorded");
    assert_eq!(invalid["raw"], "5x");
    assert!(invalid["tonic_reads_us"].is_null());

    // Malformed to the spec (a sign), but tonic's parse takes it: 5 ms,
    // and its server's timer ends the save (CANCELLED "Timeout expired").
    let trace = save_with_raw_timeout("+5m");
    let render = trace.render();
    assert!(
        render.contains("grpc-timeout \"+5m\" is invalid (1-8 digits and a unit H M S m u n, PROTOCOL-HTTP2); tonic's server reads it as 5ms"),
        "{render}"
    );
    let call = trace.calls_from("player").next().expect("one call");
    let outcome = call.outcome().expect("ended");
    assert_eq!(
        (outcome.code, outcome.message.as_str()),
        ("CANCELLED", "Timeout expired"),
        "{render}"
    );
}

#[test]
fn a_huge_grpc_message_is_cut_in_renders_and_kept_in_the_json() {
    use grpc_chaos_scenarios::services::pb::{store_client::StoreClient, SaveRequest};
    let huge = "m".repeat(100_000);
    let mut sim = Sim::builder().seed(13).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        grpc_chaos::Fault::handler("store")
            .method(grpc_chaos_scenarios::services::SAVE)
            .abort(tonic::Code::Internal, huge.clone()),
    );
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store"))
            .save(SaveRequest::default())
            .await;
        Ok(())
    });
    let trace = sim.run().expect("run");
    let render = trace.render_with(&RenderOptions::everything());
    let limit = grpc_chaos::trace::PEER_STRING_LIMIT;
    let cut = format!("{:?}… {} bytes more", &huge[..limit], huge.len() - limit);
    assert!(render.contains(&format!("grpc-message={cut}")), "{render}");
    let longest = render.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 1_000, "every row stays short: {longest}");
    assert!(render.len() < 20_000, "{} bytes", render.len());
    assert!(trace.render_html().len() < 200_000);
    // The JSON and the typed events keep every byte.
    assert!(trace.to_json().contains(&huge));
}
