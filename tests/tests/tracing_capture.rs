//! `tracing` events that user code emits inside a host become `Log` events
//! in the trace, on that host, at the simulated time.

use grpc_chaos::recorder::event;
use std::time::Duration;

use grpc_chaos::trace::RenderOptions;
use grpc_chaos::{Event, EventKind, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

const STORE_TARGET: &str = "grpc_chaos_scenarios::services::store";

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn logs(trace: &Trace) -> Vec<&Event> {
    trace
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::Log(_)))
        .collect()
}

/// `player` saves `points` into each of `stores` in turn, `gap` apart.
fn save_into(stores: &'static [&'static str], work: Duration, gap: Duration) -> Sim {
    let mut sim = Sim::builder().seed(4).build();
    for name in stores {
        sim.server(*name, move |s| {
            s.add_service(Store::with_work(work).into_server())
        });
    }
    sim.client("player", move |c| async move {
        for (i, name) in stores.iter().enumerate() {
            let req = SaveRequest {
                match_id: format!("m{i}"),
                points: 3,
            };
            StoreClient::new(c.channel(name)).save(req).await?;
            tokio::time::sleep(gap).await;
        }
        Ok(())
    });
    sim
}

#[test]
fn handler_log_is_a_log_event_on_its_host_at_sim_time() -> grpc_chaos::Result {
    let trace = save_into(&["store"], ms(100), Duration::ZERO).run()?;
    let logs = logs(&trace);
    assert_eq!(logs.len(), 1, "{}", trace.render());
    let log = logs[0];
    assert_eq!(log.host, "store");
    assert_eq!(
        log.kind,
        EventKind::Log(Box::new(event::Log {
            level: "INFO",
            target: STORE_TARGET.into(),
            message: "saved match_id=m0 total=3".into(),
        }))
    );
    // The Store logs after its 100 ms of work, just before it returns.
    let run = &trace.handler_runs()[0];
    assert_eq!(log.at(), run.started + ms(100));
    assert_eq!(Some(log.at()), run.ended_at);
    assert!(
        trace.render().contains(&format!(
            "store                log INFO {STORE_TARGET}: saved match_id=m0 total=3"
        )),
        "{}",
        trace.render()
    );
    Ok(())
}

