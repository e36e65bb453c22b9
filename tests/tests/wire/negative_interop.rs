//! grpc's negative HTTP/2 interop cases (grpc/grpc
//! `doc/negative-http2-interop-test-descriptions.md`) against a tonic
//! client in the sim: `interop` is a misbehaving server host that speaks
//! HTTP/2 itself, frame by frame, built with `grpc_chaos::wire::encode`
//! and read with `grpc_chaos::wire::Decoder`, as grpc's
//! `test/http2_test` server does in Python. Each case asserts the code
//! tonic reports next to what the doc expects, and its snapshot shows the
//! frames both ways.
//!
//! The calls are the reference `Store/Save` (a unary call, as the doc's
//! `UnaryCall`), answered with `SaveReply { total: 7 }`; payload sizes are
//! the reference service's, not the doc's 314,159 octets, which change
//! nothing the cases test.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::FrameDetail;
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::{
    encode, BlockKind, Decoder, Detail, Direction, ErrorCode, Event, FrameType, SettingId,
};
use grpc_chaos::ServeFnHost;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::{store_client::StoreClient, SaveRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::codegen::tokio_stream::StreamExt;

/// What the misbehaving server does; the doc's test cases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Goaway,
    RstAfterHeader,
    RstDuringData,
    RstAfterData,
    Ping,
    MaxStreams,
}

/// `SaveReply { total: 7 }`: field 1, varint 7 (protobuf encoding).
const REPLY: &[u8] = &[0x08, 0x07];

fn response_headers(stream: u32) -> Vec<u8> {
    let block = encode::hpack_literal(&[(":status", "200"), ("content-type", "application/grpc")]);
    encode::headers(stream, &block, false, true)
}

fn trailers(stream: u32) -> Vec<u8> {
    encode::headers(
        stream,
        &encode::hpack_literal(&[("grpc-status", "0")]),
        true,
        true,
    )
}

/// The whole answer to one call, or the case's misbehaviour in it.
fn answer(case: Case, stream: u32, pings: &mut u64) -> Vec<u8> {
    let body = encode::grpc_message(REPLY);
    let mut out = Vec::new();
    let mut ping = |out: &mut Vec<u8>| {
        *pings += 1;
        out.extend(encode::ping(false, pings.to_be_bytes()));
    };
    match case {
        Case::RstAfterHeader => {
            out.extend(response_headers(stream));
            out.extend(encode::rst_stream(stream, ErrorCode::NoError));
        }
        Case::RstDuringData => {
            out.extend(response_headers(stream));
            out.extend(encode::data(stream, &body[..body.len() / 2], false));
            out.extend(encode::rst_stream(stream, ErrorCode::NoError));
        }
        Case::RstAfterData => {
            out.extend(response_headers(stream));
            out.extend(encode::data(stream, &body, false));
            out.extend(encode::rst_stream(stream, ErrorCode::NoError));
        }
        Case::Ping => {
            // Before and after the headers, before and after the data.
            ping(&mut out);
            out.extend(response_headers(stream));
            ping(&mut out);
            ping(&mut out);
            out.extend(encode::data(stream, &body, false));
            ping(&mut out);
            out.extend(trailers(stream));
        }
        Case::Goaway | Case::MaxStreams => {
            out.extend(response_headers(stream));
            out.extend(encode::data(stream, &body, false));
            out.extend(trailers(stream));
        }
    }
    out
}

/// One connection of the misbehaving server: reads the client's frames
/// with the project's decoder and answers each call when its request
/// ends. Returns the PINGs it sent that the client never acked.
async fn serve_conn(case: Case, mut conn: grpc_chaos::server::SimConn) -> std::io::Result<u64> {
    conn.write_all(&encode::settings(&[])).await?;
    let mut decoder = Decoder::new(Direction::ClientToServer);
    let (mut events, mut buf) = (Vec::new(), vec![0u8; 16 * 1024]);
    let (mut calls, mut pings, mut acked) = (0u32, 0u64, 0u64);
    loop {
        let n = match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return Ok(pings - acked),
            Ok(n) => n,
        };
        decoder.feed(&buf[..n], &mut events);
        for event in events.drain(..) {
            let Event::Frame(frame) = event else { continue };
            let mut out = Vec::new();
            match frame.detail {
                Detail::Settings { ack: false, .. } => out.extend(encode::settings_ack()),
                Detail::Ping { ack: false, opaque } => out.extend(encode::ping(true, opaque)),
                Detail::Ping { ack: true, .. } => acked += 1,
                Detail::Data {
                    end_stream: true, ..
                }
                | Detail::Headers {
                    end_stream: true, ..
                } => {
                    calls += 1;
                    out.extend(answer(case, frame.stream_id, &mut pings));
                    // "after receiving the first UnaryCall": GOAWAY with
                    // that stream as the last one processed.
                    if case == Case::Goaway && calls == 1 {
                        out.extend(encode::goaway(frame.stream_id, ErrorCode::NoError, b""));
                    }
                    // "after the connection is made": once the first call
                    // is answered, one stream at a time.
                    if case == Case::MaxStreams && calls == 1 {
                        out.extend(encode::settings(&[(SettingId::MaxConcurrentStreams, 1)]));
                    }
                }
                _ => {}
            }
            conn.write_all(&out).await?;
        }
    }
}

