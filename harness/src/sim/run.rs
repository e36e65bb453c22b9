//! Running a scenario: register the hosts with turmoil, step the world,
//! fire host faults on time, and hand back the trace.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use futures_util::FutureExt;
use tracing_subscriber::layer::SubscriberExt;

use super::Rules;
use super::{defaults, Host, ServerHost, ServerSetup, Shared, Sim};
use crate::error::{Error, Kind};
use crate::fault::handler::HandlerLayer;
use crate::fault::{FaultKind, HostAction, HostFault};
use crate::recorder::event::EventKind;
use crate::recorder::CaptureLayer;
use crate::trace::{fmt_duration, Trace};

impl Sim {
    /// Runs the simulation until every client body has returned, and
    /// returns the trace.
    ///
    /// # Errors
    ///
    /// A misconfigured scenario (unknown or duplicate host, bad method path,
    /// a fault after the end), a client body that returned an error, a
    /// handler that panicked, or a run that reached its duration with
    /// clients pending. Errors from the run carry its seed and trace.
    pub fn run(self) -> Result<Trace, Error> {
        self.validate()?;
        let Sim {
            config,
            servers,
            clients,
            faults,
            keepalive,
            problem: _,
        } = self;
        let mut rules = Rules {
            keepalive,
            ..Rules::default()
        };
        let mut host_faults = Vec::new();
        for f in faults {
            match f.0 {
                FaultKind::Handler(r) => rules.handler.push(r),
                FaultKind::Frame(r) => rules.frame.push(r),
                FaultKind::Inject(i) => rules.inject.push(i),
                FaultKind::Host(h) => host_faults.push(h),
            }
        }
        // Stable sort: faults at the same instant fire in the order added.
        host_faults.sort_by_key(|f| f.at);
        let shared = Shared::new(
            config.seed,
            servers.iter().map(|(n, _)| n.clone()).collect(),
            clients.iter().map(|(n, _)| n.clone()).collect(),
            rules,
        );
        let shared = Arc::new(if config.wire_tap {
            shared
        } else {
            shared.without_wire_tap()
        });
        let mut world = turmoil::Builder::new()
            .rng_seed(config.seed)
            .epoch(UNIX_EPOCH + Duration::from_secs(defaults::EPOCH_SECS))
            // turmoil's own limit stays out of the way; ours names the
            // pending clients.
            .simulation_duration(
                config
                    .duration
                    .saturating_add(config.tick.saturating_mul(2)),
            )
            .tick_duration(config.tick)
            .min_message_latency(config.latency)
            // turmoil draws each message's latency in [min, max] from its
            // seeded RNG: jitter is what makes seeds explore interleavings.
            .max_message_latency(config.latency + config.jitter)
            .build();
        for (name, setup) in servers {
            register_server(&mut world, &shared, name, setup);
        }
        for (name, body) in clients {
            let host = Host::new(name.as_str().into(), shared.clone());
            let shared = shared.clone();
            world.client(name.clone(), async move {
                let result = body(host).await;
                shared.client_finished(&name, result.as_ref().err().map(|e| e.to_string()));
                result
            });
        }
        let outcome = drive(&mut world, &shared, host_faults.clone(), &config);
        // Tearing the world down drops every handler and call still going:
        // that is the end of the run, not a cancellation, so leave them open.
        let ended = world.elapsed();
        report_never_left(&shared, ended);
        let late = host_faults.iter().filter(|f| f.at > ended).map(|f| {
            let host = f.action.hosts().first().map_or("", |h| *h).to_owned();
            let fault = format!(
                "{} at {}: the run ended at {}, before it was due",
                f.action.describe(),
                fmt_duration(f.at),
                fmt_duration(ended)
            );
            (host, fault)
        });
        let unused_retries = shared.unused_retry_policies();
        let unused = shared.unused_faults(ended).into_iter().chain(late);
        for (host, fault) in unused.chain(unused_retries) {
            shared
                .recorder
                .push_at(ended, &host, EventKind::FaultNeverFired { fault });
        }
        shared.recorder.stop();
        drop(world);
        let trace = Trace::new(
            config.seed,
            shared.known_hosts(),
            shared.recorder.take_events(),
            ended,
        )
        .with_jitter_env(config.jitter_env);
        let problem = shared.take_problem();
        match (problem, outcome) {
            (Some(e), _) | (None, Err(e)) => Err(e.with_run(config.seed, Some(trace))),
            (None, Ok(())) => Ok(trace),
        }
    }
}

fn register_server(
    world: &mut turmoil::Sim<'static>,
    shared: &Arc<Shared>,
    name: String,
    setup: ServerSetup,
) {
    let shared = shared.clone();
    let host: Arc<str> = name.as_str().into();
    world.host(name, move || {
        let (shared, host, setup) = (shared.clone(), host.clone(), setup.clone());
        let serve = {
            let (shared, host) = (shared.clone(), host.clone());
            async move {
                let server = setup(ServerHost::new(Host::new(host.clone(), shared.clone())));
                shared.check_services(&host, &server.services);
                let routes = server.routes.routes();
                let incoming = crate::net::incoming(shared.clone(), host.clone()).await?;
                tonic::transport::Server::builder()
                    .layer(HandlerLayer::new(host, shared))
                    .serve_with_incoming(routes, incoming)
                    .await?;
                Ok::<(), Box<dyn std::error::Error>>(())
            }
        };
        async move {
            // A server closure that panics or fails is the server's fault,
            // not the client's that happened to be running: name it.
            let message = match AssertUnwindSafe(serve).catch_unwind().await {
                Ok(Ok(())) => "its server stopped".to_owned(),
                Ok(Err(e)) => e.to_string(),
                Err(panic) => crate::fault::handler::panic_message(&*panic),
            };
            shared.server_failed(&host, message.clone());
            Err(message.into())
        }
    });
}

