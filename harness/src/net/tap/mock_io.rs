//! The writer task driven end to end, outside turmoil. A `tokio::sync::mpsc`
//! sender plays the host's HTTP/2 stack (it feeds the task the way
//! `SimConn::poll_write` does), and a tokio-test mock is the socket, scripted
//! with exactly the bytes that must reach the wire, in order, with
//! `.wait(d)` where bytes must not leave before a simulated time.
//!
//! Time is tokio's paused clock (`start_paused`): it jumps to the next timer
//! when every task waits, so nothing sleeps for real. Outside turmoil the
//! recorder reads its driver clock; [`on_tokio_clock`] keeps that clock at
//! tokio's time while the writer task runs, so the tap, its rules and the
//! recorded events see the same simulated time as the mock.

#![cfg(test)]

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_test::io::{Builder, Mock};

use super::tests::tap_for;
use super::writer::{run, CHANNEL_CHUNKS, SEND_BUFFER};
use super::TapEnv;
use crate::fault::Fault;
use crate::recorder::event::{Event, EventKind, Fate};
use crate::wire::testing::{unhex, H2_C2S, H2_S2C};
use crate::wire::{encode, Direction, FrameType};

const C2S: Direction = Direction::ClientToServer;
const S2C: Direction = Direction::ServerToClient;

/// Frame offsets in the recorded exchange (`wire/tests/recorded.rs` pins
/// them): client→server WINDOW_UPDATE, HEADERS of stream 3, PING; the
/// server→client PING ACK. A PING frame is 9 + 8 octets.
const C2S_WINDOW_UPDATE: usize = 54;
const C2S_HEADERS_S3: usize = 1192;
const C2S_PING: usize = 1247;
const S2C_PING_ACK: usize = 1164;
const PING_LEN: usize = 17;
const WINDOW_UPDATE_LEN: usize = 13;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// What went through the socket: bytes per simulated time (consecutive
/// writes at one time merged), and when the writer shut it down.
#[derive(Debug, Default)]
struct Log {
    left: Vec<(Duration, usize)>,
    shutdown: Option<Duration>,
}

fn lock(log: &Mutex<Log>) -> MutexGuard<'_, Log> {
    // A panicking writer poisons it; the panic itself is what the test reports.
    log.lock().unwrap_or_else(|p| p.into_inner())
}

/// The writer's socket. The tokio-test mock panics on a byte it does not
/// expect and, when dropped, on expected bytes that never came; but a
/// write that comes before a `.wait(d)` is over only waits there. This
/// wrapper fails it instead, and notes when bytes left, so that a late
/// release fails too.
struct Socket {
    mock: Mock,
    start: Instant,
    log: Arc<Mutex<Log>>,
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let at = this.start.elapsed();
        let mut log = lock(&this.log);
        assert!(log.shutdown.is_none(), "a write at {at:?} after shutdown");
        let Poll::Ready(written) = Pin::new(&mut this.mock).poll_write(cx, buf) else {
            panic!(
                "{} bytes written at {at:?}, before the script's wait is over",
                buf.len()
            );
        };
        if let Ok(n) = written {
            match log.left.last_mut() {
                Some((t, total)) if *t == at => *total += n,
                _ => log.left.push((at, n)),
            }
        }
        Poll::Ready(written)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.mock).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        lock(&self.log).shutdown = Some(self.start.elapsed());
        Pin::new(&mut self.mock).poll_shutdown(cx)
    }
}

/// Runs `task` with the recorder's driver clock (what `Recorder::now` reads
/// outside turmoil) set to tokio's time since `start` before every poll.
/// Paused time moves only while every task waits, never during a poll, so
/// the value is exact for the whole poll.
fn on_tokio_clock<F: Future>(
    env: TapEnv,
    start: Instant,
    task: F,
) -> impl Future<Output = F::Output> {
    let mut task = Box::pin(task);
    std::future::poll_fn(move |cx| {
        env.recorder.set_driver_clock(start.elapsed());
        task.as_mut().poll(cx)
    })
}

/// A writer task under test, and the sender that feeds it.
struct Writer {
    tx: mpsc::Sender<Bytes>,
    task: JoinHandle<()>,
    env: TapEnv,
    start: Instant,
    log: Arc<Mutex<Log>>,
}

