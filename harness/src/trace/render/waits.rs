//! What a client that never finished waits on, for the error of a run that
//! reached its end with clients still running: each open call, and what
//! the trace knows about why it is still open.

use std::time::Duration;

use super::views::{self, CallEnd, RunEnd};
use super::{wire_calls, Stall, StallEnd, Trace, Window};
use crate::recorder::event::{Event, EventKind, Fate};
use crate::units::fmt_duration;

/// The calls `host` has open (started, not ended), and why each still
/// waits as far as the trace knows: `r3 /tt.v1.Store/Save to store (no
/// deadline; handler h2 on store has not answered; fault on it: hang)`,
/// or, when no handler got it, what stood in its way: `store crashed at
/// 1ms and was not restarted`, a dial still unanswered, frames a fault
/// dropped. A handler that has not answered because a call of its own is
/// open says so, and why that one waits, down the chain; a call whose
/// request DATA has no flow-control window left says so (RFC 9113 §6.9).
/// `end` is the instant they are still open at (the run's end, or now).
pub(crate) fn open_calls(events: &[Event], host: &str, end: Duration) -> Vec<String> {
    let events = &wire_calls::complete(events.to_vec());
    let (calls, runs) = views::build(events);
    let stalls = stalled_sends(events, end);
    let open = Open {
        events,
        calls: &calls,
        runs: &runs,
        stalls: &stalls,
    };
    calls
        .iter()
        .filter(|c| c.host == host && matches!(c.end, CallEnd::Open))
        .map(|c| open.why(c, 0))
        .collect()
}

/// How far down a chain of handlers waiting on calls the words go.
const CHAIN: usize = 4;

/// What the trace holds about open calls.
struct Open<'a> {
    events: &'a [Event],
    calls: &'a [views::Call],
    runs: &'a [views::HandlerRun],
    stalls: &'a [Stall],
}

impl Open<'_> {
    /// `r3 /tt.v1.Store/Save to store (…why…)`.
    fn why(&self, c: &views::Call, depth: usize) -> String {
        let (events, host) = (self.events, c.host.as_str());
        let mut why = Vec::new();
        if c.timeout.is_none() {
            why.push("no deadline".to_owned());
        }
        let run = self.runs.iter().find(|r| r.call == Some(c.id));
        match run {
            Some(r) if matches!(r.end, RunEnd::Running) => {
                why.push(format!("handler {} on {} has not answered", r.id, r.host));
                let faults: Vec<String> = events
                    .iter()
                    .filter_map(|e| match &e.kind {
                        EventKind::FaultFired(fired) if fired.run == r.id => {
                            Some(super::act_words::fault(&fired.action))
                        }
                        _ => None,
                    })
                    .collect();
                if !faults.is_empty() {
                    why.push(format!("fault on it: {}", faults.join(", ")));
                }
                if depth < CHAIN {
                    why.extend(
                        self.calls
                            .iter()
                            .filter(|o| o.parent == Some(r.id) && matches!(o.end, CallEnd::Open))
                            .map(|o| format!("{} waits on {}", r.id, self.why(o, depth + 1))),
                    );
                }
            }
            Some(_) => {}
            None => {
                why.push(format!("no handler on {} has it", c.target));
                why.extend(in_the_way(events, host, &c.target, c.started));
                if c.timeout.is_some() && !ever_connected(events, host, &c.target) {
                    why.push(
                        "its deadline never started: tonic's timer starts once the channel is \
                         connected, and it never was (Endpoint::connect_timeout bounds the \
                         dial)"
                            .to_owned(),
                    );
                }
            }
        }
        why.extend(self.window(c));
        format!("{} {} to {} ({})", c.id, c.path, c.target, why.join("; "))
    }

    /// What its request DATA waits on, when it is the one call open from
    /// its host to its peer: a stall names a stream, a call does not.
    fn window(&self, c: &views::Call) -> Vec<String> {
        let open_to_peer = self
            .calls
            .iter()
            .filter(|o| o.host == c.host && o.target == c.target)
            .filter(|o| matches!(o.end, CallEnd::Open))
            .count();
        if open_to_peer != 1 {
            return Vec::new();
        }
        self.stalls
            .iter()
            .filter(|st| st.sender == c.host && st.receiver == c.target && st.since >= c.started)
            .map(window_words)
            .collect()
    }
}

