//! A connection reset by a partition's `reset_after` or by a connection
//! policy ([`Effects::reset`](crate::policy::Effects::reset)): both ends'
//! reads and writes fail from then on, and both writer tasks stop.
//!
//! The flag is read on every read of a connection under link faults, so it
//! is an atomic, not the connection's lock.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::Waker;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use super::pair::side;
use crate::wire::Direction;

/// Whether a connection was reset, and who to wake when it is.
#[derive(Debug, Default)]
pub(crate) struct Reset {
    done: AtomicBool,
    /// Per end (indexed by the direction it writes): the reader to wake.
    readers: Mutex<[Option<Waker>; 2]>,
    /// Wakes both writer tasks.
    writers: Notify,
    /// The policy that reset the connection, if one did (the error's
    /// words); unset: a partition's `reset_after`.
    by: OnceLock<Box<str>>,
}

impl Reset {
    /// Whether the connection was reset.
    pub(crate) fn is_reset(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Resets the connection: wakes both ends' readers and writer tasks.
    pub(crate) fn fire(&self) {
        self.done.store(true, Ordering::Release);
        let readers = std::mem::take(&mut *self.readers.lock().unwrap_or_else(|p| p.into_inner()));
        for waker in readers.into_iter().flatten() {
            waker.wake();
        }
        self.writers.notify_waiters();
    }

    /// Resets the connection in the name of connection policy `policy`.
    pub(crate) fn fire_by(&self, policy: &str) {
        let _ = self.by.set(policy.into());
        self.fire();
    }

    /// The error both ends see after the reset.
    pub(crate) fn error(&self) -> std::io::Error {
        match self.by.get() {
            Some(policy) => std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                format!("connection reset by {policy}"),
            ),
            None => std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "connection reset: bytes waited past the partition's reset_after",
            ),
        }
    }

    /// Wakes the reader of the end that writes `direction` at the reset.
    pub(crate) fn wake_reader(&self, direction: Direction, waker: &Waker) {
        let mut readers = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        let slot = &mut readers[side(direction)];
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    /// Resolves at the reset. Create it before checking
    /// [`Reset::is_reset`].
    pub(crate) fn next(&self) -> Notified<'_> {
        self.writers.notified()
    }
}
