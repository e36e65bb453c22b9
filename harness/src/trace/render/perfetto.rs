//! The trace as Chrome trace-event JSON, the format Perfetto
//! (<https://ui.perfetto.dev>) and `chrome://tracing` open unchanged
//! ("Trace Event Format", Google, the JSON Object Format with
//! `traceEvents`): one process per host, calls and handler runs as
//! complete (`X`) slices, a flow arrow from each call to the handler run
//! that served it, and every other event (frames, faults, policies,
//! connection changes, logs) as an instant (`i`) on its host. Timestamps
//! are *simulated* µs since the start of the run.

use serde_json::{json, Value};

use super::rows::{rows_of, Row};
use super::views::{Call, HandlerRun};
use super::Trace;
use crate::recorder::event::{Event, EventKind};
use crate::units::fmt_duration;

/// The thread of a host's process that carries its faults, policies,
/// connection changes and logs.
const EVENTS_TID: u32 = 1;
/// The thread that carries the frames the host sent.
const FRAMES_TID: u32 = 2;
/// The first thread for call and handler-run slices; each further lane
/// (slices that overlap without nesting) is the next number.
const FIRST_LANE_TID: u32 = 10;

/// The document [`Trace::to_perfetto`] writes.
pub(super) fn document(trace: &Trace) -> Value {
    let hosts = Hosts::of(trace);
    let mut out = hosts.metadata();
    let slices = Slices::of(trace);
    let tids = slices.assign();
    for (host, lanes) in slices.lanes(trace, &tids) {
        for tid in FIRST_LANE_TID..=lanes {
            let name = format!("calls and handler runs {}", tid - FIRST_LANE_TID + 1);
            out.push(thread_name(hosts.pid(host), tid, &name));
        }
    }
    for (slice, &tid) in slices.all.iter().zip(&tids) {
        out.push(slice.event(hosts.pid(slice.host), tid));
        out.extend(slice.flow(&hosts, tid));
    }
    let events = trace.events();
    let instants: Vec<usize> = (0..events.len())
        .filter(|&i| !is_slice_edge(&events[i]))
        .collect();
    for row in rows_of(events, &instants, false) {
        let e = &events[row.event];
        out.push(instant(hosts.pid(&e.host), e, &row));
    }
    json!({ "traceEvents": out, "displayTimeUnit": "ms" })
}

/// Hosts as processes: pid 1, 2, … in the trace's host order (sorted by
/// name), sorted in the viewer the same way.
struct Hosts<'a> {
    names: Vec<&'a str>,
}

impl<'a> Hosts<'a> {
    fn of(trace: &'a Trace) -> Self {
        let mut names: Vec<&str> = trace.hosts().iter().map(String::as_str).collect();
        // An event's host is one of the run's hosts; keep any other (a
        // link's name) rather than lose its events.
        for e in trace.events() {
            if !names.contains(&e.host.as_str()) {
                names.push(&e.host);
            }
        }
        Self { names }
    }

    fn pid(&self, host: &str) -> u32 {
        let i = self.names.iter().position(|h| *h == host).unwrap_or(0);
        u32::try_from(i + 1).unwrap_or(u32::MAX)
    }

    fn metadata(&self) -> Vec<Value> {
        let mut out = Vec::new();
        for (i, name) in self.names.iter().enumerate() {
            let pid = self.pid(name);
            out.push(
                json!({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                "args": {"name": name}}),
            );
            out.push(
                json!({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                "args": {"sort_index": i}}),
            );
            out.push(thread_name(pid, EVENTS_TID, "events"));
            out.push(thread_name(pid, FRAMES_TID, "frames sent"));
        }
        out
    }
}

fn thread_name(pid: u32, tid: u32, name: &str) -> Value {
    json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
}

/// A call or a handler run, as a slice on its host.
struct Slice<'a> {
    host: &'a str,
    /// `r1` or `h1`.
    id: String,
    /// The run a call was made from, or the call a run serves.
    parent: Option<String>,
    start_ns: u128,
    end_ns: u128,
    name: String,
    cat: &'static str,
    args: Value,
}

impl Slice<'_> {
    fn event(&self, pid: u32, tid: u32) -> Value {
        json!({"ph": "X", "name": self.name, "cat": self.cat, "pid": pid, "tid": tid,
            "ts": us(self.start_ns), "dur": us(self.end_ns - self.start_ns), "args": self.args})
    }

    /// A call starts a flow arrow; the run serving it ends it (`bp: e`
    /// binds the end to the enclosing slice, the run).
    fn flow(&self, hosts: &Hosts<'_>, tid: u32) -> Option<Value> {
        let pid = hosts.pid(self.host);
        let (ph, id) = match self.cat {
            // A run's parent is the call it serves: the arrow ends here.
            "handler" => ("f", self.parent.as_ref()?),
            _ => ("s", &self.id),
        };
        let mut v = json!({"ph": ph, "name": "request", "cat": "rpc", "id": id,
            "pid": pid, "tid": tid, "ts": us(self.start_ns)});
        if ph == "f" {
            v["bp"] = json!("e");
        }
        Some(v)
    }
}

/// One lane's open slices, innermost last: (end ns, id).
type Stack<'s> = Vec<(u128, &'s str)>;

struct Slices<'a> {
    all: Vec<Slice<'a>>,
}

