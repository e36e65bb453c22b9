//! The bug zoo's `upload-stuck-on-window`: a recorder uploads to an
//! archive with no deadline, and the archive awaits a Save to the store
//! before it reads on. The default exploration of a generic space (the
//! store's handlers hung, slowed, failing, the store crashed; never the
//! archive, never the instant) finds an upload that never ends, shrinks
//! it to a 7 ms store hang, and the run's error says why the upload waits:
//! the archive's handler on its Save, the store's handler on the hang, and
//! the recorder's DATA on the archive's stream window. The fixed recorder
//! (a deadline on each upload) passes the same exploration.

use std::time::Duration;

use grpc_chaos::explore::{Target, RUN_FAILED};
use grpc_chaos::trace::RunEnd;
use grpc_chaos::{Fault, Sim};
use grpc_chaos_scenarios::zoo::upload_stall::{self, uploads_end, BUG, UPLOADS_END};

/// The minimal schedule, pasted as `grpc-chaos explore
/// upload-stuck-on-window` prints it.
fn pasted_regression(fixed: bool) -> Sim {
    let mut sim = upload_stall::scenario(0, fixed);
    // grpc-chaos explore: seed 0, schedule 27, shrunk from 1 fault to 1 fault in 13 runs
    sim.fault(
        Fault::handler("store")
            .during(Duration::from_millis(0), Duration::from_millis(7))
            .hang(),
    );
    sim
}

#[test]
fn the_default_exploration_finds_the_upload_stuck_on_the_stream_window() -> grpc_chaos::Result {
    // Without faults the archive reads every upload to its end.
    let baseline = upload_stall::scenario(0, false).run()?;
    assert_eq!(uploads_end(&baseline), Ok(()));
    assert!(
        baseline.stalls(Duration::from_millis(100)).is_empty(),
        "credit flows without faults"
    );

    let report = BUG.explorer(false).explore()?;
    let found = report
        .broken(UPLOADS_END)
        .unwrap_or_else(|| panic!("{}", report.summary()));
    // The client hangs, so the run reaches its duration too.
    assert!(report.broken(RUN_FAILED).is_some(), "{}", report.summary());
    assert_eq!(report.failures.len(), 2, "{}", report.summary());
    assert_eq!((found.runs, found.first.schedule.number), (6, 27));
    let shrunk = found.shrunk.as_ref().expect("shrinking is on by default");
    let [fault] = shrunk.schedule.faults.as_slice() else {
        panic!("not one fault: {}", report.summary());
    };
    assert!(
        matches!(fault.target, Target::HandlerHang { .. }),
        "{fault:?}"
    );
    assert_eq!((shrunk.runs, shrunk.exhausted), (13, false));
    assert_eq!(
        shrunk.message,
        "r1 /tt.v1.Scoreboard/Upload to archive never ended (no deadline); its sends: \
         recorder→archive c1 s1 stalled 2994ms (6ms–3000ms): stream window used up after \
         1114111 bytes, still stalled when the run ended"
    );
    assert_eq!(
        found.rust(),
        "// grpc-chaos explore: seed 0, schedule 27, shrunk from 1 fault to 1 fault in 13 runs\n\
         sim.fault(Fault::handler(\"store\").during(Duration::from_millis(0), Duration::from_millis(7)).hang());\n"
    );

    // The pasted test replays the shrunk run, and the run's own error
    // says what the upload waits on, down the chain.
    let replayed = BUG.explorer(false).run(&shrunk.schedule).unwrap_err();
    let pasted = pasted_regression(false).run().unwrap_err();
    let trace = pasted.trace().expect("the run's trace");
    assert_eq!(
        trace.render(),
        replayed.trace().expect("the run's trace").render()
    );
    assert_eq!(uploads_end(trace), Err(shrunk.message.clone()));
    let error = pasted.to_string();
    assert!(
        error.contains(
            "`recorder` waiting on r1 /tt.v1.Scoreboard/Upload to archive (no deadline; handler h1 \
             on archive has not answered; h1 waits on r2 /tt.v1.Store/Save to store (no deadline; \
             handler h2 on store has not answered; fault on it: hang); its request stream (c1 s1) \
             waits on archive's stream window since 6ms: 1114111 bytes sent, no credit since)"
        ),
        "{error}"
    );
    Ok(())
}

#[test]
fn the_recorder_with_a_deadline_passes_the_same_exploration() -> grpc_chaos::Result {
    BUG.explorer(true).explore()?.assert_passed();
    // The regression test holds: the stuck upload ends at its deadline,
    // and its reset drops the archive's handler and the Save it waited on.
    let trace = pasted_regression(true).run()?;
    assert_eq!(uploads_end(&trace), Ok(()));
    let upload = trace
        .calls_from("recorder")
        .next()
        .expect("the first upload");
    assert_eq!(
        upload.outcome().map(|o| o.spec_code),
        Some("DEADLINE_EXCEEDED"),
        "{upload:?}"
    );
    let stuck: Vec<_> = trace
        .handler_runs()
        .iter()
        .filter(|r| r.id.to_string() == "h1" || r.id.to_string() == "h2")
        .map(|r| (r.host.as_str(), &r.end))
        .collect();
    assert!(
        matches!(
            stuck.as_slice(),
            [("archive", RunEnd::Dropped), ("store", RunEnd::Dropped)]
        ),
        "{stuck:?}"
    );
    Ok(())
}
