//! The trace's query API, its exports and its assertions, on the reference
//! player → gateway → store chain.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::ORPHAN_GRACE;
use grpc_chaos::trace::{CallEnd, RenderOptions, RunEnd};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{LoadRequest, Rally};
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, HIT, LOAD, SAVE};
use grpc_chaos_tests::ms;
use tonic::Request;

/// The gateway's think time before it calls the store.
const THINK: Duration = Duration::from_millis(120);

/// One story on the chain.
struct Story {
    mode: DeadlineMode,
    /// A handler delay on the store's Save.
    store_delay: Option<Duration>,
    /// The player's deadline on Hit.
    deadline: Duration,
    /// How long the player stays after its call ended.
    linger: Duration,
}

impl Story {
    fn new(mode: DeadlineMode) -> Self {
        Self {
            mode,
            store_delay: None,
            deadline: ms(500),
            linger: Duration::ZERO,
        }
    }

    fn slow_store(mut self, delay: Duration) -> Self {
        self.store_delay = Some(delay);
        self
    }

    fn linger(mut self, linger: Duration) -> Self {
        self.linger = linger;
        self
    }

    fn run(&self) -> grpc_chaos::Result<Trace> {
        let mut sim = Sim::builder().seed(7).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        let mode = self.mode;
        sim.server("gateway", move |s| {
            let store = s.channel("store");
            s.add_service(Gateway::new(store, mode, THINK).into_server())
        });
        if let Some(delay) = self.store_delay {
            sim.fault(Fault::handler("store").method(SAVE).delay(delay));
        }
        let (deadline, linger) = (self.deadline, self.linger);
        sim.client("player", move |c| async move {
            let mut req = Request::new(Rally {
                match_id: "m1".into(),
                player: "a".into(),
                shots: 3,
            });
            req.set_timeout(deadline);
            // Success or not, the trace tells; the assertions are outside.
            let _ = ScoreboardClient::new(c.channel("gateway")).hit(req).await;
            tokio::time::sleep(linger).await;
            Ok(())
        });
        sim.run()
    }
}

#[test]
fn calls_and_runs_link_up_along_the_chain() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    let calls = trace.calls();
    assert_eq!(calls.len(), 2, "{}", trace.render());
    let hit: Vec<_> = trace.calls_from("player").collect();
    let save: Vec<_> = trace.calls_from("gateway").collect();
    assert_eq!((hit.len(), save.len()), (1, 1));
    let (hit, save) = (hit[0], save[0]);
    assert_eq!((hit.target.as_str(), hit.path.as_str()), ("gateway", HIT));
    assert_eq!((save.target.as_str(), save.path.as_str()), ("store", SAVE));
    assert_eq!(trace.calls_from("store").count(), 0);

    assert_eq!(trace.handler_runs().len(), 2);
    let gw: Vec<_> = trace.runs_on("gateway").collect();
    let st: Vec<_> = trace.runs_on("store").collect();
    assert_eq!((gw.len(), st.len()), (1, 1));
    let (gw, st) = (gw[0], st[0]);
    assert_eq!((gw.from.as_str(), gw.call), ("player", Some(hit.id)));
    assert_eq!((st.from.as_str(), st.call), ("gateway", Some(save.id)));
    // The save was made inside the gateway handler's own task.
    assert_eq!((save.parent, save.parent_inferred), (Some(gw.id), false));
    assert_eq!(hit.parent, None);

    assert_eq!(trace.attempts("store", SAVE), 1);
    assert_eq!(trace.attempts("store", LOAD), 0);
    assert_eq!(trace.attempts("gateway", SAVE), 0);
    assert!(matches!(&st.end, RunEnd::Finished { code: "OK", .. }));
    assert_eq!(trace.call(save.id), Some(save));
    assert_eq!(trace.run(st.id), Some(st));
    Ok(())
}

#[test]
fn spawned_downstream_call_gets_an_inferred_parent() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Fresh).run()?;
    let save = trace.calls_from("gateway").next().expect("save call");
    let gw = trace.runs_on("gateway").next().expect("gateway run");
    assert_eq!((save.parent, save.parent_inferred), (Some(gw.id), true));
    assert_eq!(save.timeout, None, "Fresh sends no grpc-timeout");
    Ok(())
}

#[test]
fn call_and_run_timings() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    let hit = &trace.calls()[0];
    assert_eq!(hit.started, Duration::ZERO);
    assert_eq!(hit.timeout, Some(ms(500)));
    assert_eq!(hit.deadline(), Some(ms(500)));
    assert!(hit.outcome().is_some_and(|o| o.is_ok()));
    let latency = hit.latency().expect("ended");
    assert!(
        latency > THINK && latency < THINK + ms(20),
        "latency {latency:?}"
    );
    assert_eq!(hit.gave_up_at(), None, "a successful call was not given up");

    let gw = trace.runs_on("gateway").next().expect("run");
    assert_eq!(gw.deadline(), Some(gw.started + ms(500)));
    assert_eq!(gw.began(), gw.started, "no queue, so work began on arrival");
    // The store's budget is what the gateway had left after thinking.
    let st = trace.runs_on("store").next().expect("run");
    let save = &trace.calls()[1];
    assert_eq!(
        save.timeout,
        Some(gw.deadline().expect("deadline") - save.started)
    );
    // Each hop measures its deadline from its own arrival.
    assert_eq!(
        st.deadline(),
        Some(st.started + save.timeout.expect("sent"))
    );
    Ok(())
}

