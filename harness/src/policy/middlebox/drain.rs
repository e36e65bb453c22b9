//! A connection idle timeout that ends in a drain ([`Drain`]), as Envoy's
//! HTTP connection manager runs it: a first GOAWAY that refuses nothing,
//! the real one `drain_timeout` later, then the close.

use std::time::Duration;

use super::{BoxConn, TimerRanOut};
use crate::policy::connection::Effects;
use crate::recorder::event::{PolicyAction, PolicyEnd};
use crate::wire::{Direction, ErrorCode};

/// The highest stream identifier (RFC 9113 §5.1.1): a GOAWAY with it as
/// last-stream-id refuses no stream, only announces the shutdown (§6.8).
const ANY_STREAM: u32 = (1 << 31) - 1;

/// How a connection idle timer's [`Expiry::GoAway`](super::Expiry::GoAway)
/// drains the connection, when [`Middlebox::idle_drain`](super::Middlebox::idle_drain)
/// is set: GOAWAY(code, last-stream-id 2^31-1) at expiry,
/// GOAWAY(code, the last stream the client opened) `drain_timeout` later,
/// and the close `close_delay` after that. All times *simulated*.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drain {
    /// Between the two GOAWAYs (Envoy's `drain_timeout`, 5 s default).
    pub drain_timeout: Duration,
    /// Between the second GOAWAY and the close (Envoy's
    /// `delayed_close_timeout`, 1 s default).
    pub close_delay: Duration,
}

impl Drain {
    /// The second GOAWAY `drain_timeout` after the first, the close
    /// `close_delay` after it.
    pub fn new(drain_timeout: Duration, close_delay: Duration) -> Self {
        Self {
            drain_timeout,
            close_delay,
        }
    }
}

/// Where a connection's drain is: when it started, and whether the second
/// GOAWAY went out.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Draining {
    started: Option<Duration>,
    second_sent: bool,
}

impl BoxConn {
    /// Whether the connection is draining (its idle timer is then done).
    pub(super) fn draining(&self) -> bool {
        self.drain.started.is_some()
    }

    /// The drain's next step, if one is under way.
    pub(super) fn drain_due(&self) -> Option<Duration> {
        let d = self.cfg.idle_drain?;
        let at = self.drain.started? + d.drain_timeout;
        Some(match self.drain.second_sent {
            false => at,
            true => at + d.close_delay,
        })
    }

    /// The idle timer ran out: the first GOAWAY.
    pub(super) fn start_drain(&mut self, fx: &mut Effects, code: ErrorCode, why: TimerRanOut) {
        let Some(d) = self.cfg.idle_drain else {
            return;
        };
        self.drain.started = Some(fx.now());
        self.note(
            fx,
            PolicyAction::DrainStarted {
                code,
                drain_timeout: d.drain_timeout,
                why,
            },
        );
        fx.goaway(Direction::ServerToClient, ANY_STREAM, code, b"");
    }

    /// The drain's next step is due: the second GOAWAY, or the close.
    pub(super) fn drain_step(&mut self, fx: &mut Effects, code: ErrorCode) {
        let Some(d) = self.cfg.idle_drain else {
            return;
        };
        if self.drain.second_sent {
            fx.close_for(PolicyEnd::DrainOver {
                close_delay: d.close_delay,
            });
            return;
        }
        self.drain.second_sent = true;
        let last_stream = self.max_stream;
        self.note(
            fx,
            PolicyAction::DrainGoAway {
                code,
                last_stream,
                close_delay: d.close_delay,
            },
        );
        fx.goaway(Direction::ServerToClient, last_stream, code, b"");
    }
}
