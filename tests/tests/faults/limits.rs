//! Absurd times and names are misconfigurations that say what to change,
//! found before the run: never a panic inside a host, where it would read
//! as a network failure.

use std::time::Duration;

use grpc_chaos::wire::FrameType;
use grpc_chaos::{Fault, Sim, SimBuilder};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::LoadRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;
use tonic::Code;

/// `store` and a `player` that loads once, built from `builder`.
fn store_and_player(builder: SimBuilder) -> Sim {
    let mut sim = builder.seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |c| async move {
        let load = LoadRequest {
            match_id: "m1".into(),
        };
        StoreClient::new(c.channel("store")).load(load).await?;
        Ok(())
    });
    sim
}

/// Runs `sim`, which must be refused before it runs, and returns the text.
fn misconfigured(sim: Sim) -> String {
    let err = match sim.run() {
        Ok(trace) => panic!("the run should be refused; trace:\n{}", trace.render()),
        Err(e) => e,
    };
    assert!(err.is_misconfigured(), "{err}");
    assert!(err.trace().is_none(), "refused before running: {err}");
    err.to_string()
}

#[test]
fn sim_times_past_the_run_are_refused_naming_the_setting() {
    let cases = [
        (
            Sim::builder().latency_jitter(Duration::MAX),
            "latency_jitter",
        ),
        (Sim::builder().latency(Duration::MAX), "SimBuilder::latency"),
        (
            Sim::builder()
                .latency(ms(600))
                .latency_jitter(ms(600))
                .duration(ms(1000)),
            "no message would arrive",
        ),
        (Sim::builder().tick(Duration::MAX), "SimBuilder::tick"),
        (
            Sim::builder().tick(ms(5000)).duration(ms(1000)),
            "lower SimBuilder::tick",
        ),
        (
            Sim::builder().duration(Duration::ZERO),
            "shorter than one tick",
        ),
    ];
    for (builder, says) in cases {
        let msg = misconfigured(store_and_player(builder));
        assert!(msg.contains(says), "expected {says:?} in: {msg}");
    }
}

#[test]
fn a_huge_duration_with_a_huge_tick_does_not_overflow() {
    // A tick near the limit is refused (longer than a year), and
    // `Duration::MAX` as the duration runs: the run's own bookkeeping
    // (duration + two ticks for turmoil) saturates instead of panicking.
    let builder = Sim::builder()
        .duration(Duration::MAX)
        .tick(Duration::MAX / 2);
    let msg = misconfigured(store_and_player(builder.latency(Duration::MAX)));
    assert!(msg.contains("longer than the longest single wait"), "{msg}");
    // `Duration::MAX` as "until the clients are done" is fine.
    let trace = store_and_player(Sim::builder().duration(Duration::MAX))
        .run()
        .expect("an unbounded duration runs");
    assert_eq!(trace.calls_from("player").count(), 1);
}

#[test]
fn waits_longer_than_the_run_are_refused() {
    let faults = [
        (
            Fault::link_latency("player", "store", Duration::MAX).at(ms(0)),
            "Fault::link_latency",
        ),
        (
            Fault::frames()
                .from("player")
                .kind(FrameType::Headers)
                .delay(ms(61_000)),
            "frame fault delay 61000ms is longer than the run (60000ms)",
        ),
    ];
    for (fault, says) in faults {
        let mut sim = store_and_player(Sim::builder());
        sim.fault(fault);
        let msg = misconfigured(sim);
        assert!(msg.contains(says), "expected {says:?} in: {msg}");
    }
}

#[test]
fn a_fault_that_fails_calls_with_ok_is_refused() {
    for fault in [
        Fault::handler("store").abort(Code::Ok, "fine"),
        Fault::handler("store").fail_first(2, Code::Ok),
    ] {
        let mut sim = store_and_player(Sim::builder());
        sim.fault(fault);
        let msg = misconfigured(sim);
        assert!(msg.contains("with OK, which is not a failure"), "{msg}");
        assert!(msg.contains("`store`"), "{msg}");
    }
}

#[test]
fn host_names_must_read_unambiguously() {
    for name in ["", "inv entory", "store:50051", "a→b", "svc/1"] {
        let mut sim = Sim::builder().seed(1).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client(name, |_| async { Ok(()) });
        let msg = misconfigured(sim);
        assert!(msg.contains(&format!("host name {name:?}")), "{msg}");
        assert!(msg.contains("ASCII letters, digits"), "{msg}");
    }
    // An address, even one turmoil would hand to another host, is refused
    // (it used to panic inside turmoil on the clash).
    for name in ["192.168.0.2", "10.0.0.1"] {
        let mut sim = Sim::builder().seed(1).build();
        sim.server(name, |s| s.add_service(Store::default().into_server()));
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client("player", |_| async { Ok(()) });
        let msg = misconfigured(sim);
        assert!(msg.contains("is an IP address"), "{msg}");
    }
    // The ones people use pass.
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store-1.db_a", |s| {
        s.add_service(Store::default().into_server())
    });
    sim.client("player", |_| async { Ok(()) });
    sim.run().expect("DNS-like names are fine");
}

