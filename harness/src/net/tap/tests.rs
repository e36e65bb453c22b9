//! The tap driven directly with scripted byte streams: whatever the
//! chunking, it hands on exactly the bytes it was given, in order, minus
//! what a fault removed, and keeps TCP order behind a kept-back frame.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::TapEnv;
use super::{DirectionTap, Out};
use crate::fault::FramePlan;
use crate::fault::{Fault, FaultKind};
use crate::recorder::event::{EventKind, Fate};
use crate::wire::testing::{unhex, H2_C2S};
use crate::wire::{Direction, FrameType};

/// A tap for the client→server direction of connection 1 with `faults`.
fn tap(faults: Vec<Fault>) -> DirectionTap {
    tap_for(Direction::ClientToServer, faults)
}

/// What the tap of a run with a server host `store` and a client host
/// `player` is given: the frame faults and injections among `faults`, a
/// recorder of its own, no link faults.
pub(super) fn env_with(faults: Vec<Fault>) -> TapEnv {
    let (mut frame, mut inject) = (Vec::new(), Vec::new());
    for f in faults {
        match f.0 {
            FaultKind::Frame(r) => frame.push(r),
            FaultKind::Inject(i) => inject.push(i),
            _ => {}
        }
    }
    TapEnv {
        recorder: Arc::default(),
        frames: Arc::new(FramePlan::new(frame, inject)),
        links: Arc::default(),
        problems: Arc::default(),
        wire_tap: true,
        show_credentials: false,
    }
}

/// A tap for one direction of connection 1 between client host `player`
/// and server host `store`, with the frame faults and injections among
/// `faults`, and a recorder of its own.
pub(super) fn tap_for(direction: Direction, faults: Vec<Fault>) -> DirectionTap {
    let env = env_with(faults);
    let (from, to) = match direction {
        Direction::ClientToServer => ("player", "store"),
        Direction::ServerToClient => ("store", "player"),
    };
    DirectionTap::new(env, 1, direction, from.into(), to.into(), Arc::default())
}

/// Feeds `bytes` in chunks of the given sizes (cycled) and returns what the
/// tap queued.
fn feed(tap: &mut DirectionTap, bytes: &[u8], sizes: &[usize]) -> VecDeque<Out> {
    let mut out = VecDeque::new();
    let (mut at, mut i) = (0, 0);
    while at < bytes.len() {
        let n = sizes[i % sizes.len()].max(1).min(bytes.len() - at);
        tap.on_bytes(Bytes::copy_from_slice(&bytes[at..at + n]), &mut out);
        at += n;
        i += 1;
    }
    out
}

fn joined(out: &VecDeque<Out>) -> Vec<u8> {
    out.iter().flat_map(|o| o.bytes.iter().copied()).collect()
}

fn frames(tap: &DirectionTap) -> Vec<(FrameType, Fate)> {
    tap.env()
        .recorder
        .events()
        .into_iter()
        .filter_map(|e| match e.kind {
            EventKind::Frame { frame, fate, .. } => Some((frame, fate.get())),
            _ => None,
        })
        .collect()
}

#[test]
fn without_faults_every_byte_goes_out_in_order_whatever_the_chunking() {
    let stream = unhex(H2_C2S);
    let whole = frames(&{
        let mut t = tap(vec![]);
        assert_eq!(joined(&feed(&mut t, &stream, &[stream.len()])), stream);
        t
    });
    for sizes in [&[1][..], &[7, 1, 300], &[9], &[4096, 3]] {
        let mut t = tap(vec![]);
        assert_eq!(
            joined(&feed(&mut t, &stream, sizes)),
            stream,
            "chunks {sizes:?}"
        );
        assert_eq!(frames(&t), whole, "the same frames for chunks {sizes:?}");
    }
    assert!(whole.len() > 10, "the recording has frames: {whole:?}");
}

#[test]
fn a_dropped_frame_is_cut_out_exactly() {
    let stream = unhex(H2_C2S);
    let fault = Fault::frames().kind(FrameType::Ping).drop();
    let mut t = tap(vec![fault]);
    let out = joined(&feed(&mut t, &stream, &[5, 64]));
    let dropped = frames(&t)
        .into_iter()
        .filter(|(f, fate)| *f == FrameType::Ping && *fate == Fate::Dropped)
        .count();
    assert!(dropped >= 1, "the recording holds a PING");
    // A PING frame is 9 + 8 octets; nothing else is missing.
    assert_eq!(stream.len() - out.len(), dropped * 17);
    let mut again = tap(vec![]);
    let clean = frames(&{
        feed(&mut again, &out, &[out.len()]);
        again
    });
    assert!(
        clean.iter().all(|(f, _)| *f != FrameType::Ping),
        "{clean:?}"
    );
}

#[test]
fn bytes_behind_a_delayed_frame_wait_for_it() {
    let stream = unhex(H2_C2S);
    let fault = Fault::frames()
        .kind(FrameType::Settings)
        .delay(Duration::from_millis(40));
    let mut t = tap(vec![fault]);
    let out = feed(&mut t, &stream, &[11]);
    assert_eq!(joined(&out), stream, "delayed, not lost or reordered");
    let first_held = out
        .iter()
        .position(|o| o.release.is_some())
        .expect("SETTINGS held");
    assert!(
        out.iter().skip(first_held).all(|o| o.release.is_some()),
        "everything after the held SETTINGS is held too"
    );
    let releases: Vec<Duration> = out.iter().filter_map(|o| o.release).collect();
    assert!(
        releases.windows(2).all(|w| w[0] <= w[1]),
        "in order: {releases:?}"
    );
}

/// A socket whose every write panics: stands in for a bug in the tap.
struct PanickingSocket;

impl tokio::io::AsyncWrite for PanickingSocket {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        panic!("a bug in the write path");
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_in_the_writer_task_fails_the_run_instead_of_the_connection() {
    let tap = tap_for(Direction::ClientToServer, vec![]);
    let env = tap.env().clone();
    let tx = super::spawn_writer(tap, PanickingSocket);
    tx.send(Bytes::from_static(crate::wire::frame::PREFACE))
        .await
        .expect("the writer task takes bytes");
    // The task writes and panics; the receiver is dropped as it unwinds,
    // and the report follows in the same poll of the task, before this
    // (single-threaded) test runs again.
    tx.closed().await;
    let problem = env
        .problems
        .take_first()
        .expect("the panic is the run's error");
    let text = problem.to_string();
    assert!(
        text.contains("grpc-chaos itself panicked in the wire tap from player to store"),
        "{text}"
    );
    assert!(text.contains("a bug in the write path"), "{text}");
}
