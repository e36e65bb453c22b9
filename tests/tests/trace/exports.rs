//! The trace's exports for other viewers: Chrome trace-event JSON for
//! Perfetto, Mermaid sequence diagrams, and the JSON document's views with
//! the text's ids.

use std::collections::HashMap;
use std::time::Duration;

use grpc_chaos::recorder::event::CallId;
use grpc_chaos::trace::MermaidOf;
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::catalog;
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::Rally;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store, SAVE};
use serde_json::Value;

/// The README's story: the store is slow, the player's 500 ms deadline
/// expires, the cancellation reaches the store. Plus a fault that never
/// matches, for the never-fired view.
fn chain() -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(7).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(
            Gateway::new(store, DeadlineMode::Propagate, Duration::from_millis(120)).into_server(),
        )
    });
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .delay(Duration::from_secs(2)),
    );
    sim.fault(
        Fault::handler("store")
            .method("/tt.v1.Store/Nothing")
            .abort(tonic::Code::Internal, "never"),
    );
    sim.client("player", |player| async move {
        let mut req = tonic::Request::new(Rally::default());
        req.set_timeout(Duration::from_millis(500));
        let _ = ScoreboardClient::new(player.channel("gateway"))
            .hit(req)
            .await;
        Ok(())
    });
    sim.run()
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("valid JSON")
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

#[test]
fn perfetto_has_a_process_per_host_and_a_slice_per_call_and_run() -> grpc_chaos::Result {
    let trace = chain()?;
    let doc = parse(&trace.to_perfetto());
    assert_eq!(doc["displayTimeUnit"], "ms");
    let events = doc["traceEvents"].as_array().expect("traceEvents");
    let pid_of: HashMap<&str, u64> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| {
            (
                e["args"]["name"].as_str().unwrap(),
                e["pid"].as_u64().unwrap(),
            )
        })
        .collect();
    for host in trace.hosts() {
        assert!(pid_of.contains_key(host.as_str()), "no process for {host}");
    }
    let slice = |name: &str| {
        events
            .iter()
            .find(|e| e["ph"] == "X" && e["name"].as_str().unwrap().starts_with(name))
            .unwrap_or_else(|| panic!("no slice {name}"))
    };
    for call in trace.calls() {
        let s = slice(&format!("{} ", call.id));
        assert_eq!(s["pid"], pid_of[call.host.as_str()], "{s}");
        assert_eq!(s["ts"].as_u64(), Some(us(call.started)), "{s}");
        let ended = call.ended_at.unwrap_or(trace.ended_at());
        assert_eq!(s["dur"].as_u64(), Some(us(ended - call.started)), "{s}");
    }
    for run in trace.handler_runs() {
        let s = slice(&format!("{} ", run.id));
        assert_eq!(s["pid"], pid_of[run.host.as_str()], "{s}");
        assert_eq!(s["ts"].as_u64(), Some(us(run.started)), "{s}");
    }
    // The gateway's call to the store (r2) nests in the run it was made
    // from (h1): the same lane, inside its time.
    let (h1, r2) = (slice("h1 "), slice("r2 "));
    assert_eq!(h1["tid"], r2["tid"], "r2 is in h1's lane");
    let end = |s: &Value| s["ts"].as_u64().unwrap() + s["dur"].as_u64().unwrap();
    assert!(r2["ts"].as_u64() >= h1["ts"].as_u64() && end(r2) <= end(h1));
    // A flow arrow from each call to the run that served it.
    for run in trace.handler_runs() {
        let call = run.call.expect("recorded channels").to_string();
        let has = |ph: &str| {
            events
                .iter()
                .any(|e| e["ph"] == ph && e["id"] == call.as_str())
        };
        assert!(has("s") && has("f"), "flow for {call}");
    }
    // Every frame (and every release of a kept-back one) is an instant on
    // its sender's frames thread (tid 2); the rest on its events thread.
    let frames = trace
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e.kind,
                grpc_chaos::recorder::event::EventKind::Frame { .. }
                    | grpc_chaos::recorder::event::EventKind::FrameReleased { .. }
            )
        })
        .count();
    let on_frames = events.iter().filter(|e| e["ph"] == "i" && e["tid"] == 2);
    assert_eq!(on_frames.count(), frames);
    assert!(events
        .iter()
        .any(|e| e["ph"] == "i" && e["tid"] == 1 && e["cat"] == "fault"));
    assert_eq!(trace.to_perfetto(), chain()?.to_perfetto(), "byte-stable");
    Ok(())
}

#[test]
fn concurrent_calls_take_separate_lanes() {
    // Replica stories make many overlapping calls from one host: no two
    // slices on one lane may overlap without nesting (the viewer would
    // draw them on top of each other).
    let scenario = catalog::find("burst-hits-one-replica")
        .or_else(|| {
            catalog::all()
                .into_iter()
                .find(|s| s.name.contains("replica"))
        })
        .expect("a replica story");
    let trace = (scenario.simulate)(1).expect("runs");
    let doc = parse(&trace.to_perfetto());
    let mut lanes: HashMap<(u64, u64), Vec<(u64, u64)>> = HashMap::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["ph"] == "X" {
            let ts = e["ts"].as_u64().unwrap();
            let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
            lanes
                .entry(key)
                .or_default()
                .push((ts, ts + e["dur"].as_u64().unwrap()));
        }
    }
    for ((pid, tid), mut spans) in lanes {
        spans.sort_by_key(|&(s, e)| (s, std::cmp::Reverse(e)));
        let mut open: Vec<(u64, u64)> = Vec::new();
        for (s, e) in spans {
            while open.last().is_some_and(|&(_, end)| end <= s) {
                open.pop();
            }
            if let Some(&(_, end)) = open.last() {
                assert!(
                    e <= end,
                    "pid {pid} tid {tid}: {s}..{e} overlaps without nesting"
                );
            }
            open.push((s, e));
        }
    }
}

