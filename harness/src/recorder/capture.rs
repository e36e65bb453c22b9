//! Captures the `tracing` events that user code emits inside a host, with
//! the host's name and the *simulated* time.
//!
//! A [`Subscriber`] of its own, and one that needs no span to know which
//! host is running: turmoil gives every host a tokio runtime of its own
//! (`turmoil/src/rt.rs`) and runs a host's tasks inside it, so the id of
//! the current runtime names the host. A host's software registers its
//! runtime when it starts ([`hosted`]), again after every bounce (a new
//! runtime); the driver names the host it crashes or restarts
//! ([`DrivingHost`]), when tasks are dropped or built outside any poll.
//! turmoil's `node` span, opened for every host on every step
//! (`turmoil/src/sim.rs`, `Sim::step`), is then a callsite the capture never
//! wants: `Interest::never`, so an idle step costs it nothing (measured in
//! the bench's idle rows).
//!
//! The capture composes with the user's own subscriber: the dispatcher that
//! was the default when the run started (a global
//! `tracing_subscriber::fmt().init()`, or a thread default) is the
//! capture's *forward*, and gets every event and span as if it were still
//! the default, so the user's output goes on live during a run; [`SimTime`]
//! stamps it with the simulated time and the host. The capture keeps no
//! span of its own, so every span id is the forward's: no two subscribers
//! number one span (the trap of stacking two dispatchers). Without a
//! forward, a span is a callsite the capture never wants either.

use crate::recorder::event;
use crate::recorder::CURRENT_RUN;
use crate::units::fmt_ms;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;

use tokio::runtime::{Handle, Id as RuntimeId};
use tracing::dispatcher::{self, Dispatch};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Record};
use tracing::subscriber::{DefaultGuard, Interest, NoSubscriber};
use tracing::{Event as TracingEvent, Id, Metadata, Subscriber};
use tracing_core::span::Current;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use super::event::{EventKind, HostName};
use super::Recorder;

/// Targets of the libraries under test: their own logs are noise in a trace
/// (the wire tap records what they do on the wire instead).
const DEPENDENCY_TARGETS: &[&str] = &[
    "turmoil",
    "h2",
    "hyper",
    "hyper_util",
    "tonic",
    "tower",
    "grpc_chaos",
];

fn is_dependency(target: &str) -> bool {
    DEPENDENCY_TARGETS.iter().any(|t| {
        target
            .strip_prefix(t)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    })
}

/// The id of a span made without a forward, which only `Span::new` called
/// directly does (the macros ask [`Capture::enabled`] first): no span
/// carries anything the capture needs.
const ANY_SPAN: u64 = 1;

pub(crate) struct Capture {
    recorder: Arc<Recorder>,
    /// The dispatcher that was this thread's default when the run started,
    /// unless it was the no-op one: it gets every span and every event it
    /// is enabled for, as its own dispatcher would give them to it.
    forward: Option<Dispatch>,
}

/// This thread's hosts during a run: the runtime each one's software runs
/// in now, and the hosts the driver is crashing or restarting (innermost
/// last). A run steps every host on the thread that called it, so no lock
/// is needed.
#[derive(Default)]
struct Hosts {
    runtimes: Vec<(RuntimeId, HostName)>,
    driving: Vec<HostName>,
    /// The recorder of the run this thread drives (innermost last), for
    /// [`SimTime`]'s clock.
    runs: Vec<Arc<Recorder>>,
}

impl Hosts {
    /// The host whose code runs now: the one the driver names, else the
    /// one whose runtime is current (none outside any host: the test's own
    /// code, a thread of its own).
    fn current(&self) -> Option<HostName> {
        if let Some(&host) = self.driving.last() {
            return Some(host);
        }
        let id = Handle::try_current().ok()?.id();
        self.runtimes
            .iter()
            .find(|(r, _)| *r == id)
            .map(|&(_, host)| host)
    }
}

thread_local! {
    static HOSTS: RefCell<Hosts> = RefCell::default();
}

/// Runs `f` on this thread's hosts. Never re-entered: nothing in here
/// emits a `tracing` event or opens a span.
fn with_hosts<R>(f: impl FnOnce(&mut Hosts) -> R) -> R {
    HOSTS.with(|hosts| f(&mut hosts.borrow_mut()))
}

/// `software` as the body of host `name`: its first poll registers the
/// tokio runtime it runs in as the host's, so what the host's tasks log is
/// the host's. Wrap every body given to turmoil's `client` and `host`.
pub(crate) async fn hosted<F: Future>(name: Arc<str>, software: F) -> F::Output {
    if let Ok(handle) = Handle::try_current() {
        let host = HostName::from(&name);
        with_hosts(|hosts| {
            hosts.runtimes.retain(|&(_, h)| h != host);
            hosts.runtimes.push((handle.id(), host));
        });
    }
    software.await
}

