//! Which rows belong to which call, handler run, connection, stream and
//! host: the keys the page's filters select rows by.
//!
//! A key is a short word: `r1` (a call), `h1` (a handler run), `c1` (a
//! connection), `c1s3` (stream 3 on it), `H0` (the first host of
//! [`Trace::hosts`]). A row carries the keys of what its event names, and
//! of what those belong to: a handler run's rows carry its call, a call's
//! rows its handler runs and the run it was made from (and so that run's
//! call), a frame's row its connection, its stream, the call that stream
//! carried and that call's handler runs. Selecting `r1` then shows the
//! call, the frames of its stream, the handler run that served it and the
//! calls that run made (their starts and ends, not their own frames or
//! handler runs).

use crate::recorder::event;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::recorder::event::{CallId, Event, EventKind, FrameDetail, RunId};
use crate::trace::query::Trace;
use crate::trace::render::rows::Row;

/// The keys of every row, and every key some row has.
pub(super) struct Keys {
    /// Per row, in the rows' order: its keys, space-separated.
    pub(super) rows: Vec<String>,
    /// Every key a row has: the filters the page offers.
    pub(super) all: BTreeSet<String>,
    /// Per row: the ids its event's own data names (its text says them)
    /// that some row has, the only words of its text the page links.
    pub(super) named: Vec<BTreeSet<String>>,
}

/// Who belongs to whom, from the trace's views.
struct Owners {
    run_call: BTreeMap<RunId, CallId>,
    call_parent: BTreeMap<CallId, RunId>,
    call_runs: BTreeMap<CallId, Vec<RunId>>,
    stream_call: BTreeMap<(u32, u32), CallId>,
}

pub(super) fn keys(trace: &Trace, rows: &[Row]) -> Keys {
    let owners = owners(trace);
    let hosts: BTreeMap<&str, usize> = trace
        .hosts()
        .iter()
        .enumerate()
        .map(|(i, h)| (h.as_str(), i))
        .collect();
    let mut all = BTreeSet::new();
    let row_keys: Vec<String> = rows
        .iter()
        .map(|row| {
            let e = &trace.events()[row.about];
            let mut keys = event_keys(e, &owners);
            // The hosts its `where` names: the event's own, and the other
            // end it names (a row that shows no event, a deadline that
            // passed, is placed on its call's host alone).
            let other = other_host(e).filter(|_| row.shows_event());
            for host in std::iter::once(e.host.as_str()).chain(other) {
                if let Some(i) = hosts.get(host) {
                    keys.insert(format!("H{i}"));
                }
            }
            let joined = keys
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(" ");
            all.extend(keys);
            joined
        })
        .collect();
    let wire = wire_calls(trace);
    let named = rows
        .iter()
        .map(|row| {
            let mut ids = named_ids(&trace.events()[row.about], &wire);
            ids.retain(|id| all.contains(id));
            ids
        })
        .collect();
    Keys {
        rows: row_keys,
        all,
        named,
    }
}

/// The connection and stream of each call seen only on the wire (its
/// start row says them).
fn wire_calls(trace: &Trace) -> BTreeMap<CallId, (u32, u32)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CallSeenOnWire { call, conn, stream } => Some((*call, (*conn, *stream))),
            _ => None,
        })
        .collect()
}

