//! Hardening: a peer that does not speak HTTP/2 cannot break the harness,
//! and a run never touches the host's network.
//!
//! The misbehaving peer is a client host that opens a raw
//! `turmoil::net::TcpStream` to a sim server's port (50051) and writes bytes
//! no HTTP/2 client would. Its own bytes pass no writer task (it never went
//! through `Host::channel` or `Host::raw_connect`), so the server end of the
//! connection records them as it reads them (`Fate::ReadAtReceiver`); the
//! tonic server's reaction on the way back is tapped at the sender. Both
//! must show in the trace.

use std::time::Duration;

use grpc_chaos::recorder::event::{
    DebugData, Fate, FrameDetail, FrameFlags, GoAway, SettingValues,
};
use grpc_chaos::recorder::event::{Event, EventKind};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::{ErrorCode, FrameType, SettingId};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::TcpStream;

/// tonic's server SETTINGS (its parameters, in the order it sends them).
fn settings() -> Recorded {
    let values = [
        (SettingId::InitialWindowSize, 1_048_576),
        (SettingId::MaxFrameSize, 16_384),
        (SettingId::MaxHeaderListSize, 16_384),
    ];
    (
        FrameType::Settings,
        FrameFlags::NONE,
        FrameDetail::Settings {
            values: values.into(),
        },
    )
}

/// A recorded frame, flattened for assertions: type, flags, payload.
type Recorded = (FrameType, FrameFlags, FrameDetail);

/// The client connection preface (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// An HTTP/2 frame: 9-octet header (RFC 9113 §4.1) and payload.
fn frame(ty: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("small payload");
    let mut out = len.to_be_bytes()[1..].to_vec();
    out.extend([ty, flags]);
    out.extend(stream.to_be_bytes());
    out.extend(payload);
    out
}

/// What the misbehaving peer saw: the server's bytes, and whether the
/// server closed the connection (read returned end of stream).
#[derive(Debug, Default, Clone)]
struct Seen {
    bytes: Vec<u8>,
    closed: bool,
}

impl Seen {
    /// Frame types (RFC 9113 §6) in the bytes the server wrote.
    fn frame_types(&self) -> Vec<u8> {
        let (mut at, mut types) = (0, Vec::new());
        while self.bytes.len() >= at + 9 {
            let len =
                u32::from_be_bytes([0, self.bytes[at], self.bytes[at + 1], self.bytes[at + 2]]);
            types.push(self.bytes[at + 3]);
            at += 9 + len as usize;
        }
        types
    }
}

/// Reads what the server writes until it closes the connection or `wait`
/// (*simulated* time) passes without a byte.
async fn read_until_closed(stream: &mut TcpStream, wait: Duration, seen: &mut Seen) {
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(wait, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                seen.closed = true;
                return;
            }
            Ok(Ok(n)) => seen.bytes.extend_from_slice(&buf[..n]),
            Err(_) => return,
        }
    }
}

type Shared<T> = std::rc::Rc<std::cell::RefCell<T>>;

/// A `store` server, a raw peer `mallory` that connects at 7 ms, writes
/// `script` and then reads until the server closes or `stall` (*simulated*)
/// passes without a byte, and a well-behaved `player` whose four saves, at
/// 5 ms and then every 7 ms or so — on a connection opened before mallory's
/// and reused after it — must all succeed on the same server.
fn misbehave(seed: u64, script: Vec<u8>, stall: Duration) -> (Trace, Seen) {
    let seen: Shared<Seen> = Default::default();
    let mut sim = Sim::builder().seed(seed).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let out = seen.clone();
    sim.client("mallory", move |_| async move {
        tokio::time::sleep(ms(7)).await;
        let mut stream = TcpStream::connect(("store", 50051)).await?;
        stream.write_all(&script).await?;
        let mut seen = Seen::default();
        read_until_closed(&mut stream, stall, &mut seen).await;
        *out.borrow_mut() = seen;
        Ok(())
    });
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        for n in 0..4 {
            tokio::time::sleep(ms(5)).await;
            let req = SaveRequest {
                match_id: "m1".into(),
                points: 1,
            };
            let total = store.save(req).await?.into_inner().total;
            assert_eq!(total, n + 1, "the store kept every save");
        }
        Ok(())
    });
    let trace = match sim.run() {
        Ok(trace) => trace,
        Err(e) => panic!("the harness must go on: {e}"),
    };
    let seen = seen.borrow().clone();
    (trace, seen)
}

