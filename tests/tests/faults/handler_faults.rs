//! Each handler fault against the real Store, checked on the trace and on
//! what the client saw.

use grpc_chaos::recorder::event::{self, FaultAction, FaultReply};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{spec_code, Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::{LoadRequest, SaveRequest};
use grpc_chaos_scenarios::services::{Store, LOAD, SAVE};
use grpc_chaos_tests::ms;
use tonic::{Code, Request};

fn save() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 3,
    }
}

/// Runs `store` (a Store with `work` per Save) under `faults`, with a
/// `player` client running `body`.
fn run_store<F, Fut>(work: Duration, faults: Vec<Fault>, body: F) -> grpc_chaos::Result<Trace>
where
    F: FnOnce(StoreClient<grpc_chaos::Channel>) -> Fut + 'static,
    Fut: std::future::Future<Output = grpc_chaos::client::ClientResult> + 'static,
{
    let mut sim = Sim::builder().seed(21).build();
    sim.server("store", move |s| {
        s.add_service(Store::with_work(work).into_server())
    });
    for f in faults {
        sim.fault(f);
    }
    sim.client("player", move |c| {
        body(StoreClient::new(c.channel("store")))
    });
    sim.run()
}

/// How many `saved` log lines the Store wrote (one per Save that ran).
fn saved_logs(trace: &Trace) -> usize {
    trace
        .events_on("store")
        .filter(|e| matches!(&e.kind, EventKind::Log(log) if log.message.starts_with("saved")))
        .count()
}

fn fault_actions(trace: &Trace) -> Vec<FaultAction> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::FaultFired(fault_fired) => {
                let event::FaultFired { action, .. } = &**fault_fired;
                Some(action.clone())
            }
            _ => None,
        })
        .collect()
}

fn abort_unavailable() -> FaultAction {
    FaultAction::Abort {
        code: "UNAVAILABLE",
        reply: FaultReply::default(),
    }
}

#[test]
fn delay_holds_the_matching_method_only() -> grpc_chaos::Result {
    let trace = run_store(
        Duration::ZERO,
        vec![Fault::handler("store").method(SAVE).delay(ms(300))],
        |mut store| async move {
            store.save(save()).await?;
            store
                .load(LoadRequest {
                    match_id: "m1".into(),
                })
                .await?;
            Ok(())
        },
    )?;
    let runs = trace.handler_runs();
    let (save_run, load_run) = (&runs[0], &runs[1]);
    assert_eq!(
        (save_run.path.as_str(), load_run.path.as_str()),
        (SAVE, LOAD)
    );
    let ran = save_run.ended_at.expect("finished") - save_run.started;
    assert_eq!(ran, ms(300), "{}", trace.render());
    let load_ran = load_run.ended_at.expect("finished") - load_run.started;
    assert!(load_ran < ms(5), "Load is not delayed: {load_ran:?}");
    let save_call = &trace.calls()[0];
    let latency = save_call.latency().expect("ended");
    assert!(
        latency >= ms(300) && latency < ms(320),
        "call latency {latency:?}"
    );
    assert_eq!(fault_actions(&trace), [FaultAction::Delay { by: ms(300) }]);
    assert_eq!(saved_logs(&trace), 1, "the handler ran after the delay");
    Ok(())
}

#[test]
fn abort_answers_with_the_status_without_running_the_handler() -> grpc_chaos::Result {
    let trace = run_store(
        Duration::ZERO,
        vec![Fault::handler("store")
            .method(SAVE)
            .abort(Code::Unavailable, "down")],
        |mut store| async move {
            let err = store.save(save()).await.expect_err("aborted");
            assert_eq!((err.code(), err.message()), (Code::Unavailable, "down"));
            Ok(())
        },
    )?;
    let outcome = trace.calls()[0].outcome().expect("ended");
    assert_eq!(
        (outcome.code, outcome.message.as_str()),
        ("UNAVAILABLE", "down")
    );
    let run = &trace.handler_runs()[0];
    assert_eq!(
        run.end,
        RunEnd::Finished {
            code: "UNAVAILABLE",
            message: "down".into()
        }
    );
    assert_eq!(saved_logs(&trace), 0, "{}", trace.render());
    assert_eq!(fault_actions(&trace), [abort_unavailable()]);
    Ok(())
}