#[test]
fn given_up_call_records_when() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate)
        .slow_store(ms(2000))
        .linger(ms(100))
        .run()?;
    let hit = &trace.calls()[0];
    let outcome = hit.outcome().expect("ended");
    assert_eq!(outcome.spec_code, "DEADLINE_EXCEEDED");
    assert_eq!(outcome.code, "CANCELLED", "what tonic reported");
    let ended = hit.ended_at.expect("ended");
    assert_eq!(hit.gave_up_at(), Some(ended));
    assert!(ended >= ms(500) && ended < ms(510), "ended at {ended:?}");
    // The gateway's call to the store was dropped with the gateway handler.
    let save = &trace.calls()[1];
    assert_eq!(save.end, CallEnd::Dropped);
    assert_eq!(save.gave_up_at(), save.ended_at);
    Ok(())
}

#[test]
fn json_export_has_seed_hosts_and_timed_events() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    let json: serde_json::Value =
        serde_json::from_str(&trace.to_json()).expect("to_json is valid JSON");
    assert_eq!(json["seed"], 7);
    assert_eq!(
        json["hosts"],
        serde_json::json!(["gateway", "player", "store"])
    );
    let events = json["events"].as_array().expect("events array");
    assert_eq!(events.len(), trace.events().len());
    for (e, ours) in events.iter().zip(trace.events()) {
        assert_eq!(
            e["at_us"].as_u64(),
            Some(ours.at().as_micros() as u64),
            "{e}"
        );
        assert_eq!(e["host"], ours.host.as_str());
        assert!(e["event"].is_string(), "{e}");
    }
    let first = &events[0];
    assert_eq!(first["event"], "call_started");
    assert_eq!(first["path"], HIT);
    assert_eq!(first["timeout_us"], 500_000);
    // Frames are data (see `recorder::event::FrameDetail`), not words: the
    // player's request HEADERS with every field as sent, the
    // gateway's SETTINGS as a list of parameters, WINDOW_UPDATE increments.
    let frame = |host: &str, kind: &str| {
        events
            .iter()
            .find(|e| e["event"] == "frame" && e["host"] == host && e["frame"] == kind)
            .unwrap_or_else(|| panic!("a {kind} from {host}"))
    };
    let request = frame("player", "HEADERS");
    assert_eq!(
        request["flags"],
        serde_json::json!(["END_HEADERS"]),
        "{request}"
    );
    assert_eq!(request["detail"]["block"], "request", "{request}");
    assert_eq!(
        request["detail"]["fields"],
        serde_json::json!([
            [":method", "POST"],
            [":scheme", "http"],
            [":authority", "gateway:50051"],
            [":path", HIT],
            ["grpc-timeout", "500000u"],
            ["te", "trailers"],
            ["content-type", "application/grpc"],
            ["x-grpc-chaos-call", "1"],
            ["user-agent", "tonic/0.14.9"]
        ]),
        "{request}"
    );
    assert_eq!(request["fate"]["fate"], "passed");
    assert!(request.get("invalid").is_none(), "{request}");
    let settings = frame("gateway", "SETTINGS");
    assert_eq!(
        settings["detail"]["settings"][0],
        serde_json::json!({"id": "INITIAL_WINDOW_SIZE", "value": 1_048_576}),
        "{settings}"
    );
    assert!(frame("player", "WINDOW_UPDATE")["detail"]["increment"].is_u64());
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
    for kind in [
        "call_started",
        "call_ended",
        "handler_started",
        "handler_finished",
        "log",
    ] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    Ok(())
}

#[test]
fn write_to_writes_the_summary_and_default_render_the_json_and_the_page() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("trace_queries")
        .join("nested");
    let _ = std::fs::remove_dir_all(&dir);
    let files = trace.write_to(&dir, "chain")?;
    assert_eq!(files.txt, dir.join("chain.txt"));
    assert_eq!(files.json, dir.join("chain.json"));
    assert_eq!(files.html, dir.join("chain.html"));
    let txt = std::fs::read_to_string(files.txt)?;
    let json = std::fs::read_to_string(files.json)?;
    let html = std::fs::read_to_string(files.html)?;
    // The summary, a blank line, then the default (folded) render; the
    // JSON keeps every frame.
    assert_eq!(txt, trace.render_summary(None) + "\n" + &trace.render());
    assert!(txt.starts_with("summary (seed "), "{txt}");
    assert_eq!(json, trace.to_json() + "\n");
    assert_eq!(html, trace.render_html());
    let everything = trace.render_with(&RenderOptions::everything());
    assert!(everything.contains("SETTINGS") && !trace.render().contains("SETTINGS"));
    assert!(json.contains("\"SETTINGS\""), "every frame in the JSON");
    // With a verdict, both say it first.
    let verdict = grpc_chaos::trace::RunVerdict::fail("the store was too slow");
    let files = trace.write_with_verdict(&dir, "judged", &verdict)?;
    let txt = std::fs::read_to_string(files.txt)?;
    assert!(
        txt.lines().nth(1) == Some("  verdict           FAIL: the store was too slow"),
        "{txt}"
    );
    let html = std::fs::read_to_string(files.html)?;
    assert!(html.contains("<p class=\"verdict fail\">FAIL: the store was too slow</p>"));
    Ok(())
}