#[test]
fn a_channel_to_a_client_host_says_it_is_a_client() {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("other", |_| async { Ok(()) });
    sim.client("player", |c| async move {
        let load = LoadRequest {
            match_id: "m1".into(),
        };
        StoreClient::new(c.channel("other")).load(load).await?;
        Ok(())
    });
    let err = sim.run().expect_err("a client host serves nothing");
    let msg = err.to_string();
    assert!(err.is_misconfigured(), "{msg}");
    assert!(msg.contains("`other` is a client host"), "{msg}");
    assert!(msg.contains("connect to a server host: store"), "{msg}");
}

#[test]
fn a_sim_without_a_client_is_refused() {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    let msg = misconfigured(sim);
    assert!(msg.contains("no client host"), "{msg}");
    assert!(msg.contains("Sim::client"), "{msg}");
}

#[test]
fn ticks_below_a_microsecond_and_no_steps_are_refused() {
    let msg = misconfigured(store_and_player(
        Sim::builder().tick(Duration::from_nanos(1)),
    ));
    assert!(msg.contains("SimBuilder::tick(1ns)"), "{msg}");
    assert!(msg.contains("at least 1µs"), "{msg}");
    let msg = misconfigured(store_and_player(Sim::builder().tick(Duration::ZERO)));
    assert!(msg.contains("never advance"), "{msg}");
    let msg = misconfigured(store_and_player(Sim::builder().max_steps(0)));
    assert!(msg.contains("max_steps(0)"), "{msg}");
}

#[test]
fn a_duration_past_the_step_ceiling_is_refused_until_raised() {
    // A day at the default 1 ms tick is 86,400,000 steps: hours of wall
    // time for what is most likely a typo.
    let day = Duration::from_secs(24 * 3600);
    let msg = misconfigured(store_and_player(Sim::builder().duration(day)));
    assert!(msg.contains("86400000 ticks of 1ms"), "{msg}");
    assert!(msg.contains("max_steps (10000000)"), "{msg}");
    // Raised, or with a coarser tick, it runs (and ends when the client
    // is done).
    for builder in [
        Sim::builder().duration(day).max_steps(100_000_000),
        Sim::builder().duration(day).tick(ms(10)),
    ] {
        let trace = store_and_player(builder).run().expect("runs");
        assert_eq!(trace.calls_from("player").count(), 1);
    }
}

/// `Duration::MAX` with a handler that never answers and a call with no
/// deadline used to run for ever; the step ceiling ends it, and the error
/// says what the client waits on.
#[test]
fn an_unbounded_run_that_cannot_finish_stops_at_the_step_ceiling() {
    let mut sim = Sim::builder()
        .seed(1)
        .duration(Duration::MAX)
        .max_steps(5_000)
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(grpc_chaos_scenarios::services::LOAD)
            .hang(),
    );
    sim.client("player", |c| async move {
        let load = LoadRequest {
            match_id: "m1".into(),
        };
        StoreClient::new(c.channel("store")).load(load).await?;
        Ok(())
    });
    let err = sim.run().expect_err("the call never ends");
    assert!(err.is_timeout(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("reached its step ceiling (5000 ticks of 1ms, 5000ms simulated)"),
        "{msg}"
    );
    assert!(
        msg.contains("`player` waiting on r1 /tt.v1.Store/Load to store (no deadline; handler h1 on store has not answered; fault on it: hang)"),
        "{msg}"
    );
    assert!(msg.contains("raise SimBuilder::max_steps"), "{msg}");
    assert_eq!(err.trace().map(|t| t.ended_at()), Some(ms(5_000)));
}

