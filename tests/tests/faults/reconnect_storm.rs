//! The reconnect-storm stories: 100 clients and a store that is down for
//! 2 s, through tonic's channel as it is (a dial per call) and behind the
//! clients' own connection backoff (grpc's connection-backoff.md).

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::Trace;
use grpc_chaos_tests::{ms, story};

/// Connection attempts to the store started in `[from, until)`.
fn dials(trace: &Trace, from: u64, until: u64) -> usize {
    trace
        .events()
        .iter()
        .filter(
            |e| matches!(&e.kind, EventKind::ConnectStarted { to, .. } if to.as_str() == "store"),
        )
        .filter(|e| e.at() >= ms(from) && e.at() < ms(until))
        .count()
}

/// Clients the trace flags as redialling sooner than backoff allows.
fn quick_redials(trace: &Trace) -> usize {
    trace.quick_redials().len()
}

#[test]
fn without_backoff_every_call_dials_and_every_client_is_flagged() {
    let (trace, report) = story("reconnect-storm");
    // 100 clients, a call every 100 ms, 2 s down: about 20 dials each
    // (each waits out its 100 ms connect timeout).
    assert_eq!(dials(&trace, 1000, 3000), 1999, "{}", report.happened);
    assert_eq!(quick_redials(&trace), 100);
}

#[test]
fn with_backoff_each_client_dials_twice_and_comes_back_later() {
    let (trace, report) = story("reconnect-storm-backoff");
    assert_eq!(dials(&trace, 1000, 3000), 189, "{}", report.happened);
    assert_eq!(quick_redials(&trace), 0);
    // Dials per 500 ms around the outage and the restart at 3 s: the
    // backoff spreads the clients' redials out.
    let buckets: Vec<String> = (0..12)
        .map(|i| format!("{:>5}ms {}", i * 500, dials(&trace, i * 500, i * 500 + 500)))
        .collect();
    insta::assert_snapshot!(format!("{}\n{}", report.happened, buckets.join("\n")));
}