/// While alive, code on this thread is host `name`'s: the driver holds one
/// while it crashes the host (its tasks' drops run) or restarts it (its
/// software is built again).
pub(crate) struct DrivingHost(());

impl DrivingHost {
    pub(crate) fn enter(name: &str) -> Self {
        with_hosts(|hosts| hosts.driving.push(HostName::new(name)));
        Self(())
    }
}

impl Drop for DrivingHost {
    fn drop(&mut self) {
        with_hosts(|hosts| hosts.driving.pop());
    }
}

/// While alive, a run's [`Capture`] is this thread's default dispatcher;
/// the one it replaced is its forward, and the default again after.
pub(crate) struct Installed {
    default: Option<DefaultGuard>,
}

/// Makes a capture into `recorder` this thread's default dispatcher, for
/// one run, until the guard drops.
pub(crate) fn install(recorder: Arc<Recorder>) -> Installed {
    let forward =
        dispatcher::get_default(|default| (!default.is::<NoSubscriber>()).then(|| default.clone()));
    let capture = Capture::new(recorder.clone(), forward);
    with_hosts(|hosts| hosts.runs.push(recorder));
    Installed {
        default: Some(tracing::subscriber::set_default(capture)),
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // The previous default first: nothing logged after is the run's.
        self.default.take();
        with_hosts(|hosts| hosts.runs.pop());
    }
}

impl Capture {
    /// A capture for one run. The thread's table starts empty, so it holds
    /// this run's hosts only and a lookup stays a scan of a few entries
    /// (unless a host's code runs now: a run started from inside one).
    fn new(recorder: Arc<Recorder>, forward: Option<Dispatch>) -> Self {
        with_hosts(|hosts| {
            if hosts.current().is_none() {
                *hosts = Hosts::default();
            }
        });
        Self { recorder, forward }
    }

    /// Whether the capture itself wants what `meta` describes: the events
    /// of the user's code, whatever their level (the render hides DEBUG and
    /// TRACE, the trace keeps them). Dependencies log at DEBUG/TRACE on
    /// every frame; spans carry nothing the capture needs.
    fn wants(meta: &Metadata<'_>) -> bool {
        let target = meta.target();
        meta.is_event() && (!is_dependency(target) || target == EFFECT_TARGET)
    }

    /// Records a user's event on the host whose code emitted it.
    fn record_log(&self, event: &TracingEvent<'_>) {
        let Some(host) = with_hosts(|hosts| hosts.current()) else {
            return; // outside any host: not part of the simulated world
        };
        let meta = event.metadata();
        let mut message = MessageVisitor::default();
        event.record(&mut message);
        let kind = match message.effect.take() {
            // A side effect your code marked (`server::effect`, or any
            // event with an `effect` field), with the handler run whose
            // task it ran in.
            Some(name) => EventKind::Effect(Box::new(event::Effect {
                name,
                run: CURRENT_RUN.try_with(|r| *r).ok(),
                message: message.finish(),
            })),
            None => EventKind::Log(Box::new(event::Log {
                level: level_name(meta.level()),
                target: meta.target().to_owned(),
                message: message.finish(),
            })),
        };
        self.recorder.push(host, kind);
    }
}

/// The interest and the answers are the capture's or the forward's,
/// whichever wants more. Without a forward: dependency events (h2, hyper,
/// tonic and turmoil log on every frame) and every span, turmoil's `node`
/// span per host per step among them, are turned off at the call site,
/// once, instead of being filtered one by one; a disabled span is
/// transparent, and an event's host does not depend on spans. With one,
/// what the user's subscriber wants it gets, and pays for.
impl Subscriber for Capture {
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if Self::wants(meta) {
            // The forward is asked per event (`event`).
            return Interest::always();
        }
        match &self.forward {
            Some(forward) => forward.register_callsite(meta),
            None => Interest::never(),
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        Self::wants(meta) || self.forward.as_ref().is_some_and(|f| f.enabled(meta))
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        match &self.forward {
            Some(forward) => forward.new_span(span),
            None => Id::from_u64(ANY_SPAN),
        }
    }

    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some(forward) = &self.forward {
            forward.record(span, values);
        }
    }

    fn record_follows_from(&self, span: &Id, follows: &Id) {
        if let Some(forward) = &self.forward {
            forward.record_follows_from(span, follows);
        }
    }

    fn event(&self, event: &TracingEvent<'_>) {
        let meta = event.metadata();
        if !Self::wants(meta) {
            // Here because the forward is enabled for it (`enabled`, or
            // its interest `always`).
            if let Some(forward) = &self.forward {
                forward.event(event);
            }
            return;
        }
        self.record_log(event);
        if let Some(forward) = &self.forward {
            // Enabled for the capture's sake: ask the forward, as its own
            // dispatcher would have.
            if forward.enabled(meta) {
                forward.event(event);
            }
        }
    }

    fn enter(&self, span: &Id) {
        if let Some(forward) = &self.forward {
            forward.enter(span);
        }
    }

    fn exit(&self, span: &Id) {
        if let Some(forward) = &self.forward {
            forward.exit(span);
        }
    }

    fn clone_span(&self, span: &Id) -> Id {
        match &self.forward {
            Some(forward) => forward.clone_span(span),
            None => span.clone(),
        }
    }

    fn try_close(&self, span: Id) -> bool {
        self.forward
            .as_ref()
            .is_some_and(|forward| forward.try_close(span))
    }

    fn current_span(&self) -> Current {
        match &self.forward {
            Some(forward) => forward.current_span(),
            None => Current::none(),
        }
    }
}

