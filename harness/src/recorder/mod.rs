//! The recorder: one ordered event log for a run, stamped with *simulated*
//! time. Every other module writes into it; only [`crate::Trace`] reads it.

mod acts;
mod capture;
pub mod event;
pub(crate) mod fields;
mod frame_fate;
pub(crate) mod header_fields;
mod host_name;
mod order;
mod payloads;
mod resolution;
pub(crate) mod slow_polls;
mod tls;
mod tls_message;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub use capture::SimTime;
pub(crate) use capture::{hosted, install, DrivingHost, EFFECT_TARGET};
use event::{CallId, Event, EventKind, HostName, RunId};
use order::after_its_frames;
pub(crate) use slow_polls::SlowPolls;
pub(crate) use slow_polls::{Polled, SlowPoll};

/// Shared, append-only event log. Hosts run one at a time on the test's
/// thread, so the lock is never contended; it exists because tonic needs
/// `Send + Sync` services.
#[derive(Default)]
pub(crate) struct Recorder {
    state: Mutex<State>,
    /// Simulated time of the driver loop, used when no host is running
    /// (host faults applied between steps), in nanoseconds.
    driver_clock_ns: AtomicU64,
    /// Set when the run is over: nothing more is recorded.
    stopped: std::sync::atomic::AtomicBool,
    /// Set while the driver stops or starts a host: what that records
    /// happens at the driver's instant, not at the host's clock (which
    /// turmoil has already advanced by a tick).
    at_driver: std::sync::atomic::AtomicBool,
    /// What the no-progress rule of an unbounded run reads (`sim/run.rs`).
    quiet: Quiet,
}

/// When the run last made progress, and the latest instant a timer of the
/// harness's own is set for, *simulated* nanoseconds: one atomic each, so
/// the driver reads them every step for nothing.
#[derive(Default)]
struct Quiet {
    /// The latest progress ([`EventKind::is_progress`], or
    /// [`Recorder::progressed`]).
    progress_ns: AtomicU64,
    /// The latest instant of [`Recorder::timer_at`].
    due_ns: AtomicU64,
}

fn nanos(at: Duration) -> u64 {
    u64::try_from(at.as_nanos()).unwrap_or(u64::MAX)
}

#[derive(Default)]
struct State {
    events: Vec<Event>,
    next_call: u32,
    next_run: u32,
    /// Requests so far per host and method path: looked up without
    /// allocating, so only a host's first request to a path costs a key.
    per_method: HashMap<HostName, HashMap<Box<str>, u32>>,
}

impl Recorder {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent Vec; keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Simulated time now: the running host's clock, else the driver's.
    pub(crate) fn now(&self) -> Duration {
        let driver = || Duration::from_nanos(self.driver_clock_ns.load(Ordering::Relaxed));
        if self.at_driver.load(Ordering::Relaxed) {
            return driver();
        }
        turmoil::sim_elapsed().unwrap_or_else(driver)
    }

    /// Sets the time used for events recorded outside any host.
    pub(crate) fn set_driver_clock(&self, at: Duration) {
        self.driver_clock_ns.store(nanos(at), Ordering::Relaxed);
    }

    /// Notes progress now that no event records: a message's bytes
    /// passing a recorded call's body (with the wire tap off, no frame
    /// shows them), a client body returning.
    pub(crate) fn progressed(&self) {
        let at = nanos(self.now());
        self.quiet.progress_ns.fetch_max(at, Ordering::Relaxed);
    }

    /// Notes that a timer of the harness's own (a handler fault's delay, a
    /// frame kept back until an instant, a policy's timer, a partition's
    /// `reset_after`, a retry's backoff, a call's deadline) is set for
    /// `at`, *simulated* time: the no-progress rule does not stop a run
    /// before it. Only the latest instant is kept; a timer cancelled
    /// before it fires still holds the rule off until then (a later stop,
    /// never a wrong one).
    pub(crate) fn timer_at(&self, at: Duration) {
        self.quiet.due_ns.fetch_max(nanos(at), Ordering::Relaxed);
    }

