//! The harness's error: what went wrong, what to change, and the seed and
//! trace of the run it happened in.

use std::fmt;
use std::time::Duration;

use crate::trace::{Trace, Violation};
use crate::units::fmt_duration;

/// `Result` with the harness's [`Error`].
pub type Result<T = (), E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a run, from a misconfigured scenario to a
/// failed trace assertion.
///
/// The kind is private; ask with the `is_*` methods. When the error comes
/// from a run, [`Error::seed`] and [`Error::trace`] give what is needed to
/// reproduce and review it, and `Display` ends with `CHAOS_SEED=<n>`.
pub struct Error {
    // Boxed: an `Error` travels in every `Result` of a test; keep it small.
    kind: Box<Kind>,
    seed: Option<u64>,
    /// The environment that replays the run (`CHAOS_SEED=<n>`), set with
    /// the seed.
    replay: Option<String>,
    trace: Option<Box<Trace>>,
    artifact: Option<std::path::PathBuf>,
}

/// Where two runs differ first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Differs {
    /// In the full render (the line is the render's).
    Render,
    /// In the JSON event log only (the line is the JSON's).
    Json,
    /// In how they ended only.
    Ending,
}

#[derive(Debug)]
pub(crate) enum Kind {
    UnknownHost {
        host: String,
        context: String,
        known: Vec<String>,
    },
    DuplicateHost(String),
    /// `balanced_channel` to a name no `Sim::servers` set has.
    UnknownReplicaSet {
        name: String,
        context: String,
        sets: Vec<String>,
    },
    /// A replica set's name where a host was meant ([`crate::Sim::servers`]).
    ReplicaSetNamed {
        set: String,
        replicas: Vec<String>,
        context: String,
        /// A plain channel: the fix is a balanced one.
        balanced: bool,
    },
    NotAServer {
        host: String,
        fault: String,
    },
    BadMethodPath {
        host: String,
        path: String,
    },
    /// `Sim::keepalive_policy` on a client host.
    PolicyOnClient {
        host: String,
    },
    UnknownService {
        host: String,
        path: String,
        served: Vec<String>,
    },
    FaultAfterEnd {
        fault: String,
        at: Duration,
        duration: Duration,
    },
    Misconfigured(String),
    Timeout {
        duration: Duration,
        tick: Duration,
        /// The step ceiling, when that (not the duration) ended the run.
        steps: Option<u64>,
        pending: Vec<String>,
        /// Frames the tap still keeps back, summed up: a likely reason.
        kept: Vec<String>,
    },
    /// An unbounded run stopped by its no-progress rule
    /// ([`SimBuilder::no_progress_limit`](crate::SimBuilder::no_progress_limit)).
    NoProgress {
        /// The latest progress, *simulated* time.
        since: Duration,
        /// When the run stopped.
        at: Duration,
        limit: Duration,
        /// Each client still running, with the calls it waits on.
        pending: Vec<String>,
        /// Frames the tap still keeps back, summed up: a likely reason.
        kept: Vec<String>,
    },
    ClientFailed {
        host: String,
        message: String,
    },
    HandlerPanicked {
        host: String,
        path: String,
        message: String,
    },
    ServerFailed {
        host: String,
        message: String,
    },
    /// A task of the harness's own panicked: a bug here, not in the user's
    /// services; the run's result would be made up, so it is an error.
    HarnessPanicked {
        task: String,
        message: String,
    },
    Violation(Violation),
    Nondeterministic {
        /// In the render, the JSON, or how the runs ended.
        at: Differs,
        line: usize,
        left: String,
        right: String,
        /// Which run said `left` and which `right`.
        sides: [&'static str; 2],
        /// What the run failed with, when it failed.
        run_error: Option<String>,
    },
    Io(std::io::Error),
}

impl Error {
    pub(crate) fn new(kind: Kind) -> Self {
        Self {
            kind: Box::new(kind),
            seed: None,
            replay: None,
            trace: None,
            artifact: None,
        }
    }

    /// Attaches the run the error came from: its seed, the environment
    /// that replays it (`CHAOS_SEED=<n>`, with the jitter when the run took
    /// it from the environment), what it recorded, and where that was
    /// written as a failure artifact. Building an `Error` writes nothing:
    /// the run (and a failed assertion, for its [`Violation`]) writes the
    /// artifact and hands its folder here.
    pub(crate) fn with_run(
        mut self,
        seed: u64,
        replay: String,
        trace: Option<Trace>,
        artifact: Option<std::path::PathBuf>,
    ) -> Self {
        self.seed = Some(seed);
        self.replay = Some(replay);
        self.artifact = artifact;
        self.trace = trace.map(Box::new);
        self
    }

