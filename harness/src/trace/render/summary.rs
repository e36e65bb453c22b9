//! The summary that heads the `.txt` and the HTML page: the run's verdict,
//! its first error, then the findings, the faults that fired and never
//! fired, the stalls and the deadline overruns, each pointing at the event
//! that shows it. Built once from the trace's own queries; the text and the
//! HTML lay the same items out, so both say the same thing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::rows::{fmt_ms, kind, RowKind, Words};
use super::{CallEnd, Trace};
use crate::recorder::event::{CallId, Event, EventKind, Fate, FrameDetail, RunId};
use crate::units::fmt_duration;

/// How many items a section lists before it says how many more there are:
/// a summary is read at a glance, the timeline has the rest.
pub(crate) const MAX_ITEMS: usize = 12;

/// How late past its deadline a call must end to be listed as an overrun
/// (*simulated* time): two default ticks, so the tick the first poll takes
/// is not one (see [`Trace::deadline_overruns`]).
pub(crate) const OVERRUN_TOLERANCE: Duration = Duration::from_millis(2);

/// A judgement of the run from outside the trace, for the top of the
/// summary: a story's verdict, a failed assertion, or the error the run
/// ended with. The trace itself cannot know what the run was meant to
/// show; without one the summary says the run was not judged.
///
/// ```
/// use grpc_chaos::trace::RunVerdict;
///
/// let v = RunVerdict::fail("deadline propagation: store got 500ms, more than the 380ms left");
/// assert!(!v.passed());
/// assert!(v.text().starts_with("deadline propagation"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunVerdict {
    passed: bool,
    text: String,
}

impl RunVerdict {
    /// The run showed what it had to; `what` says what happened.
    pub fn pass(what: impl Into<String>) -> Self {
        Self {
            passed: true,
            text: what.into(),
        }
    }

    /// The run failed; `why` is the failed check or the error's text.
    pub fn fail(why: impl Into<String>) -> Self {
        Self {
            passed: false,
            text: why.into(),
        }
    }

    /// Whether the run passed.
    pub fn passed(&self) -> bool {
        self.passed
    }

    /// What happened (a pass) or what failed (a fail).
    pub fn text(&self) -> &str {
        &self.text
    }
}

/// One line of the summary: what, and the event that shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// The index in the trace's events of the event it points at.
    pub(crate) event: Option<usize>,
    /// When, *simulated* (the timeline's `t(ms)` of that event).
    pub(crate) at: Option<Duration>,
    /// The host or `a→b` it happened on, as its row says it.
    pub(crate) place: String,
    /// What, in the trace's words.
    pub(crate) text: String,
}

/// One titled list of items, and how many more were left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub(crate) title: &'static str,
    /// The HTML id of the section's list.
    pub(crate) id: &'static str,
    pub(crate) items: Vec<Item>,
    pub(crate) more: usize,
}

impl Section {
    fn new(title: &'static str, id: &'static str, mut items: Vec<Item>) -> Self {
        let more = items.len().saturating_sub(MAX_ITEMS);
        items.truncate(MAX_ITEMS);
        Self {
            title,
            id,
            items,
            more,
        }
    }
}

/// The whole summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Summary {
    pub(crate) verdict: Option<RunVerdict>,
    /// The first call that ended with an error (by the spec's code), the
    /// first handler panic or protocol error, whichever came first.
    pub(crate) first_error: Option<Item>,
    /// Calls, handler runs and connections, counted.
    pub(crate) counts: String,
    /// Findings, faults fired, never fired, stalls, overruns, in this order.
    pub(crate) sections: Vec<Section>,
}