/// A timer for your own `tracing_subscriber::fmt` subscriber: it stamps
/// each line with the run's *simulated* time, in milliseconds as the
/// trace's `t(ms)` column shows it, and the host whose code logged it, so
/// what you read live lines up with the trace.
///
/// ```text
///    102.000ms store  INFO node{name="store"}: my_service: saved match_id=m0
/// ```
///
/// The time is right-aligned in 10 columns; `node{..}` is turmoil's span
/// for the host being polled, which `fmt` shows when its filter lets INFO
/// spans through. During a run but outside any host (turmoil's own step
/// loop) it writes the time alone; outside any run, and on a thread the
/// run does not drive (one a host spawned with `std::thread`), it writes
/// `-`. Set it with `.with_timer(SimTime)` on the subscriber you install
/// before the run: the run forwards every span and event to the
/// subscriber that was the default when it started (global or the
/// thread's), and records the same trace, byte for byte, with or without
/// one.
///
/// ```
/// use grpc_chaos::recorder::SimTime;
///
/// let subscriber = tracing_subscriber::fmt().with_timer(SimTime).finish();
/// tracing::subscriber::with_default(subscriber, || {
///     let mut sim = grpc_chaos::Sim::builder().build();
///     sim.server("store", |s| s);
///     sim.client("player", |_| async {
///         // `     0.000ms player  INFO node{name="player"}: …: hello`
///         tracing::info!("hello");
///         Ok(())
///     });
///     sim.run()
/// })?;
/// # Ok::<(), grpc_chaos::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SimTime;

impl FormatTime for SimTime {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        // Never borrowed here while the capture holds the table (it lets
        // go before it forwards), but a timer must not panic.
        let stamp = HOSTS
            .try_with(|hosts| {
                let hosts = hosts.try_borrow().ok()?;
                let run = hosts.runs.last()?;
                Some((run.now(), hosts.current()))
            })
            .ok()
            .flatten();
        match stamp {
            Some((at, Some(host))) => write!(w, "{:>10}ms {host}", fmt_ms(at)),
            Some((at, None)) => write!(w, "{:>10}ms", fmt_ms(at)),
            None => w.write_str("-"),
        }
    }
}

fn level_name(level: &tracing::Level) -> &'static str {
    match *level {
        tracing::Level::ERROR => "ERROR",
        tracing::Level::WARN => "WARN",
        tracing::Level::INFO => "INFO",
        tracing::Level::DEBUG => "DEBUG",
        tracing::Level::TRACE => "TRACE",
    }
}

/// Renders `message key=value …`, fields in the order they were written.
#[derive(Default)]
struct MessageVisitor {
    message: String,
    fields: String,
    /// The value of an [`EFFECT_FIELD`] field, kept apart from `fields`.
    effect: Option<String>,
}

/// The field that marks an event as a side effect
/// ([`crate::server::effect`]).
pub(crate) const EFFECT_FIELD: &str = "effect";

/// The target of [`crate::server::effect`]'s events: the one `grpc_chaos`
/// target the capture keeps.
pub(crate) const EFFECT_TARGET: &str = "grpc_chaos::effect";

impl MessageVisitor {
    fn finish(self) -> String {
        match (self.message.is_empty(), self.fields.is_empty()) {
            (_, true) => self.message,
            (true, false) => self.fields,
            (false, false) => format!("{} {}", self.message, self.fields),
        }
    }
}

impl Visit for MessageVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else if field.name() == EFFECT_FIELD {
            self.effect = Some(value.to_owned());
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
            return;
        }
        if field.name() == EFFECT_FIELD {
            // `effect = %name` (Display) arrives here unquoted.
            self.effect = Some(format!("{value:?}"));
            return;
        }
        if !self.fields.is_empty() {
            self.fields.push(' ');
        }
        let _ = write!(self.fields, "{}={value:?}", field.name());
    }
}
