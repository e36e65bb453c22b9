//! A run with `duration(Duration::MAX)` whose clients wait on something
//! that never comes stops once nothing has moved for
//! `SimBuilder::no_progress_limit` of simulated time (issue #28), instead
//! of at the 10,000,000-step ceiling. Keepalive PINGs are not progress; a
//! host fault still to come, a call's deadline and a client asleep with no
//! call open hold the stop off; a finite duration keeps its own end.

use std::time::Duration;

use grpc_chaos::{defaults, Fault, Sim, SimBuilder};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::LoadRequest;
use grpc_chaos_scenarios::services::{Store, LOAD};
use grpc_chaos_tests::secs;

/// `store`, whose Load hangs, and a `player` that loads once with no
/// deadline over the channel `keepalive` configures (or a plain one);
/// the body returns whatever the call gave.
fn hung_load(builder: SimBuilder, keepalive: bool) -> Sim {
    let mut sim = builder.seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(LOAD).hang());
    sim.client("player", move |c| async move {
        let channel = if keepalive {
            c.channel_with("store", |e| {
                e.http2_keep_alive_interval(secs(10))
                    .keep_alive_timeout(secs(5))
                    .keep_alive_while_idle(true)
            })
        } else {
            c.channel("store")
        };
        let load = LoadRequest {
            match_id: "m1".into(),
        };
        StoreClient::new(channel).load(load).await?;
        Ok(())
    });
    sim
}

/// The story: a hung handler, a call with no deadline, no end
/// given. The run stops a no-progress span after the call went quiet,
/// far before the step ceiling (2.8 simulated hours), and says what the
/// client waits on and what to change.
#[test]
fn a_hung_handler_stops_an_unbounded_run_after_the_no_progress_span() {
    let err = hung_load(Sim::builder().duration(Duration::MAX), false)
        .run()
        .expect_err("the call never ends");
    assert!(err.is_no_progress(), "{err}");
    assert!(!err.is_timeout(), "{err}");
    let msg = err.to_string();
    let span = defaults::NO_PROGRESS_LIMIT;
    assert_eq!(span, secs(600), "the span the docs and README name");
    assert!(
        msg.contains("the run made no progress for 600000ms simulated"),
        "{msg}"
    );
    assert!(
        msg.contains("`player` waiting on r1 /tt.v1.Store/Load to store (no deadline; handler h1 on store has not answered; fault on it: hang)"),
        "{msg}"
    );
    assert!(
        msg.contains("give the run a finite SimBuilder::duration"),
        "{msg}"
    );
    assert!(msg.contains("raise SimBuilder::no_progress_limit"), "{msg}");
    assert!(msg.contains("CHAOS_SEED=1"), "{msg}");
    assert_eq!(err.seed(), Some(1));
    let trace = err.trace().expect("the run's trace");
    // The stall starts when the handler's fault fired (a few ms in: the
    // dial, the request's HEADERS and DATA); the run ends one span later.
    let quiet_since = trace.handler_runs().first().expect("the hung run").started;
    let ended = trace.ended_at();
    assert!(ended >= quiet_since + span, "{ended:?}");
    assert!(ended <= quiet_since + span + secs(1), "{ended:?}");
    // The message names the instant the quiet began.
    assert!(
        msg.contains(&format!(
            "(since {}ms; the limit is 600000ms)",
            (ended - span).as_millis()
        )),
        "{msg}"
    );
    assert!(
        err.artifact().is_some(),
        "written as a failure artifact: {msg}"
    );
}

/// A keepalive channel PINGs every 10 s on the idle connection, and the
/// server acks each: connection-level traffic, not progress. The hung
/// call still stops the run after the span.
#[test]
fn keepalive_pings_behind_a_hung_handler_are_not_progress() {
    let err = hung_load(Sim::builder().duration(Duration::MAX), true)
        .run()
        .expect_err("the call never ends");
    assert!(err.is_no_progress(), "{err}");
    let trace = err.trace().expect("the run's trace");
    let pings = trace
        .events()
        .iter()
        .filter(|e| {
            matches!(
                &e.kind,
                grpc_chaos::recorder::event::EventKind::Frame {
                    frame: grpc_chaos::wire::FrameType::Ping,
                    ..
                }
            )
        })
        .count();
    // Both ways, every 10 s for the 10-minute span.
    assert!(pings >= 100, "{pings} PING frames");
    assert!(
        trace.ended_at() <= defaults::NO_PROGRESS_LIMIT + secs(1),
        "{:?}",
        trace.ended_at()
    );
}