/// Frames the server wrote to `to`.
fn frames_to(trace: &Trace, to: &str) -> Vec<Recorded> {
    trace
        .events_on("store")
        .filter_map(|e: &Event| match &e.kind {
            EventKind::Frame {
                to: t,
                frame,
                flags,
                detail,
                ..
            } if t == to => Some((*frame, *flags, detail.clone())),
            _ => None,
        })
        .collect()
}

/// Whether the trace records `host` closing its end of a connection to
/// `to`, with a FIN or a reset.
fn closed(trace: &Trace, host: &str, to: &str) -> bool {
    trace.events_on(host).any(|e| {
        matches!(&e.kind, EventKind::ConnClosed { to: t, .. }
            | EventKind::ConnResetSent { to: t, .. } if t == to)
    })
}

/// The server's protocol errors (malformed frames it wrote) toward `to`.
fn protocol_errors(trace: &Trace, to: &str) -> usize {
    trace
        .events_on("store")
        .filter(|e| matches!(&e.kind, EventKind::ProtocolError { to: t, .. } if t == to))
        .count()
}

/// What the raw peer wrote, as the server read it: frames and protocol
/// errors recorded at mallory.
fn from_mallory(trace: &Trace) -> (Vec<Recorded>, usize) {
    let mut frames = Vec::new();
    let mut errors = 0;
    for e in trace.events_on("mallory") {
        match &e.kind {
            EventKind::Frame {
                frame,
                flags,
                detail,
                fate,
                ..
            } => {
                assert_eq!(*fate, Fate::ReadAtReceiver, "{e:?}");
                frames.push((*frame, *flags, detail.clone()));
            }
            EventKind::ProtocolError { to, .. } if to == "store" => errors += 1,
            _ => {}
        }
    }
    (frames, errors)
}

/// Every save of the player succeeded, all on its one connection (`c1`,
/// opened before mallory's): mallory's mess stayed on mallory's connection.
fn assert_player_fine(trace: &Trace) {
    let render = trace.render();
    let calls: Vec<_> = trace.calls_from("player").collect();
    assert_eq!(calls.len(), 4, "{render}");
    for call in calls {
        assert_eq!(call.outcome().map(|o| o.code), Some("OK"), "{render}");
    }
    let conns: std::collections::BTreeSet<u32> = trace
        .events_on("player")
        .filter_map(|e| match &e.kind {
            EventKind::Frame { conn, .. } => Some(*conn),
            _ => None,
        })
        .collect();
    assert_eq!(conns, [1].into(), "{render}");
}

#[test]
fn garbage_instead_of_a_preface_is_refused_and_recorded() {
    let script = b"\x16\x03\x01\x02\x00 hello, this is TLS, not h2c\r\n\r\n".to_vec();
    let (trace, seen) = misbehave(1, script, ms(2_000));
    let render = trace.render_with(&RenderOptions::everything());
    let frames = frames_to(&trace, "mallory");
    // h2 writes its SETTINGS before reading the preface (RFC 9113 §3.4),
    // then drops the connection on a bad one, without a GOAWAY: the close
    // is the whole reaction, and the trace must have it. It read the 24
    // octets a preface has and left the rest of mallory's write unread, so
    // the close is a reset (turmoil, as TCP, RFC 9293 §3.10.4), not a FIN.
    assert_eq!(frames, [settings()], "{render}");
    assert!(closed(&trace, "store", "mallory"), "{render}");
    assert!(
        render.contains(
            "store→mallory        c2 reset: store closed it with bytes from mallory unread \
             (RST, RFC 9293 §3.10.4; 24 read)"
        ),
        "{render}"
    );
    assert!(
        !trace.render().contains("c2 reset"),
        "closes are noise in the default render"
    );
    assert!(seen.closed, "the server closed the connection: {seen:?}");
    assert_eq!(seen.frame_types(), [4], "mallory got SETTINGS: {seen:?}");
    // What the server wrote is well-formed HTTP/2.
    assert_eq!(protocol_errors(&trace, "mallory"), 0, "{render}");
    // What mallory wrote is in the trace too: a preface that is not one.
    assert_eq!(from_mallory(&trace), (vec![], 1), "{render}");
    assert!(
        render.contains("mallory→store        c2 protocol error at byte 0: "),
        "{render}"
    );
    assert_player_fine(&trace);
}