impl Trace {
    /// The summary that heads the `.txt` [`Trace::write_to`] writes and
    /// the HTML page, as text: the verdict (`verdict` if given, else "not
    /// judged"), the first error with its text, then the findings (tonic's
    /// code next to the spec's), the faults that fired and that never
    /// fired, the flow-control stalls and the deadline overruns (calls
    /// ending more than 2 ms of *simulated* time past their deadline), each
    /// line starting with the `t(ms)` of the timeline row that shows it, so
    /// it can be found in the render. A section lists at most 12 lines and
    /// says how many more there are.
    ///
    /// ```
    /// use grpc_chaos::{trace::RunVerdict, Sim};
    ///
    /// let mut sim = Sim::builder().seed(7).build();
    /// sim.server("store", |s| s);
    /// sim.client("player", |_| async { Ok(()) });
    /// let summary = sim.run()?.render_summary(Some(&RunVerdict::pass("nothing to do")));
    /// assert!(summary.starts_with("summary (seed 7"));
    /// assert_eq!(summary.lines().nth(1), Some("  verdict           PASS: nothing to do"));
    /// assert!(summary.contains("first error       none"));
    /// # Ok::<(), grpc_chaos::Error>(())
    /// ```
    pub fn render_summary(&self, verdict: Option<&RunVerdict>) -> String {
        let s = self.summary(verdict);
        let mut out = format!(
            "summary (seed {}, {} simulated; reproduce with {})\n",
            self.seed(),
            fmt_duration(self.ended_at()),
            self.replay_env()
        );
        let line = |out: &mut String, title: &str, body: &str| {
            let _ = writeln!(out, "  {title:<18}{body}");
        };
        line(&mut out, "verdict", &verdict_text(s.verdict.as_ref()));
        match &s.first_error {
            Some(item) => line(&mut out, "first error", &item_text(item)),
            None => line(&mut out, "first error", "none"),
        }
        line(&mut out, "counted", &s.counts);
        for section in &s.sections {
            let mut items = section.items.iter();
            match items.next() {
                None => line(&mut out, section.title, "none"),
                Some(first) => line(&mut out, section.title, &item_text(first)),
            }
            for item in items {
                line(&mut out, "", &item_text(item));
            }
            if section.more > 0 {
                line(&mut out, "", &more_text(section.more));
            }
        }
        out
    }

    /// The summary's items, for the text and the HTML.
    pub(crate) fn summary(&self, verdict: Option<&RunVerdict>) -> Summary {
        let events = self.events();
        Summary {
            verdict: verdict.cloned(),
            first_error: first_error(events),
            counts: counts(self),
            sections: vec![
                Section::new("findings", "findings", findings(self, events)),
                Section::new("faults fired", "fired", fired(events)),
                Section::new("never fired", "never", never_fired(events)),
                Section::new("stalls", "stalled", stalls(self, events)),
                Section::new("deadline overruns", "overruns", overruns(self, events)),
            ],
        }
        .with_chance(events)
    }
}

impl Summary {
    /// With the instants whose order tokio's unseeded `select!` RNG may
    /// have picked ([`chance`](super::chance)), as a section of their own
    /// after the others, only when there are some: a build with
    /// `--cfg tokio_unstable` seeds that RNG from the run's seed, and its
    /// summaries have none.
    fn with_chance(mut self, events: &[Event]) -> Self {
        if crate::env::tokio_rng_seeded() {
            return self;
        }
        let items: Vec<Item> = super::chance::select_races(events)
            .into_iter()
            .map(|race| chance_item(events, race))
            .collect();
        if !items.is_empty() {
            self.sections
                .push(Section::new("order by chance", "chance", items));
        }
        self
    }
}

/// `shutdown signal and handler start in one tick: …`.
fn chance_item(events: &[Event], race: super::chance::SelectRace) -> Item {
    let signal = &events[race.signal];
    let what = match &signal.kind {
        EventKind::ShutdownStarted { .. } => "shutdown signal",
        _ => "its own GOAWAY",
    };
    let traffic = match &events[race.traffic].kind {
        EventKind::HandlerStarted(_) => "a handler start",
        _ => "a handler's end",
    };
    Item {
        event: Some(race.signal),
        at: Some(signal.at()),
        place: signal.host.to_string(),
        text: format!(
            "{what} and {traffic} in one tick: tonic's select! may have picked their order with \
             tokio's RNG, unseeded in this build, so it may differ between processes (exact replay: \
             build with --cfg tokio_unstable)"
        ),
    }
}

/// `PASS: …`, `FAIL: …`, or that nothing judged the run.
pub(crate) fn verdict_text(verdict: Option<&RunVerdict>) -> String {
    match verdict {
        Some(v) if v.passed => format!("PASS: {}", v.text),
        Some(v) => format!("FAIL: {}", v.text),
        None => "not judged (the trace alone; a story or a test gives the verdict)".to_owned(),
    }
}

/// `… and 3 more (see the timeline)`.
pub(crate) fn more_text(more: usize) -> String {
    format!("… and {more} more (see the timeline)")
}

fn item_text(item: &Item) -> String {
    let at = item.at.map(fmt_ms).unwrap_or_default();
    format!("{at:>10}  {:<20} {}", item.place, item.text)
}

/// The item for event `i`, in its row's words.
fn item(words: &Words, events: &[Event], i: usize) -> Item {
    let (place, text) = words.describe(&events[i]);
    Item {
        event: Some(i),
        at: Some(events[i].at()),
        place,
        text,
    }
}

fn first_error(events: &[Event]) -> Option<Item> {
    let i = events.iter().position(|e| match &e.kind {
        EventKind::CallEnded { outcome, .. } => outcome.spec_code != "OK",
        EventKind::CallFailedConnecting(failed) => failed.outcome.spec_code != "OK",
        EventKind::CallUndecodable(_) => true,
        EventKind::HandlerPanicked(_) | EventKind::ProtocolError { .. } => true,
        _ => false,
    })?;
    Some(item(&Words::of(events), events, i))
}

