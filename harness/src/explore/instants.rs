//! What a baseline run visited: the instants worth placing a fault at, and
//! the life of each call's HTTP/2 stream (what a cancel lands on).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::recorder::event::EventKind;
use crate::Trace;

/// One stream between a caller and a server in the baseline: the
/// connection, its id, and its first and last frame (*simulated* time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StreamLife {
    pub(super) conn: u32,
    pub(super) stream: u32,
    pub(super) first: Duration,
    pub(super) last: Duration,
}

impl StreamLife {
    pub(super) fn open_at(&self, at: Duration) -> bool {
        self.first <= at && at <= self.last
    }
}

/// The instants in `[from, until)` at which the baseline did something a
/// fault can land next to: a call started or ended, a handler started,
/// finished or was dropped, a host logged (a side effect the user marks),
/// a frame that is not connection noise was written. Sorted, distinct.
pub(super) fn instants(trace: &Trace, (from, until): (Duration, Duration)) -> Vec<Duration> {
    let visited = trace.events().iter().filter(|e| {
        matches!(
            &e.kind,
            EventKind::CallStarted(_)
                | EventKind::CallEnded { .. }
                | EventKind::CallDropped { .. }
                | EventKind::HandlerStarted(_)
                | EventKind::HandlerFinished(_)
                | EventKind::HandlerDropped(_)
                | EventKind::Log(_)
                | EventKind::Frame { noise: false, .. }
        )
    });
    let set: BTreeSet<Duration> = visited
        .map(|e| e.at())
        .filter(|t| (from..until).contains(t))
        .collect();
    set.into_iter().collect()
}

/// The streams of calls between `caller` and `server` (frames either way,
/// stream ids above 0), in order of their first frame.
pub(super) fn streams(trace: &Trace, caller: &str, server: &str) -> Vec<StreamLife> {
    let mut lives: BTreeMap<(u32, u32), StreamLife> = BTreeMap::new();
    for e in trace.events() {
        let EventKind::Frame {
            conn, to, stream, ..
        } = &e.kind
        else {
            continue;
        };
        let (a, b) = (e.host.as_str(), to.as_str());
        let between = (a == caller && b == server) || (a == server && b == caller);
        if !between || *stream == 0 {
            continue;
        }
        let at = e.at();
        lives
            .entry((*conn, *stream))
            .and_modify(|l| l.last = at)
            .or_insert(StreamLife {
                conn: *conn,
                stream: *stream,
                first: at,
                last: at,
            });
    }
    let mut out: Vec<StreamLife> = lives.into_values().collect();
    out.sort_by_key(|l| (l.first, l.conn, l.stream));
    out
}
