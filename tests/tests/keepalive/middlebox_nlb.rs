//! The AWS NLB at its TCP idle timeout (`Expiry::ForgetFlow`): it forgets a
//! quiet flow at 350 s without telling either end, and the next frame on
//! that connection, either way, is answered with a TCP reset
//! (`Effects::reset`). Times are simulated; a 10 ms tick, 1 ms links.

use grpc_chaos::recorder::event;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::recorder::event::{EventKind, PolicyEnd};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::secs;
use tonic::Code;

/// One Save, 400 s of silence on the same channel (no keepalive), then a
/// second Save: the NLB forgot the flow at 350 s and nobody knew; the
/// second call's HEADERS never reaches the store, and the call fails at
/// that moment.
#[test]
fn a_call_after_the_nlb_idle_timeout_is_reset_at_its_first_frame() -> grpc_chaos::Result {
    type Seen = (Duration, Code, String, Option<(std::io::ErrorKind, String)>);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let mut sim = Sim::builder()
        .seed(15)
        .duration(secs(500))
        .tick(Duration::from_millis(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.middlebox("store", Middlebox::aws_nlb());
    let out = seen.clone();
    sim.client("player", move |player| async move {
        let start = tokio::time::Instant::now();
        let mut store = StoreClient::new(player.channel("store"));
        let first = store.save(SaveRequest::default()).await;
        assert!(first.is_ok(), "{first:?}");
        tokio::time::sleep(secs(400)).await;
        let second = store.save(SaveRequest::default()).await;
        let status = second.expect_err("the NLB resets the second call");
        // The I/O error under tonic's status: what the socket said.
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&status);
        let mut io = None;
        while let Some(e) = source {
            if let Some(e) = e.downcast_ref::<std::io::Error>() {
                io = Some((e.kind(), e.to_string()));
            }
            source = e.source();
        }
        out.lock().unwrap().push((
            start.elapsed(),
            status.code(),
            status.message().to_owned(),
            io,
        ));
        Ok(())
    });
    let trace = sim.run()?;
    let text = trace.render();

    // At 350 s after the first call's last frame the box forgets the flow
    // and sends nothing: no close, no frame, only its act.
    let forgot: Vec<Duration> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PolicyActed(acted)
                if matches!(acted.action, event::PolicyAction::ForgetFlow { .. }) =>
            {
                Some(e.at())
            }
            _ => None,
        })
        .collect();
    assert_eq!(forgot.len(), 1, "{text}");
    assert!(forgot[0] >= secs(350) && forgot[0] < secs(351), "{text}");
    let resets: Vec<(Duration, PolicyEnd, usize)> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PolicyReset(reset) => {
                let event::PolicyReset {
                    policy,
                    reason,
                    discarded,
                    ..
                } = &**reset;
                assert_eq!(policy, "AWS NLB");
                Some((e.at(), reason.clone(), *discarded))
            }
            _ => None,
        })
        .collect();
    assert_eq!(resets.len(), 1, "{text}");
    // A reset, not a close.
    assert!(
        !trace
            .events()
            .iter()
            .any(|e| matches!(e.kind, EventKind::PolicyClosed(_))),
        "{text}"
    );
    let (reset_at, reason, discarded) = &resets[0];
    // The reset comes with the second call (at 400 s after the first),
    // not at the expiry.
    assert!(*reset_at >= secs(400) && *reset_at < secs(401), "{text}");
    assert_eq!(*discarded, 0, "{text}");
    assert!(
        matches!(reason, PolicyEnd::ForgottenFlow { at, .. } if *at >= secs(350) && *at < secs(351)),
        "{reason:?}"
    );
    assert!(
        text.contains("c1 reset at both ends by AWS NLB (frame after the idle timeout: RST;"),
        "{text}"
    );
    // The second call's HEADERS never reached the store.
    assert!(
        text.contains("c1 s3 HEADERS POST /tt.v1.Store/Save [swallowed by a connection policy]"),
        "{text}"
    );
    assert!(text.contains("forgets the flow, nothing sent"), "{text}");

    // The call fails at that moment: tonic reports UNKNOWN "transport
    // error" over the socket's ECONNRESET (measured here); the spec's code
    // for a connection lost before any response is UNAVAILABLE.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{text}");
    let (at, code, message, io) = &seen[0];
    assert_eq!(
        io.as_ref().map(|(k, m)| (*k, m.as_str())),
        Some((
            std::io::ErrorKind::ConnectionReset,
            "connection reset by AWS NLB"
        )),
        "{text}"
    );
    assert!(*at >= secs(400) && *at < secs(401), "{at:?} {text}");
    let failed = trace
        .calls()
        .iter()
        .filter_map(|c| c.outcome())
        .find(|o| !o.is_ok())
        .cloned()
        .expect("a failed call in the trace");
    assert_eq!(
        (*code, message.as_str(), failed.code, failed.spec_code),
        (Code::Unknown, "transport error", "UNKNOWN", "UNAVAILABLE"),
        "{text}"
    );
    Ok(())
}
