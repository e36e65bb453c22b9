//! The client side of a connection: one dial of a tonic channel, from the
//! attempt to its outcome, recorded as connection lifecycle events; and the
//! wait of a SYN across a partitioned link or to a paused host.
//!
//! tonic calls the connector for every (re)connect of a channel, inside
//! `Endpoint::connect_timeout` when one is set: a dial the caller gives up
//! is dropped here mid-wait, and that is recorded too
//! ([`EventKind::ConnectAbandoned`]).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use super::Wiring;
use crate::fault::{LinkState, SYN_GIVE_UP};
use crate::recorder::event::{ConnectFailure, EventKind};

/// One connection attempt. Dropped before [`Dial::connected`] or
/// [`Dial::failed`], it records that the caller abandoned it.
pub(crate) struct Dial {
    wiring: Wiring,
    me: Arc<str>,
    to: Arc<str>,
    attempt: u32,
    started: Duration,
    /// Whether it waited for a link (a partition, a pause).
    waited: bool,
    done: bool,
}

impl Dial {
    /// Starts attempt number `attempt` of a channel from `me` to `to`.
    pub(crate) fn start(wiring: Wiring, me: Arc<str>, to: Arc<str>, attempt: u32) -> Self {
        let started = wiring.tap.recorder.now();
        wiring.tap.recorder.push(
            &me,
            EventKind::ConnectStarted {
                to: (&to).into(),
                attempt,
            },
        );
        Self {
            wiring,
            me,
            to,
            attempt,
            started,
            waited: false,
            done: false,
        }
    }

    /// Waits while the link to the server holds bytes: a real SYN is
    /// retransmitted until one gets through, so the connect completes after
    /// the repair or resume. Gives up with `TimedOut` after the
    /// partition's `reset_after`, else after [`SYN_GIVE_UP`], counted from
    /// the start of the attempt (*simulated* time).
    pub(crate) async fn wait_for_link(&mut self) -> io::Result<()> {
        let links = &self.wiring.tap.links;
        if !links.active() {
            return Ok(());
        }
        loop {
            let opened = links.next_opening();
            let state = links.state(&self.me, &self.to);
            if !state.holds() {
                return Ok(());
            }
            if !self.waited {
                self.waited = true;
                self.wiring.tap.recorder.push(
                    &self.me,
                    EventKind::ConnectWaiting {
                        to: (&self.to).into(),
                        attempt: self.attempt,
                        paused: state == LinkState::Paused,
                    },
                );
            }
            let limit = match state {
                LinkState::Partitioned {
                    reset_after: Some(limit),
                } => limit,
                _ => SYN_GIVE_UP,
            };
            let give_up = self.started.saturating_add(limit);
            self.wiring.tap.recorder.timer_at(give_up);
            let left = give_up.saturating_sub(self.wiring.tap.recorder.now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "connect to {} timed out: the link stayed partitioned for {}",
                        self.to,
                        crate::units::fmt_duration(limit)
                    ),
                ));
            }
            tokio::select! {
                () = opened => {}
                () = tokio::time::sleep(left) => {}
            }
        }
    }

    /// The attempt succeeded: connection `conn`.
    pub(crate) fn connected(mut self, conn: u32) {
        self.done = true;
        let took = self.took();
        self.wiring.tap.recorder.push(
            &self.me,
            EventKind::Connected {
                conn,
                to: (&self.to).into(),
                attempt: self.attempt,
                took,
                waited: self.waited,
            },
        );
    }

    /// The attempt failed with `error`.
    pub(crate) fn failed(mut self, error: &io::Error) {
        self.done = true;
        let reason = match error.kind() {
            io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
            io::ErrorKind::NotFound => ConnectFailure::UnknownHost,
            io::ErrorKind::TimedOut => ConnectFailure::TimedOut,
            _ => ConnectFailure::Other,
        };
        let took = self.took();
        self.wiring.tap.recorder.push(
            &self.me,
            EventKind::ConnectFailed {
                to: (&self.to).into(),
                attempt: self.attempt,
                reason,
                took,
                waited: self.waited,
            },
        );
    }

    fn took(&self) -> Duration {
        self.wiring.tap.recorder.now().saturating_sub(self.started)
    }
}

impl Drop for Dial {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let after = self.took();
        self.wiring.tap.recorder.push(
            &self.me,
            EventKind::ConnectAbandoned {
                to: (&self.to).into(),
                attempt: self.attempt,
                after,
                waited: self.waited,
            },
        );
    }
}