/// The ids `e`'s own fields hold, as keys (`r1`, `h1`, `c1`, `c1s3`): not
/// what they belong to, only what its row's text names.
fn named_ids(e: &Event, wire: &BTreeMap<CallId, (u32, u32)>) -> BTreeSet<String> {
    let (mut calls, mut runs, mut conns): (Vec<CallId>, Vec<RunId>, Vec<(u32, u32)>) =
        (Vec::new(), Vec::new(), Vec::new());
    match &e.kind {
        EventKind::CallStarted(started) => {
            calls.push(started.call);
            runs.extend(started.parent);
            conns.extend(wire.get(&started.call));
        }
        EventKind::CallEnded { call, .. }
        | EventKind::CallDropped { call, .. }
        | EventKind::CallRouted { call, .. } => calls.push(*call),
        EventKind::CallFailedConnecting(failed) => calls.push(failed.call),
        EventKind::CallUndecodable(undecodable) => calls.push(undecodable.call),
        EventKind::CallStoppedReading(stopped) => calls.push(stopped.call),
        EventKind::HandlerStarted(started) => {
            runs.push(started.run);
            calls.extend(started.call);
        }
        EventKind::HandlerFinished(r) => runs.push(r.run),
        EventKind::HandlerPanicked(r) => runs.push(r.run),
        EventKind::HandlerDequeued(r) => runs.push(r.run),
        EventKind::HandlerDropped(r) => runs.push(r.run),
        EventKind::HandlerRejected(r) => runs.push(r.run),
        EventKind::GrpcTimeoutInvalid(r) => runs.push(r.run),
        EventKind::FaultFired(r) => runs.push(r.run),
        EventKind::RetryArrived { run, .. } => runs.push(*run),
        EventKind::ShutdownStillDraining(draining) => {
            runs.extend(draining.waiting_on.iter().map(|r| r.run));
        }
        EventKind::Frame { conn, stream, .. } | EventKind::FrameReleased { conn, stream, .. } => {
            conns.push((*conn, *stream));
        }
        EventKind::FrameReplaced(f) => conns.push((f.conn, f.stream)),
        EventKind::FrameNeverLeft(f) => conns.push((f.conn, f.stream)),
        EventKind::FramesUndelivered { conn, frames, .. } => {
            conns.push((*conn, 0));
            conns.extend(frames.iter().map(|(s, _)| (*conn, *s)));
        }
        EventKind::Connected { conn, .. }
        | EventKind::ConnReset { conn, .. }
        | EventKind::ConnClosed { conn, .. }
        | EventKind::ConnResetSent { conn, .. }
        | EventKind::RawPeerClosed { conn, .. }
        | EventKind::ProtocolError { conn, .. }
        | EventKind::KeepaliveStrikesReset { conn, .. }
        | EventKind::KeepaliveDataReset { conn, .. }
        | EventKind::KeepaliveClosed { conn, .. } => conns.push((*conn, 0)),
        EventKind::KeepalivePing(p) => conns.push((p.conn, 0)),
        EventKind::PolicyClosed(p) => conns.push((p.conn, 0)),
        EventKind::PolicyReset(p) => conns.push((p.conn, 0)),
        EventKind::PolicyActed(p) => conns.push((p.conn, 0)),
        _ => {}
    }
    let mut ids: BTreeSet<String> = calls.iter().map(ToString::to_string).collect();
    ids.extend(runs.iter().map(ToString::to_string));
    for (c, s) in conns {
        ids.insert(format!("c{c}"));
        if s != 0 {
            ids.insert(format!("c{c}s{s}"));
        }
    }
    ids
}

fn owners(trace: &Trace) -> Owners {
    let run_call: BTreeMap<RunId, CallId> = trace
        .handler_runs()
        .iter()
        .filter_map(|r| Some((r.id, r.call?)))
        .collect();
    let call_parent = trace
        .calls()
        .iter()
        .filter_map(|c| Some((c.id, c.parent?)))
        .collect();
    let mut call_runs: BTreeMap<CallId, Vec<RunId>> = BTreeMap::new();
    for (run, call) in &run_call {
        call_runs.entry(*call).or_default().push(*run);
    }
    Owners {
        run_call,
        call_parent,
        call_runs,
        stream_call: stream_calls(trace),
    }
}

/// The stream each call went on: the first request HEADERS for its path
/// that its host wrote to its target (the replica, behind a balanced
/// channel) at or after the call started, no later than its first handler
/// run started, and not taken by an earlier call.
fn stream_calls(trace: &Trace) -> BTreeMap<(u32, u32), CallId> {
    type Sent = Vec<(Duration, u32, u32, bool)>;
    let mut sent: BTreeMap<(&str, &str, &str), Sent> = BTreeMap::new();
    for e in trace.events() {
        if let EventKind::Frame {
            conn,
            to,
            stream,
            detail: FrameDetail::Headers(block),
            ..
        } = &e.kind
        {
            if let Some(path) = block.request_path().filter(|_| *stream != 0) {
                sent.entry((e.host.as_str(), to.as_str(), path))
                    .or_default()
                    .push((e.at(), *conn, *stream, false));
            }
        }
    }
    let mut first_run: BTreeMap<CallId, Duration> = BTreeMap::new();
    for r in trace.handler_runs() {
        if let Some(c) = r.call {
            first_run.entry(c).or_insert(r.started);
        }
    }
    let mut out = BTreeMap::new();
    for call in trace.calls() {
        let to = call.replica.as_deref().unwrap_or(&call.target);
        let Some(list) = sent.get_mut(&(call.host.as_str(), to, call.path.as_str())) else {
            continue;
        };
        let latest = first_run.get(&call.id).copied().unwrap_or(Duration::MAX);
        let found = list
            .iter_mut()
            .find(|(at, .., used)| !*used && *at >= call.started && *at <= latest);
        if let Some((_, conn, stream, used)) = found {
            *used = true;
            out.insert((*conn, *stream), call.id);
        }
    }
    out
}