#[test]
fn half_a_preface_then_a_stall_holds_only_that_connection() {
    let script = PREFACE[..12].to_vec();
    let (trace, seen) = misbehave(2, script, ms(3_000));
    let render = trace.render_with(&RenderOptions::everything());
    // tonic sets no handshake timeout: the server waits for the rest of
    // the preface for as long as mallory stalls, and serves everyone else.
    assert_eq!(frames_to(&trace, "mallory"), [settings()], "{render}");
    // Open for the whole stall; only mallory's own hang-up (when its body
    // returns, after 3s) ends the connection.
    let close = trace.events_on("store").find_map(|e| match &e.kind {
        EventKind::ConnClosed { to, .. } if to == "mallory" => Some(e.at()),
        _ => None,
    });
    assert!(
        close.is_none_or(|t| t >= ms(3_000)),
        "closed at {close:?}: {render}"
    );
    assert!(!seen.closed, "still open after 3s: {seen:?}");
    // Half a preface is neither a frame nor an error while mallory
    // stalls; when its end closes, the unfinished preface is.
    assert_eq!(from_mallory(&trace), (vec![], 1), "{render}");
    assert!(
        render.contains(
            "mallory→store        c2 protocol error at byte 0: connection ended after 12 of 24 \
             preface octets (RFC 9113 §3.4)"
        ),
        "{render}"
    );
    let error_at = trace.events_on("mallory").find_map(|e| match &e.kind {
        EventKind::ProtocolError { .. } => Some(e.at()),
        _ => None,
    });
    assert!(error_at.is_some_and(|t| t >= ms(3_000)), "{render}");
    assert_eq!(seen.frame_types(), [4], "{seen:?}");
    assert!(trace.ended_at() >= ms(3_000), "mallory stalled 3s");
    assert_player_fine(&trace);
    let last_call = trace.calls_from("player").filter_map(|c| c.ended_at).max();
    assert!(
        last_call.is_some_and(|t| t < ms(100)),
        "the player was served during the stall: {render}"
    );
}

#[test]
fn malformed_frame_after_a_valid_preface_gets_goaway() {
    let mut script = PREFACE.to_vec();
    script.extend(frame(0x4, 0, 0, &[])); // SETTINGS, empty: valid
                                          // PING with a 4-octet payload: FRAME_SIZE_ERROR (RFC 9113 §6.7).
    script.extend(frame(0x6, 0, 0, &[1, 2, 3, 4]));
    let (trace, seen) = misbehave(3, script, ms(2_000));
    let render = trace.render_with(&RenderOptions::everything());
    // h2 acks the valid SETTINGS, then answers the bad PING with a
    // connection error (RFC 9113 §5.4.1): GOAWAY, then close.
    assert_eq!(
        frames_to(&trace, "mallory"),
        [
            settings(),
            (
                FrameType::Settings,
                FrameFlags::ACK,
                FrameDetail::Settings {
                    values: SettingValues::default()
                }
            ),
            (
                FrameType::GoAway,
                FrameFlags::NONE,
                FrameDetail::GoAway(Box::new(GoAway {
                    last_stream_id: 0,
                    code: ErrorCode::ProtocolError,
                    debug: DebugData::default()
                }))
            )
        ],
        "{render}"
    );
    assert!(closed(&trace, "store", "mallory"), "{render}");
    assert!(
        trace
            .render()
            .contains("store→mallory        c2 s0 GOAWAY PROTOCOL_ERROR"),
        "a GOAWAY shows in the default render: {render}"
    );
    assert!(seen.closed, "{seen:?}");
    assert_eq!(seen.frame_types(), [4, 4, 7], "{seen:?}");
    assert_eq!(protocol_errors(&trace, "mallory"), 0, "{render}");
    // Both sides: mallory's valid SETTINGS and its bad PING, as read.
    let empty = FrameDetail::Settings {
        values: SettingValues::default(),
    };
    assert_eq!(
        from_mallory(&trace),
        (vec![(FrameType::Settings, FrameFlags::NONE, empty)], 1),
        "{render}"
    );
    assert!(
        render.contains("mallory→store        c2 protocol error at byte 33: PING of 4 octets"),
        "{render}"
    );
    assert_player_fine(&trace);
}

/// Open file descriptors of this process that are OS sockets
/// (`socket:[inode]`), and tokio I/O drivers (`anon_inode:[eventpoll]`:
/// mio's epoll instance).
#[cfg(target_os = "linux")]
fn os_handles() -> (usize, usize) {
    let (mut sockets, mut epolls) = (0, 0);
    for entry in std::fs::read_dir("/proc/self/fd").expect("procfs") {
        let Ok(target) = std::fs::read_link(entry.expect("fd entry").path()) else {
            continue; // the read_dir's own fd, closed by now
        };
        let target = target.to_string_lossy();
        sockets += usize::from(target.starts_with("socket:["));
        epolls += usize::from(target == "anon_inode:[eventpoll]");
    }
    (sockets, epolls)
}

