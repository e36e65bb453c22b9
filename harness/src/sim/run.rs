//! Running a scenario: register the hosts with turmoil, step the world,
//! fire host faults on time, and hand back the trace.

use crate::recorder::event;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use futures_util::{FutureExt, StreamExt};

use super::Rules;
use super::{defaults, Host, ServeFnHost, ServerHost, ServerSetup, Shared, Sim};
use crate::error::{Error, Kind};
use crate::fault::{FaultKind, HostAction, HostFault};
use crate::recorder::event::{EventKind, WaitingFor};
use crate::recorder::{hosted, DrivingHost};
use crate::trace::Trace;
use crate::units::fmt_duration;

impl Sim {
    /// Runs the simulation until every client body has returned, and
    /// returns the trace.
    ///
    /// A failed run writes its trace as a failure artifact under
    /// `<target>/grpc-chaos/<test name>/<seed>/`; a run that passes removes
    /// the files an earlier process's failure of the same test and seed
    /// left there, and the folders that leaves empty (never another file,
    /// nor a failure of this process). `GRPC_CHAOS_ARTIFACTS=0` turns both
    /// off.
    ///
    /// # Errors
    ///
    /// A misconfigured scenario (unknown or duplicate host, bad method path,
    /// a fault after the end), a client body that returned an error, a
    /// handler that panicked, a run that reached its duration with
    /// clients pending ([`Error::is_timeout`]), or a `Duration::MAX` run
    /// that made no progress for its
    /// [`no_progress_limit`](super::SimBuilder::no_progress_limit)
    /// ([`Error::is_no_progress`]). Errors from the run carry its seed and
    /// trace. With `GRPC_CHAOS_CANARY=1`
    /// ([`check::CANARY_ENV`](crate::check::CANARY_ENV)), also a run that
    /// differs from the same test's run in a second process
    /// ([`Error::is_nondeterministic`]).
    pub fn run(self) -> Result<Trace, Error> {
        super::canary::checked(|| self.run_once())
    }