/// The keys of one event, with what its ids belong to.
fn event_keys(e: &Event, owners: &Owners) -> BTreeSet<String> {
    let (mut calls, mut runs, mut conn): (Vec<CallId>, Vec<RunId>, Option<(u32, u32)>) =
        (Vec::new(), Vec::new(), None);
    match &e.kind {
        // The run a call was made from belongs to the call's own rows, not
        // to the rows of what the call led to (its handler run, its frames).
        EventKind::CallStarted(started) => {
            calls.push(started.call);
            runs.extend(owners.call_parent.get(&started.call));
        }
        EventKind::CallEnded { call, .. }
        | EventKind::CallDropped { call, .. }
        | EventKind::CallRouted { call, .. } => {
            calls.push(*call);
            runs.extend(owners.call_parent.get(call));
        }
        EventKind::CallFailedConnecting(failed) => {
            calls.push(failed.call);
            runs.extend(owners.call_parent.get(&failed.call));
        }
        EventKind::CallUndecodable(undecodable) => {
            calls.push(undecodable.call);
            runs.extend(owners.call_parent.get(&undecodable.call));
        }
        EventKind::HandlerStarted(handler_started) => {
            let event::HandlerStarted { run, call, .. } = &**handler_started;
            runs.push(*run);
            calls.extend(*call);
        }
        EventKind::HandlerFinished(finished) => runs.push(finished.run),
        EventKind::HandlerPanicked(panicked) => runs.push(panicked.run),
        EventKind::FaultFired(fired) => runs.push(fired.run),
        EventKind::HandlerDequeued(dequeued) => runs.push(dequeued.run),
        EventKind::HandlerDropped(dropped) => runs.push(dropped.run),
        EventKind::RetryArrived { run, .. } => runs.push(*run),
        EventKind::ShutdownStillDraining(draining) => {
            runs.extend(draining.waiting_on.iter().map(|r| r.run));
        }
        EventKind::Frame {
            conn: c, stream, ..
        }
        | EventKind::FrameReleased {
            conn: c, stream, ..
        } => conn = Some((*c, *stream)),
        EventKind::FrameNeverLeft(left) => conn = Some((left.conn, left.stream)),
        EventKind::ConnClosed { conn: c, .. }
        | EventKind::ProtocolError { conn: c, .. }
        | EventKind::KeepaliveStrikesReset { conn: c, .. }
        | EventKind::KeepaliveClosed { conn: c, .. }
        | EventKind::ConnReset { conn: c, .. }
        | EventKind::Connected { conn: c, .. } => conn = Some((*c, 0)),
        EventKind::KeepalivePing(ping) => conn = Some((ping.conn, 0)),
        _ => {}
    }
    let mut keys = BTreeSet::new();
    if let Some((c, s)) = conn {
        keys.insert(format!("c{c}"));
        if s != 0 {
            keys.insert(format!("c{c}s{s}"));
            calls.extend(owners.stream_call.get(&(c, s)));
        }
    }
    for run in &runs {
        calls.extend(owners.run_call.get(run));
    }
    for call in &calls {
        runs.extend(owners.call_runs.get(call).into_iter().flatten());
    }
    keys.extend(calls.iter().map(ToString::to_string));
    keys.extend(runs.iter().map(ToString::to_string));
    keys
}

/// The other host an event names beside its own, as its row's `where`
/// shows it (`a→b`, `a↔b`): the connection's or call's far end, the
/// link's other side, the replica a call was balanced to.
fn other_host(e: &Event) -> Option<&str> {
    let host = match &e.kind {
        EventKind::Partitioned { peer, .. }
        | EventKind::BlackHoled { peer }
        | EventKind::Repaired { peer }
        | EventKind::LinkLatency { peer, .. } => peer,
        EventKind::ConnectStarted { to, .. }
        | EventKind::ConnectWaiting { to, .. }
        | EventKind::Connected { to, .. }
        | EventKind::ConnectFailed { to, .. }
        | EventKind::ConnectAbandoned { to, .. }
        | EventKind::ConnReset { to, .. }
        | EventKind::Frame { to, .. }
        | EventKind::FrameReleased { to, .. }
        | EventKind::ConnClosed { to, .. }
        | EventKind::ConnResetSent { to, .. }
        | EventKind::FramesUndelivered { to, .. }
        | EventKind::RawPeerClosed { to, .. }
        | EventKind::ProtocolError { to, .. }
        | EventKind::KeepaliveStrikesReset { to, .. }
        | EventKind::KeepaliveDataReset { to, .. }
        | EventKind::KeepaliveClosed { to, .. } => to,
        EventKind::FrameReplaced(f) => &f.to,
        EventKind::FrameNeverLeft(f) => &f.to,
        EventKind::PolicyClosed(p) => &p.to,
        EventKind::PolicyReset(p) => &p.to,
        EventKind::PolicyActed(p) => &p.to,
        EventKind::CallStarted(c) => &c.target,
        EventKind::CallFailedConnecting(c) => &c.target,
        EventKind::RetryAttempt(r) => &r.target,
        EventKind::CallRouted { replica, .. } => replica,
        EventKind::Balancer(b) => &b.replica,
        _ => return None,
    };
    Some(host.as_str())
}

/// What a key's filter banner names: `r1`, `c1 s3`, a host's name.
pub(super) fn label<'a>(key: &'a str, hosts: &'a [String]) -> std::borrow::Cow<'a, str> {
    if let Some(i) = key.strip_prefix('H').and_then(|i| i.parse::<usize>().ok()) {
        if let Some(host) = hosts.get(i) {
            return std::borrow::Cow::Borrowed(host.as_str());
        }
    }
    match key.split_once('s') {
        Some((conn, stream)) if conn.starts_with('c') => format!("{conn} s{stream}").into(),
        _ => key.into(),
    }
}