impl Writer {
    /// Starts the writer of `direction` with `faults`; its socket follows
    /// `script`. Simulated time 0 is now. The mock starts a `.wait(d)` when
    /// the write before it is done, so a script starts with a write.
    fn start(direction: Direction, faults: Vec<Fault>, script: &mut Builder) -> Self {
        let tap = tap_for(direction, faults);
        let env = tap.env().clone();
        let start = Instant::now();
        let log = Arc::default();
        let socket = Socket {
            mock: script.build(),
            start,
            log: Arc::clone(&log),
        };
        // The same capacity as the real wiring: backpressure is part of
        // what a kept-back frame does to its sender.
        let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
        let task = tokio::spawn(on_tokio_clock(env.clone(), start, run(tap, socket, rx)));
        Self {
            tx,
            task,
            env,
            start,
            log,
        }
    }

    /// Simulated time since the start.
    fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Writes `bytes` in chunks of `sizes` (cycled; a 0 is an empty write,
    /// and one size must not be 0), each copied and waiting for room, as
    /// `SimConn::poll_write` does.
    async fn send(&self, bytes: &[u8], sizes: &[usize]) {
        let mut rest = bytes;
        for &size in sizes.iter().cycle() {
            if rest.is_empty() {
                return;
            }
            let (chunk, tail) = rest.split_at(size.min(rest.len()));
            let sent = self.tx.send(Bytes::copy_from_slice(chunk)).await;
            assert!(sent.is_ok(), "the writer task stopped taking bytes");
            rest = tail;
        }
    }

    /// Shuts the sender's end down (as `SimConn::poll_shutdown` does) and
    /// waits for the task to end. A wrong, missing or early byte panicked
    /// in the task; that panic fails the test here. A task that never ends
    /// fails it after a simulated hour (no wall time: the clock is paused).
    async fn finish(self) -> (Log, Vec<Event>) {
        drop(self.tx);
        let ended = tokio::time::timeout(Duration::from_secs(3600), self.task).await;
        let Ok(ended) = ended else {
            panic!("the writer task never ended");
        };
        if let Err(e) = ended {
            std::panic::resume_unwind(e.into_panic());
        }
        let log = std::mem::take(&mut *lock(&self.log));
        (log, self.env.recorder.events())
    }
}

/// The recorded frames: when, which, and what the faults did.
fn frames(events: &[Event]) -> Vec<(Duration, FrameType, Fate)> {
    let frame = |e: &Event| match &e.kind {
        EventKind::Frame { frame, fate, .. } => Some((e.at(), *frame, fate.get())),
        _ => None,
    };
    events.iter().filter_map(frame).collect()
}

/// The recorded injected frames: when, which.
fn injected(events: &[Event]) -> Vec<(Duration, FrameType)> {
    let injected = |(at, frame, fate): (Duration, FrameType, Fate)| {
        (fate == Fate::Injected).then_some((at, frame))
    };
    frames(events).into_iter().filter_map(injected).collect()
}

/// The recorded releases of kept-back frames: when, which, and how long
/// each was kept.
fn releases(events: &[Event]) -> Vec<(Duration, FrameType, Duration)> {
    let release = |e: &Event| match &e.kind {
        EventKind::FrameReleased { frame, kept, .. } => Some((e.at(), *frame, *kept)),
        _ => None,
    };
    events.iter().filter_map(release).collect()
}

fn closed_at(events: &[Event]) -> Vec<Duration> {
    let closed = |e: &Event| matches!(e.kind, EventKind::ConnClosed { .. }).then_some(e.at());
    events.iter().filter_map(closed).collect()
}

#[tokio::test(start_paused = true)]
async fn watching_passes_a_recorded_exchange_whole_in_any_chunking() {
    for (direction, hex) in [(C2S, H2_C2S), (S2C, H2_S2C)] {
        let stream = unhex(hex);
        for sizes in [&[1][..], &[0, 7, 1, 300], &[9], &[4096]] {
            let w = Writer::start(direction, vec![], Builder::new().write(&stream));
            w.send(&stream, sizes).await;
            let (log, events) = w.finish().await;
            let what = format!("{direction:?}, chunks {sizes:?}");
            assert_eq!(log.left, [(ms(0), stream.len())], "{what}");
            assert_eq!(log.shutdown, Some(ms(0)), "{what}");
            let recorded = frames(&events);
            assert!(recorded.len() >= 10, "{what}: {recorded:?}");
            assert!(recorded.iter().all(|f| f.2 == Fate::Passed), "{what}");
            assert_eq!(closed_at(&events), [ms(0)], "{what}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_dropped_ping_ack_is_cut_out_exactly() {
    let stream = unhex(H2_S2C);
    let ack = S2C_PING_ACK..S2C_PING_ACK + PING_LEN;
    assert_eq!(
        stream[ack.start..][..5],
        [0, 0, 8, 6, 1],
        "a PING ACK header"
    );
    let fault = Fault::frames().kind(FrameType::Ping).ack(true).drop();
    let mut script = Builder::new();
    script.write(&stream[..ack.start]).write(&stream[ack.end..]);
    let w = Writer::start(S2C, vec![fault], &mut script);
    // One write ends inside the PING ACK: the cut must not follow writes.
    w.send(&stream, &[ack.start + 6, 4096]).await;
    let (log, events) = w.finish().await;
    assert_eq!(log.left, [(ms(0), stream.len() - PING_LEN)]);
    let pings: Vec<Fate> = frames(&events)
        .into_iter()
        .filter(|f| f.1 == FrameType::Ping)
        .map(|f| f.2)
        .collect();
    // The server's own PING (not an ACK) right after it passes.
    assert_eq!(pings, [Fate::Dropped, Fate::Passed]);
}

#[tokio::test(start_paused = true)]
async fn a_delayed_frame_and_the_bytes_behind_it_leave_on_the_timer() {
    let stream = unhex(H2_C2S);
    let fault = Fault::frames()
        .kind(FrameType::Ping)
        .ack(false)
        .delay(ms(40));
    let mut script = Builder::new();
    script
        .write(&stream[..C2S_PING])
        .wait(ms(40))
        .write(&stream[C2S_PING..]);
    let w = Writer::start(C2S, vec![fault], &mut script);
    // 14 chunks fit in the channel: every write returns at 0 ms.
    w.send(&stream, &[100]).await;
    assert_eq!(w.now(), ms(0));
    // The sender stays open and quiet: only the writer's timer can release.
    tokio::time::sleep(ms(1000)).await;
    let (log, events) = w.finish().await;
    let behind = stream.len() - C2S_PING;
    assert_eq!(log.left, [(ms(0), C2S_PING), (ms(40), behind)]);
    assert_eq!(log.shutdown, Some(ms(1000)));
    // The PING, and every frame written behind it: each recorded when it
    // was written, each released with it.
    let kept: Vec<(Duration, FrameType, Duration)> = [
        FrameType::Ping,
        FrameType::Headers,
        FrameType::Data,
        FrameType::RstStream,
        FrameType::Ping,
        FrameType::GoAway,
    ]
    .into_iter()
    .map(|f| (ms(40), f, ms(40)))
    .collect();
    assert_eq!(releases(&events), kept);
    // The PING the rule delayed, then the five frames that only wait
    // behind it: each recorded when written, and saying which it is.
    let fates = frames(&events)
        .into_iter()
        .filter(|f| f.2 != Fate::Passed)
        .map(|f| (f.0, f.2))
        .collect::<Vec<_>>();
    let behind = Fate::Behind { until: ms(40) };
    let mut expected = vec![(ms(0), Fate::Delayed { until: ms(40) })];
    expected.extend([(ms(0), behind); 5]);
    assert_eq!(fates, expected, "recorded when written");
}

#[tokio::test(start_paused = true)]
async fn an_injected_frame_goes_in_between_two_whole_frames() {
    let stream = unhex(H2_C2S);
    let opaque = *b"injected";
    let fault = Fault::inject("player", "store")
        .ping(false, opaque)
        .at(ms(50));
    let ping = encode::ping(false, opaque);
    let mut script = Builder::new();
    script
        .write(&stream[..C2S_HEADERS_S3])
        .wait(ms(50))
        .write(&ping)
        .wait(ms(50))
        .write(&stream[C2S_HEADERS_S3..]);
    let w = Writer::start(C2S, vec![fault], &mut script);
    // The first write ends 8 octets into HEADERS: those wait for the rest.
    let cut = C2S_HEADERS_S3 + 8;
    w.send(&stream[..cut], &[cut]).await;
    tokio::time::sleep(ms(100)).await;
    w.send(&stream[cut..], &[4096]).await;
    let (log, events) = w.finish().await;
    let rest = stream.len() - C2S_HEADERS_S3;
    let left = [(ms(0), C2S_HEADERS_S3), (ms(50), PING_LEN), (ms(100), rest)];
    assert_eq!(log.left, left);
    assert_eq!(injected(&events), [(ms(50), FrameType::Ping)]);
}

#[tokio::test(start_paused = true)]
async fn an_injected_frame_waits_behind_kept_back_bytes() {
    let stream = unhex(H2_C2S);
    let opaque = *b"injected";
    let inject = Fault::inject("player", "store")
        .ping(false, opaque)
        .at(ms(20));
    let hold = Fault::frames()
        .kind(FrameType::WindowUpdate)
        .hold_until(ms(30));
    let mut script = Builder::new();
    script
        .write(&stream[..C2S_WINDOW_UPDATE])
        .wait(ms(30))
        .write(&stream[C2S_WINDOW_UPDATE..C2S_WINDOW_UPDATE + WINDOW_UPDATE_LEN])
        .write(&encode::ping(false, opaque));
    let w = Writer::start(C2S, vec![hold, inject], &mut script);
    // Only the held WINDOW_UPDATE is out of the sender's hands.
    w.send(&stream[..C2S_WINDOW_UPDATE + WINDOW_UPDATE_LEN], &[4096])
        .await;
    let (log, events) = w.finish().await;
    let left = [
        (ms(0), C2S_WINDOW_UPDATE),
        (ms(30), WINDOW_UPDATE_LEN + PING_LEN),
    ];
    assert_eq!(log.left, left);
    // The trace says the injected PING waited too, and for how long.
    assert_eq!(injected(&events), [(ms(20), FrameType::Ping)]);
    let released = [
        (ms(30), FrameType::WindowUpdate, ms(30)),
        (ms(30), FrameType::Ping, ms(10)),
    ];
    assert_eq!(releases(&events), released);
}

/// A writer whose WINDOW_UPDATE is held until 30 ms, and a socket that
/// wants `stream` up to it at once and the rest at 30 ms.
fn window_update_held_until_30ms(stream: &[u8]) -> Writer {
    let fault = Fault::frames()
        .kind(FrameType::WindowUpdate)
        .hold_until(ms(30));
    let mut script = Builder::new();
    script
        .write(&stream[..C2S_WINDOW_UPDATE])
        .wait(ms(30))
        .write(&stream[C2S_WINDOW_UPDATE..]);
    Writer::start(C2S, vec![fault], &mut script)
}

#[tokio::test(start_paused = true)]
async fn a_kept_back_frame_pushes_back_on_the_sender() {
    // The connection's start up to its WINDOW_UPDATE, then more PINGs than
    // the send buffer and the channel hold together.
    let mut stream = unhex(H2_C2S)[..C2S_WINDOW_UPDATE + WINDOW_UPDATE_LEN].to_vec();
    while stream.len() < C2S_WINDOW_UPDATE + SEND_BUFFER + (CHANNEL_CHUNKS + 4) * 1024 {
        stream.extend(encode::ping(false, [7; 8]));
    }
    let w = window_update_held_until_30ms(&stream);
    // Behind the held WINDOW_UPDATE the writer takes a send buffer's worth,
    // then no more: the channel fills, and the sender waits as on a full
    // TCP send buffer until the frame leaves.
    w.send(&stream, &[1024]).await;
    assert_eq!(w.now(), ms(30));
    let (log, _) = w.finish().await;
    let rest = stream.len() - C2S_WINDOW_UPDATE;
    assert_eq!(log.left, [(ms(0), C2S_WINDOW_UPDATE), (ms(30), rest)]);
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_until_the_queue_is_out() {
    let stream = unhex(H2_C2S);
    let w = window_update_held_until_30ms(&stream);
    w.send(&stream, &[512]).await;
    // Shut down at 0 ms, with the WINDOW_UPDATE and all after it unsent.
    let (log, events) = w.finish().await;
    let rest = stream.len() - C2S_WINDOW_UPDATE;
    assert_eq!(log.left, [(ms(0), C2S_WINDOW_UPDATE), (ms(30), rest)]);
    assert_eq!(log.shutdown, Some(ms(30)));
    assert_eq!(closed_at(&events), [ms(30)]);
    assert_eq!(events.last().map(|e| e.at()), Some(ms(30)));
}