    fn run_once(self) -> Result<Trace, Error> {
        // A panic from here on is this run's error; after it, the panic
        // hook writes this run's trace (see `trace::artifacts`).
        let _running = crate::trace::running();
        crate::env::note_run_seed(self.config.seed);
        self.validate()?;
        let health = self.health_hosts();
        let Sim {
            config,
            servers,
            clients,
            faults,
            keepalive,
            policies,
            replica_sets,
            problem: _,
            serve_fns: _,
            middleboxes: _,
            health: _,
        } = self;
        let mut rules = Rules {
            keepalive,
            policies,
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
        // A shutdown's grace ends at a time known now: schedule it as a
        // fault of its own.
        let graces: Vec<HostFault> = host_faults
            .iter()
            .filter_map(|f| match &f.action {
                HostAction::Shutdown(h, Some(grace)) => Some(HostFault {
                    at: f.at.saturating_add(*grace),
                    action: HostAction::GraceEnded(h.clone(), f.at),
                }),
                _ => None,
            })
            .collect();
        host_faults.extend(graces);
        // Stable sort: faults at the same instant fire in the order added.
        host_faults.sort_by_key(|f| f.at);
        let shared = Shared::new(
            config.seed,
            servers.iter().map(|(n, _)| n.clone()).collect(),
            clients.iter().map(|(n, _)| n.clone()).collect(),
            rules,
        )
        .with_replica_sets(&replica_sets)
        .with_health(health)
        .with_link_faults(host_faults.iter().any(|f| f.action.is_link_fault()))
        .with_slow_poll_threshold(config.slow_poll)
        .showing_credentials(config.show_credentials);
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
            .simulation_duration(config.end().saturating_add(config.tick.saturating_mul(2)))
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
            let me: Arc<str> = name.as_str().into();
            let host = Host::new(me.clone(), shared.clone());
            let (shared, finished) = (shared.clone(), me.clone());
            let software = async move {
                let result = body(host).await;
                shared.client_finished(&finished, result.as_ref().err().map(|e| e.to_string()));
                result
            };
            world.client(name, hosted(me, software));
        }
        let outcome = drive(&mut world, &shared, host_faults.clone(), &config);
        // Tearing the world down drops every handler and call still going:
        // that is the end of the run, not a cancellation, so leave them open.
        let ended = world.elapsed();
        report_never_left(&shared, ended);
        report_still_draining(&shared, ended);
        // A grace that would have ended after the run is told by "still
        // draining", not as a fault of its own.
        let late = host_faults.iter().filter(|f| f.at > ended);
        let late = late.filter(|f| !matches!(f.action, HostAction::GraceEnded(..)));
        let late = late.map(|f| {
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
        .with_jitter_env(config.jitter_env)
        .with_slow_polls(shared.slow_polls.take());
        if let Some(threshold) = config.slow_poll {
            crate::trace::warn_slow_polls(&trace, threshold);
        }
        crate::trace::remember_run(&trace);
        let problem = shared.take_problem();
        match (problem, outcome) {
            (Some(e), _) | (None, Err(e)) => Err(run_failed(e, trace)),
            (None, Ok(())) => {
                // What an earlier failure of this test and seed left on
                // disk no longer holds (`trace/artifacts.rs`).
                crate::trace::run_passed(trace.seed());
                Ok(trace)
            }
        }
    }
}

/// `e` with the run it came from attached, its trace written as a failure
/// artifact with `e` as the `error.txt` (once per failure: an `Error`
/// writes nothing itself, see `trace/artifacts.rs`).
pub(crate) fn run_failed(e: Error, trace: Trace) -> Error {
    let artifact = crate::trace::write_artifacts_with(&trace, &e.what());
    e.with_run(trace.seed(), trace.replay_env(), Some(trace), artifact)
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
                let mut server = setup(ServerHost::new(Host::new(host.clone(), shared.clone())));
                if shared.health.serves(&host) {
                    server = with_health(&shared, &host, server);
                }
                let parts = server.into_parts();
                if let Some(services) = &parts.services {
                    shared.check_services(&host, services);
                }
                let tls = match &parts.tls {
                    None => None,
                    Some(tls) => {
                        let clock = crate::tls::clock::SimClock(shared.recorder.clone());
                        match tls.config(&clock) {
                            Ok((config, chosen)) => Some(crate::tls::TlsEnd::server(
                                config,
                                chosen,
                                tls.stall,
                                shared.seed,
                            )),
                            Err(why) => {
                                let why = format!("ServerHost::tls on host `{host}`: {why}");
                                shared.misconfigured(why.clone());
                                return Err(why.into());
                            }
                        }
                    }
                };
                let incoming = crate::net::incoming(shared.wiring(), host.clone(), tls).await?;
                if let Some((serve, layer)) = parts.user {
                    // The user's own serve fn: it gets the counted
                    // connections and the shutdown as a receiver, and
                    // builds its server itself.
                    let (signal, open) = shared.shutdowns.arm_watch(&host);
                    let incoming = incoming.map(move |conn| conn.map(|c| c.counted(open.clone())));
                    let me = Host::new(host.clone(), shared.clone());
                    serve(ServeFnHost::serving(me, incoming, signal, layer)).await?;
                } else {
                    let (signal, open) = shared.shutdowns.arm(&host);
                    let incoming = incoming.map(move |conn| conn.map(|c| c.counted(open.clone())));
                    (parts.serve)(parts.routes, Box::pin(incoming), signal).await?;
                }
                if let Some(since) = shared.shutdowns.returned(&host) {
                    let drained = shared.recorder.now().saturating_sub(since);
                    shared
                        .recorder
                        .push(&host, EventKind::ServeReturned { drained });
                    // The process is gone, the machine stays up: nothing
                    // listens until a restart.
                    std::future::pending::<()>().await;
                }
                Ok::<(), Box<dyn std::error::Error>>(())
            }
        };
        hosted(host.clone(), async move {
            // A server closure that panics or fails is the server's fault,
            // not the client's that happened to be running: name it.
            let message = match AssertUnwindSafe(serve).catch_unwind().await {
                Ok(Ok(())) => "its server stopped without a Fault::shutdown".to_owned(),
                Ok(Err(e)) => e.to_string(),
                Err(panic) => crate::units::panic_message(&*panic),
            };
            shared.server_failed(&host, message.clone());
            Err(message.into())
        })
    });
}

/// `server` with tonic-health's service added ([`Sim::health`]); a host
/// that adds a `grpc.health.v1.Health` of its own is misconfigured (tonic
/// would refuse the second route), and keeps its own.
fn with_health(shared: &Shared, host: &str, server: ServerHost) -> ServerHost {
    const HEALTH: &str = "grpc.health.v1.Health";
    if server.services.contains(&HEALTH) {
        shared.misconfigured(format!(
            "Sim::health({host:?}): `{host}` already adds a {HEALTH} service of its own; \
             drop Sim::health for it (the harness then cannot set its status with \
             Fault::health), or drop its own health service"
        ));
        return server;
    }
    let health = shared.health.start(host, &server.services);
    server.add_service(health)
}

