//! Frame faults: rules the wire tap applies to HTTP/2 frames as they leave
//! a host, and frames it injects.
//!
//! TCP is a byte stream, so a frame kept back keeps back every later byte in
//! the same direction of the same connection: a delayed PING ACK also
//! delays the DATA behind it. The tap keeps that true (it releases bytes in
//! order), and the trace shows when each kept-back frame finally left.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Fault, FaultKind};
use crate::wire::{encode, ErrorCode, FrameType};

/// Which frames a frame fault matches. Build with [`Fault::frames`], narrow
/// with the methods below, then pick an action: [`FrameFault::drop`],
/// [`FrameFault::delay`], [`FrameFault::hold_until`].
#[derive(Debug, Clone, Default)]
#[must_use = "pick an action (drop, delay, hold_until) to get a Fault"]
pub struct FrameFault {
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
    pub(crate) kind: Option<FrameType>,
    pub(crate) ack: Option<bool>,
    pub(crate) stream: Option<u32>,
    pub(crate) nth: Option<u32>,
    pub(crate) window: Option<(Duration, Duration)>,
}

/// What a frame fault does to the frames it matches.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FrameAction {
    Drop,
    Delay(Duration),
    HoldUntil(Duration),
}

/// A frame fault as added to the sim; clones share the match counter.
#[derive(Debug, Clone)]
pub(crate) struct FrameRule {
    pub(crate) filter: FrameFault,
    pub(crate) action: FrameAction,
    matched: Arc<AtomicU32>,
    fired: Arc<AtomicU32>,
}

/// What the tap knows about a frame when it asks the rules.
pub(crate) struct FrameInfo<'a> {
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
    pub(crate) kind: FrameType,
    pub(crate) ack: bool,
    pub(crate) stream: u32,
    pub(crate) at: Duration,
}

impl FrameRule {
    /// Whether the rule applies to `f`; counts the match for `nth`.
    pub(crate) fn applies(&self, f: &FrameInfo<'_>) -> bool {
        let r = &self.filter;
        let matches = r.from.as_deref().is_none_or(|h| h == f.from)
            && r.to.as_deref().is_none_or(|h| h == f.to)
            && r.kind.is_none_or(|k| k == f.kind)
            && r.ack.is_none_or(|a| a == f.ack)
            && r.stream.is_none_or(|s| s == f.stream)
            && r.window.is_none_or(|(a, b)| a <= f.at && f.at < b);
        if !matches {
            return false;
        }
        let n = self.matched.fetch_add(1, Ordering::Relaxed) + 1;
        let applies = r.nth.is_none_or(|want| want == n);
        if applies {
            self.fired.fetch_add(1, Ordering::Relaxed);
        }
        applies
    }

    /// Whether the rule ever acted on a frame.
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed) > 0
    }

    /// The rule in the trace's words, for the "never fired" report.
    pub(crate) fn describe(&self) -> String {
        format!("frame fault {:?}: {:?}", self.filter, self.action)
    }
}

impl FrameFault {
    /// Only frames written by host `host`.
    pub fn from(mut self, host: impl Into<String>) -> Self {
        self.from = Some(host.into());
        self
    }

    /// Only frames written to host `host`.
    pub fn to(mut self, host: impl Into<String>) -> Self {
        self.to = Some(host.into());
        self
    }

