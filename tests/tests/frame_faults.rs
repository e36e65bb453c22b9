//! Frame faults keep TCP's order, and the trace says so: a frame written
//! behind a kept-back frame leaves with it, not before.

use std::time::Duration;

use grpc_chaos::wire::FrameType;
use grpc_chaos::{EventKind, Fault, Sim};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::LoadRequest;
use grpc_chaos_scenarios::services::Store;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `(time, frame, detail, fate)` of every frame the store wrote.
fn store_frames(trace: &grpc_chaos::Trace) -> Vec<(Duration, String, String, String)> {
    trace
        .events_on("store")
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                frame,
                detail,
                fate,
                ..
            } => Some((e.at, frame.clone(), detail.clone(), format!("{fate:?}"))),
            _ => None,
        })
        .collect()
}

#[test]
fn frames_behind_a_delayed_frame_leave_with_it() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Settings)
            .ack(true)
            .delay(ms(100)),
    );
    sim.client("player", |c| async move {
        StoreClient::new(c.channel("store"))
            .load(LoadRequest::default())
            .await?;
        Ok(())
    });
    let trace = sim.run()?;
    let frames = store_frames(&trace);
    let ack = frames
        .iter()
        .position(|(_, f, d, _)| f == "SETTINGS" && d == "ack")
        .expect("the store acked the client's SETTINGS");
    let (at, _, _, fate) = &frames[ack];
    let until = *at + ms(100);
    assert_eq!(
        fate,
        &format!("Delayed {{ until: {until:?} }}"),
        "{frames:?}"
    );
    // Everything the store wrote after the ACK, before it left, waits behind it.
    for (t, frame, detail, fate) in frames.iter().skip(ack + 1).filter(|(t, ..)| *t < until) {
        assert_eq!(
            fate,
            &format!("Delayed {{ until: {until:?} }}"),
            "{frame} {detail} written at {t:?} left before the ACK ahead of it"
        );
    }
    let released = trace
        .events_on("store")
        .filter(|e| matches!(e.kind, EventKind::FrameReleased { .. }))
        .count();
    assert!(
        released >= 2,
        "the ACK and what queued behind it: {}",
        trace.render()
    );
    Ok(())
}