type Shared<T> = std::rc::Rc<std::cell::RefCell<T>>;

/// Runs `case`: the misbehaving `interop` server, and a tonic client
/// `client` that makes the doc's calls (one; two in a row for goaway; one
/// then ten at once for max_streams).
fn run(case: Case) -> Run {
    let codes: Shared<Vec<(tonic::Code, String)>> = Default::default();
    let outstanding = Arc::new(AtomicU64::new(0));
    let mut sim = Sim::builder().seed(1).build();
    let left = outstanding.clone();
    sim.server_fn("interop", move |host: ServeFnHost| {
        let left = left.clone();
        async move {
            let mut incoming = host.incoming();
            while let Some(conn) = incoming.next().await {
                let left = left.clone();
                let conn = conn?;
                tokio::spawn(async move {
                    if let Ok(n) = serve_conn(case, conn).await {
                        left.fetch_add(n, Ordering::Relaxed);
                    }
                });
            }
            Ok::<(), std::io::Error>(())
        }
    });
    let out = codes.clone();
    sim.client("client", move |c| async move {
        let store = StoreClient::new(c.channel("interop"));
        let save = |mut store: StoreClient<grpc_chaos::Channel>| async move {
            match store.save(SaveRequest::default()).await {
                Ok(reply) => {
                    assert_eq!(reply.into_inner().total, 7, "the reply arrived whole");
                    (tonic::Code::Ok, String::new())
                }
                Err(status) => (status.code(), status.message().to_owned()),
            }
        };
        let first = save(store.clone()).await;
        out.borrow_mut().push(first);
        let more = match case {
            Case::Goaway => 1,
            Case::MaxStreams => 10,
            _ => 0,
        };
        // At once: each call on its own task.
        let calls: Vec<_> = (0..more)
            .map(|_| tokio::spawn(save(store.clone())))
            .collect();
        for call in calls {
            let code = call.await?;
            out.borrow_mut().push(code);
        }
        Ok(())
    });
    let trace = sim.run().expect("run");
    let codes = codes.borrow().clone();
    Run {
        trace,
        codes,
        outstanding_pings: outstanding.load(Ordering::Relaxed),
    }
}

/// One case's run.
struct Run {
    trace: Trace,
    /// The codes (and messages) tonic reported to the caller, in call
    /// order.
    codes: Vec<(tonic::Code, String)>,
    /// PINGs the server sent that the client had not acked when its
    /// connections closed.
    outstanding_pings: u64,
}

/// The snapshot's view: every frame and connection event, no debug logs.
fn render(trace: &Trace) -> String {
    let mut options = RenderOptions::everything();
    options.debug_logs = false;
    trace.render_with(&options)
}

/// Client frames of one type: (connection, stream, detail).
fn client_frames(trace: &Trace, ty: FrameType) -> Vec<(u32, u32, FrameDetail)> {
    trace
        .events_on("client")
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                conn,
                stream,
                frame,
                detail,
                ..
            } if *frame == ty => Some((*conn, *stream, detail.clone())),
            _ => None,
        })
        .collect()
}

fn ok(n: usize) -> Vec<(tonic::Code, String)> {
    vec![(tonic::Code::Ok, String::new()); n]
}

/// The message tonic gives a response that ends without `grpc-status`
/// (tonic 0.14.9 `status.rs`, `infer_grpc_status`, HTTP 200).
const NO_STATUS: &str = "protocol error: missing grpc-status trailer, stream was terminated \
                         without a final status (possible truncation by a proxy or load balancer)";

