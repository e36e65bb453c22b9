//! A Mermaid sequence diagram (<https://mermaid.js.org/syntax/sequenceDiagram.html>)
//! of one call or one connection, for a PR comment or an issue: GitHub
//! renders a ```` ```mermaid ```` block. Each message says the row's own
//! words, prefixed by its *simulated* time; nothing here words an event.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::rows::{rows_of, Row};
use super::views::{Call, HandlerRun};
use super::Trace;
use crate::recorder::event::{CallId, Event, EventKind, Fate, RunId};
use crate::units::fmt_duration;

/// What [`Trace::to_mermaid`] draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MermaidOf {
    /// A call and everything it caused: the handler runs that served it,
    /// the calls those made, and so on down the chain; the faults that
    /// acted on those runs, and the host faults (crash, restart, pause,
    /// partition, shutdown) of their hosts while the call was open.
    Call(CallId),
    /// One connection (`c1` is `Connection(1)`): its dialer first, then
    /// every frame across it in both directions (runs of plain DATA
    /// folded, as in the default render), what the frame faults did to
    /// each, and its close.
    Connection(u32),
}

impl Trace {
    /// A Mermaid `sequenceDiagram` of a call or a connection, one line per
    /// message, or `None` when the trace has no such call or connection.
    ///
    /// Arrows: `->>` a request or a frame that passed, `-->>` an answer
    /// (or a frame the harness injected, or one a frame rule put in place
    /// of the frame sent), `--x` an answer other than OK, a frame dropped,
    /// lost, replaced or swallowed by a connection policy `-x`, kept back (held, delayed, partitioned,
    /// paused) `-)`; handler runs are activations with notes. Text is
    /// escaped for Mermaid (`#59;` for `;` and so on), so a peer's
    /// message cannot break the diagram.
    ///
    /// ```
    /// # fn show(trace: &grpc_chaos::Trace) {
    /// use grpc_chaos::trace::MermaidOf;
    /// if let Some(first) = trace.calls().first() {
    ///     let diagram = trace.to_mermaid(MermaidOf::Call(first.id)).unwrap_or_default();
    ///     println!("```mermaid\n{diagram}```");
    /// }
    /// # }
    /// ```
    pub fn to_mermaid(&self, of: MermaidOf) -> Option<String> {
        let (chosen, lines) = match of {
            MermaidOf::Call(id) => {
                let tree = CallTree::of(self, id)?;
                (tree.events(self), Lines::Call)
            }
            MermaidOf::Connection(conn) => {
                let events = self.events();
                let chosen: Vec<usize> = (0..events.len())
                    .filter(|&i| events[i].kind.conn() == Some(conn))
                    .collect();
                if chosen.is_empty() {
                    return None;
                }
                (chosen, Lines::Connection)
            }
        };
        let fold = matches!(lines, Lines::Connection);
        let events = self.events();
        let rows = rows_of(events, &chosen, fold);
        let mut diagram = Diagram::default();
        // The dialer first: the server's SETTINGS can be recorded before
        // the dialer's `connected`, at the same instant.
        for &i in &chosen {
            if let EventKind::Connected { to, .. } = &events[i].kind {
                diagram.index(&events[i].host);
                diagram.index(to);
            }
        }
        for row in &rows {
            lines.write(&mut diagram, self, &events[row.event], row);
        }
        Some(diagram.finish(self.seed(), of))
    }
}

/// Which diagram the rows go into.
enum Lines {
    Call,
    Connection,
}