/// A host fault still to come means the run is not stalled: the restart
/// of `store` after the span resets the hung call's connection, the call
/// fails, and the client ends the run, which the rule must not have cut
/// before.
#[test]
fn a_host_fault_still_to_come_holds_off_the_stop() {
    let restart = defaults::NO_PROGRESS_LIMIT + secs(60);
    let mut sim = Sim::builder().seed(1).duration(Duration::MAX).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(LOAD).hang());
    sim.fault(Fault::restart("store").at(restart));
    sim.client("player", |c| async move {
        let load = LoadRequest {
            match_id: "m1".into(),
        };
        let cut = StoreClient::new(c.channel("store")).load(load).await;
        assert!(cut.is_err(), "the restart cuts the hung call: {cut:?}");
        Ok(())
    });
    let trace = sim.run().expect("the restart ends the call");
    assert!(trace.ended_at() > restart, "{:?}", trace.ended_at());
    assert!(
        trace.ended_at() < restart + secs(1),
        "{:?}",
        trace.ended_at()
    );
}

/// A finite duration keeps today's end: the run goes on quietly past the
/// no-progress span and fails at its duration, as a timeout.
#[test]
fn a_finite_duration_ends_at_its_duration_not_at_the_span() {
    let duration = defaults::NO_PROGRESS_LIMIT + secs(30);
    let err = hung_load(Sim::builder().duration(duration), false)
        .run()
        .expect_err("the call never ends");
    assert!(err.is_timeout(), "{err}");
    assert!(!err.is_no_progress(), "{err}");
    assert!(
        err.to_string()
            .contains("the run reached its duration (630000ms, tick 1ms)"),
        "{err}"
    );
    assert_eq!(err.trace().map(|t| t.ended_at()), Some(duration));
}

/// A client with no call open may be asleep on a timer of its own, and
/// what it does when it wakes may end the others' wait: the rule waits
/// for it. Here `sleeper` returns after 5 minutes; only then does the
/// quiet of the hung `player` count, for the (lowered) limit.
#[test]
fn a_client_asleep_with_no_call_open_holds_off_the_stop() {
    let limit = secs(60);
    let nap = secs(300);
    let mut sim = hung_load(
        Sim::builder()
            .duration(Duration::MAX)
            .no_progress_limit(limit),
        false,
    );
    sim.client("sleeper", move |_| async move {
        tokio::time::sleep(nap).await;
        Ok(())
    });
    let err = sim.run().expect_err("the call never ends");
    assert!(err.is_no_progress(), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("`player` waiting on r1"), "{msg}");
    assert!(!msg.contains("sleeper"), "it had returned: {msg}");
    assert!(
        msg.contains(&format!(
            "(since {}ms; the limit is 60000ms)",
            nap.as_millis()
        )),
        "{msg}"
    );
    let ended = err.trace().map(|t| t.ended_at()).unwrap_or_default();
    assert_eq!(ended, nap + limit);
}

/// A recorded call's deadline is a timer the harness knows: a deadline
/// longer than the limit is waited for, and the call ends with it.
#[test]
fn a_deadline_longer_than_the_limit_is_waited_for() {
    let deadline = secs(300);
    let mut sim = Sim::builder()
        .seed(1)
        .duration(Duration::MAX)
        .no_progress_limit(secs(60))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(LOAD).hang());
    sim.client("player", move |c| async move {
        let mut load = tonic::Request::new(LoadRequest::default());
        load.set_timeout(deadline);
        let ended = StoreClient::new(c.channel("store")).load(load).await;
        assert!(ended.is_err(), "the deadline ends it: {ended:?}");
        Ok(())
    });
    let trace = sim.run().expect("the deadline ends the call");
    let call = trace.calls_from("player").next().expect("the call");
    assert!(call.ended_at.is_some_and(|t| t >= deadline), "{call:?}");
}

/// The limit is for unbounded runs; on a finite one (which always runs
/// to its duration) it would be ignored, and 0 would stop every run at
/// once: both are refused before the run, saying what to change.
#[test]
fn a_limit_on_a_finite_run_or_of_zero_is_refused() {
    let refused = |builder: SimBuilder| {
        let err = hung_load(builder, false)
            .run()
            .expect_err("refused before the run");
        assert!(err.is_misconfigured(), "{err}");
        assert!(err.trace().is_none(), "{err}");
        err.to_string()
    };
    let msg = refused(Sim::builder().no_progress_limit(secs(60)));
    assert!(
        msg.contains("SimBuilder::no_progress_limit(60000ms) applies only to a run with duration(Duration::MAX); this run has a duration of 60000ms"),
        "{msg}"
    );
    let msg = refused(
        Sim::builder()
            .duration(Duration::MAX)
            .no_progress_limit(Duration::ZERO),
    );
    assert!(msg.contains("no_progress_limit(0ms)"), "{msg}");
    assert!(msg.contains("the default is 600000ms"), "{msg}");
}