impl<'a> Slices<'a> {
    fn of(trace: &'a Trace) -> Self {
        let end = trace.ended_at().as_nanos();
        let mut all: Vec<Slice<'a>> = trace
            .handler_runs()
            .iter()
            .map(|r| run_slice(r, end))
            .chain(trace.calls().iter().map(|c| call_slice(c, end)))
            .collect();
        // Outer before inner: earlier start first, then the longer one,
        // then runs before the calls they make, then id order.
        all.sort_by(|a, b| {
            (
                a.host,
                a.start_ns,
                std::cmp::Reverse(a.end_ns),
                a.cat != "handler",
            )
                .cmp(&(
                    b.host,
                    b.start_ns,
                    std::cmp::Reverse(b.end_ns),
                    b.cat != "handler",
                ))
        });
        Self { all }
    }

    /// Each slice's lane. A slice nests in a lane only under its own
    /// parent (a call under the run it was made from), so nesting in the
    /// viewer means causation; otherwise it takes the first free lane.
    fn assign(&self) -> Vec<u32> {
        let mut lanes_of_host: Vec<(&str, Vec<Stack<'_>>)> = Vec::new();
        let mut out = Vec::with_capacity(self.all.len());
        for s in &self.all {
            let host_ix = match lanes_of_host.iter().position(|(h, _)| *h == s.host) {
                Some(i) => i,
                None => {
                    lanes_of_host.push((s.host, Vec::new()));
                    lanes_of_host.len() - 1
                }
            };
            let lanes = &mut lanes_of_host[host_ix].1;
            for stack in lanes.iter_mut() {
                while stack.last().is_some_and(|(end, _)| *end <= s.start_ns) {
                    stack.pop();
                }
            }
            let under_parent = lanes.iter().position(|stack| {
                stack
                    .last()
                    .is_some_and(|(end, id)| Some(*id) == s.parent.as_deref() && *end >= s.end_ns)
            });
            let lane = under_parent
                .or_else(|| lanes.iter().position(Vec::is_empty))
                .unwrap_or_else(|| {
                    lanes.push(Vec::new());
                    lanes.len() - 1
                });
            lanes[lane].push((s.end_ns, &s.id));
            out.push(FIRST_LANE_TID + u32::try_from(lane).unwrap_or(u32::MAX - FIRST_LANE_TID));
        }
        out
    }

    /// The hosts with slices, each with the highest lane tid it needed.
    fn lanes<'t>(&self, trace: &'t Trace, tids: &[u32]) -> Vec<(&'t str, u32)> {
        trace
            .hosts()
            .iter()
            .filter_map(|host| {
                let top = self
                    .all
                    .iter()
                    .zip(tids)
                    .filter(|(s, _)| s.host == host)
                    .map(|(_, t)| *t)
                    .max()?;
                Some((host.as_str(), top))
            })
            .collect()
    }
}

fn run_slice(r: &HandlerRun, run_end_ns: u128) -> Slice<'_> {
    let end = super::rows::run_end(&r.end);
    Slice {
        host: &r.host,
        id: r.id.to_string(),
        parent: r.call.map(|c| c.to_string()),
        start_ns: r.started.as_nanos(),
        end_ns: r.ended_at.map_or(run_end_ns, |t| t.as_nanos()),
        name: format!("{} {}", r.id, r.path),
        cat: "handler",
        args: json!({"from": r.from, "call": r.call.map(|c| c.to_string()),
            "grpc-timeout": r.timeout.map(fmt_duration), "end": end, "nth": r.nth}),
    }
}

fn call_slice(c: &Call, run_end_ns: u128) -> Slice<'_> {
    let end = super::rows::call_end(&c.end);
    Slice {
        host: &c.host,
        id: c.id.to_string(),
        parent: c.parent.map(|r| r.to_string()),
        start_ns: c.started.as_nanos(),
        end_ns: c.ended_at.map_or(run_end_ns, |t| t.as_nanos()),
        name: format!("{} {}", c.id, c.path),
        cat: "call",
        args: json!({"to": c.target, "replica": c.replica,
            "grpc-timeout": c.timeout.map(fmt_duration),
            "deadline at": c.deadline().map(fmt_duration),
            "overran deadline by": c.overran_deadline().map(fmt_duration), "end": end}),
    }
}

/// The events that start or end a slice, shown as the slice itself.
fn is_slice_edge(e: &Event) -> bool {
    matches!(
        e.kind,
        EventKind::CallStarted(_)
            | EventKind::CallEnded { .. }
            | EventKind::CallDropped { .. }
            | EventKind::HandlerStarted(_)
            | EventKind::HandlerFinished(_)
            | EventKind::HandlerDropped { .. }
            | EventKind::HandlerPanicked(_)
    )
}

/// An instant on the host's frames or events thread, named by the row's
/// words (`c1 s1 HEADERS END_HEADERS …`), thread-scoped.
fn instant(pid: u32, e: &Event, row: &Row) -> Value {
    let tid = match e.kind {
        EventKind::Frame { .. } | EventKind::FrameReleased { .. } => FRAMES_TID,
        _ => EVENTS_TID,
    };
    // The row's style class as the category: `frame dropped`, `fault`.
    json!({"ph": "i", "s": "t", "name": row.text, "cat": row.kind.class(), "pid": pid, "tid": tid,
        "ts": us(e.at().as_nanos()), "args": {"where": row.place}})
}

/// *Simulated* ns as trace-event µs: a whole number when it is one (the
/// usual case, ticks are whole µs), else with the ns as decimals.
fn us(ns: u128) -> Value {
    if ns.is_multiple_of(1000) {
        json!(u64::try_from(ns / 1000).unwrap_or(u64::MAX))
    } else {
        json!(ns as f64 / 1000.0)
    }
}