#[test]
fn hang_until_the_client_deadline_drops_the_handler() -> grpc_chaos::Result {
    let trace = run_store(
        Duration::ZERO,
        vec![Fault::handler("store").method(SAVE).hang()],
        |mut store| async move {
            let mut req = Request::new(save());
            req.set_timeout(ms(200));
            let err = store.save(req).await.expect_err("hung");
            assert_eq!(spec_code(&err), Code::DeadlineExceeded, "{err:?}");
            // Stay until the cancellation has reached the store: a run that
            // ends here would tear the store down instead.
            tokio::time::sleep(ms(50)).await;
            Ok(())
        },
    )?;
    let call = &trace.calls()[0];
    assert_eq!(
        call.outcome().map(|o| o.spec_code),
        Some("DEADLINE_EXCEEDED")
    );
    let run = &trace.handler_runs()[0];
    assert_eq!(run.end, RunEnd::Dropped, "{}", trace.render());
    let dropped = run.ended_at.expect("dropped");
    assert!(
        dropped >= ms(200) && dropped < ms(210),
        "dropped soon after the client gave up: {dropped:?}"
    );
    assert_eq!(saved_logs(&trace), 0);
    Ok(())
}

#[test]
fn fail_first_fails_n_attempts_then_lets_them_through() -> grpc_chaos::Result {
    let trace = run_store(
        Duration::ZERO,
        vec![Fault::handler("store")
            .method(SAVE)
            .fail_first(2, Code::Unavailable)],
        |mut store| async move {
            for _ in 0..2 {
                let err = store.save(save()).await.expect_err("injected");
                assert_eq!(err.code(), Code::Unavailable);
            }
            let total = store.save(save()).await?.into_inner().total;
            assert_eq!(total, 3, "only the third attempt ran the handler");
            Ok(())
        },
    )?;
    assert_eq!(trace.attempts("store", SAVE), 3);
    let messages: Vec<String> = trace
        .calls()
        .iter()
        .map(|c| c.outcome().expect("ended").message.clone())
        .collect();
    assert_eq!(
        messages,
        ["injected failure 1/2", "injected failure 2/2", ""]
    );
    let nth: Vec<u32> = trace.handler_runs().iter().map(|r| r.nth).collect();
    assert_eq!(nth, [1, 2, 3]);
    assert_eq!(
        fault_actions(&trace),
        [1, 2].map(|nth| FaultAction::FailFirst {
            nth,
            of: 2,
            code: "UNAVAILABLE",
            reply: FaultReply::default(),
        })
    );
    assert_eq!(saved_logs(&trace), 1);
    Ok(())
}

#[test]
fn concurrency_limit_queues_the_rest_and_finishes_in_waves() -> grpc_chaos::Result {
    let trace = run_store(
        ms(100),
        vec![Fault::handler("store").method(SAVE).concurrency_limit(2)],
        |store| async move {
            let calls: Vec<_> = (0..6)
                .map(|_| {
                    let mut store = store.clone();
                    tokio::spawn(async move { store.save(save()).await })
                })
                .collect();
            for call in calls {
                call.await??;
            }
            Ok(())
        },
    )?;
    let runs = trace.handler_runs();
    assert_eq!(runs.len(), 6);
    let first = runs[0].started;
    assert!(
        runs.iter().all(|r| r.started == first),
        "all six arrive together:\n{}",
        trace.render()
    );
    let queued: Vec<bool> = runs.iter().map(|r| r.dequeued.is_some()).collect();
    assert_eq!(queued, [false, false, true, true, true, true]);
    let dequeued_events = trace
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::HandlerDequeued { .. }))
        .count();
    assert_eq!(dequeued_events, 4);
    let mut finished: Vec<Duration> = runs
        .iter()
        .map(|r| r.ended_at.expect("finished") - first)
        .collect();
    finished.sort();
    assert_eq!(
        finished,
        [ms(100), ms(100), ms(200), ms(200), ms(300), ms(300)],
        "{}",
        trace.render()
    );
    // Each queued run began work when a slot freed up.
    let began: Vec<Duration> = runs.iter().map(|r| r.began() - first).collect();
    assert_eq!(began, [ms(0), ms(0), ms(100), ms(100), ms(200), ms(200)]);
    Ok(())
}

