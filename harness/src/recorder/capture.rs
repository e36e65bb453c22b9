//! Captures the `tracing` events that user code emits inside a host, with
//! the host's name and the *simulated* time.
//!
//! A [`Subscriber`] of its own rather than a layer on `tracing_subscriber`'s
//! registry: turmoil opens a `node` span for every host on every step
//! (`turmoil/src/sim.rs`, `Sim::step`), and the registry stores each one
//! (a slab slot, its fields, an extension map) to throw it away a moment
//! later. That was most of what an idle simulated minute cost the harness
//! above bare turmoil. Here a `node` span is the index of its host's name
//! in a small table and a push on a stack, both thread-local (a run steps
//! every host on the thread that called it, so no lock is needed); every
//! other span is nothing.

use crate::recorder::event;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Record};
use tracing::subscriber::Interest;
use tracing::{Event as TracingEvent, Id, Metadata, Subscriber};

use super::event::EventKind;
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

/// turmoil enters a span named `node` with field `name` while it runs a host.
const TURMOIL_HOST_SPAN: &str = "node";

/// The id of every span that is not a host's `node` span: it carries
/// nothing the capture needs (an event's host is the host running).
const OTHER_SPAN: u64 = u64::MAX;

/// Whether a callsite is one the capture acts on: a host's `node` span, or
/// anything not from the libraries under test.
fn wanted(meta: &Metadata<'_>) -> bool {
    let host_span = meta.is_span() && meta.name() == TURMOIL_HOST_SPAN;
    host_span || !is_dependency(meta.target())
}

pub(crate) struct Capture {
    recorder: Arc<Recorder>,
}

/// The hosts seen in `node` spans on this thread during a run (an index is
/// a span's id, so it never changes within the run), and the ones entered now
/// (innermost last): turmoil enters one at a time, and the driver enters
/// one of its own around a crash.
#[derive(Default)]
struct Hosts {
    names: Vec<Box<str>>,
    entered: Vec<usize>,
}

thread_local! {
    static HOSTS: RefCell<Hosts> = RefCell::default();
}

/// Runs `f` on this thread's hosts. Never re-entered: nothing in here
/// emits a `tracing` event or opens a span.
fn with_hosts<R>(f: impl FnOnce(&mut Hosts) -> R) -> R {
    HOSTS.with(|hosts| f(&mut hosts.borrow_mut()))
}

impl Capture {
    /// A capture for one run. The thread's table starts empty, so it holds
    /// this run's hosts only and a lookup stays a scan of a few names
    /// (unless a host is entered now: a run started from inside one).
    pub(crate) fn new(recorder: Arc<Recorder>) -> Self {
        with_hosts(|hosts| {
            if hosts.entered.is_empty() {
                hosts.names.clear();
            }
        });
        Self { recorder }
    }

    /// The index of a `node` span's host in the table, from its id.
    fn host_index(id: &Id) -> Option<usize> {
        match id.into_u64() {
            OTHER_SPAN => None,
            n => usize::try_from(n - 1).ok(),
        }
    }
}

impl Subscriber for Capture {
    /// Dependencies log at DEBUG/TRACE and open TRACE spans on every frame:
    /// turn them off at the call site, once, instead of filtering each one.
    /// A disabled span is transparent, so a user event inside one still
    /// finds the host running, from turmoil's `node` span, the one
    /// dependency span kept.
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if wanted(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        wanted(meta)
    }

    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        if attrs.metadata().name() != TURMOIL_HOST_SPAN {
            return Id::from_u64(OTHER_SPAN);
        }
        let index = with_hosts(|hosts| {
            let mut visitor = NameVisitor { hosts, index: None };
            attrs.record(&mut visitor);
            visitor.index
        });
        match index {
            Some(i) => Id::from_u64(i as u64 + 1),
            None => Id::from_u64(OTHER_SPAN),
        }
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &TracingEvent<'_>) {
        let meta = event.metadata();
        let target = meta.target();
        if is_dependency(target) {
            return;
        }
        let host = with_hosts(|hosts| {
            let i = *hosts.entered.last()?;
            hosts.names.get(i).map(|name| name.to_string())
        });
        let Some(host) = host else {
            return; // outside any host: not part of the simulated world
        };
        let mut message = MessageVisitor::default();
        event.record(&mut message);
        self.recorder.push(
            &host,
            EventKind::Log(Box::new(event::Log {
                level: level_name(meta.level()),
                target: target.to_owned(),
                message: message.finish(),
            })),
        );
    }

    fn enter(&self, span: &Id) {
        if let Some(i) = Self::host_index(span) {
            with_hosts(|hosts| hosts.entered.push(i));
        }
    }

    fn exit(&self, span: &Id) {
        if let Some(i) = Self::host_index(span) {
            with_hosts(|hosts| {
                if let Some(at) = hosts.entered.iter().rposition(|&e| e == i) {
                    hosts.entered.remove(at);
                }
            });
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

/// Finds (or adds) the host a `node` span names in the table.
struct NameVisitor<'a> {
    hosts: &'a mut Hosts,
    index: Option<usize>,
}

impl NameVisitor<'_> {
    fn found(&mut self, name: &str) {
        let names = &mut self.hosts.names;
        let i = names.iter().position(|n| **n == *name).unwrap_or_else(|| {
            names.push(name.into());
            names.len() - 1
        });
        self.index = Some(i);
    }
}

impl Visit for NameVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "name" {
            self.found(value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "name" {
            self.found(format!("{value:?}").trim_matches('"'));
        }
    }
}

/// Renders `message key=value …`, fields in the order they were written.
#[derive(Default)]
struct MessageVisitor {
    message: String,
    fields: String,
}

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
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
            return;
        }
        if !self.fields.is_empty() {
            self.fields.push(' ');
        }
        let _ = write!(self.fields, "{}={value:?}", field.name());
    }
}
