//! `tracing` events that user code emits inside a host become `Log` events
//! in the trace, on that host, at the simulated time.

use grpc_chaos::recorder::event;
use std::time::Duration;

use grpc_chaos::recorder::event::{Event, EventKind};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

const STORE_TARGET: &str = "grpc_chaos_scenarios::services::store";

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

    use grpc_chaos::recorder::event::EventKind;
    use grpc_chaos::trace::RenderOptions;
    use grpc_chaos::{Fault, Sim};
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
            default.contains(concat!("log WARN ", module_path!(), ": saved, but slowly")),
            "{default}"
        );
        assert!(
            everything.contains(concat!(
                "log DEBUG ",
                module_path!(),
                ": about to save attempt=1"
            )),
            "{everything}"
        );
        assert!(
            everything.contains(concat!("log TRACE ", module_path!(), ": very chatty")),
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

/// A user's own subscriber (`tracing_subscriber::fmt`), the thread's
/// default when the run starts: it keeps printing what the run logs, the
/// trace captures the same as without it.
mod user_subscriber {
    use std::io;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use grpc_chaos::recorder::SimTime;
    use grpc_chaos::trace::RenderOptions;
    use grpc_chaos::{Sim, Trace};
    use tracing::Level;
    use tracing_subscriber::fmt::format::FmtSpan;

    use super::{logs, ms, save_into, STORE_TARGET};

    /// What a user's `fmt` subscriber wrote.
    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Buffer {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Buffer {
        fn text(&self) -> String {
            String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
        }

        fn lines_with(&self, needle: &str) -> Vec<String> {
            self.text()
                .lines()
                .filter(|l| l.contains(needle))
                .map(str::to_owned)
                .collect()
        }
    }

    /// A plain `fmt` subscriber up to `level`, no wall-clock time.
    fn fmt_into(buf: &Buffer, level: Level) -> impl tracing::Subscriber + Send + Sync {
        let buf = buf.clone();
        tracing_subscriber::fmt()
            .with_writer(move || buf.clone())
            .with_ansi(false)
            .without_time()
            .with_max_level(level)
            .finish()
    }

    /// Everything a trace says: its JSON document and its full render.
    fn whole(trace: &Trace) -> (String, String) {
        (
            trace.to_json(),
            trace.render_with(&RenderOptions::everything()),
        )
    }

    fn store_run() -> grpc_chaos::Result<Trace> {
        save_into(&["store"], ms(100), Duration::ZERO).run()
    }

    #[test]
    fn a_thread_default_fmt_subscriber_prints_the_runs_logs() -> grpc_chaos::Result {
        let buf = Buffer::default();
        let trace = tracing::subscriber::with_default(fmt_into(&buf, Level::INFO), store_run)?;
        let saved = buf.lines_with("saved match_id=m0 total=3");
        assert_eq!(saved.len(), 1, "{}", buf.text());
        // turmoil's INFO `node` span, which the user's filter lets through,
        // is the context the user's subscriber knows the line by.
        assert_eq!(
            saved[0],
            format!(" INFO node{{name=\"store\"}}: {STORE_TARGET}: saved match_id=m0 total=3"),
        );
        assert_eq!(logs(&trace).len(), 1, "the trace captures it too");
        Ok(())
    }

    /// The user's subscriber, even one that wants every span and event of
    /// the stack (h2, hyper, tonic, turmoil), changes nothing in the trace.
    #[test]
    fn the_trace_is_the_same_with_or_without_a_user_subscriber() -> grpc_chaos::Result {
        let alone = whole(&store_run()?);
        for level in [Level::TRACE, Level::INFO, Level::WARN] {
            let buf = Buffer::default();
            let trace = tracing::subscriber::with_default(fmt_into(&buf, level), store_run)?;
            assert!(alone == whole(&trace), "{level}: the trace differs");
            if level == Level::TRACE {
                // What the capture leaves out still reaches the user.
                assert!(!buf.lines_with(" h2::").is_empty(), "{}", buf.text());
            }
        }
        Ok(())
    }

    #[test]
    fn a_users_level_filter_does_not_narrow_the_trace() -> grpc_chaos::Result {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| s);
        sim.client("player", |_| async move {
            tracing::debug!("a detail");
            tracing::info!("a fact");
            tracing::warn!("a worry");
            Ok(())
        });
        let buf = Buffer::default();
        let trace = tracing::subscriber::with_default(fmt_into(&buf, Level::WARN), || sim.run())?;
        let captured: Vec<&str> = logs(&trace)
            .iter()
            .map(|e| match &e.kind {
                grpc_chaos::recorder::event::EventKind::Log(log) => log.message.as_str(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(captured, ["a detail", "a fact", "a worry"]);
        let printed: Vec<String> = buf.lines_with("tracing_capture");
        assert_eq!(
            printed,
            [concat!(" WARN ", module_path!(), ": a worry")],
            "{}",
            buf.text()
        );
        Ok(())
    }

    /// Spans reach the user's subscriber whole, with the ids it gave them:
    /// one the test opened before the run, one the client opens inside it
    /// (an explicit parent after a sleep, then closed), and turmoil's.
    #[test]
    fn spans_reach_the_users_subscriber() -> grpc_chaos::Result {
        let mut sim = Sim::builder().seed(4).build();
        sim.server("store", |s| s);
        sim.client("player", |_| async move {
            let batch = tracing::info_span!("batch", n = 3);
            batch.in_scope(|| tracing::info!("inside the batch"));
            tokio::time::sleep(ms(5)).await;
            tracing::info!(parent: &batch, "after a sleep");
            drop(batch);
            tracing::info!("after the batch");
            Ok(())
        });
        let buf = Buffer::default();
        let buf2 = buf.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || buf2.clone())
            .with_ansi(false)
            .without_time()
            .with_span_events(FmtSpan::CLOSE)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let case = tracing::info_span!("case", name = "spans");
            let _in_case = case.enter();
            sim.run()
        })?;
        let mine: Vec<String> = buf
            .lines_with("tracing_capture")
            .into_iter()
            // A closed span's line ends with its wall-clock busy and idle times.
            .map(|l| l.split(" time.busy=").next().unwrap_or_default().to_owned())
            .collect();
        let node = "case{name=\"spans\"}:node{name=\"player\"}:";
        let target = module_path!();
        assert_eq!(
            mine,
            [
                format!(" INFO {node}batch{{n=3}}: {target}: inside the batch"),
                format!(" INFO {node}batch{{n=3}}: {target}: after a sleep"),
                format!(" INFO {node}batch{{n=3}}: {target}: close"),
                format!(" INFO {node} {target}: after the batch"),
                format!(" INFO case{{name=\"spans\"}}: {target}: close"),
            ],
            "{}",
            buf.text()
        );
        Ok(())
    }

    /// A `fmt` subscriber with [`SimTime`], up to `level`.
    fn timed_into(buf: &Buffer, level: Level) -> impl tracing::Subscriber + Send + Sync {
        let buf = buf.clone();
        tracing_subscriber::fmt()
            .with_writer(move || buf.clone())
            .with_ansi(false)
            .with_timer(SimTime)
            .with_max_level(level)
            .finish()
    }

    /// [`SimTime`] stamps the user's lines with the run's simulated time,
    /// as the trace has it, and the host; in the driver, outside any host,
    /// with the time alone; outside a run, with `-`.
    #[test]
    fn sim_time_stamps_lines_with_simulated_time_and_host() -> grpc_chaos::Result {
        let buf = Buffer::default();
        let trace = tracing::subscriber::with_default(timed_into(&buf, Level::INFO), || {
            tracing::info!("before the run");
            save_into(&["store"], ms(100), ms(20)).run()
        })?;
        let at = logs(&trace)[0].at();
        assert!(at >= ms(100), "{}", trace.render());
        let ms = format!("{:.3}", at.as_secs_f64() * 1e3);
        assert_eq!(
            buf.lines_with("saved"),
            [format!(
                "{ms:>10}ms store  INFO node{{name=\"store\"}}: {STORE_TARGET}: saved match_id=m0 total=3"
            )],
            "{}",
            buf.text()
        );
        assert_eq!(
            buf.lines_with("before the run"),
            [concat!("-  INFO ", module_path!(), ": before the run")],
        );
        // turmoil counts its steps at TRACE, in the driver's loop.
        let buf = Buffer::default();
        tracing::subscriber::with_default(timed_into(&buf, Level::TRACE), store_run)?;
        let steps: Vec<String> = buf
            .lines_with("turmoil: step ")
            .into_iter()
            .take(2)
            .collect();
        assert_eq!(
            steps,
            [
                "     0.000ms TRACE turmoil: step 1",
                "     1.000ms TRACE turmoil: step 2"
            ],
        );
        Ok(())
    }
}