#[test]
fn window_applies_only_to_requests_arriving_inside_it() -> grpc_chaos::Result {
    let trace = run_store(
        Duration::ZERO,
        vec![Fault::handler("store")
            .method(SAVE)
            .during(ms(100), ms(200))
            .abort(Code::Unavailable, "window")],
        |mut store| async move {
            let t0 = tokio::time::Instant::now();
            for at in [0, 150, 250] {
                tokio::time::sleep_until(t0 + ms(at)).await;
                let _ = store.save(save()).await;
            }
            Ok(())
        },
    )?;
    let codes: Vec<&str> = trace
        .calls()
        .iter()
        .map(|c| c.outcome().expect("ended").code)
        .collect();
    assert_eq!(codes, ["OK", "UNAVAILABLE", "OK"], "{}", trace.render());
    assert_eq!(saved_logs(&trace), 2);
    Ok(())
}

#[test]
fn restart_runs_the_server_closure_again() -> grpc_chaos::Result {
    let setups = Arc::new(AtomicUsize::new(0));
    let counter = setups.clone();
    let mut sim = Sim::builder().seed(21).build();
    sim.server("store", move |s| {
        counter.fetch_add(1, Ordering::SeqCst);
        s.add_service(Store::default().into_server())
    });
    sim.fault(Fault::crash("store").at(ms(100)));
    sim.fault(Fault::restart("store").at(ms(200)));
    sim.client("player", |c| async move {
        let mut store = StoreClient::new(c.channel("store"));
        assert_eq!(store.save(save()).await?.into_inner().total, 3);
        tokio::time::sleep(ms(300)).await;
        // The restarted store starts from scratch (a fresh `Store`).
        let total = store.save(save()).await?.into_inner().total;
        assert_eq!(total, 3, "state did not survive the restart");
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(setups.load(Ordering::SeqCst), 2, "{}", trace.render());
    let host_events: Vec<(Duration, &EventKind)> = trace
        .events_on("store")
        .filter(|e| matches!(e.kind, EventKind::HostCrashed | EventKind::HostRestarted))
        .map(|e| (e.at(), &e.kind))
        .collect();
    assert_eq!(
        host_events,
        [
            (ms(100), &EventKind::HostCrashed),
            (ms(200), &EventKind::HostRestarted)
        ]
    );
    Ok(())
}

/// A status the server chose is the server's: a handler that answers with
/// tonic's own words for an expired deadline, or an UNKNOWN that reads like
/// an h2 error, is shown as sent, with no finding against the caller's
/// tonic (which only decoded it).
#[test]
fn a_status_the_server_sent_is_shown_as_sent() -> grpc_chaos::Result {
    let sent = [
        (Code::Cancelled, "Timeout expired"),
        (
            Code::Unknown,
            "h2 protocol error: error reading a body from connection",
        ),
    ];
    for (code, message) in sent {
        let trace = run_store(
            Duration::ZERO,
            vec![Fault::handler("store").method(SAVE).abort(code, message)],
            move |mut store| async move {
                let err = store.save(save()).await.expect_err("aborted");
                assert_eq!((err.code(), err.message()), (code, message));
                assert_eq!(spec_code(&err), code, "{err:?}");
                Ok(())
            },
        )?;
        let o = trace.calls()[0].outcome().expect("ended");
        assert_eq!(
            (o.code, o.spec_code, o.rule),
            (o.code, o.code, None),
            "{o:?}"
        );
        assert!(!trace.render().contains("tonic said"), "{}", trace.render());
    }
    Ok(())
}

/// Several faults on one request act in the order added: the delay, then
/// the abort, which answers; the fail_first behind it never sees the
/// request, so it neither counts it nor is called fired.
#[test]
fn faults_on_one_request_act_in_the_order_added_until_one_answers() -> grpc_chaos::Result {
    let trace = run_store(
        Duration::ZERO,
        vec![
            Fault::handler("store").method(SAVE).delay(ms(30)),
            Fault::handler("store")
                .method(SAVE)
                .abort(Code::Unavailable, "down"),
            Fault::handler("store")
                .method(SAVE)
                .fail_first(1, Code::Aborted),
        ],
        |mut store| async move {
            let err = store.save(save()).await.expect_err("aborted");
            assert_eq!(err.code(), Code::Unavailable);
            Ok(())
        },
    )?;
    assert_eq!(
        fault_actions(&trace),
        [FaultAction::Delay { by: ms(30) }, abort_unavailable()]
    );
    let render = trace.render();
    assert!(
        render.contains("fault never fired: handler fault on store for /tt.v1.Store/Save: fail the first 1 with ABORTED"),
        "{render}"
    );
    Ok(())
}