#[test]
fn propagating_gateway_passes_the_deadline_check() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    trace.assert_deadline_propagated(["player", "gateway", "store"])?;
    // With a slow store the whole chain still carries shrinking deadlines.
    let slow = Story::new(DeadlineMode::Propagate)
        .slow_store(ms(2000))
        .run()?;
    slow.assert_deadline_propagated(["player", "gateway", "store"])?;
    Ok(())
}

#[test]
fn fresh_gateway_fails_the_deadline_check_at_its_hop() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Fresh).run()?;
    trace.assert_deadline_propagated(["player", "gateway"])?;
    let v = trace
        .assert_deadline_propagated(["player", "gateway", "store"])
        .expect_err("the gateway dropped the deadline");
    assert_eq!(v.rule(), "deadline propagation");
    assert!(v.detail().contains("hop gateway→store"), "{v}");
    assert!(v.detail().contains("carried no grpc-timeout"), "{v}");
    assert!(v.detail().contains("r2"), "names the call: {v}");
    // As an error (`?` in a test), it is a violation, and it says how to
    // reproduce the run and where its trace is, as every run's error does.
    let artifact = v.artifact().map(|p| p.display().to_string());
    let err = grpc_chaos::Error::from(v);
    assert!(err.is_violation() && err.violation().is_some());
    assert_eq!(err.seed(), Some(trace.seed()));
    let text = format!("{err:?}");
    let replay = format!(" (reproduce with {})", trace.replay_env());
    assert!(
        text.starts_with("deadline propagation: hop gateway→store"),
        "{text}"
    );
    assert!(text.contains(&replay), "{text}");
    match artifact {
        Some(dir) => assert!(text.ends_with(&format!("; trace in {dir}")), "{text}"),
        None => assert_eq!(text.matches("trace in").count(), 0, "{text}"),
    }
    Ok(())
}

#[test]
fn hop_without_traffic_is_a_violation() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    let v = trace
        .assert_deadline_propagated(["player", "store"])
        .expect_err("player never called store directly");
    assert!(v.detail().contains("hop player→store"), "{v}");
    assert!(
        v.detail().contains("no call from player reached store"),
        "{v}"
    );
    Ok(())
}

#[test]
fn a_chain_naming_an_unknown_host_lists_the_runs_hosts() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate).run()?;
    let v = trace
        .assert_deadline_propagated(["player", "gateway", "nobody"])
        .expect_err("no such host");
    assert_eq!(
        v.detail(),
        "unknown host `nobody` in the chain; the run's hosts are gateway, player, store"
    );
    let v = trace
        .assert_deadline_propagated(["player"])
        .expect_err("one host is no hop");
    assert!(v.detail().contains("has no hop"), "{v}");
    Ok(())
}

#[test]
fn cancelled_chain_leaves_no_orphan_work() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Propagate)
        .slow_store(ms(2000))
        .linger(ms(3000))
        .run()?;
    trace.assert_no_orphan_work()?;
    assert!(trace.orphans().is_empty());
    let st = trace.runs_on("store").next().expect("store run");
    assert_eq!(st.end, RunEnd::Dropped, "{}", trace.render());
    Ok(())
}

#[test]
fn fresh_gateway_leaves_the_store_working_as_an_orphan() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Fresh)
        .slow_store(ms(2000))
        .linger(ms(3000))
        .run()?;
    let st = trace.runs_on("store").next().expect("store run").clone();
    let v = trace
        .assert_no_orphan_work()
        .expect_err("the store kept saving after the player gave up");
    assert_eq!(v.rule(), "orphan work");
    let named = format!("{} {SAVE} on store (from gateway)", st.id);
    assert!(v.detail().contains(&named), "{v}");

    let orphans = trace.orphans();
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    let o = &orphans[0];
    assert_eq!(o.run, st);
    assert_eq!(o.abandoned_at, ms(500), "the player's deadline");
    assert!(o.ran_on > ms(1000), "ran on {:?}", o.ran_on);
    assert_eq!(o.ran_on, st.ended_at.expect("finished") - o.abandoned_at);
    assert!(matches!(&st.end, RunEnd::Finished { code: "OK", .. }));
    Ok(())
}

