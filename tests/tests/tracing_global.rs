//! A user's global subscriber, as `tracing_subscriber::fmt().init()` sets
//! it: the run forwards to it, and the trace is the one a run without it
//! records. A binary of its own: the global default is set once per
//! process, for every test in it.

use std::io;
use std::sync::{Arc, Mutex};

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::SimTime;
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

/// What the user's subscriber wrote.
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

/// `player` saves into `store`, whose handler logs `saved …` at INFO.
fn run() -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(4).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.client("player", |c| async move {
        let req = SaveRequest {
            match_id: "m0".into(),
            points: 3,
        };
        StoreClient::new(c.channel("store")).save(req).await?;
        Ok(())
    });
    sim.run()
}

#[test]
fn a_global_fmt_subscriber_prints_the_runs_logs_and_the_trace_is_unchanged() -> grpc_chaos::Result {
    let alone = run()?;
    let buf = Buffer::default();
    let writer = buf.clone();
    tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_timer(SimTime)
        .init();
    let trace = run()?;
    let everything = RenderOptions::everything();
    assert_eq!(trace.to_json(), alone.to_json());
    assert_eq!(
        trace.render_with(&everything),
        alone.render_with(&everything)
    );
    let at = trace
        .events()
        .iter()
        .find(|e| matches!(e.kind, EventKind::Log(_)))
        .map(|e| e.at())
        .expect("the trace has the log");
    let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
    let saved: Vec<&str> = text.lines().filter(|l| l.contains("saved")).collect();
    assert_eq!(
        saved,
        [format!(
            "{:>10}ms store  INFO node{{name=\"store\"}}: \
             grpc_chaos_scenarios::services::store: saved match_id=m0 total=3",
            format!("{:.3}", at.as_secs_f64() * 1e3)
        )],
        "{text}"
    );
    Ok(())
}