/// Steps the world until the clients are done, firing host faults on time.
fn drive(
    world: &mut turmoil::Sim<'static>,
    shared: &Arc<Shared>,
    faults: Vec<HostFault>,
    config: &super::Config,
) -> Result<(), Error> {
    // A `Duration::MAX` run stops at its step ceiling (finite durations
    // past it were refused), or earlier when nothing moves.
    let duration = config.end();
    // The user's `tracing` events go into the trace, and on to the
    // subscriber that was the default before the run.
    let _capture = crate::recorder::install(shared.recorder.clone());
    let mut stall = config.no_progress_limit().map(|limit| Stall {
        limit,
        // Sorted by time: the last is the last due.
        last_fault: faults.last().map_or(Duration::ZERO, |f| f.at),
        not_before: Duration::ZERO,
    });
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
            None if now >= duration => return Err(timeout(shared, config)),
            None => {
                if let Some(e) = stall.as_mut().and_then(|s| s.check(shared, now)) {
                    return Err(e);
                }
            }
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
        HostAction::Crash(h) => crash(world, shared, h),
        HostAction::Shutdown(h, grace) => {
            if shared.shutdowns.begin(h, rec.now()) {
                rec.push(h, EventKind::ShutdownStarted { grace: *grace });
            } else {
                let fault = format!(
                    "{} at {}: the host's server was not running (crashed, or already shut down)",
                    action.describe(),
                    fmt_duration(rec.now())
                );
                rec.push(h, EventKind::FaultNeverFired { fault });
            }
        }
        // Its parts are faults of their own (Sim::fault added them).
        HostAction::PodTermination(h, timing) => {
            let (sigterm, grace) = timing.sigterm();
            let times = event::PodTerminationStarted {
                endpoint_lag: timing.endpoint_lag,
                sigterm,
                sigkill: sigterm.saturating_add(grace),
            };
            rec.push(h, EventKind::PodTerminationStarted(Box::new(times)));
        }
        HostAction::GraceEnded(h, since) => {
            if let Some(draining) = shared.shutdowns.draining(h, *since) {
                let grace = rec.now().saturating_sub(*since);
                rec.push(
                    h,
                    EventKind::ShutdownGraceOver {
                        grace,
                        open_conns: draining.open_conns,
                    },
                );
                crash(world, shared, h);
            }
        }
        HostAction::Restart(h) => {
            shared.shutdowns.restarted(h);
            shared.health.stopped(h);
            rec.push(h, EventKind::HostRestarted);
            hold_held_links(world, shared, h);
            let _host = DrivingHost::enter(h);
            rec.while_driving_host(|| world.bounce(h.as_str()));
        }
        HostAction::Partition(a, b, reset_after) => {
            rec.push(
                a,
                EventKind::Partitioned {
                    peer: b.into(),
                    reset_after: *reset_after,
                },
            );
            // Emulated in the wiring (net/links.rs), not by turmoil, whose
            // partition loses what is sent.
            shared.links().partition(a, b, *reset_after);
        }
        HostAction::BlackHole(a, b) => {
            rec.push(a, EventKind::BlackHoled { peer: b.into() });
            shared.links().black_hole(a, b);
            lost_on_the_wire(world, shared, a, b);
            world.partition(a.as_str(), b.as_str());
        }
        HostAction::Repair(a, b) => {
            rec.push(a, EventKind::Repaired { peer: b.into() });
            // Ends either kind; turmoil's repair is a no-op on a link it
            // never partitioned.
            shared.links().repair(a, b);
            world.repair(a.as_str(), b.as_str());
            release_open_link(world, shared, a, b);
        }
        HostAction::Pause(h) => {
            rec.push(h, EventKind::HostPaused);
            shared.links().pause(h);
        }
        HostAction::Resume(h) => {
            rec.push(h, EventKind::HostResumed);
            shared.links().resume(h);
            for peer in shared.known_hosts().iter().filter(|p| *p != h) {
                release_open_link(world, shared, h, peer);
            }
        }
        HostAction::Release(name) => shared.release(name, None),
        HostAction::Leave(h) | HostAction::Join(h) => {
            let set = shared
                .replicas
                .set_of(h)
                .map(|s| s.name)
                .unwrap_or_default();
            let joins = matches!(action, HostAction::Join(_));
            rec.push(
                h,
                if joins {
                    EventKind::ReplicaJoined { set }
                } else {
                    EventKind::ReplicaLeft { set }
                },
            );
            shared.replicas.set_member(h, joins);
        }
        HostAction::DnsOutage(set) | HostAction::DnsRestore(set) => {
            let out = matches!(action, HostAction::DnsOutage(_));
            shared.replicas.set_dns_out(set, out);
            let kind = if out {
                EventKind::DnsOutage
            } else {
                EventKind::DnsRestored
            };
            rec.push(set, kind);
        }
        HostAction::Health(h, service, status) => {
            if shared.health.set(h, service, *status) {
                rec.push(
                    h,
                    EventKind::HealthSet {
                        service: service.clone(),
                        status: *status,
                    },
                );
            } else {
                let fault = format!(
                    "{} at {}: the host runs no server then (not started yet, or crashed)",
                    action.describe(),
                    fmt_duration(rec.now())
                );
                rec.push(h, EventKind::FaultNeverFired { fault });
            }
        }
        HostAction::Latency(a, b, latency) => {
            rec.push(
                a,
                EventKind::LinkLatency {
                    peer: b.into(),
                    latency: *latency,
                },
            );
            world.set_link_latency(a.as_str(), b.as_str(), *latency);
        }
    }
}