    /// What went wrong, without the seed or the artifact's folder: what a
    /// failure artifact's `error.txt` says.
    pub(crate) fn what(&self) -> String {
        self.kind.to_string()
    }

    /// Where the run's trace was written as a failure artifact, if it was.
    pub fn artifact(&self) -> Option<&std::path::Path> {
        self.artifact.as_deref()
    }

    /// The seed of the run, when the error came from one.
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// What went wrong, and where the trace was written, without the
    /// `(reproduce with CHAOS_SEED=<n>)` that `Display` adds: for reports
    /// that print one replay hint of their own per seed
    /// ([`check::SweepReport`](crate::check::SweepReport), the CLI).
    pub fn message(&self) -> String {
        let mut out = self.kind.to_string();
        if let Some(dir) = &self.artifact {
            crate::trace::artifact_shown(dir);
            out.push_str(&format!("; trace in {}", dir.display()));
        }
        out
    }

    /// What was recorded before the error, when the run got that far.
    pub fn trace(&self) -> Option<&Trace> {
        self.trace.as_deref()
    }

    /// A host name that no `Sim::server`/`Sim::client` registered, or the
    /// name of a replica set ([`Sim::servers`](crate::Sim::servers)) where
    /// one host was meant (the message lists the replicas).
    pub fn is_unknown_host(&self) -> bool {
        matches!(
            *self.kind,
            Kind::UnknownHost { .. }
                | Kind::ReplicaSetNamed { .. }
                | Kind::UnknownReplicaSet { .. }
        )
    }

    /// A scenario mistake other than an unknown host: duplicate host name,
    /// bad method path, unknown service, a fault outside the run, a
    /// keepalive policy on a client host or twice on one host.
    pub fn is_misconfigured(&self) -> bool {
        matches!(
            *self.kind,
            Kind::DuplicateHost(_)
                | Kind::NotAServer { .. }
                | Kind::PolicyOnClient { .. }
                | Kind::BadMethodPath { .. }
                | Kind::UnknownService { .. }
                | Kind::FaultAfterEnd { .. }
                | Kind::Misconfigured(_)
        )
    }

    /// The run reached its duration (or, with `Duration::MAX`, its step
    /// ceiling, [`SimBuilder::max_steps`](crate::SimBuilder::max_steps))
    /// with clients still pending. An unbounded run stopped early because
    /// nothing moved is [`Error::is_no_progress`] instead.
    pub fn is_timeout(&self) -> bool {
        matches!(*self.kind, Kind::Timeout { .. })
    }

    /// A `duration(Duration::MAX)` run made no progress for
    /// [`SimBuilder::no_progress_limit`](crate::SimBuilder::no_progress_limit)
    /// of simulated time while every client still running waited on a
    /// call; the message says since when, and what each client waits on.
    pub fn is_no_progress(&self) -> bool {
        matches!(*self.kind, Kind::NoProgress { .. })
    }

    /// A client body returned an error (or panicked).
    pub fn is_client_failure(&self) -> bool {
        matches!(*self.kind, Kind::ClientFailed { .. })
    }

    /// A handler panicked during the run. Its caller saw what tonic's
    /// server does with a panicking handler, a stream reset with
    /// RST_STREAM(CANCEL) (measured; see [`PanicSite`](crate::recorder::event::PanicSite)).
    pub fn is_handler_panic(&self) -> bool {
        matches!(*self.kind, Kind::HandlerPanicked { .. })
    }

    /// A trace assertion failed; [`Error::violation`] has the details.
    pub fn is_violation(&self) -> bool {
        matches!(*self.kind, Kind::Violation(_))
    }

    /// Two runs of the same scenario and seed differed
    /// ([`crate::check::check_determinism`]).
    pub fn is_nondeterministic(&self) -> bool {
        matches!(*self.kind, Kind::Nondeterministic { .. })
    }

    /// The failed trace assertion, if that is what this is.
    pub fn violation(&self) -> Option<&Violation> {
        match &*self.kind {
            Kind::Violation(v) => Some(v),
            _ => None,
        }
    }
}

/// Problems found while a run's hosts run (a misconfiguration seen only
/// then, a panicking handler, a task of the harness's own that panicked):
/// the run fails with the first. Every layer that finds one holds this
/// sink, not the run's whole state.
#[derive(Default)]
pub(crate) struct Problems(std::sync::Mutex<Vec<Error>>);

impl Problems {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Error>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn push(&self, e: Error) {
        self.lock().push(e);
    }

    /// Notes a misconfiguration found while the hosts run: the run fails
    /// with it ([`Error::is_misconfigured`]).
    pub(crate) fn misconfigured(&self, why: String) {
        self.push(Error::new(Kind::Misconfigured(why)));
    }