impl Lines {
    fn write(&self, d: &mut Diagram, trace: &Trace, e: &Event, row: &Row) {
        let text = format!("{} {}", fmt_duration(e.at()), row.text);
        match (self, &e.kind) {
            (Lines::Call, EventKind::CallStarted(started)) => {
                if let Some(c) = trace.call(started.call) {
                    d.arrow(&c.host, "->>", callee(c), &text);
                }
            }
            (Lines::Call, EventKind::CallEnded { call, outcome, .. }) => {
                if let Some(c) = trace.call(*call) {
                    let arrow = if outcome.is_ok() { "-->>" } else { "--x" };
                    d.arrow(callee(c), arrow, &c.host, &text);
                }
            }
            (Lines::Call, EventKind::CallDropped { call, .. }) => {
                if let Some(c) = trace.call(*call) {
                    d.arrow(&c.host, "-x", callee(c), &text);
                }
            }
            (Lines::Call, EventKind::HandlerStarted(_)) => {
                d.note(&e.host, &text);
                d.activate(&e.host);
            }
            (
                Lines::Call,
                EventKind::HandlerFinished(_)
                | EventKind::HandlerDropped { .. }
                | EventKind::HandlerPanicked(_),
            ) => {
                d.note(&e.host, &text);
                d.deactivate(&e.host);
            }
            (Lines::Connection, EventKind::Frame { to, fate, .. }) => {
                d.arrow(&e.host, frame_arrow(fate.get()), to, &text);
            }
            (Lines::Connection, EventKind::FrameReplaced(replaced)) => {
                d.arrow(&e.host, "-->>", &replaced.to, &text);
            }
            (Lines::Connection, EventKind::FrameReleased { to, .. }) => {
                d.arrow(&e.host, "-)", to, &text);
            }
            (Lines::Connection, EventKind::FrameNeverLeft(left)) => {
                d.arrow(&e.host, "-)", &left.to, &text);
            }
            (
                Lines::Connection,
                EventKind::ConnClosed { to, .. } | EventKind::Connected { to, .. },
            ) => {
                d.note_over(&e.host, to, &text);
            }
            _ => d.note(&e.host, &text),
        }
    }
}

/// A call, the runs that served it and the calls those made, transitively.
struct CallTree {
    calls: BTreeSet<CallId>,
    runs: BTreeSet<RunId>,
    /// Hosts that took part, for their host faults.
    hosts: BTreeSet<String>,
    /// From the root call's start to the last end in the tree (*simulated*).
    window: (std::time::Duration, std::time::Duration),
}

impl CallTree {
    fn of(trace: &Trace, root: CallId) -> Option<Self> {
        let first = trace.call(root)?;
        let mut tree = Self {
            calls: BTreeSet::new(),
            runs: BTreeSet::new(),
            hosts: BTreeSet::new(),
            window: (first.started, first.ended_at.unwrap_or(trace.ended_at())),
        };
        let mut todo = vec![first];
        while let Some(call) = todo.pop() {
            tree.calls.insert(call.id);
            tree.add_host(&call.host, call.ended_at.unwrap_or(trace.ended_at()));
            let served = trace
                .handler_runs()
                .iter()
                .filter(|r| r.call == Some(call.id));
            for run in served {
                tree.add_run(run, trace);
                todo.extend(trace.calls().iter().filter(|c| c.parent == Some(run.id)));
            }
        }
        Some(tree)
    }

    fn add_run(&mut self, run: &HandlerRun, trace: &Trace) {
        self.runs.insert(run.id);
        self.add_host(&run.host, run.ended_at.unwrap_or(trace.ended_at()));
    }

    fn add_host(&mut self, host: &str, until: std::time::Duration) {
        self.hosts.insert(host.to_owned());
        self.window.1 = self.window.1.max(until);
    }

    /// The events the diagram shows (indices into the trace's), in time
    /// order.
    fn events(&self, trace: &Trace) -> Vec<usize> {
        let (from, until) = self.window;
        let events = trace.events();
        (0..events.len())
            .filter(|&i| match &events[i].kind {
                EventKind::CallStarted(started) => self.calls.contains(&started.call),
                EventKind::CallEnded { call, .. } | EventKind::CallDropped { call, .. } => {
                    self.calls.contains(call)
                }
                EventKind::HandlerStarted(started) => self.runs.contains(&started.run),
                EventKind::HandlerFinished(finished) => self.runs.contains(&finished.run),
                EventKind::HandlerPanicked(panicked) => self.runs.contains(&panicked.run),
                EventKind::FaultFired(fired) => self.runs.contains(&fired.run),
                EventKind::HandlerDropped(dropped) => self.runs.contains(&dropped.run),
                EventKind::HostCrashed
                | EventKind::HostRestarted
                | EventKind::HostPaused
                | EventKind::HostResumed
                | EventKind::Partitioned { .. }
                | EventKind::ShutdownStarted { .. }
                | EventKind::PodTerminationStarted(_) => {
                    let e = &events[i];
                    self.hosts.contains(e.host.as_str()) && e.at() >= from && e.at() <= until
                }
                _ => false,
            })
            .collect()
    }
}