/// Stops `host`'s software (turmoil `crash`).
fn crash(world: &mut turmoil::Sim<'static>, shared: &Shared, host: &str) {
    shared.shutdowns.crashed(host);
    shared.health.stopped(host);
    shared.recorder.push(host, EventKind::HostCrashed);
    hold_held_links(world, shared, host);
    // Code that runs as the host's tasks are dropped is the host's.
    let _host = DrivingHost::enter(host);
    shared.recorder.while_driving_host(|| world.crash(host));
}

/// Servers still draining a graceful shutdown when the run ended, with
/// what they wait on.
fn report_still_draining(shared: &Shared, ended: Duration) {
    let draining = shared.shutdowns.all_draining();
    if draining.is_empty() {
        // The copy of the log below is the size of the whole run's log.
        return;
    }
    let events = shared.recorder.events();
    for (host, draining) in draining {
        let waiting_on = crate::trace::open_runs(&events, &host);
        shared.recorder.push_at(
            ended,
            &host,
            EventKind::ShutdownStillDraining(Box::new(
                crate::recorder::event::ShutdownStillDraining {
                    since: draining.since,
                    open_conns: draining.open_conns,
                    waiting_on,
                },
            )),
        );
    }
}

/// Before `host` crashes or restarts: on each of its links that holds bytes
/// (a partition, a pause), turmoil holds what the crash sends (the FINs and
/// RSTs of its dropped sockets, which bypass the writer tasks) until the
/// link opens, instead of letting it cross.
fn hold_held_links(world: &turmoil::Sim<'static>, shared: &Shared, host: &str) {
    for peer in shared.known_hosts().iter().filter(|p| *p != host) {
        if shared.links().state(host, peer).holds() {
            world.hold(host, peer.as_str());
        }
    }
}

/// Once the link between `a` and `b` is open in the links table, delivers
/// what turmoil held on it ([`hold_held_links`]). Only then: turmoil's
/// release also ends its partition, which a black hole still needs.
fn release_open_link(world: &turmoil::Sim<'static>, shared: &Shared, a: &str, b: &str) {
    if shared.links().active() && shared.links().state(a, b) == crate::net::LinkState::Open {
        world.release(a, b);
    }
}

/// Notes every TCP segment on the wire between `a` and `b` that turmoil's
/// partition is about to drop: its direction delivers nothing more (turmoil
/// delivers in sequence and never retransmits), so the tap marks the
/// frames written after it as lost.
fn lost_on_the_wire(world: &turmoil::Sim<'static>, shared: &Shared, a: &str, b: &str) {
    use turmoil::{Protocol, Segment};
    let (a, b) = (world.lookup(a), world.lookup(b));
    let mut lost = Vec::new();
    world.links(|links| {
        for link in links {
            let (x, y) = link.pair();
            if (x, y) != (a, b) && (x, y) != (b, a) {
                continue;
            }
            for sent in link {
                if matches!(
                    sent.protocol(),
                    Protocol::Tcp(Segment::Data(..) | Segment::Fin(_))
                ) {
                    lost.push(sent.pair());
                }
            }
        }
    });
    for (src, dst) in lost {
        shared.conns().lost_on_the_wire(src, dst);
    }
}

/// Frames kept back that never left, recorded at the end of the run: held
/// for a release that never came, due after the end, or queued behind
/// such a frame, on a connection that stayed open or died with them.
fn report_never_left(shared: &Shared, ended: Duration) {
    for (conn, state) in shared.conns().all() {
        let state = crate::net::lock_conn(&state);
        for w in state.tap.still_waiting() {
            shared.recorder.push_at(
                ended,
                w.from,
                EventKind::FrameNeverLeft(Box::new(event::FrameNeverLeft {
                    conn,
                    to: (&w.to).into(),
                    stream: w.stream,
                    frame: w.frame,
                    written: w.since,
                    waiting_for: never_left_because(shared, w),
                })),
            );
        }
    }
}