#[test]
fn mermaid_draws_a_call_and_what_it_caused() -> grpc_chaos::Result {
    let trace = chain()?;
    let diagram = trace.to_mermaid(MermaidOf::Call(CallId(1))).expect("r1");
    insta::assert_snapshot!(diagram);
    assert_eq!(trace.to_mermaid(MermaidOf::Call(CallId(99))), None);
    Ok(())
}

#[test]
fn mermaid_draws_a_connection_frame_by_frame() -> grpc_chaos::Result {
    let trace = chain()?;
    let diagram = trace.to_mermaid(MermaidOf::Connection(2)).expect("c2");
    insta::assert_snapshot!(diagram);
    assert_eq!(trace.to_mermaid(MermaidOf::Connection(99)), None);
    Ok(())
}

#[test]
fn mermaid_escapes_what_a_peer_wrote() -> grpc_chaos::Result {
    // A status message with Mermaid's statement separator and entity start
    // must not end the line or make an entity.
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::handler("store")
            .method(SAVE)
            .abort(tonic::Code::Internal, "a;b #35; <c> 100%%"),
    );
    sim.client("player", |c| async move {
        let mut store =
            grpc_chaos_scenarios::services::pb::store_client::StoreClient::new(c.channel("store"));
        let _ = store
            .save(grpc_chaos_scenarios::services::pb::SaveRequest::default())
            .await;
        Ok(())
    });
    let trace = sim.run()?;
    let diagram = trace.to_mermaid(MermaidOf::Call(CallId(1))).expect("r1");
    let answer = diagram
        .lines()
        .find(|l| l.contains("--x"))
        .expect("the answer");
    assert!(
        answer.contains("a#59;b #35;35#59; #60;c#62; 100#37;#37;"),
        "{answer}"
    );
    // Once the entities are taken out, no `;` or `#` is left to misread.
    let mut rest = answer.to_owned();
    while let Some(at) = rest.find('#') {
        let end = rest[at..].find(';').expect("an entity ends") + at;
        assert!(
            rest[at + 1..end].bytes().all(|b| b.is_ascii_digit()),
            "{answer}"
        );
        rest.replace_range(at..=end, "");
    }
    assert!(!rest.contains(';'), "{answer}");
    Ok(())
}

#[test]
fn json_views_use_the_texts_ids() -> grpc_chaos::Result {
    let trace = chain()?;
    let doc = parse(&trace.to_json());
    let calls = doc["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), trace.calls().len());
    assert_eq!(calls[0]["id"], "r1");
    assert_eq!(calls[0]["host"], "player");
    assert_eq!(calls[0]["timeout_us"], 500_000);
    assert_eq!(calls[1]["parent"], "h1", "the gateway's call, made from h1");
    let runs = doc["handler_runs"].as_array().expect("handler_runs");
    assert_eq!(runs.len(), trace.handler_runs().len());
    assert_eq!(runs[0]["id"], "h1");
    assert_eq!(runs[0]["call"], "r1");
    // r1 ended CANCELLED "Timeout expired" where the spec says
    // DEADLINE_EXCEEDED: a finding.
    let findings = doc["findings"].as_array().expect("findings");
    let r1 = findings
        .iter()
        .find(|f| f["call"] == "r1")
        .expect("r1 is a finding");
    assert_eq!(r1["code"], calls[0]["outcome"]["code"]);
    assert_eq!(r1["spec_code"], "DEADLINE_EXCEEDED");
    assert_ne!(r1["code"], r1["spec_code"]);
    let never = doc["faults_never_fired"].as_array().expect("never fired");
    assert_eq!(never.len(), 1, "{never:?}");
    assert!(
        never[0]["fault"].as_str().unwrap().contains("Nothing"),
        "{never:?}"
    );
    // Events carry the same ids, and connections as `c1`.
    let events = doc["events"].as_array().expect("events");
    assert_eq!(events[0]["event"], "call_started");
    assert_eq!(events[0]["call"], "r1");
    let frame = events
        .iter()
        .find(|e| e["event"] == "frame")
        .expect("a frame");
    assert!(frame["conn"].as_str().unwrap().starts_with('c'), "{frame}");
    Ok(())
}

#[test]
fn json_stalls_carry_the_texts_sentence() {
    let scenario = catalog::find("receiver-decides-speed").expect("the flow-control story");
    let trace = (scenario.simulate)(1).expect("runs");
    let doc = parse(&trace.to_json());
    let stalls = doc["stalls"].as_array().expect("stalls");
    let ours = trace.stalls(Duration::ZERO);
    assert!(!ours.is_empty(), "the story stalls");
    assert_eq!(stalls.len(), ours.len());
    for (json, stall) in stalls.iter().zip(&ours) {
        assert_eq!(json["text"], stall.to_string());
        assert_eq!(json["conn"], format!("c{}", stall.conn));
        assert_eq!(json["since_us"].as_u64(), Some(us(stall.since)));
    }
}