    /// Notes that handler `path` on `host` panicked with `message`.
    pub(crate) fn handler_panicked(&self, host: &str, path: &str, message: &str) {
        self.push(Error::new(Kind::HandlerPanicked {
            host: host.to_owned(),
            path: path.to_owned(),
            message: message.to_owned(),
        }));
    }

    /// Notes that a task of the harness's own (`task`, e.g. `the wire tap
    /// from a to b`) panicked: the run fails with it.
    pub(crate) fn harness_panicked(&self, task: String, message: String) {
        self.push(Error::new(Kind::HarnessPanicked { task, message }));
    }

    /// The first problem found, if any (taken out).
    pub(crate) fn take_first(&self) -> Option<Error> {
        let mut problems = self.lock();
        (!problems.is_empty()).then(|| problems.remove(0))
    }
}

impl fmt::Debug for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Problems")
            .field("count", &self.lock().len())
            .finish()
    }
}

impl From<Violation> for Error {
    fn from(v: Violation) -> Self {
        let (seed, replay, artifact) = v.run_parts();
        let mut e = Self::new(Kind::Violation(v));
        (e.seed, e.replay, e.artifact) = (seed, replay, artifact);
        e
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Self::new(Kind::Io(e))
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::UnknownHost { host, context, known } => write!(
                f,
                "unknown host `{host}` in {context}; known hosts: {}",
                list(known)
            ),
            Kind::UnknownReplicaSet { name, context, sets } => write!(
                f,
                "unknown replica set `{name}` in {context}; replica sets (Sim::servers): {}",
                list(sets)
            ),
            Kind::ReplicaSetNamed {
                set,
                replicas,
                context,
                balanced: false,
            } => write!(
                f,
                "`{set}` in {context} is a replica set (Sim::servers), not one host; name one replica: {}",
                list(replicas)
            ),
            Kind::ReplicaSetNamed {
                set,
                replicas,
                context,
                balanced: true,
            } => write!(
                f,
                "{context}: `{set}` is a replica set ({}), and a plain channel connects to one host; \
                 use balanced_channel({set:?}) to balance calls over its members as tonic's \
                 Channel::balance_list does, or a channel to one replica",
                list(replicas)
            ),
            Kind::DuplicateHost(h) => write!(
                f,
                "host `{h}` is registered twice; give each server and client its own name"
            ),
            Kind::NotAServer { host, fault } => write!(
                f,
                "{fault}: `{host}` is a client host; only server hosts have handlers and can crash, restart or shut down"
            ),
            Kind::PolicyOnClient { host } => write!(
                f,
                "Sim::keepalive_policy: `{host}` is a client host; only server hosts receive PINGs to police"
            ),
            Kind::BadMethodPath { host, path } => write!(
                f,
                "handler fault on `{host}`: method path `{path}` is not of the form /package.Service/Method"
            ),
            Kind::UnknownService { host, path, served } => write!(
                f,
                "handler fault on `{host}` for `{path}`: the host does not serve that service; it serves: {}",
                list(served)
            ),
            Kind::FaultAfterEnd { fault, at, duration } => write!(
                f,
                "{fault} at {} is after the end of the run ({}); move it earlier or raise SimBuilder::duration",
                fmt_duration(*at),
                fmt_duration(*duration)
            ),
            Kind::Misconfigured(why) => f.write_str(why),
            Kind::Timeout {
                duration,
                tick,
                steps,
                pending,
                kept,
            } => {
                match steps {
                    Some(n) => write!(
                        f,
                        "the run reached its step ceiling ({n} ticks of {}, {} simulated) with clients still running: {}",
                        fmt_duration(*tick),
                        fmt_duration(*duration),
                        pending.join("; ")
                    )?,
                    None => write!(
                        f,
                        "the run reached its duration ({}, tick {}) with clients still running: {}",
                        fmt_duration(*duration),
                        fmt_duration(*tick),
                        pending.join("; ")
                    )?,
                }
                if !kept.is_empty() {
                    write!(f, "; frames still kept back: {}", kept.join("; "))?;
                }
                match steps {
                    Some(_) => write!(
                        f,
                        "; find what they wait on in the trace (a call with no deadline to a handler that never answers waits for good), or raise SimBuilder::max_steps"
                    ),
                    None => write!(
                        f,
                        "; raise SimBuilder::duration or find what they wait on in the trace"
                    ),
                }
            }
            Kind::NoProgress {
                since,
                at,
                limit,
                pending,
                kept,
            } => {
                write!(
                    f,
                    "the run made no progress for {} simulated (since {}; the limit is {}) with every client still running waiting on a call: {}",
                    fmt_duration(at.saturating_sub(*since)),
                    fmt_duration(*since),
                    fmt_duration(*limit),
                    pending.join("; ")
                )?;
                if !kept.is_empty() {
                    write!(f, "; frames still kept back: {}", kept.join("; "))?;
                }
                write!(
                    f,
                    "; a call with no deadline to a handler that never answers waits for good: give the call a deadline, or give the run a finite SimBuilder::duration; if the clients wait on a timer the harness cannot see (a keepalive timeout, a connect_timeout, a sleep in your code) longer than {}, raise SimBuilder::no_progress_limit",
                    fmt_duration(*limit)
                )
            }
            Kind::ClientFailed { host, message } => {
                write!(f, "client `{host}` failed: {message}")
            }
            Kind::HandlerPanicked { host, path, message } => {
                write!(f, "handler {path} on host `{host}` panicked: {message}")
            }
            Kind::ServerFailed { host, message } => write!(
                f,
                "server host `{host}` failed: {message}; its Sim::server or Sim::server_fn closure must not panic, return an error, or return before a Fault::shutdown"
            ),
            Kind::HarnessPanicked { task, message } => write!(
                f,
                "grpc-chaos itself panicked in {task}: {message}; this is a bug in grpc-chaos, not in your \
                 services, and the calls it touched failed because of it (please report it with the seed below)"
            ),
            // The error says where the trace is, after the replay hint.
            Kind::Violation(v) => write!(f, "{}: {}", v.rule(), v.detail()),
            Kind::Nondeterministic {
                at,
                line,
                left,
                right,
                sides: [first, second],
                run_error,
            } => {
                let at = match (at, instant(left)) {
                    (Differs::Ending, _) => "in how they ended".to_owned(),
                    (Differs::Render, Some(t)) => format!("at line {line} of the trace, at {t} ms"),
                    (Differs::Render, None) => format!("at line {line} of the trace"),
                    (Differs::Json, _) => format!("at line {line} of the JSON event log (the renders agree)"),
                };
                // The two rows under each other, whatever the labels.
                let w = first.len().max(second.len()) + 1;
                let (first, second) = (format!("{first}:"), format!("{second}:"));
                write!(
                    f,
                    "two runs with the same seed differ {at}:\n  {first:<w$} {left}\n  {second:<w$} {right}\nsee grpc_chaos::guide::determinism for the known sources"
                )?;
                if let Some(e) = run_error {
                    write!(f, "; the run itself failed: {e}")?;
                }
                if !crate::env::tokio_rng_seeded() {
                    // The one source the harness cannot close by itself.
                    f.write_str("; tokio's select! RNG is not seeded: if your code uses select!, build with RUSTFLAGS=\"--cfg tokio_unstable\"")?;
                }
                Ok(())
            }
            Kind::Io(e) => write!(f, "writing the trace failed: {e}"),
        }
    }
}