/// The no-progress rule of an unbounded run
/// ([`SimBuilder::no_progress_limit`](super::SimBuilder::no_progress_limit)).
struct Stall {
    limit: Duration,
    /// When the last host fault is due: the run is not stalled before.
    last_fault: Duration,
    /// When the rule last found a client with no call open: the quiet
    /// counts from then on, so the log is read once per limit at most.
    not_before: Duration,
}

impl Stall {
    /// The run's error when it is stalled at `now`: nothing moved, no host
    /// fault nor timer of the harness's own was due for the limit, and
    /// every client still running waits on a call.
    fn check(&mut self, shared: &Shared, now: Duration) -> Option<Error> {
        let rec = &shared.recorder;
        // Two atomic loads a step; the log is read only once it is quiet.
        let since = rec.last_progress();
        let quiet_from = since
            .max(rec.last_timer())
            .max(self.last_fault)
            .max(self.not_before);
        if now < quiet_from.saturating_add(self.limit) {
            return None;
        }
        let events = rec.events();
        let waits = pending_clients(shared, &events, now);
        if waits.iter().any(|(_, calls)| calls.is_empty()) {
            // A client asleep on its own timer may be what ends the wait.
            self.not_before = now;
            return None;
        }
        Some(Error::new(Kind::NoProgress {
            since,
            at: now,
            limit: self.limit,
            pending: waits.iter().map(|(h, c)| waiting_on(h, c)).collect(),
            kept: kept_back(shared),
        }))
    }
}

/// Each client still running, with the calls it has open (described).
fn pending_clients(
    shared: &Shared,
    events: &[crate::recorder::event::Event],
    now: Duration,
) -> Vec<(String, Vec<String>)> {
    shared
        .pending_clients()
        .into_iter()
        .map(|host| {
            let calls = crate::trace::open_calls(events, &host, now);
            (host, calls)
        })
        .collect()
}

/// `` `player` waiting on r1 … `` or `` `player` (no call open) ``.
fn waiting_on(host: &str, calls: &[String]) -> String {
    if calls.is_empty() {
        format!("`{host}` (no call open)")
    } else {
        format!("`{host}` waiting on {}", calls.join(", "))
    }
}

fn timeout(shared: &Shared, config: &super::Config) -> Error {
    let events = shared.recorder.events();
    let pending = pending_clients(shared, &events, shared.recorder.now())
        .iter()
        .map(|(host, calls)| waiting_on(host, calls))
        .collect();
    Error::new(Kind::Timeout {
        duration: config.end(),
        tick: config.tick,
        steps: config.capped_by_steps().then_some(config.max_steps),
        pending,
        kept: kept_back(shared),
    })
}

/// What a frame still kept back at the end waits for: a frame a link held
/// either waits for a repair or resume that never came, or died with its
/// sender's connection (a crash stops the writer task that held it).
fn never_left_because(shared: &Shared, w: &crate::net::Waiting) -> WaitingFor {
    match w.until.waiting_for() {
        WaitingFor::Link { link, .. } if !shared.links().state(&w.from, &w.to).holds() => {
            WaitingFor::Link {
                link,
                lost_with_sender: true,
            }
        }
        other => other,
    }
}

/// The frames the tap still keeps back, by direction and reason:
/// `3 store→player held until release "answer"`.
fn kept_back(shared: &Shared) -> Vec<String> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for (_, state) in shared.conns().all() {
        for w in crate::net::lock_conn(&state).tap.still_waiting() {
            let why = never_left_because(shared, w);
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
        message: without_task_id(message),
    })
}

/// tokio's `task 13 panicked with message "…"` as `panicked with message
/// "…"`: task ids are numbered across the whole process, so the same run
/// would read differently next to other tests (and `check_determinism`
/// would call two identical failures different).
fn without_task_id(message: &str) -> String {
    message
        .strip_prefix("task ")
        .and_then(|rest| rest.split_once(' '))
        .filter(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
        .map_or_else(|| message.to_owned(), |(_, rest)| rest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::without_task_id;

    #[test]
    fn a_panicking_client_reads_the_same_whatever_its_task_id() {
        assert_eq!(
            without_task_id(r#"task 419 panicked with message "deliberate""#),
            r#"panicked with message "deliberate""#
        );
        assert_eq!(without_task_id("task x failed"), "task x failed");
        assert_eq!(without_task_id("the body gave up"), "the body gave up");
    }
}
