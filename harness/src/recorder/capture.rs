//! Captures the `tracing` events that user code emits inside a host, with
//! the host's name and the *simulated* time.

use std::fmt::Write as _;
use std::sync::Arc;

use tracing::field::{Field, Visit};
use tracing::span::Attributes;
use tracing::subscriber::Interest;
use tracing::{Event as TracingEvent, Id, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

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

pub(crate) struct CaptureLayer {
    recorder: Arc<Recorder>,
}

impl CaptureLayer {
    pub(crate) fn new(recorder: Arc<Recorder>) -> Self {
        Self { recorder }
    }
}

/// The host name stored on turmoil's `node` span.
struct HostName(String);

impl<S> Layer<S> for CaptureLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    /// Dependencies log at DEBUG/TRACE and open TRACE spans on every frame:
    /// turn them off at the call site, once, instead of filtering each one.
    /// A disabled span is transparent, so a user event inside one still
    /// finds turmoil's `node` span, the one dependency span kept.
    fn register_callsite(&self, meta: &'static tracing::Metadata<'static>) -> Interest {
        let host_span = meta.is_span() && meta.name() == TURMOIL_HOST_SPAN;
        if is_dependency(meta.target()) && !host_span {
            Interest::never()
        } else {
            Interest::always()
        }
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != TURMOIL_HOST_SPAN {
            return;
        }
        let mut visitor = NameVisitor(None);
        attrs.record(&mut visitor);
        if let (Some(name), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(HostName(name));
        }
    }

    fn on_event(&self, event: &TracingEvent<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let target = meta.target();
        if is_dependency(target) {
            return;
        }
        let Some(host) = ctx.event_scope(event).and_then(|scope| {
            scope
                .from_root()
                .find_map(|span| span.extensions().get::<HostName>().map(|h| h.0.clone()))
        }) else {
            return; // outside any host: not part of the simulated world
        };
        let mut message = MessageVisitor::default();
        event.record(&mut message);
        self.recorder.push(
            &host,
            EventKind::Log {
                level: level_name(meta.level()),
                target: target.to_owned(),
                message: message.finish(),
            },
        );
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

struct NameVisitor(Option<String>);

impl Visit for NameVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "name" {
            self.0 = Some(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "name" {
            self.0 = Some(format!("{value:?}").trim_matches('"').to_owned());
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