    /// The latest progress so far, *simulated* time (zero before any).
    pub(crate) fn last_progress(&self) -> Duration {
        Duration::from_nanos(self.quiet.progress_ns.load(Ordering::Relaxed))
    }

    /// The latest instant a timer of the harness's own was set for
    /// ([`Recorder::timer_at`]), *simulated* time (zero before any).
    pub(crate) fn last_timer(&self) -> Duration {
        Duration::from_nanos(self.quiet.due_ns.load(Ordering::Relaxed))
    }

    pub(crate) fn push(&self, host: impl Into<HostName>, kind: EventKind) {
        let at = self.now();
        self.push_at(at, host, kind);
    }

    /// Stops recording: the world is being torn down.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    pub(crate) fn push_at(&self, at: Duration, host: impl Into<HostName>, kind: EventKind) {
        if self.stopped.load(Ordering::Relaxed) {
            return;
        }
        if kind.is_progress() {
            self.quiet
                .progress_ns
                .fetch_max(nanos(at), Ordering::Relaxed);
        }
        let host = host.into();
        self.state().events.push(Event::new(at, host, kind));
    }

    /// Runs `f`, the driver stopping or starting a host (a crash, a
    /// restart), and records what it sets off as the driver's doing:
    /// stamped with the driver's instant (a handler a crash drops ends at
    /// the crash, not a tick later on the host's clock), and in the order
    /// of the ids it names (handler runs, then calls, then connections;
    /// the rest as recorded). tokio drops a host's tasks in the order of
    /// their task ids, which are numbered across the whole process, so
    /// which handler's drop came first would depend on what other tests
    /// run in parallel.
    pub(crate) fn while_driving_host<R>(&self, f: impl FnOnce() -> R) -> R {
        let start = self.state().events.len();
        self.at_driver.store(true, Ordering::Relaxed);
        let out = f();
        self.at_driver.store(false, Ordering::Relaxed);
        let mut s = self.state();
        let start = start.min(s.events.len());
        s.events[start..].sort_by_key(|e| e.kind.id_key());
        out
    }

    /// Whether the driver is stopping or starting a host right now
    /// ([`Recorder::while_driving_host`]): what a crash drops is not a close
    /// the host's code made.
    pub(crate) fn driving_host(&self) -> bool {
        self.at_driver.load(Ordering::Relaxed)
    }

    pub(crate) fn next_call(&self) -> CallId {
        let mut s = self.state();
        s.next_call += 1;
        CallId(s.next_call)
    }

    pub(crate) fn next_run(&self) -> RunId {
        let mut s = self.state();
        s.next_run += 1;
        RunId(s.next_run)
    }

    /// Counts a request for `path` on `host` and returns its number (1-based).
    pub(crate) fn count_request(&self, host: HostName, path: &str) -> u32 {
        let mut s = self.state();
        let paths = s.per_method.entry(host).or_default();
        let n = match paths.get_mut(path) {
            Some(n) => n,
            None => paths.entry(path.into()).or_default(),
        };
        *n += 1;
        *n
    }

    /// The events so far, in time order (stable for events at the same
    /// instant: hosts run in a fixed order within a tick), each handler's
    /// end after the frames it produced ([`after_its_frames`]).
    pub(crate) fn events(&self) -> Vec<Event> {
        let mut events = self.state().events.clone();
        in_order(&mut events);
        events
    }

    /// The events, in the order of [`Recorder::events`], moved out: for
    /// the end of a run, after [`Recorder::stop`], when nothing reads them
    /// here again. (A long run records 100,000s of events; a copy of them
    /// was ~4% of its wall time.)
    pub(crate) fn take_events(&self) -> Vec<Event> {
        let mut events = std::mem::take(&mut self.state().events);
        in_order(&mut events);
        events
    }
}

/// Puts the log in the order every reader sees: by time, stable for one
/// instant, each handler's end behind the frames it produced.
fn in_order(events: &mut [Event]) {
    // Usually in order already (each event is stamped as it is pushed): a
    // scan instead of the stable sort's scratch copy of half the log.
    if !events.is_sorted_by_key(|e| e.at()) {
        events.sort_by_key(|e| e.at());
    }
    after_its_frames(events);
}