/// The stalls still open at `end`: a sender with DATA to send and no
/// flow-control window to send it in (RFC 9113 §6.9), not starved by other
/// streams.
fn stalled_sends(events: &[Event], end: Duration) -> Vec<Stall> {
    Trace::new(0, Vec::new(), events.to_vec(), end)
        .stalls(Duration::ZERO)
        .into_iter()
        .filter(|s| s.end == StallEnd::Open && s.held_by.is_empty())
        .collect()
}

/// `its request stream (c1 s5) waits on archive's stream window since
/// 612ms: 1048576 bytes sent, no WINDOW_UPDATE since`.
fn window_words(stall: &Stall) -> String {
    let window = match stall.window {
        Window::Stream => "stream",
        Window::Connection => "connection",
    };
    let held = match stall.held_updates {
        0 => String::new(),
        1 => ", 1 WINDOW_UPDATE held by a fault".to_owned(),
        n => format!(", {n} WINDOW_UPDATEs held by a fault"),
    };
    format!(
        "its request stream (c{} s{}) waits on {}'s {window} window since {}: {} bytes sent, \
         no credit since{held}",
        stall.conn,
        stall.stream,
        stall.receiver,
        fmt_duration(stall.since),
        stall.sent
    )
}

/// What the trace shows between `host` and `target` since `since` that
/// keeps a call from a handler: `target` down, a dial unanswered or
/// waiting, frames to it dropped by a fault.
fn in_the_way(events: &[Event], host: &str, target: &str, since: Duration) -> Vec<String> {
    let mut out = Vec::new();
    let down = events.iter().rev().find_map(|e| match e.kind {
        EventKind::HostCrashed if e.host == target => Some(Some(e.at())),
        EventKind::HostRestarted if e.host == target => Some(None),
        _ => None,
    });
    if let Some(Some(at)) = down {
        out.push(format!(
            "{target} crashed at {} and was not restarted",
            fmt_duration(at)
        ));
    }
    // The last attempt, unless it ended (connected, failed, abandoned):
    // (attempt, since, Some(paused) when it waits on a pause or partition).
    let dial = events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::ConnectStarted { to, attempt } if e.host == host && to == target => {
                Some(Some((*attempt, e.at(), None)))
            }
            EventKind::ConnectWaiting {
                to,
                attempt,
                paused,
            } if e.host == host && to == target => Some(Some((*attempt, e.at(), Some(*paused)))),
            EventKind::Connected { to, .. }
            | EventKind::ConnectFailed { to, .. }
            | EventKind::ConnectAbandoned { to, .. }
                if e.host == host && to == target =>
            {
                Some(None)
            }
            _ => None,
        })
        .flatten();
    match dial {
        None => {}
        Some((n, at, None)) => out.push(format!(
            "its dial to {target} (attempt {n}, since {}) is unanswered",
            fmt_duration(at)
        )),
        Some((n, at, Some(paused))) => out.push(format!(
            "its dial to {target} (attempt {n}) waits since {} on a {}",
            fmt_duration(at),
            if paused { "pause" } else { "partition" }
        )),
    }
    let dropped = events
        .iter()
        .filter(|e| e.at() >= since && e.host == host)
        .filter(
            |e| matches!(&e.kind, EventKind::Frame { to, fate, .. } if *fate == Fate::Dropped && to == target),
        )
        .count();
    if dropped > 0 {
        out.push(format!(
            "{dropped} frame{} to {target} dropped by a frame fault",
            if dropped == 1 { "" } else { "s" }
        ));
    }
    out
}

/// Whether a channel of `host` ever connected to `target`.
fn ever_connected(events: &[Event], host: &str, target: &str) -> bool {
    events.iter().any(
        |e| matches!(&e.kind, EventKind::Connected { to, .. } if e.host == host && to == target),
    )
}