/// Every byte of a run goes through turmoil's in-memory network: turmoil
/// builds each host's tokio runtime without its I/O driver, so there is no
/// reactor a real socket could even register with.
#[cfg(target_os = "linux")]
#[test]
fn a_run_opens_no_os_sockets() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let before = os_handles();
    {
        // The count sees a socket when there is one (no network involved).
        let probe = std::os::unix::net::UnixDatagram::unbound().expect("unix socket");
        assert_eq!(os_handles().0, before.0 + 1, "the probe socket is counted");
        drop(probe);
    }

    // A catalog story, watched from another thread while it runs.
    let story = grpc_chaos_scenarios::catalog::find("deadline-chain").expect("in the catalog");
    let (done, most) = (AtomicBool::new(false), AtomicUsize::new(0));
    // The story starts only once the watcher has taken its first sample,
    // and the watcher samples once more after the story ends: on a loaded
    // machine the OS may not schedule the watcher while a short story runs
    // (seen: no sample at all), and then the count would prove nothing.
    // The body's own count below is taken *during* a run, whatever the OS.
    let started = std::sync::Barrier::new(2);
    let (report, samples) = std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let mut samples = 0;
            loop {
                let stop = done.load(Ordering::SeqCst);
                let (sockets, epolls) = os_handles();
                most.fetch_max(sockets + epolls, Ordering::SeqCst);
                samples += 1;
                if samples == 1 {
                    started.wait();
                }
                if stop {
                    break samples;
                }
            }
        });
        started.wait();
        let (report, _trace) = story.run(0);
        done.store(true, Ordering::SeqCst);
        (report, watcher.join().expect("watcher"))
    });
    assert!(report.passed(), "{report:?}");
    assert!(
        samples >= 2,
        "the watcher sampled before and after the story"
    );
    assert_eq!(
        most.load(Ordering::SeqCst),
        before.0 + before.1,
        "an OS socket or I/O driver appeared during the story"
    );

    // From inside a client body, with connections open on both ends.
    let during = std::rc::Rc::new(std::cell::Cell::new(None));
    let mut sim = Sim::builder().seed(4).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let seen = during.clone();
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        let req = SaveRequest {
            match_id: "m1".into(),
            points: 1,
        };
        store.save(req).await?;
        seen.set(Some(os_handles()));
        Ok(())
    });
    let trace = sim.run().expect("run");
    assert!(
        trace.events().iter().any(|e| matches!(
            &e.kind,
            EventKind::Frame {
                frame: FrameType::Data,
                ..
            }
        )),
        "the call went over a (simulated) connection"
    );
    assert_eq!(
        during.get(),
        Some(before),
        "during the run, in a client body"
    );
    assert_eq!(os_handles(), before, "after the runs");
}

#[cfg(not(target_os = "linux"))]
#[test]
fn a_run_opens_no_os_sockets() {
    eprintln!("skipped: counts sockets in /proc/self/fd, which only Linux has");
}

/// Which branch each of 64 `tokio::select!`s over two ready futures took,
/// in a client body of a run with `seed`.
fn select_choices(seed: u64) -> Vec<bool> {
    let picks: Shared<Vec<bool>> = Default::default();
    let mut sim = Sim::builder().seed(seed).build();
    let out = picks.clone();
    sim.client("picker", move |_| async move {
        for _ in 0..64 {
            let first = tokio::select! {
                () = std::future::ready(()) => true,
                () = std::future::ready(()) => false,
            };
            out.borrow_mut().push(first);
        }
        Ok(())
    });
    sim.run().expect("run");
    let picks = picks.borrow().clone();
    picks
}

/// `tokio_rng_seeded()` tells the truth: with it, `select!` picks the same
/// branches for the same seed; without it, two runs pick differently
/// (equal by chance with probability 2^-64).
#[test]
fn tokio_rng_seeded_says_whether_select_repeats() {
    let (a, b) = (select_choices(5), select_choices(5));
    assert_eq!(a.len(), 64);
    if grpc_chaos::check::tokio_rng_seeded() {
        assert_eq!(a, b, "seeded: the same seed picks the same branches");
    } else {
        assert_ne!(a, b, "unseeded: tokio drew a fresh seed per runtime");
    }
}
