//! `Debug` on the harness's public types says what a value is, not all it
//! holds: a trace's `Debug` (printed by a failed `unwrap_err`, or inside a
//! report) gives its sizes, never the event log.

use std::time::Duration;

use grpc_chaos::{Fault, Sim};

#[test]
fn a_trace_and_a_sim_debug_as_sizes_and_names() -> grpc_chaos::Result {
    let build = || {
        let mut sim = Sim::builder().seed(7).build();
        sim.server("store", |s| s);
        sim.client("player", |_| async { Ok(()) });
        sim.fault(Fault::restart("store").at(Duration::ZERO));
        sim
    };
    let sim = build();
    let debug = format!("{sim:?}");
    assert!(debug.starts_with("Sim { seed: 7, "), "{debug}");
    assert!(
        debug.contains(r#"servers: ["store"], clients: ["player"], faults: 1"#),
        "{debug}"
    );

    let trace = build().run()?;
    assert!(!trace.events().is_empty(), "the restart is recorded");
    let debug = format!("{trace:?}");
    assert!(debug.starts_with("Trace { seed: 7, "), "{debug}");
    let events = format!("events: {}", trace.events().len());
    assert!(debug.contains(&events), "{debug}");
    // No event in it: not one kind or host line of the log.
    assert!(!debug.contains("kind"), "{debug}");
    assert!(!debug.contains("HostRestarted"), "{debug}");
    Ok(())
}
