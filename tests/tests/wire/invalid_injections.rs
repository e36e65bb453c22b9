//! Injected frames that break RFC 9113 on purpose: each is in the trace as
//! injected, with the rule it breaks, next to the peer's reaction.

use std::time::Duration;

use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{Fate, FrameDetail};
use grpc_chaos::trace::RenderOptions;
use grpc_chaos::wire::{ErrorCode, FrameType, SettingId};
use grpc_chaos::{spec_code, Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

/// `(stream, frame, detail, rule broken)` of every injected frame.
fn injected(trace: &Trace) -> Vec<(u32, FrameType, FrameDetail, Option<String>)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                stream,
                frame,
                detail,
                fate,
                ..
            } if *fate == Fate::Injected => Some((
                *stream,
                *frame,
                detail.clone(),
                fate.invalid().map(str::to_owned),
            )),
            _ => None,
        })
        .collect()
}

/// One Save from player to store (`work` each) under `fault`.
fn one_save_under(fault: Fault, work: Duration) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", move |s| {
        s.add_service(Store::with_work(work).into_server())
    });
    sim.fault(fault);
    sim.client("player", |c| async move {
        let _ = StoreClient::new(c.channel("store"))
            .save(SaveRequest::default())
            .await;
        Ok(())
    });
    sim.run()
}

/// RFC 9113 §6.4: RST_STREAM on stream 0 is a connection error. The
/// player's stack answers GOAWAY(PROTOCOL_ERROR) and its call in flight
/// (a 100 ms save) fails; the trace shows the frame that caused it, in
/// every render.
#[test]
fn an_rst_stream_on_stream_0_is_in_the_trace_as_injected() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(1).build();
    sim.server("store", |s| {
        s.add_service(Store::with_work(ms(100)).into_server())
    });
    sim.fault(
        Fault::inject("store", "player")
            .rst_stream(0, ErrorCode::Cancel)
            .at(ms(50)),
    );
    sim.client("player", |c| async move {
        let err = StoreClient::new(c.channel("store"))
            .save(SaveRequest::default())
            .await
            .expect_err("the connection failed under the call");
        assert_eq!(spec_code(&err), tonic::Code::Internal, "{err:?}");
        Ok(())
    });
    let trace = sim.run()?;
    let frames = injected(&trace);
    assert_eq!(frames.len(), 1, "{frames:?}");
    let (stream, frame, detail, invalid) = &frames[0];
    assert_eq!(
        (*stream, *frame, detail),
        (
            0,
            FrameType::RstStream,
            &FrameDetail::RstStream {
                code: ErrorCode::Cancel
            }
        )
    );
    let rule = invalid.as_deref().unwrap_or_default();
    assert!(
        rule.starts_with("RST_STREAM on stream 0") && rule.contains("§6.4"),
        "{rule}"
    );
    let line = "s0 RST_STREAM CANCEL, invalid: RST_STREAM on stream 0";
    for render in [
        trace.render(),
        trace.render_with(&RenderOptions::everything()),
    ] {
        assert!(
            render.contains(line) && render.contains("[injected]"),
            "{render}"
        );
        assert!(!render.contains("never fired"), "{render}");
    }
    Ok(())
}

/// RFC 9113 §6.5.2: SETTINGS_ENABLE_PUSH=2 is a connection error whatever
/// the sender. The frame is well formed, so it is recorded as decoded.
#[test]
fn a_setting_out_of_range_is_in_the_trace_as_injected() -> grpc_chaos::Result {
    let fault = Fault::inject("store", "player")
        .settings(&[(SettingId::EnablePush, 2)])
        .at(ms(50));
    let trace = one_save_under(fault, ms(100))?;
    assert_eq!(
        injected(&trace),
        [(
            0,
            FrameType::Settings,
            FrameDetail::Settings {
                values: [(SettingId::EnablePush, 2)].into()
            },
            None
        )]
    );
    assert!(trace
        .render()
        .contains("c1 s0 SETTINGS ENABLE_PUSH=2 [injected]"));
    Ok(())
}

/// RFC 9113 §3.4: a server's first frame MUST be its SETTINGS. A PING
/// injected as the connection opens (the player's connect reaches the
/// store at 1 ms) goes out before the store's stack wrote anything, so it stands first and the trace says it breaks the
/// preface; a SETTINGS injected there keeps the preface whole.
#[test]
fn a_frame_injected_before_the_preface_settings_says_it_breaks_the_preface() -> grpc_chaos::Result {
    let first = |inject: grpc_chaos::fault::InjectAt| -> grpc_chaos::Result<Vec<_>> {
        let trace = one_save_under(inject.at(ms(1)), Duration::ZERO)?;
        let rows = injected(&trace);
        // The injected frame is the store's first row on the connection.
        let store_first = trace.events().iter().find_map(|e| match &e.kind {
            EventKind::Frame { fate, .. } if e.host == "store" => Some(fate.clone()),
            _ => None,
        });
        assert!(
            store_first.is_some_and(|fate| fate == Fate::Injected),
            "{}",
            trace.render()
        );
        Ok(rows)
    };
    let ping = first(Fault::inject("store", "player").ping(false, [7; 8]))?;
    assert_eq!(ping.len(), 1, "{ping:?}");
    assert_eq!(
        ping[0].3.as_deref(),
        Some("the first frame, not the preface's SETTINGS (RFC 9113 §3.4)")
    );
    let settings = first(Fault::inject("store", "player").settings(&[]))?;
    assert_eq!(settings.len(), 1, "{settings:?}");
    assert_eq!(settings[0].3, None);
    Ok(())
}