/// A store that finishes a few milliseconds after the player's deadline
/// did nothing wrong that a cancellation could have prevented: it is
/// within `ORPHAN_GRACE` (a hop or two), so no orphan; 100 ms later is one.
#[test]
fn a_handler_that_finishes_within_a_hop_of_the_deadline_is_no_orphan() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Fresh)
        // The Save reaches the store at 124 ms: it ends at 504 ms.
        .slow_store(ms(380))
        .linger(ms(1000))
        .run()?;
    let st = trace.runs_on("store").next().expect("store run");
    let ended = st.ended_at.expect("finished");
    assert!(
        ended > ms(500) && ended < ms(500) + ORPHAN_GRACE,
        "{ended:?}"
    );
    assert!(trace.orphans().is_empty(), "{:?}", trace.orphans());
    trace.assert_no_orphan_work()?;
    let trace = Story::new(DeadlineMode::Fresh)
        .slow_store(ms(480))
        .linger(ms(1000))
        .run()?;
    let orphans = trace.orphans();
    assert_eq!(orphans.len(), 1, "{orphans:?}");
    assert!(orphans[0].ran_on > ORPHAN_GRACE, "{orphans:?}");
    Ok(())
}

/// The player gives up and the run ends while the store, called with a
/// fresh context, is still working: that work is orphaned just the same,
/// once the run lasted long enough past the give-up for a cancellation to
/// have arrived (`ORPHAN_GRACE`).
#[test]
fn orphan_work_still_running_at_the_end_is_reported() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Fresh)
        .slow_store(ms(2000))
        .linger(ms(100))
        .run()?;
    let st = trace.runs_on("store").next().expect("store run");
    assert!(
        !matches!(st.end, RunEnd::Finished { .. }),
        "the run ended before the store's delay did: {}",
        trace.render()
    );
    assert_eq!(st.end, RunEnd::Running, "{}", trace.render());
    assert!(trace.orphans().iter().any(|o| o.run.id == st.id));
    assert!(trace.assert_no_orphan_work().is_err());
    Ok(())
}

/// A client that returns the moment it gives up (the README's example does)
/// still gets its orphan reported: the run settles for 100 ms after the
/// last client, long enough for a cancellation to have arrived.
#[test]
fn orphans_are_reported_even_when_the_client_returns_at_once() -> grpc_chaos::Result {
    let trace = Story::new(DeadlineMode::Fresh).slow_store(ms(2000)).run()?;
    let st = trace.runs_on("store").next().expect("store run");
    assert_eq!(st.end, RunEnd::Running, "{}", trace.render());
    assert!(
        trace.ended_at() >= ms(500) + grpc_chaos::defaults::SETTLE,
        "{:?}",
        trace.ended_at()
    );
    assert!(trace.orphans().iter().any(|o| o.run.id == st.id));
    Ok(())
}

#[test]
fn same_seed_gives_byte_identical_traces() -> grpc_chaos::Result {
    let story = || {
        Story::new(DeadlineMode::Fresh)
            .slow_store(ms(300))
            .linger(ms(500))
            .run()
    };
    let (a, b) = (story()?, story()?);
    assert_eq!(a.render(), b.render());
    assert_eq!(
        a.render_with(&RenderOptions::everything()),
        b.render_with(&RenderOptions::everything())
    );
    assert_eq!(a.to_json(), b.to_json());
    Ok(())
}

#[test]
fn without_the_wire_tap_calls_are_recorded_and_frames_are_not() -> grpc_chaos::Result {
    let story = |wire_tap: bool| {
        let mut sim = Sim::builder().seed(3).wire_tap(wire_tap).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client("player", |c| async move {
            let mut store = StoreClient::new(c.channel("store"));
            store
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await?;
            Ok(())
        });
        sim.run()
    };
    let frames = |t: &Trace| {
        t.events()
            .iter()
            .filter(|e| matches!(e.kind, EventKind::Frame { .. }))
            .count()
    };
    let (tapped, untapped) = (story(true)?, story(false)?);
    assert!(frames(&tapped) > 0, "{}", tapped.render());
    assert_eq!(frames(&untapped), 0, "{}", untapped.render());
    for t in [&tapped, &untapped] {
        let calls: Vec<_> = t.calls_from("player").collect();
        assert_eq!(calls.len(), 1, "{}", t.render());
        assert_eq!(calls[0].path, LOAD);
    }
    Ok(())
}

/// A proxy of the user's own whose client is a plain tonic channel
/// (`Host::tonic_channel`): the harness does not record its calls, and the
/// deadline check reads the request HEADERS the wire tap saw instead.
mod unrecorded_channel {
    use super::*;
    use grpc_chaos::deadline;
    use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
    use grpc_chaos_scenarios::services::pb::store_server::{Store as StoreApi, StoreServer};
    use grpc_chaos_scenarios::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
    use tonic::{Response, Status};

    /// What the proxy does with the deadline.
    #[derive(Clone, Copy)]
    pub(super) enum Mode {
        Propagate,
        Drop,
        Fixed(Duration),
        /// Two calls at once: one through a recorded channel with the
        /// deadline, one through the plain channel without.
        FanOut,
    }

    /// Forwards Save to the store after 100 ms of its own work.
    pub(super) struct Proxy {
        pub(super) store: StoreClient<tonic::transport::Channel>,
        pub(super) recorded: StoreClient<grpc_chaos::Channel>,
        pub(super) mode: Mode,
    }