    /// Only frames of this type (`FrameType::Ping`, `FrameType::WindowUpdate` …).
    pub fn kind(mut self, kind: FrameType) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Only frames whose ACK flag is `ack` (PING and SETTINGS; other frames
    /// have no ACK flag and match `ack(false)`).
    pub fn ack(mut self, ack: bool) -> Self {
        self.ack = Some(ack);
        self
    }

    /// Only frames of stream `id` (0: connection-level frames).
    pub fn stream(mut self, id: u32) -> Self {
        self.stream = Some(id);
        self
    }

    /// Only the `n`-th frame (1-based) that the other conditions match,
    /// counted over the whole run.
    pub fn nth(mut self, n: u32) -> Self {
        self.nth = Some(n);
        self
    }

    /// Only frames written in `[from, until)`, *simulated* time.
    pub fn during(mut self, from: Duration, until: Duration) -> Self {
        self.window = Some((from, until));
        self
    }

    /// Removes matching frames from the byte stream. Dropping frames the
    /// peer's HTTP/2 state depends on (HEADERS, SETTINGS) makes the peer see
    /// a protocol error, as it would on a real network that lost them.
    pub fn drop(self) -> Fault {
        self.action(FrameAction::Drop)
    }

    /// Keeps matching frames back for `delay` (*simulated* time); later bytes
    /// in the same direction wait behind them.
    pub fn delay(self, delay: Duration) -> Fault {
        self.action(FrameAction::Delay(delay))
    }

    /// Keeps matching frames back until `at` (*simulated* time since the
    /// start of the run); later bytes in the same direction wait behind
    /// them. A frame written after `at` passes.
    pub fn hold_until(self, at: Duration) -> Fault {
        self.action(FrameAction::HoldUntil(at))
    }

    fn action(self, action: FrameAction) -> Fault {
        Fault(FaultKind::Frame(FrameRule {
            filter: self,
            action,
            matched: Arc::default(),
            fired: Arc::default(),
        }))
    }
}

/// A frame the tap writes into a connection at a time, as if `from` had
/// sent it. Build with [`Fault::inject`].
#[derive(Debug, Clone)]
#[must_use = "pick a frame (goaway, rst_stream, ping) and call .at(time)"]
pub struct Inject {
    from: String,
    to: String,
}

/// An injection waiting for its time; finish it with [`InjectAt::at`].
#[derive(Debug, Clone)]
#[must_use = "call .at(time) to get a Fault"]
pub struct InjectAt {
    from: String,
    to: String,
    frame: InjectedFrame,
}

#[derive(Debug, Clone)]
pub(crate) struct InjectedFrame {
    pub(crate) bytes: Vec<u8>,
}

/// An injection as added to the sim.
#[derive(Debug, Clone)]
pub(crate) struct Injection {
    pub(crate) from: String,
    pub(crate) to: String,
    pub(crate) at: Duration,
    pub(crate) frame: InjectedFrame,
    fired: Arc<AtomicU32>,
}

impl Injection {
    /// Notes that the frame went into a connection.
    pub(crate) fn mark_fired(&self) {
        self.fired.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the frame went into any connection.
    pub(crate) fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed) > 0
    }

    /// The injection in the trace's words, for the "never fired" report.
    pub(crate) fn describe(&self) -> String {
        format!(
            "frame injected from {} to {} at {}: no connection from {} to {} was open then",
            self.from,
            self.to,
            crate::trace::fmt_duration(self.at),
            self.from,
            self.to
        )
    }
}

impl Inject {
    pub(crate) fn new(from: String, to: String) -> Self {
        Self { from, to }
    }

    fn frame(self, bytes: Vec<u8>) -> InjectAt {
        InjectAt {
            from: self.from,
            to: self.to,
            frame: InjectedFrame { bytes },
        }
    }

    /// GOAWAY (RFC 9113 §6.8) with `code`, `last_stream_id` and `debug`
    /// data.
    pub fn goaway(self, code: ErrorCode, last_stream_id: u32, debug: &[u8]) -> InjectAt {
        self.frame(encode::goaway(last_stream_id, code, debug))
    }

    /// RST_STREAM (RFC 9113 §6.4) on stream `stream` with `code`.
    pub fn rst_stream(self, stream: u32, code: ErrorCode) -> InjectAt {
        self.frame(encode::rst_stream(stream, code))
    }

    /// PING (RFC 9113 §6.7) with the given opaque data.
    pub fn ping(self, ack: bool, opaque: [u8; 8]) -> InjectAt {
        self.frame(encode::ping(ack, opaque))
    }
}

impl InjectAt {
    /// Writes the frame at `at` (*simulated* time since the start of the
    /// run) on every open connection from `from` to `to`, between two whole
    /// frames of that direction.
    pub fn at(self, at: Duration) -> Fault {
        Fault(FaultKind::Inject(Injection {
            from: self.from,
            to: self.to,
            at,
            frame: self.frame,
            fired: Arc::default(),
        }))
    }
}