#[test]
fn each_log_lands_on_the_host_that_emitted_it() -> grpc_chaos::Result {
    let trace = save_into(&["store-a", "store-b"], ms(10), ms(50)).run()?;
    let placed: Vec<(&str, &str)> = logs(&trace)
        .iter()
        .map(|e| match &e.kind {
            EventKind::Log(log) => {
                let event::Log { message, .. } = &**log;
                (e.host.as_str(), message.as_str())
            }
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        placed,
        [
            ("store-a", "saved match_id=m0 total=3"),
            ("store-b", "saved match_id=m1 total=3")
        ]
    );
    // Later in the run, later in sim time: the clock is the host's.
    let at: Vec<Duration> = logs(&trace).iter().map(|e| e.at()).collect();
    assert!(at[1] >= at[0] + ms(60), "{at:?}");
    Ok(())
}

#[test]
fn the_stacks_own_logs_are_not_captured() -> grpc_chaos::Result {
    // h2, hyper, tonic and turmoil log at DEBUG/TRACE on every frame; a
    // trace must only show what the user's code logged.
    let trace = save_into(&["store"], ms(10), Duration::ZERO).run()?;
    let everything = trace.render_with(&RenderOptions::everything());
    for e in logs(&trace) {
        let EventKind::Log(log) = &e.kind else {
            unreachable!()
        };
        assert_eq!(log.target, STORE_TARGET, "{everything}");
    }
    Ok(())
}

/// Tests that emit their own `tracing` events.
mod own_events {
    use std::time::Duration;

    use grpc_chaos::trace::RenderOptions;
    use grpc_chaos::{EventKind, Fault, Sim};
    use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
    use grpc_chaos_scenarios::services::pb::store_server::{Store as StoreApi, StoreServer};
    use grpc_chaos_scenarios::services::pb::{LoadReply, LoadRequest, SaveReply, SaveRequest};
    use grpc_chaos_scenarios::services::Store;
    use tonic::{Request, Response, Status};

    use super::{logs, ms};

    fn messages(trace: &grpc_chaos::Trace) -> Vec<(String, &'static str, String)> {
        logs(trace)
            .iter()
            .map(|e| match &e.kind {
                EventKind::Log(log) => (e.host.to_string(), log.level, log.message.clone()),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn debug_logs_are_hidden_by_default_and_shown_with_everything() -> grpc_chaos::Result {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| s.add_service(Store::default().into_server()));
        sim.client("player", |c| async move {
            tracing::debug!(attempt = 1, "about to save");
            tracing::trace!("very chatty");
            StoreClient::new(c.channel("store"))
                .save(SaveRequest::default())
                .await?;
            tracing::warn!("saved, but slowly");
            Ok(())
        });
        let trace = sim.run()?;
        let levels: Vec<(String, &str)> = messages(&trace)
            .into_iter()
            .map(|(host, level, _)| (host, level))
            .collect();
        let expected = [
            ("player", "DEBUG"),
            ("player", "TRACE"),
            ("store", "INFO"),
            ("player", "WARN"),
        ];
        assert_eq!(levels, expected.map(|(h, l)| (h.to_owned(), l)));
        let default = trace.render();
        let everything = trace.render_with(&RenderOptions::everything());
        assert!(!default.contains("about to save"), "{default}");
        assert!(!default.contains("very chatty"), "{default}");
        assert!(
            default.contains("log WARN tracing_capture::own_events: saved, but slowly"),
            "{default}"
        );
        assert!(
            everything.contains("log DEBUG tracing_capture::own_events: about to save attempt=1"),
            "{everything}"
        );
        assert!(
            everything.contains("log TRACE tracing_capture::own_events: very chatty"),
            "{everything}"
        );
        let mut with_debug = RenderOptions::default();
        with_debug.debug_logs = true;
        assert_eq!(
            trace.render_with(&with_debug).lines().count(),
            default.lines().count() + 2,
            "only the two low-level logs differ"
        );
        Ok(())
    }

    #[test]
    fn logs_from_outside_any_host_are_not_captured() -> grpc_chaos::Result {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| s);
        sim.client("player", |_| async move {
            tracing::info!("inside player");
            // A plain OS thread is not part of the simulated world.
            std::thread::spawn(|| tracing::info!("outside, on a thread"))
                .join()
                .map_err(|_| "thread panicked")?;
            Ok(())
        });
        tracing::info!("outside, before the run");
        let trace = sim.run()?;
        tracing::info!("outside, after the run");
        let got: Vec<String> = messages(&trace).into_iter().map(|(_, _, m)| m).collect();
        assert_eq!(got, ["inside player"]);
        Ok(())
    }

    #[test]
    fn logs_from_a_spawned_task_stay_on_its_host_and_time() -> grpc_chaos::Result {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| s);
        sim.client("player", |_| async move {
            tokio::spawn(async {
                tokio::time::sleep(ms(30)).await;
                tracing::info!("from a spawned task");
            })
            .await?;
            Ok(())
        });
        let trace = sim.run()?;
        let logs = logs(&trace);
        assert_eq!(logs.len(), 1);
        assert_eq!((logs[0].host.as_str(), logs[0].at()), ("player", ms(30)));
        Ok(())
    }

    /// A Store whose `Save` never returns and logs when it is dropped.
    #[derive(Debug, Clone, Copy)]
    struct LogsWhenAbandoned;

    struct DropLog;

    impl Drop for DropLog {
        fn drop(&mut self) {
            tracing::warn!("save abandoned");
        }
    }

    #[tonic::async_trait]
    impl StoreApi for LogsWhenAbandoned {
        async fn save(&self, _: Request<SaveRequest>) -> Result<Response<SaveReply>, Status> {
            let _guard = DropLog;
            std::future::pending().await
        }

        async fn load(&self, _: Request<LoadRequest>) -> Result<Response<LoadReply>, Status> {
            Err(Status::unimplemented("load"))
        }
    }

    /// `player` calls Save with a 100 ms deadline, then waits `linger`.
    fn abandoned_save(linger: Duration) -> Sim {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| {
            s.add_service(StoreServer::new(LogsWhenAbandoned))
        });
        sim.client("player", move |c| async move {
            let mut req = Request::new(SaveRequest::default());
            req.set_timeout(ms(100));
            let _ = StoreClient::new(c.channel("store")).save(req).await;
            tokio::time::sleep(linger).await;
            Ok(())
        });
        sim
    }

    #[test]
    fn log_from_a_cancelled_handler_stays_on_its_host() -> grpc_chaos::Result {
        let trace = abandoned_save(ms(100)).run()?;
        let run = &trace.handler_runs()[0];
        assert_eq!(
            messages(&trace),
            [("store".to_owned(), "WARN", "save abandoned".to_owned())]
        );
        assert_eq!(
            Some(logs(&trace)[0].at()),
            run.ended_at,
            "logged as it was dropped"
        );
        Ok(())
    }

    /// A handler's own code that runs while its host crashes (a drop guard)
    /// is the host's code, and its log belongs in the trace like the one of
    /// a cancelled handler.
    #[test]
    fn log_from_a_handler_dropped_by_a_crash_is_kept() -> grpc_chaos::Result {
        let mut sim = abandoned_save(Duration::ZERO);
        sim.fault(Fault::crash("store").at(ms(50)));
        let trace = sim.run()?;
        assert!(
            messages(&trace).iter().all(|(host, _, _)| host == "store"),
            "{}",
            trace.render()
        );
        assert_eq!(
            messages(&trace),
            [("store".to_owned(), "WARN", "save abandoned".to_owned())]
        );
        Ok(())
    }

    /// A restarted host runs in a new runtime of turmoil's: what it logs
    /// after the restart, at start-up and in a handler, is still its own.
    #[test]
    fn logs_after_a_restart_stay_on_the_host() -> grpc_chaos::Result {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| {
            tracing::info!("store starting");
            s.add_service(Store::with_work(ms(10)).into_server())
        });
        sim.client("player", |c| async move {
            tokio::time::sleep(ms(200)).await;
            let req = SaveRequest {
                match_id: "m1".into(),
                points: 2,
            };
            StoreClient::new(c.channel("store")).save(req).await?;
            tracing::info!("saved after the restart");
            Ok(())
        });
        sim.fault(Fault::crash("store").at(ms(50)));
        sim.fault(Fault::restart("store").at(ms(100)));
        let trace = sim.run()?;
        let info = |host: &str, message: &str| (host.to_owned(), "INFO", message.to_owned());
        assert_eq!(
            messages(&trace),
            [
                info("store", "store starting"),
                info("store", "store starting"),
                info("store", "saved match_id=m1 total=2"),
                info("player", "saved after the restart"),
            ],
            "{}",
            trace.render()
        );
        Ok(())
    }
}
