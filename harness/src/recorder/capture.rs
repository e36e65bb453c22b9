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

use crate::recorder::event;
use std::cell::RefCell;
use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;

use tokio::runtime::{Handle, Id as RuntimeId};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Record};
use tracing::subscriber::Interest;
use tracing::{Event as TracingEvent, Id, Metadata, Subscriber};

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

/// The id every span gets: no span carries anything the capture needs.
const ANY_SPAN: u64 = 1;

pub(crate) struct Capture {
    recorder: Arc<Recorder>,
}

/// This thread's hosts during a run: the runtime each one's software runs
/// in now, and the hosts the driver is crashing or restarting (innermost
/// last). A run steps every host on the thread that called it, so no lock
/// is needed.
#[derive(Default)]
struct Hosts {
    runtimes: Vec<(RuntimeId, HostName)>,
    driving: Vec<HostName>,
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

impl Capture {
    /// A capture for one run. The thread's table starts empty, so it holds
    /// this run's hosts only and a lookup stays a scan of a few entries
    /// (unless a host's code runs now: a run started from inside one).
    pub(crate) fn new(recorder: Arc<Recorder>) -> Self {
        with_hosts(|hosts| {
            if hosts.current().is_none() {
                *hosts = Hosts::default();
            }
        });
        Self { recorder }
    }
}

impl Subscriber for Capture {
    /// Dependencies log at DEBUG/TRACE and open TRACE spans on every frame,
    /// turmoil a `node` span per host per step: turn them off at the call
    /// site, once, instead of filtering each one. A disabled span is
    /// transparent; an event's host does not depend on spans.
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if is_dependency(meta.target()) {
            Interest::never()
        } else {
            Interest::always()
        }
    }

    fn enabled(&self, meta: &Metadata<'_>) -> bool {
        !is_dependency(meta.target())
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(ANY_SPAN)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &TracingEvent<'_>) {
        let meta = event.metadata();
        let target = meta.target();
        if is_dependency(target) {
            return;
        }
        let Some(host) = with_hosts(|hosts| hosts.current()) else {
            return; // outside any host: not part of the simulated world
        };
        let mut message = MessageVisitor::default();
        event.record(&mut message);
        self.recorder.push(
            host,
            EventKind::Log(Box::new(event::Log {
                level: level_name(meta.level()),
                target: target.to_owned(),
                message: message.finish(),
            })),
        );
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
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