/// The instant a rendered row is at: its first column, in ms.
fn instant(row: &str) -> Option<&str> {
    let t = row.split_whitespace().next()?;
    t.parse::<f64>().is_ok().then_some(t)
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "(none)".to_owned()
    } else {
        items.join(", ")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        if let Some(replay) = &self.replay {
            write!(f, " (reproduce with {replay})")?;
        }
        if let Some(dir) = &self.artifact {
            crate::trace::artifact_shown(dir);
            write!(f, "; trace in {}", dir.display())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    // `?` in a test prints Debug: make it the readable message.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &*self.kind {
            Kind::Io(e) => Some(e),
            Kind::Violation(v) => Some(v),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attaching_a_run_keeps_the_callers_replay_hint_and_artifact() {
        let trace = Trace::new(5, vec!["a".into()], Vec::new(), Duration::ZERO);
        let e = Error::new(Kind::Misconfigured("bad".into())).with_run(
            5,
            crate::env::replay_env(5, Some(2000)),
            Some(trace),
            None,
        );
        // No artifact unless the caller wrote one: the error itself does
        // not write (the run does, `sim/run.rs`).
        assert_eq!(e.artifact(), None);
        assert_eq!(e.seed(), Some(5));
        assert_eq!(e.trace().map(Trace::seed), Some(5));
        assert_eq!(
            e.to_string(),
            "bad (reproduce with CHAOS_JITTER_US=2000 CHAOS_SEED=5)"
        );
        assert_eq!(e.what(), "bad");
        let written = e.with_run(5, "CHAOS_SEED=5".into(), None, Some("dir".into()));
        assert_eq!(
            written.to_string(),
            "bad (reproduce with CHAOS_SEED=5); trace in dir"
        );
        assert_eq!(written.message(), "bad; trace in dir");
    }
}