fn counts(trace: &Trace) -> String {
    let (mut ok, mut failed, mut dropped, mut open) = (0, 0, 0, 0);
    for c in trace.calls() {
        match &c.end {
            CallEnd::Status(o) if o.spec_code == "OK" => ok += 1,
            CallEnd::Status(_) | CallEnd::StoppedReading { .. } | CallEnd::Undecodable { .. } => {
                failed += 1
            }
            CallEnd::Dropped => dropped += 1,
            CallEnd::Open => open += 1,
        }
    }
    let mut conns: Vec<u32> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame { conn, .. } | EventKind::Connected { conn, .. } => Some(*conn),
            _ => None,
        })
        .collect();
    conns.sort_unstable();
    conns.dedup();
    format!(
        "{} calls ({ok} OK, {failed} failed, {dropped} dropped, {open} open), {} handler runs, {} connections",
        trace.calls().len(),
        trace.handler_runs().len(),
        conns.len()
    )
}

/// One line per distinct (tonic's status, spec's code), at its first call
/// or handler run, naming the calls it was seen on, then the runs tonic's
/// server timer ended (whose answer the spec wants otherwise), then each
/// host that redialled a server sooner than connection backoff allows.
fn findings(trace: &Trace, events: &[Event]) -> Vec<Item> {
    let ends = call_ends(events);
    // Per finding: its line, each id with whether it is a handler run's
    // (else a call's), and the event it points at.
    type Seen = (String, Vec<(bool, String)>, Option<usize>);
    let mut seen: Vec<Seen> = Vec::new();
    let mut note = |line: String, id: (bool, String), event: Option<usize>| match seen
        .iter_mut()
        .find(|(l, ..)| *l == line)
    {
        Some((_, ids, _)) => ids.push(id),
        None => seen.push((line, vec![id], event)),
    };
    for call in trace.calls() {
        if let Some(line) = call.outcome().and_then(super::words::finding) {
            note(
                line,
                (false, call.id.to_string()),
                ends.get(&call.id).copied(),
            );
        }
    }
    let timed_out = run_timeouts(events);
    for run in trace.handler_runs() {
        if let super::RunEnd::TimedOut(t) = &run.end {
            if let Some(line) = super::words::finding(&t.outcome) {
                note(
                    line,
                    (true, run.id.to_string()),
                    timed_out.get(&run.id).copied(),
                );
            }
        }
    }
    let mut items: Vec<Item> = seen
        .into_iter()
        .map(|(line, ids, event)| {
            let named: Vec<&str> = ids.iter().take(8).map(|(_, id)| id.as_str()).collect();
            let mut text = format!("{line}: {}", named.join(" "));
            if ids.len() > named.len() {
                let runs = ids.iter().filter(|(run, _)| *run).count();
                let what = match (runs, ids.len() - runs) {
                    (0, _) => "calls",
                    (_, 0) => "handler runs",
                    _ => "calls and runs",
                };
                let _ = write!(text, " … ({} {what})", ids.len());
            }
            Item {
                event,
                at: event.map(|i| events[i].at()),
                place: event
                    .map(|i| events[i].host.to_string())
                    .unwrap_or_default(),
                text,
            }
        })
        .collect();
    items.extend(super::backoff::quick_redials(events).iter().map(|q| Item {
        event: Some(q.first),
        at: Some(events[q.first].at()),
        place: format!("{}→{}", q.host, q.to),
        text: redial_words(q),
    }));
    items
}

/// A host that redialled sooner than connection backoff allows, in words.
fn redial_words(q: &super::backoff::Found) -> String {
    format!(
        "redialled sooner than connection backoff allows: {} of {} redials after a failed \
         connect (shortest {} after the failed attempt began; connection-backoff.md allows {}: \
         1s, ×1.6 per failure, up to 120s, less 20% jitter)",
        q.count,
        q.redials,
        fmt_duration(q.shortest),
        fmt_duration(q.allowed)
    )
}

/// Where tonic's server timer ended each run it ended, by id.
fn run_timeouts(events: &[Event]) -> BTreeMap<RunId, usize> {
    events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::HandlerDropped(d) if d.timed_out.is_some() => Some((d.run, i)),
            _ => None,
        })
        .collect()
}

/// Where each call ended (or was dropped), by id.
fn call_ends(events: &[Event]) -> BTreeMap<CallId, usize> {
    events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.kind {
            EventKind::CallEnded { call, .. } | EventKind::CallDropped { call, .. } => {
                Some((*call, i))
            }
            EventKind::CallFailedConnecting(failed) => Some((failed.call, i)),
            EventKind::CallUndecodable(undecodable) => Some((undecodable.call, i)),
            _ => None,
        })
        .collect()
}