/// A run that ends with a call no handler got says what stood in the way:
/// the server crashed and never came back (the dial to it goes
/// unanswered, so tonic's deadline timer never starts), or a frame fault
/// dropped the request.
#[test]
fn a_timeout_names_the_crashed_host_or_the_dropping_fault() {
    let mut crashed = Sim::builder().seed(1).duration(ms(300)).build();
    crashed.server("store", |s| s.add_service(Store::default().into_server()));
    crashed.fault(Fault::crash("store").at(ms(1)));
    crashed.client("player", |c| async move {
        tokio::time::sleep(ms(5)).await;
        let mut load = tonic::Request::new(LoadRequest::default());
        load.set_timeout(ms(100));
        StoreClient::new(c.channel("store")).load(load).await?;
        Ok(())
    });
    let msg = crashed.run().expect_err("never answered").to_string();
    assert!(
        msg.contains(
            "`player` waiting on r1 /tt.v1.Store/Load to store (no handler on store has it; store \
             crashed at 1ms and was not restarted; its dial to store (attempt 1, since 5ms) is \
             unanswered; its deadline never started: tonic's timer starts once the channel is \
             connected, and it never was (Endpoint::connect_timeout bounds the dial))"
        ),
        "{msg}"
    );

    let mut dropped = store_and_player(Sim::builder().duration(ms(300)));
    for kind in [FrameType::Headers, FrameType::Data] {
        dropped.fault(Fault::frames().from("player").kind(kind).drop());
    }
    let msg = dropped.run().expect_err("never answered").to_string();
    assert!(
        msg.contains(
            "(no deadline; no handler on store has it; 3 frames to store dropped by a frame fault)"
        ),
        "{msg}"
    );
}

#[test]
fn a_crash_and_a_restart_at_the_same_instant_are_refused() {
    let mut sim = store_and_player(Sim::builder());
    sim.fault(Fault::restart("store").at(ms(5)));
    sim.fault(Fault::crash("store").at(ms(5)));
    let msg = misconfigured(sim);
    assert!(
        msg.contains(r#"Fault::crash("store") and Fault::restart("store") are both at 5ms"#),
        "{msg}"
    );
    assert!(
        msg.contains("at least a tick (1ms) after the crash"),
        "{msg}"
    );
    // A tick apart is a story: down, then up again.
    let mut sim = store_and_player(Sim::builder());
    sim.fault(Fault::crash("store").at(ms(5)));
    sim.fault(Fault::restart("store").at(ms(6)));
    sim.run().expect("crash then restart");
}

/// A link is cut by one partition or black hole at a time: a second cut
/// (at the same instant, where the order added would decide which acts,
/// or later, before a repair) is refused; after a repair it is a story.
#[test]
fn a_second_cut_of_a_cut_link_is_refused() {
    let mut sim = store_and_player(Sim::builder());
    sim.fault(Fault::partition("player", "store").at(ms(5)));
    sim.fault(Fault::black_hole("store", "player").at(ms(5)));
    let msg = misconfigured(sim);
    assert!(
        msg.contains("black hole between store and player at 5ms: a partition or black hole already cuts that link then"),
        "{msg}"
    );
    assert!(
        msg.contains(r#"add a Fault::repair("store", "player") before it, or remove one"#),
        "{msg}"
    );
    let mut sim = store_and_player(Sim::builder());
    sim.fault(Fault::partition("player", "store").at(ms(5)));
    sim.fault(Fault::partition("player", "store").at(ms(9)));
    assert!(misconfigured(sim).contains("partition between player and store at 9ms"));
    let mut sim = store_and_player(Sim::builder());
    sim.fault(Fault::partition("player", "store").at(ms(5)));
    sim.fault(Fault::repair("player", "store").at(ms(7)));
    sim.fault(Fault::partition("player", "store").at(ms(9)));
    sim.fault(Fault::repair("player", "store").at(ms(11)));
    sim.run().expect("cut, mended, cut, mended");
}

/// A handler delay may outlast the run (the call is left waiting), but not
/// the longest wait a run simulates.
#[test]
fn a_handler_delay_past_a_year_is_refused() {
    let mut sim = store_and_player(Sim::builder().duration(ms(300)));
    sim.fault(
        Fault::handler("store")
            .method(grpc_chaos_scenarios::services::LOAD)
            .delay(Duration::MAX),
    );
    let msg = misconfigured(sim);
    assert!(
        msg.contains("Fault::handler(..).delay ≥ 1000 years is longer than the longest single wait a run simulates (365 days)"),
        "{msg}"
    );
    let mut sim = Sim::builder().seed(1).duration(ms(300)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(grpc_chaos_scenarios::services::LOAD)
            .delay(Duration::from_secs(3600)),
    );
    sim.client("player", |c| async move {
        let mut load = tonic::Request::new(LoadRequest::default());
        load.set_timeout(ms(100));
        let err = StoreClient::new(c.channel("store"))
            .load(load)
            .await
            .expect_err("deadline");
        assert_eq!(err.code(), Code::Cancelled, "tonic's own timer: {err}");
        Ok(())
    });
    sim.run()
        .expect("an hour's delay in a 300 ms run is a story");
}