/// Steps the world until the clients are done, firing host faults on time.
fn drive(
    world: &mut turmoil::Sim<'static>,
    shared: &Arc<Shared>,
    faults: Vec<HostFault>,
    config: &super::Config,
) -> Result<(), Error> {
    let duration = config.duration;
    let subscriber =
        tracing_subscriber::registry().with(CaptureLayer::new(shared.recorder.clone()));
    let _guard = tracing::subscriber::set_default(subscriber);
    let mut faults = faults.into_iter().peekable();
    // When the last client body returned: the run goes on for `settle`, so
    // that cancellations already on the wire land before the trace ends.
    let mut clients_done: Option<Duration> = None;
    loop {
        let now = world.elapsed();
        shared.recorder.set_driver_clock(now);
        while let Some(fault) = faults.next_if(|f| f.at <= now) {
            apply(world, shared, &fault.action);
        }
        match clients_done {
            Some(done) if now >= done.saturating_add(config.settle) || now >= duration => {
                return Ok(())
            }
            None if now >= duration => return Err(timeout(shared, duration)),
            _ => {}
        }
        match world.step() {
            Ok(true) => {
                clients_done.get_or_insert(world.elapsed());
            }
            Ok(false) => {}
            Err(e) => return Err(client_failure(shared, &e.to_string())),
        }
    }
}

fn apply(world: &mut turmoil::Sim<'static>, shared: &Shared, action: &HostAction) {
    let rec = &shared.recorder;
    match action {
        HostAction::Crash(h) => {
            rec.push(h, EventKind::HostCrashed);
            // Code that runs as the host's tasks are dropped is the host's.
            let _host = tracing::info_span!("node", name = h.as_str()).entered();
            world.crash(h.as_str());
        }
        HostAction::Restart(h) => {
            rec.push(h, EventKind::HostRestarted);
            let _host = tracing::info_span!("node", name = h.as_str()).entered();
            world.bounce(h.as_str());
        }
        HostAction::Partition(a, b) => {
            rec.push(a, EventKind::Partitioned { peer: b.clone() });
            world.partition(a.as_str(), b.as_str());
        }
        HostAction::Repair(a, b) => {
            rec.push(a, EventKind::Repaired { peer: b.clone() });
            world.repair(a.as_str(), b.as_str());
        }
        HostAction::Release(name) => shared.release(name, None),
        HostAction::Latency(a, b, latency) => {
            rec.push(
                a,
                EventKind::LinkLatency {
                    peer: b.clone(),
                    latency: *latency,
                },
            );
            world.set_link_latency(a.as_str(), b.as_str(), *latency);
        }
    }
}

/// Frames kept back that never left, recorded at the end of the run: held
/// for a release that never came, due after the end, or queued behind
/// such a frame, on a connection that stayed open or died with them.
fn report_never_left(shared: &Shared, ended: Duration) {
    for (conn, state) in shared.conns().all() {
        let state = super::lock_conn(&state);
        for w in state.tap.still_waiting() {
            shared.recorder.push_at(
                ended,
                &w.from,
                EventKind::FrameNeverLeft {
                    conn,
                    to: w.to.to_string(),
                    stream: w.stream,
                    frame: w.frame,
                    written: w.since,
                    waiting_for: w.until.waiting_for(),
                },
            );
        }
    }
}

fn timeout(shared: &Shared, duration: Duration) -> Error {
    let events = shared.recorder.events();
    let pending = shared
        .pending_clients()
        .into_iter()
        .map(|host| {
            let waiting = crate::trace::open_calls(&events, &host);
            if waiting.is_empty() {
                format!("`{host}` (no call open)")
            } else {
                format!("`{host}` waiting on {}", waiting.join(", "))
            }
        })
        .collect();
    Error::new(Kind::Timeout {
        duration,
        pending,
        kept: kept_back(shared),
    })
}

/// The frames the tap still keeps back, by direction and reason:
/// `3 store→player held until release "answer"`.
fn kept_back(shared: &Shared) -> Vec<String> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for (_, state) in shared.conns().all() {
        for w in super::lock_conn(&state).tap.still_waiting() {
            let why = w.until.waiting_for();
            *counts
                .entry(format!("{}→{} {why}", w.from, w.to))
                .or_default() += 1;
        }
    }
    counts
        .into_iter()
        .map(|(what, n)| format!("{n} {what}"))
        .collect()
}

/// turmoil reports a failed client without its name: a client that returned
/// an error was noted as a problem already, so what is left is a panic.
fn client_failure(shared: &Shared, message: &str) -> Error {
    Error::new(Kind::ClientFailed {
        host: shared.pending_clients().join(" or "),
        message: message.to_owned(),
    })
}
