//! The writer task of one connection direction: takes the bytes the host's
//! HTTP/2 stack wrote, runs them through the tap, and writes them to the
//! simulated socket in order, each when it is due.
//!
//! A task (not the write call itself) does this so that a kept-back frame
//! leaves on a simulated timer, or when its hold is released, even if the
//! sender never writes again; and so that a frame the other direction set
//! off goes out at once.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use bytes::Bytes;
use futures_util::FutureExt;
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::{DirectionTap, Out};
use crate::fault::Injection;

/// Chunks buffered between the HTTP/2 stack and the writer task.
pub(super) const CHANNEL_CHUNKS: usize = 16;

/// The emulated TCP send buffer, in octets: while a kept-back frame waits,
/// the writer still takes (and records, at the time they were written) what
/// the sender writes behind it, up to this much; then the sender's writes
/// wait, as on a full send buffer. 64 KiB, a common default.
pub(super) const SEND_BUFFER: usize = 64 * 1024;

/// Starts the writer task of a direction on the current host's runtime and
/// returns the sender its `AsyncWrite` feeds.
pub(crate) fn spawn_writer<W: AsyncWrite + Unpin + Send + 'static>(
    tap: DirectionTap,
    socket: W,
) -> mpsc::Sender<Bytes> {
    let (tx, rx) = mpsc::channel(CHANNEL_CHUNKS);
    let env = tap.env().clone();
    let task = format!("the wire tap from {} to {}", tap.from(), tap.to());
    tokio::spawn(async move {
        // Unwinding here would only break the connection, which the trace
        // would show as a network failure: make it the run's error instead.
        if let Err(panic) = AssertUnwindSafe(run(tap, socket, rx)).catch_unwind().await {
            env.problems
                .harness_panicked(task, crate::units::panic_message(&*panic));
        }
    });
    tx
}