tokio::task_local! {
    /// The handler run whose future is being polled, so a call made from a
    /// handler can name its parent. (A task the handler spawns does not
    /// inherit it; see `Trace` for how such calls are attributed.)
    pub(crate) static CURRENT_RUN: RunId;
}

/// Request header carrying the client call id from a recorded channel to
/// the handler layer, so the two ends of one call are linked in the trace.
pub(crate) const CALL_ID_HEADER: &str = "x-grpc-chaos-call";

/// [`CALL_ID_HEADER`] parsed once, for the header maps of every call.
pub(crate) static CALL_ID: http::HeaderName = http::HeaderName::from_static(CALL_ID_HEADER);

#[cfg(test)]
mod tests {
    use super::event::{EventKind, RunId};
    use super::Recorder;
    use std::time::Duration;

    fn dropped(run: u32) -> EventKind {
        EventKind::HandlerDropped(Box::new(crate::recorder::event::HandlerDropped {
            run: RunId(run),
            path: "/p.S/M".into(),
            ran: Duration::ZERO,
            timed_out: None,
        }))
    }

    /// A handler's end comes after the frames its host wrote at that
    /// instant; an event of a later instant does not move.
    #[test]
    fn a_handler_ends_after_the_frames_it_produced() {
        use super::event::{Fate, FrameDetail, FrameFlags};
        use crate::wire::FrameType;
        let rec = Recorder::default();
        let frame = |stream| EventKind::Frame {
            conn: 1,
            to: "player".into(),
            stream,
            frame: FrameType::Data,
            flags: FrameFlags::NONE,
            detail: FrameDetail::Data {
                len: 7,
                compressed_flag: None,
            },
            fate: Fate::Passed.into(),
            noise: false,
        };
        let finished = EventKind::HandlerFinished(Box::new(super::event::HandlerFinished {
            run: RunId(1),
            path: "/p.S/M".into(),
            code: "OK",
            message: String::new(),
            ran: Duration::ZERO,
        }));
        let at = Duration::from_millis(2);
        let second = EventKind::HandlerFinished(Box::new(super::event::HandlerFinished {
            run: RunId(2),
            path: "/p.S/M".into(),
            code: "OK",
            message: String::new(),
            ran: Duration::ZERO,
        }));
        rec.push_at(at, "store", finished);
        rec.push_at(at, "store", second);
        rec.push_at(at, "store", frame(1));
        rec.push_at(at, "player", EventKind::HostPaused);
        rec.push_at(at, "store", frame(3));
        rec.push_at(at + Duration::from_millis(1), "store", frame(1));
        let order: Vec<(u128, &str)> = rec
            .events()
            .iter()
            .map(|e| {
                let what = match &e.kind {
                    EventKind::HandlerFinished(f) if f.run.0 == 1 => "h1 finished",
                    EventKind::HandlerFinished(_) => "h2 finished",
                    EventKind::Frame { .. } => "frame",
                    _ => "other",
                };
                (e.at().as_millis(), what)
            })
            .collect::<Vec<_>>()
            .into_iter()
            .collect();
        assert_eq!(
            order,
            [
                (2, "frame"),
                (2, "other"),
                (2, "frame"),
                (2, "h1 finished"),
                (2, "h2 finished"),
                (3, "frame")
            ]
        );
    }

    /// What a crash records comes out in run order, whatever order tokio
    /// dropped the tasks in; what came before it stays where it was.
    #[test]
    fn a_batch_is_put_while_driving_host() {
        let rec = Recorder::default();
        rec.push("store", EventKind::HostCrashed);
        rec.while_driving_host(|| {
            for run in [7, 3, 5] {
                rec.push("store", dropped(run));
            }
        });
        let order: Vec<String> = rec
            .events()
            .iter()
            .map(|e| match &e.kind {
                EventKind::HandlerDropped(dropped) => dropped.run.to_string(),
                EventKind::HostCrashed => "crash".into(),
                _ => "other".into(),
            })
            .collect();
        assert_eq!(order, ["crash", "h3", "h5", "h7"]);
    }
}