/// Faults that acted: handler and host faults as recorded, and what frame
/// faults did to frames. Repeats of one fault (the same words but for the
/// ids) are one line with a count, at the first.
fn fired(events: &[Event]) -> Vec<Item> {
    let words = Words::of(events);
    let mut groups: Vec<(String, String, usize, usize)> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        let acted = match &e.kind {
            EventKind::FaultNeverFired { .. } => false,
            // A connection policy's own frames (a keepalive GOAWAY, a
            // middlebox's PING ACK) are the emulated server's or box's
            // doing, not a fault's: their rows say so.
            EventKind::Frame { fate, .. } if fate.by_policy() => false,
            EventKind::Frame { fate, .. } => matches!(
                **fate,
                Fate::Dropped
                    | Fate::Held
                    | Fate::Delayed { .. }
                    | Fate::Injected
                    | Fate::Partitioned
                    | Fate::Paused
                    | Fate::Lost
            ),
            _ => kind(e) == RowKind::Fault,
        };
        if !acted {
            continue;
        }
        let (place, text) = words.describe(e);
        let shape = without_ids(&text);
        match groups
            .iter_mut()
            .find(|(p, s, ..)| *p == place && *s == shape)
        {
            Some((_, _, _, n)) => *n += 1,
            None => groups.push((place, shape, i, 1)),
        }
    }
    groups
        .into_iter()
        .map(|(_, _, i, n)| {
            let mut it = item(&words, events, i);
            if n > 1 {
                let _ = write!(it.text, " (×{n}, the first shown)");
            }
            it
        })
        .collect()
}

/// `text` without its leading ids (`h2 `, `c1 s3 `): what is the same
/// between repeats of one fault.
fn without_ids(text: &str) -> String {
    let mut rest = text;
    while let Some((word, after)) = rest.split_once(' ') {
        let id = word.len() > 1
            && word.starts_with(['r', 'h', 'c', 's', 'g'])
            && word[1..].bytes().all(|b| b.is_ascii_digit());
        if !id {
            break;
        }
        rest = after;
    }
    rest.to_owned()
}

fn never_fired(events: &[Event]) -> Vec<Item> {
    let words = Words::of(events);
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e.kind, EventKind::FaultNeverFired { .. }))
        .map(|(i, _)| item(&words, events, i))
        .collect()
}

/// [`Trace::stalls`], each at the DATA frame that used up the window.
fn stalls(trace: &Trace, events: &[Event]) -> Vec<Item> {
    trace
        .stalls(Duration::ZERO)
        .into_iter()
        .map(|stall| {
            let event = events.iter().position(|e| {
                e.at() == stall.since
                    && e.host == stall.sender
                    && matches!(&e.kind, EventKind::Frame { conn, stream, detail: FrameDetail::Data { .. }, .. }
                        if *conn == stall.conn && *stream == stall.stream)
            });
            Item {
                event,
                at: Some(stall.since),
                // The stall's words name both ends already.
                place: String::new(),
                text: stall.to_string(),
            }
        })
        .collect()
}

/// [`Trace::deadline_overruns`], each at the call's end (its start when
/// it was still open).
fn overruns(trace: &Trace, events: &[Event]) -> Vec<Item> {
    let ends = call_ends(events);
    trace
        .deadline_overruns(OVERRUN_TOLERANCE)
        .into_iter()
        .map(|(call, over)| {
            let event = ends.get(&call.id).copied().or_else(|| {
                events
                    .iter()
                    .position(|e| matches!(&e.kind, EventKind::CallStarted(s) if s.call == call.id))
            });
            let state = if call.ended_at.is_some() {
                "ended"
            } else {
                "still open at the end of the run"
            };
            Item {
                event,
                at: event.map(|i| events[i].at()),
                place: call.host.clone(),
                text: format!(
                    "{} call {} to {} {state} {} past its deadline (grpc-timeout={})",
                    call.id,
                    call.path,
                    call.target,
                    fmt_duration(over),
                    call.timeout.map(fmt_duration).unwrap_or_default()
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::without_ids;

    #[test]
    fn repeats_of_a_fault_differ_only_in_their_leading_ids() {
        assert_eq!(
            without_ids("h12 fault delay 2000ms on /a.B/C"),
            "fault delay 2000ms on /a.B/C"
        );
        assert_eq!(
            without_ids("c1 s3 PING ack [dropped]"),
            "PING ack [dropped]"
        );
        assert_eq!(without_ids("host crashed"), "host crashed");
        assert_eq!(without_ids("s fault"), "s fault");
    }
}