    #[tonic::async_trait]
    impl StoreApi for Proxy {
        async fn save(&self, request: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
            tokio::time::sleep(ms(100)).await;
            let mut out = Request::new(request.get_ref().clone());
            match self.mode {
                Mode::Propagate => drop(deadline::propagate(&request, &mut out)),
                Mode::Drop => {}
                Mode::Fixed(d) => out.set_timeout(d),
                Mode::FanOut => {
                    let mut with = Request::new(request.get_ref().clone());
                    deadline::propagate(&request, &mut with);
                    let (mut recorded, mut plain) = (self.recorded.clone(), self.store.clone());
                    let (a, b) = tokio::join!(recorded.save(with), plain.save(out));
                    a?;
                    return b;
                }
            }
            self.store.clone().save(out).await
        }

        async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
            Err(Status::unimplemented("not in this test"))
        }
    }

    fn run(mode: Mode, wire_tap: bool) -> grpc_chaos::Result<Trace> {
        run_with(mode, wire_tap, None)
    }

    /// `run`, with the store's Save `slow` by that much.
    fn run_with(mode: Mode, wire_tap: bool, slow: Option<Duration>) -> grpc_chaos::Result<Trace> {
        let mut sim = Sim::builder().seed(2).wire_tap(wire_tap).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        if let Some(d) = slow {
            sim.fault(Fault::handler("store").method(SAVE).delay(d));
        }
        sim.server("proxy", move |s| {
            let store = StoreClient::new(s.tonic_channel("store"));
            let recorded = StoreClient::new(s.channel("store"));
            s.add_service(StoreServer::new(Proxy {
                store,
                recorded,
                mode,
            }))
        });
        sim.client("player", |c| async move {
            let mut req = Request::new(SaveRequest {
                match_id: "m1".into(),
                points: 1,
            });
            req.set_timeout(ms(500));
            let _ = StoreClient::new(c.channel("proxy")).save(req).await;
            Ok(())
        });
        sim.run()
    }

    #[test]
    fn a_propagated_deadline_passes_the_check() -> grpc_chaos::Result {
        let trace = run(Mode::Propagate, true)?;
        trace.assert_deadline_propagated(["player", "proxy", "store"])?;
        Ok(())
    }

    /// The proxy's call through the plain channel is derived from the
    /// wire: its request HEADERS start it, the store's trailers end it.
    #[test]
    fn a_call_through_the_plain_channel_is_seen_on_the_wire() -> grpc_chaos::Result {
        let trace = run(Mode::Propagate, true)?;
        let calls: Vec<_> = trace.calls_from("proxy").collect();
        assert_eq!(calls.len(), 1, "{}", trace.render());
        let call = calls[0];
        assert!(call.seen_on_wire);
        assert_eq!((call.path.as_str(), call.target.as_str()), (SAVE, "store"));
        // What was left of the player's 500 ms when the proxy made the
        // call, after its 100 ms of work.
        assert_eq!(call.timeout, Some(ms(400)));
        assert_eq!(call.started, ms(103), "when its HEADERS were written");
        assert_eq!(call.outcome().map(|o| o.code), Some("OK"));
        assert!(
            call.parent.is_some() && call.parent_inferred,
            "the proxy's one handler run"
        );
        let text = trace.render();
        assert!(
            text.contains(&format!(
                "{} call {SAVE} grpc-timeout=400ms (seen on the wire at c2 s1, not through a recorded channel: when its caller made it and what it was told are not seen)",
                call.id
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "{} call {SAVE} ended OK (as the wire shows it)",
                call.id
            )),
            "{text}"
        );
        assert!(trace.to_json().contains(r#""seen_on_wire": true"#));
        // Without the tap there is nothing to derive it from.
        let untapped = run(Mode::Propagate, false)?;
        assert!(untapped.calls_from("proxy").next().is_none());
        Ok(())
    }

    /// Without grpc-timeout on the wire, the caller's deadline (if any)
    /// is not seen, and the row says so.
    #[test]
    fn a_call_without_grpc_timeout_says_its_deadline_is_not_seen() -> grpc_chaos::Result {
        let trace = run(Mode::Drop, true)?;
        let call = trace.calls_from("proxy").next().expect("seen on the wire");
        assert_eq!(call.timeout, None);
        assert!(
            trace
                .render()
                .contains("any deadline it set without sending grpc-timeout and what it was told are not seen"),
            "{}",
            trace.render()
        );
        Ok(())
    }

    /// A call through a recorded channel carries the harness's call id and
    /// is not counted again from the wire.
    #[test]
    fn a_recorded_call_is_not_counted_twice() -> grpc_chaos::Result {
        let trace = run(Mode::FanOut, true)?;
        let calls: Vec<_> = trace.calls_from("proxy").collect();
        assert_eq!(calls.len(), 2, "{}", trace.render());
        assert_eq!(
            calls.iter().filter(|c| c.seen_on_wire).count(),
            1,
            "one recorded, one from the wire"
        );
        Ok(())
    }

    /// A deadline the plain channel's caller sent, expiring: its caller's
    /// RST_STREAM CANCEL at the grpc-timeout is tonic's timer, and the
    /// call is a finding like a recorded one.
    #[test]
    fn an_expired_deadline_on_the_wire_is_a_finding() -> grpc_chaos::Result {
        let trace = run_with(Mode::Fixed(ms(50)), true, Some(ms(300)))?;
        let call = trace.calls_from("proxy").next().expect("seen on the wire");
        let o = call.outcome().expect("ended by the reset");
        assert_eq!(
            (o.code, o.message.as_str(), o.spec_code),
            ("CANCELLED", "Timeout expired", "DEADLINE_EXCEEDED")
        );
        assert_eq!(call.ended_at, Some(call.started + ms(50)));
        let json = trace.to_json();
        assert!(
            json.contains(&format!(r#""call": "{}""#, call.id))
                && json.contains(r#""findings": ["#),
            "{json}"
        );
        let summary = trace.render_summary(None);
        assert!(
            summary.contains(&format!(
                "tonic reported CANCELLED \"Timeout expired\" where the spec requires DEADLINE_EXCEEDED (deadline expired: spec DEADLINE_EXCEEDED (statuscodes.md)): {}",
                call.id
            )),
            "{summary}"
        );
        assert!(trace
            .render()
            .contains("its caller reset the stream at its grpc-timeout"));
        Ok(())
    }

    /// The player's deadline runs out first: its reset cancels the proxy's
    /// handler, which drops its call through the plain channel 1 ms before
    /// the grpc-timeout that call sent would have. That is a dropped call,
    /// not tonic's timer (it starts as the request is sent, and fires at
    /// the timeout, as the test above measures), and not a finding.
    #[test]
    fn a_reset_before_the_grpc_timeout_sent_is_a_dropped_call() -> grpc_chaos::Result {
        let trace = run_with(Mode::Propagate, true, Some(ms(600)))?;
        let call = trace.calls_from("proxy").next().expect("seen on the wire");
        assert_eq!((call.started, call.timeout), (ms(103), Some(ms(400))));
        assert_eq!(call.outcome(), None, "{}", trace.render());
        assert_eq!(call.ended_at, Some(ms(502)), "{}", trace.render());
        let text = trace.render();
        assert!(
            text.contains(&format!(
                "{} call {SAVE} dropped by the caller (seen on the wire: it reset the stream 1ms before the grpc-timeout it sent ran out, and tonic's timer for that timeout starts as the request is sent, so it had not fired)",
                call.id
            )),
            "{text}"
        );
        assert!(!trace.to_json().contains(r#""findings": [{"#), "{text}");
        Ok(())
    }

    #[test]
    fn a_dropped_deadline_is_found_on_the_wire() -> grpc_chaos::Result {
        let trace = run(Mode::Drop, true)?;
        let v = trace
            .assert_deadline_propagated(["player", "proxy", "store"])
            .expect_err("the proxy dropped the deadline");
        // The proxy's handler started at 2 ms with 500 ms to go; after its
        // 100 ms of work the channel connects (a round trip), and the
        // request leaves at 103 ms with 399 ms of the budget left.
        assert_eq!(
            v.detail(),
            "hop proxy→store: h2 /tt.v1.Store/Save: the request written at 103ms carried no grpc-timeout; the caller had 399ms left"
        );
        Ok(())
    }

    #[test]
    fn without_the_wire_tap_the_hop_cannot_be_checked() -> grpc_chaos::Result {
        let trace = run(Mode::Propagate, false)?;
        let v = trace
            .assert_deadline_propagated(["player", "proxy", "store"])
            .expect_err("nothing to check against");
        assert!(v.detail().contains("the wire tap saw no request"), "{v}");
        Ok(())
    }

    #[test]
    fn a_fresh_longer_deadline_is_found_on_the_wire() -> grpc_chaos::Result {
        let trace = run(Mode::Fixed(ms(5_000)), true)?;
        let v = trace
            .assert_deadline_propagated(["player", "proxy", "store"])
            .expect_err("the proxy set its own, longer deadline");
        assert_eq!(
            v.detail(),
            "hop proxy→store: h2 /tt.v1.Store/Save: the request written at 103ms sent grpc-timeout=5000ms but the caller had only 500ms left when its handler began"
        );
        Ok(())
    }

    #[test]
    fn a_missing_deadline_beside_a_recorded_call_is_found() -> grpc_chaos::Result {
        let trace = run(Mode::FanOut, true)?;
        let v = trace
            .assert_deadline_propagated(["player", "proxy", "store"])
            .expect_err("the plain call carried no deadline");
        assert!(v.detail().contains("carried no grpc-timeout"), "{v}");
        Ok(())
    }
}

/// A call through a plain tonic channel (`Host::tonic_channel`) that fails
/// before its connection is up writes no frame; it is recorded where its
/// channel's connection attempt failed, with what tonic told its caller.
mod plain_channel_without_a_connection {
    use super::*;
    use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
    use grpc_chaos_scenarios::services::pb::SaveRequest;
    use std::sync::{Arc, Mutex};

    /// What the caller's tonic said, by call.
    type Seen = Arc<Mutex<Vec<(tonic::Code, String)>>>;

    fn save() -> SaveRequest {
        SaveRequest {
            match_id: "m1".into(),
            points: 1,
        }
    }

    /// Two saves from the player through a plain channel to a store that
    /// is shut down (refused) or partitioned away (`connect_timeout`
    /// 100 ms), each on a fresh channel; `recorded`: through the harness's
    /// channel instead.
    fn run(partitioned: bool, recorded: bool) -> grpc_chaos::Result<(Trace, Seen)> {
        let mut sim = Sim::builder().seed(3).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.fault(if partitioned {
            Fault::partition("player", "store").at(Duration::ZERO)
        } else {
            Fault::shutdown("store").at(Duration::ZERO)
        });
        let seen = Seen::default();
        let said = seen.clone();
        sim.client("player", move |c| async move {
            tokio::time::sleep(ms(10)).await;
            let endpoint = |e: tonic::transport::Endpoint| e.connect_timeout(ms(100));
            for _ in 0..2 {
                let result = if recorded {
                    StoreClient::new(c.channel_with("store", endpoint))
                        .save(save())
                        .await
                } else {
                    StoreClient::new(c.tonic_channel_with("store", endpoint))
                        .save(save())
                        .await
                };
                let status = result.expect_err("no server to answer");
                said.lock()
                    .unwrap()
                    .push((status.code(), status.message().to_owned()));
            }
            Ok(())
        });
        Ok((sim.run()?, seen))
    }

    #[test]
    fn a_refused_connection_fails_the_call_that_waited_for_it() -> grpc_chaos::Result {
        let (trace, seen) = run(false, false)?;
        let calls = trace.calls();
        assert_eq!(calls.len(), 2, "{}", trace.render());
        let seen = seen.lock().unwrap().clone();
        for (call, (code, message)) in calls.iter().zip(&seen) {
            assert!(call.failed_connecting && !call.seen_on_wire);
            assert_eq!(
                (call.host.as_str(), call.target.as_str()),
                ("player", "store")
            );
            assert_eq!(call.path, "", "the method is not seen");
            let o = call.outcome().expect("a status");
            assert_eq!(
                (o.code, o.message.as_str()),
                ("UNAVAILABLE", message.as_str())
            );
            assert_eq!(*code, tonic::Code::Unavailable);
            assert_eq!(o.spec_code, "UNAVAILABLE");
            assert_eq!(call.ended_at, Some(call.started), "at the failed attempt");
        }
        assert_eq!(calls[0].ended_at, Some(ms(11)), "{}", trace.render());
        let text = trace.render();
        assert!(
            text.contains(&format!(
                "{} call ended UNAVAILABLE \"connect to store: connection refused\" before its connection was up (a call through a plain tonic channel, seen where its channel's connect attempt 1 ended without a connection: tonic fails the call that waited for it; its method, start and deadline are not seen)",
                calls[0].id
            )),
            "{text}"
        );
        assert!(trace.to_json().contains(r#""failed_connecting": true"#));
        Ok(())
    }

    /// tonic gives a dial its connect timeout cut short UNKNOWN "transport
    /// error" (measured on the recorded channel below), which the spec
    /// wants UNAVAILABLE: a finding.
    #[test]
    fn a_connect_timeout_fails_the_call_with_tonics_transport_error() -> grpc_chaos::Result {
        let (trace, seen) = run(true, false)?;
        let calls = trace.calls();
        assert_eq!(calls.len(), 2, "{}", trace.render());
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            vec![(tonic::Code::Unknown, "transport error".to_owned()); 2]
        );
        let o = calls[0].outcome().expect("a status");
        assert_eq!(
            (o.code, o.message.as_str(), o.spec_code),
            ("UNKNOWN", "transport error", "UNAVAILABLE")
        );
        assert_eq!(calls[0].ended_at, Some(ms(110)));
        let summary = trace.render_summary(None);
        assert!(
            summary.contains(&format!(
                "tonic reported UNKNOWN \"transport error\" where the spec requires UNAVAILABLE (connection failed: spec UNAVAILABLE (statuscodes.md)): {} {}",
                calls[0].id, calls[1].id
            )),
            "{summary}"
        );
        // The recorded channel's calls say the same, and are not counted
        // twice.
        let (recorded, _) = run(true, true)?;
        let outcomes: Vec<_> = recorded
            .calls()
            .iter()
            .map(|c| c.outcome().cloned())
            .collect();
        assert_eq!(outcomes.len(), 2, "{}", recorded.render());
        assert!(recorded.calls().iter().all(|c| !c.failed_connecting));
        assert_eq!(outcomes[0].as_ref(), Some(o));
        Ok(())
    }

    /// A dial that goes with its channel fails no call: the proxy's
    /// handler dials the store across a partition when the proxy crashes,
    /// and its tasks (the channel's, the handler's) are dropped.
    #[test]
    fn a_dial_dropped_with_its_channel_fails_no_call() -> grpc_chaos::Result {
        use super::unrecorded_channel::{Mode, Proxy};
        use grpc_chaos_scenarios::services::pb::store_server::StoreServer;
        let mut sim = Sim::builder().seed(3).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.server("proxy", |s| {
            let store = StoreClient::new(s.tonic_channel("store"));
            let recorded = StoreClient::new(s.channel("store"));
            s.add_service(StoreServer::new(Proxy {
                store,
                recorded,
                mode: Mode::Drop,
            }))
        });
        sim.fault(Fault::partition("proxy", "store").at(Duration::ZERO));
        sim.fault(Fault::crash("proxy").at(ms(300)));
        sim.client("player", |c| async move {
            let _ = StoreClient::new(c.channel("proxy")).save(save()).await;
            Ok(())
        });
        let trace = sim.run()?;
        assert_eq!(trace.calls_from("proxy").count(), 0, "{}", trace.render());
        assert!(
            trace
                .events()
                .iter()
                .any(|e| matches!(e.kind, EventKind::ConnectAbandoned { .. })),
            "{}",
            trace.render()
        );
        Ok(())
    }
}

/// A response that is only an HTTP error (hyper's 431 for a request whose
/// headers exceed its limit): the call ends with the code tonic maps from
/// the HTTP status, and the trace says what the client got.
#[test]
fn an_http_error_response_is_recorded_as_the_status_tonic_reports() -> grpc_chaos::Result {
    use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
    use grpc_chaos_scenarios::services::pb::SaveRequest;
    use std::sync::{Arc, Mutex};
    let got = Arc::new(Mutex::new(None));
    let seen = got.clone();
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", move |c| async move {
        let mut req = Request::new(SaveRequest::default());
        let big = tonic::metadata::MetadataValue::try_from("b".repeat(30 * 1024))?;
        req.metadata_mut().insert("x-big", big);
        let err = StoreClient::new(c.channel("store"))
            .save(req)
            .await
            .expect_err("refused by the server's HTTP/2 stack");
        *seen.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((err.code(), err.message().to_owned()));
        Ok(())
    });
    let trace = sim.run()?;
    let got = got.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let message = "grpc-status header missing, mapped from HTTP status code 431";
    assert_eq!(got, Some((tonic::Code::Unknown, message.to_owned())));
    let outcome = trace.calls()[0]
        .outcome()
        .cloned()
        .expect("the call ended with a status, not dropped");
    assert_eq!(
        (outcome.code, outcome.message.as_str()),
        ("UNKNOWN", message)
    );
    Ok(())
}

/// On a slow link the cancellation of a call that gave up takes a while to
/// reach the handler; the run settles long enough for it to land, so a
/// handler the caller cancelled is shown dropped, not as orphan work.
#[test]
fn on_a_slow_link_a_cancelled_handler_is_not_called_an_orphan() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).latency(ms(200)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(LOAD).delay(ms(5_000)));
    sim.client("player", |c| async move {
        let mut req = Request::new(LoadRequest::default());
        req.set_timeout(ms(500));
        let err = StoreClient::new(c.channel("store"))
            .load(req)
            .await
            .expect_err("the store is slower than the deadline");
        assert_eq!(grpc_chaos::spec_code(&err), tonic::Code::DeadlineExceeded);
        Ok(())
    });
    let trace = sim.run()?;
    let run = trace
        .handler_runs()
        .first()
        .expect("the store ran the call");
    assert!(matches!(run.end, RunEnd::Dropped), "{}", trace.render());
    trace.assert_no_orphan_work()?;
    // tonic's clock started once the connection was up, a link latency
    // after the call: the call ended that much past the deadline it meant.
    let overruns: Vec<(u32, Duration)> = trace
        .deadline_overruns(ms(2))
        .into_iter()
        .map(|(c, d)| (c.id.0, d))
        .collect();
    assert_eq!(overruns, [(1, ms(200))], "{}", trace.render());
    Ok(())
}

#[test]
fn a_call_on_a_ready_channel_ends_at_its_deadline() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::handler("store").method(LOAD).delay(ms(5_000)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        // Connects, on a method the fault leaves alone.
        store
            .save(grpc_chaos_scenarios::services::pb::SaveRequest::default())
            .await?;
        let mut req = Request::new(LoadRequest::default());
        req.set_timeout(ms(500));
        store.load(req).await.expect_err("slower than the deadline");
        Ok(())
    });
    let trace = sim.run()?;
    assert!(
        trace.deadline_overruns(ms(2)).is_empty(),
        "{}",
        trace.render()
    );
    Ok(())
}

/// A call still open when the run ended, long past its deadline (its
/// channel is still connecting over a slow link, and tonic's clock has not
/// started), is the worst overrun: it is listed with how far past its
/// deadline the run got.
#[test]
fn a_call_stuck_past_its_deadline_at_the_end_is_an_overrun() {
    let mut sim = Sim::builder().seed(1).duration(ms(1_500)).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(Fault::link_latency("player", "store", ms(1_400)).at(ms(0)));
    sim.client("player", |c| async move {
        let mut req = Request::new(LoadRequest::default());
        req.set_timeout(ms(200));
        StoreClient::new(c.channel("store")).load(req).await?;
        Ok(())
    });
    let err = sim
        .run()
        .expect_err("the call is still connecting at the end");
    let trace = err.trace().expect("kept");
    let overruns: Vec<(u32, Duration)> = trace
        .deadline_overruns(ms(2))
        .into_iter()
        .map(|(c, d)| (c.id.0, d))
        .collect();
    assert!(err.to_string().contains("reached its duration"), "{err}");
    assert_eq!(overruns, [(1, trace.ended_at() - ms(200))], "{err}");
    assert!(overruns[0].1 >= ms(1_250), "{overruns:?}");
}