/// The host that answers a call: the replica a balancer chose, else the
/// target.
fn callee(c: &Call) -> &str {
    c.replica.as_deref().unwrap_or(&c.target)
}

fn frame_arrow(fate: Fate) -> &'static str {
    match fate {
        Fate::Passed | Fate::Behind { .. } | Fate::ReadAtReceiver => "->>",
        Fate::Injected => "-->>",
        // Replaced: what arrived instead follows as its own arrow.
        Fate::Dropped | Fate::Lost | Fate::LostBehind | Fate::Replaced { .. } | Fate::Swallowed => {
            "-x"
        }
        Fate::Held | Fate::Delayed { .. } | Fate::Partitioned | Fate::Paused | Fate::BehindHeld => {
            "-)"
        }
    }
}

/// The diagram being written: participants by first appearance (`p1`,
/// `p2`, … aliased to the host names), then the messages.
#[derive(Default)]
struct Diagram {
    hosts: Vec<String>,
    body: String,
    /// Open activations per participant, so a deactivation never outnumbers
    /// them (Mermaid rejects that).
    active: Vec<u32>,
}

impl Diagram {
    /// The participant's index, adding it at its first appearance.
    fn index(&mut self, host: &str) -> usize {
        match self.hosts.iter().position(|h| h == host) {
            Some(i) => i,
            None => {
                self.hosts.push(host.to_owned());
                self.active.push(0);
                self.hosts.len() - 1
            }
        }
    }

    fn id(&mut self, host: &str) -> String {
        format!("p{}", self.index(host) + 1)
    }

    fn line(&mut self, line: std::fmt::Arguments<'_>) {
        let _ = writeln!(self.body, "    {line}");
    }

    fn arrow(&mut self, from: &str, arrow: &str, to: &str, text: &str) {
        let (from, to) = (self.id(from), self.id(to));
        self.line(format_args!("{from}{arrow}{to}: {}", escape(text)));
    }

    fn note(&mut self, host: &str, text: &str) {
        let id = self.id(host);
        self.line(format_args!("Note over {id}: {}", escape(text)));
    }

    fn note_over(&mut self, a: &str, b: &str, text: &str) {
        let (a, b) = (self.id(a), self.id(b));
        self.line(format_args!("Note over {a},{b}: {}", escape(text)));
    }

    fn activate(&mut self, host: &str) {
        let i = self.index(host);
        self.active[i] += 1;
        self.line(format_args!("activate p{}", i + 1));
    }

    fn deactivate(&mut self, host: &str) {
        let i = self.index(host);
        if self.active[i] > 0 {
            self.active[i] -= 1;
            self.line(format_args!("deactivate p{}", i + 1));
        }
    }

    fn finish(self, seed: u64, of: MermaidOf) -> String {
        let what = match of {
            MermaidOf::Call(id) => format!("call {id}"),
            MermaidOf::Connection(conn) => format!("connection c{conn}"),
        };
        let mut out = format!("sequenceDiagram\n    %% grpc-chaos: {what}, seed {seed}\n");
        for (i, host) in self.hosts.iter().enumerate() {
            let _ = writeln!(out, "    participant p{} as {}", i + 1, escape(host));
        }
        out + &self.body
    }
}

/// Mermaid's entity codes for the characters that end a statement, start
/// an entity or read as markup; `%%` would start a comment.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            ';' => out.push_str("#59;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#60;"),
            '>' => out.push_str("#62;"),
            '%' => out.push_str("#37;"),
            c => out.push(c),
        }
    }
    out
}