/// The task's body. Generic over the socket so that unit tests can script
/// the wire with a mock; the real wiring passes turmoil's write half
/// (monomorphized: no cost there).
pub(super) async fn run<W: AsyncWrite + Unpin>(
    mut tap: DirectionTap,
    mut socket: W,
    mut rx: mpsc::Receiver<Bytes>,
) {
    let env = tap.env().clone();
    let now = env.recorder.now();
    let mut injections: VecDeque<Injection> =
        env.frames.injections(tap.from(), tap.to(), now).into();
    let posted = tap.posted_wake();
    let reset = tap.reset_flag();
    let mut queue: VecDeque<Out> = VecDeque::new();
    let mut open = true;
    // Both kept from turn to turn of the loop, so that each waits in its
    // `Notify` once instead of being made and dropped for every chunk.
    // Made before the first check: a reset in between still wakes it (a
    // reset is final, so it is never remade).
    let mut was_reset = std::pin::pin!(reset.next());
    let mut was_posted = std::pin::pin!(posted.notified());
    loop {
        if reset.is_reset() {
            // A partition's reset_after ran out: nothing more leaves, and
            // both ends' reads and writes fail (`SimConn`).
            return;
        }
        if write_due(&mut tap, &mut socket, &mut queue).await.is_err() {
            // The socket is gone (reset). What the stack still wrote is
            // recorded as written, and with the rest, as never delivered.
            rx.close();
            while let Ok(bytes) = rx.try_recv() {
                tap.on_bytes(bytes, &mut queue);
            }
            tap.record_undelivered();
            return;
        }
        // Read only when something below needs it: with nothing queued,
        // due or timed (a watch-only direction between writes), it is not
        // read at all.
        let now = std::cell::LazyCell::new(|| env.recorder.now());
        // Made before `blocked` is computed: a release in between wakes it.
        let released = env.frames.next_release();
        let opened = env.links.next_opening();
        // While a kept-back frame waits, bytes written behind it queue up
        // (TCP keeps order) until the send buffer is full; then the sender
        // feels the back pressure.
        let blocked = queue.front().is_some_and(|o| !tap.is_due(o, || *now))
            && queue.iter().map(|o| o.bytes.len()).sum::<usize>() >= SEND_BUFFER;
        let on_hold = queue.front().is_some_and(|o| o.hold.is_some());
        // The front waits for a link to open (a repair, a resume).
        let on_link = queue.front().is_some_and(|o| !tap.is_due(o, || *now));
        let reset_due = tap.reset_due(&queue);
        if !open && queue.is_empty() {
            // The host's HTTP/2 stack shut its end down or dropped it: a
            // FIN, or a RST when it closed with bytes unread.
            tap.finish();
            // After the peer's RST the socket is gone: no FIN to record.
            if !tap.record_reset_note() && !tap.peer_reset() {
                tap.record_closed();
            }
            let _ = socket.shutdown().await;
            return;
        }
        if tap.closing() && queue.is_empty() {
            // What the policy sent before its close is out: close the
            // connection as the emulated server does. Dropping `rx` makes
            // the server's later writes fail, as on a closed socket.
            let _ = socket.shutdown().await;
            tap.close();
            return;
        }
        let release_at = queue.front().and_then(|o| o.release);
        let injection_at = injections.front().and_then(Injection::at);
        // A connection policy's timer (server → client writer only).
        let policy_at = tap.policy_timer();
        // What this writer waits for is due at a known instant: the run's
        // no-progress rule must not stop it before.
        let timers = [
            release_at,
            injection_at,
            policy_at,
            reset_due.map(|(_, at)| at),
        ];
        for at in timers.into_iter().flatten() {
            env.recorder.timer_at(at);
        }
        let next_release = release_at.map(|t| t.saturating_sub(*now));
        let next_injection = injection_at.map(|at| at.saturating_sub(*now));
        let policy_timer = policy_at.map(|at| at.saturating_sub(*now));
        tokio::select! {
            biased;
            () = sleep(next_injection), if !tap.closing() => {
                if let Some(i) = injections.pop_front() {
                    tap.inject(&i, None, &mut queue);
                }
            }
            () = &mut was_posted => {
                // Remade before the posts are taken: one posted after
                // them wakes the new one.
                was_posted.set(posted.notified());
                tap.take_posted(&mut queue);
            }
            () = sleep(policy_timer), if !tap.closing() => tap.on_policy_timer(&mut queue),
            () = &mut was_reset => {}
            () = sleep(reset_due.map(|(_, at)| at.saturating_sub(*now))) => {
                if let Some((since, _)) = reset_due {
                    tap.reset_conn(since, &mut queue);
                    return;
                }
            }
            () = released, if on_hold => {}
            () = opened, if on_link => {}
            () = sleep(next_release) => {}
            chunk = rx.recv(), if open && !blocked && !tap.closing() => match chunk {
                Some(bytes) => tap.on_bytes(bytes, &mut queue),
                None => open = false,
            },
        }
    }
}

/// Sleeps for `d`, or forever for `None`.
async fn sleep(d: Option<Duration>) {
    match d {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}

/// Writes every queued item that is due, in order; stops at the first that
/// is not.
async fn write_due<W: AsyncWrite + Unpin>(
    tap: &mut DirectionTap,
    socket: &mut W,
    queue: &mut VecDeque<Out>,
) -> std::io::Result<()> {
    while let Some(front) = queue.front() {
        if !tap.is_due(front, || tap.env().recorder.now()) {
            break;
        }
        let Some(item) = queue.pop_front() else { break };
        if let Some(kept) = &item.kept {
            tap.record_release(kept);
        }
        socket.write_all(&item.bytes).await?;
        // A no-op on turmoil's socket; under TLS, the record rustls
        // sealed but the socket did not take yet (tokio-rustls keeps it
        // until a flush).
        socket.flush().await?;
        tap.wrote(&item);
    }
    Ok(())
}
