//! Instants whose order may have come from tokio's `select!` RNG.
//!
//! tonic's server runs each connection in a task that picks, with
//! `tokio::select!`, between the connection's own progress, its
//! `max_connection_age` timer and the server's shutdown signal
//! (tonic 0.14.9 `src/transport/server/mod.rs`, `serve_connection`; read).
//! When two of them are ready in one tick, tokio picks a branch at random,
//! and without `--cfg tokio_unstable` its RNG is seeded by the process, not
//! by the run: the same seed can then give a GOAWAY before a handler's
//! start in one process and after it in another (measured: a
//! `max_connection_age` test gave 4 distinct traces in 8 runs of one
//! seed). The harness cannot see tokio's choice, but it can see when one
//! was possible: a server host that, at one instant, got its shutdown
//! signal or sent its own GOAWAY (NO_ERROR: an age or a drain, not a
//! protocol error) and also started or finished a handler run. Those
//! instants are what this finds. Handler runs are the harness's handler
//! layer's: a host whose own serve fn bypasses it (a hand-written HTTP/2
//! peer that writes its GOAWAY right behind its response, with no
//! `select!`) is never flagged.

use std::collections::BTreeMap;

use crate::recorder::event::{Event, EventKind, Fate, FrameDetail};
use crate::wire::{ErrorCode, FrameType};

/// An instant on a server host where tonic's `select!` may have chosen
/// the order of two events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SelectRace {
    /// The shutdown signal, or the server's own GOAWAY (index in the
    /// trace's events).
    pub(crate) signal: usize,
    /// The first handler start or finish at that instant on that host.
    pub(crate) traffic: usize,
}

/// Every such instant, in order (at most one per host and instant).
pub(crate) fn select_races(events: &[Event]) -> Vec<SelectRace> {
    let servers = servers_of(events);
    let mut races = Vec::new();
    let mut start = 0;
    while start < events.len() {
        let at = events[start].at();
        let end = start + events[start..].iter().take_while(|e| e.at() == at).count();
        races.extend(at_one_instant(&servers, events, start..end));
        start = end;
    }
    races
}

/// The server host of each connection.
fn servers_of(events: &[Event]) -> BTreeMap<u32, &str> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Connected { conn, to, .. } => Some((*conn, &**to)),
            _ => None,
        })
        .collect()
}

/// The races among `events[range]`, which share one instant.
fn at_one_instant(
    servers: &BTreeMap<u32, &str>,
    events: &[Event],
    range: std::ops::Range<usize>,
) -> Vec<SelectRace> {
    // Per host: its first signal and its first traffic at this instant.
    let mut seen: BTreeMap<&str, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for i in range {
        let e = &events[i];
        let entry = seen.entry(&e.host).or_default();
        if entry.0.is_none() && is_signal(servers, e) {
            entry.0 = Some(i);
        } else if entry.1.is_none() && moves_a_call(e) {
            entry.1 = Some(i);
        }
    }
    seen.into_values()
        .filter_map(|(signal, traffic)| {
            Some(SelectRace {
                signal: signal?,
                traffic: traffic?,
            })
        })
        .collect()
}

/// The shutdown signal, or a GOAWAY(NO_ERROR) the server's own stack
/// wrote (not the harness, not a connection policy).
fn is_signal(servers: &BTreeMap<u32, &str>, e: &Event) -> bool {
    match &e.kind {
        EventKind::ShutdownStarted { .. } => true,
        EventKind::Frame {
            conn,
            frame: FrameType::GoAway,
            detail: FrameDetail::GoAway(goaway),
            fate,
            ..
        } => {
            goaway.code == ErrorCode::NoError
                && fate.get() != Fate::Injected
                && servers.get(conn) == Some(&&*e.host)
        }
        _ => false,
    }
}

/// A handler run's start or end: the connection's own branch of the
/// `select!` moved a call on.
fn moves_a_call(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::HandlerStarted(_) | EventKind::HandlerFinished(_)
    )
}