#[test]
fn goaway_the_second_call_succeeds_on_a_new_connection() {
    // Doc: both calls succeed; the second has another stream (it goes on
    // a new connection, the first having been told to go away).
    let run = run(Case::Goaway);
    assert_eq!(run.codes, ok(2), "{}", render(&run.trace));
    let requests: Vec<(u32, u32)> = client_frames(&run.trace, FrameType::Headers)
        .into_iter()
        .map(|(c, s, _)| (c, s))
        .collect();
    assert_eq!(requests, [(1, 1), (2, 1)], "{}", render(&run.trace));
    insta::assert_snapshot!(render(&run.trace));
}

#[test]
fn rst_after_header_fails_the_call_unknown() {
    // Doc: the call fails, code not standardised. PROTOCOL-HTTP2 maps
    // RST_STREAM NO_ERROR to INTERNAL; hyper takes RST_STREAM(NO_ERROR) as
    // the end of the response body (RFC 9113 §8.1), so tonic sees a 200
    // with no trailers: UNKNOWN.
    let run = run(Case::RstAfterHeader);
    assert_eq!(
        run.codes,
        [(tonic::Code::Unknown, NO_STATUS.into())],
        "{}",
        render(&run.trace)
    );
    insta::assert_snapshot!(render(&run.trace));
}

#[test]
fn rst_during_data_fails_the_call_internal() {
    // Doc: the call fails. tonic's decoder finds the body ended inside a
    // message: INTERNAL (which is also PROTOCOL-HTTP2's code for
    // RST_STREAM NO_ERROR), and the trace says what the caller got.
    let run = run(Case::RstDuringData);
    let internal = (
        tonic::Code::Internal,
        "Unexpected EOF decoding stream.".to_owned(),
    );
    assert_eq!(run.codes, [internal], "{}", render(&run.trace));
    let render = render(&run.trace);
    assert!(
        render.contains(
            "r1 call /tt.v1.Store/Save ended INTERNAL \"Unexpected EOF decoding stream.\""
        ),
        "{render}"
    );
    insta::assert_snapshot!(render);
}

#[test]
fn rst_after_data_fails_the_call_unknown() {
    // Doc: the call fails (some languages hand out the data first). tonic
    // got the whole reply, but no status: UNKNOWN, not the INTERNAL of
    // PROTOCOL-HTTP2.
    let run = run(Case::RstAfterData);
    assert_eq!(
        run.codes,
        [(tonic::Code::Unknown, NO_STATUS.into())],
        "{}",
        render(&run.trace)
    );
    insta::assert_snapshot!(render(&run.trace));
}

#[test]
fn ping_every_server_ping_is_acked() {
    // Doc: the call succeeds and no PING is outstanding when the
    // connection is lost.
    let run = run(Case::Ping);
    assert_eq!(run.codes, ok(1), "{}", render(&run.trace));
    assert_eq!(run.outstanding_pings, 0, "{}", render(&run.trace));
    let acks: Vec<[u8; 8]> = client_frames(&run.trace, FrameType::Ping)
        .into_iter()
        .filter_map(|(_, _, d)| match d {
            FrameDetail::Ping { payload } => Some(payload),
            _ => None,
        })
        .collect();
    let sent: Vec<[u8; 8]> = (1..=4u64).map(u64::to_be_bytes).collect();
    assert_eq!(acks, sent, "{}", render(&run.trace));
    insta::assert_snapshot!(render(&run.trace));
}

#[test]
fn max_streams_the_client_keeps_to_one_stream() {
    // Doc: the first call, then 10 at once, all succeed, within the
    // MAX_CONCURRENT_STREAMS = 1 the server set after the first.
    let run = run(Case::MaxStreams);
    assert_eq!(run.codes, ok(11), "{}", render(&run.trace));
    // On the wire: each request HEADERS after the first comes only once
    // the stream before it has ended (its trailers went out).
    let mut open: Option<u32> = None;
    for e in run.trace.events() {
        let EventKind::Frame {
            stream,
            frame: FrameType::Headers,
            detail: FrameDetail::Headers(block),
            ..
        } = &e.kind
        else {
            continue;
        };
        match block.kind() {
            BlockKind::Request => {
                assert_eq!(open, None, "s{stream} opened while s{open:?} was open");
                open = Some(*stream);
            }
            BlockKind::Trailers => open = None,
            _ => {}
        }
    }
    insta::assert_snapshot!(render(&run.trace));
}
