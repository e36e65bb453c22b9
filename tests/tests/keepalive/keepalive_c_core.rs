//! Keepalive enforcement against a C-core server's own rules, where they
//! differ from the other servers' (issue 12, item 7): C-core resets its
//! ping strikes when it *writes* the WINDOW_UPDATEs for the client DATA it
//! consumed (grpc `src/core/ext/transport/chttp2/transport/writing.cc`,
//! read; measured with grpcio 1.85, FACTS.md), which h2 does not write; and
//! its `grpc.http2.max_ping_strikes = 0` means "no limit"
//! (`ping_abuse_policy.cc`).
//!
//! A 10 s pinger uploads rallies on one client-streaming call to a
//! `gateway` host enforcing [`KeepalivePolicy::c_core`], in a 10 ms-tick
//! world. Times are simulated.

use grpc_chaos::recorder::event;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use grpc_chaos::policy::{KeepalivePolicy, MaxStrikes};
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::KeepaliveVerdict;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::scoreboard_client::ScoreboardClient;
use grpc_chaos_scenarios::services::pb::Rally;
use grpc_chaos_scenarios::services::{DeadlineMode, Gateway, Store};
use grpc_chaos_tests::secs;

struct Rallies(tokio::sync::mpsc::Receiver<Rally>);

impl tonic::codegen::tokio_stream::Stream for Rallies {
    type Item = Rally;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Rally>> {
        self.0.poll_recv(cx)
    }
}

/// The player uploads `rallies` rallies, one every `every`, on one Upload
/// call (10 s keepalive interval, 10 s timeout), then keeps the call open
/// until `hold` has passed since the start, then ends it.
fn upload(
    policy: KeepalivePolicy,
    rallies: u32,
    every: Duration,
    hold: Duration,
) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(4)
        .tick(Duration::from_millis(10))
        .duration(secs(400))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.server("gateway", |s| {
        let store = s.channel("store");
        s.add_service(Gateway::new(store, DeadlineMode::Propagate, Duration::ZERO).into_server())
    });
    sim.keepalive_policy("gateway", policy);
    sim.client("player", move |c| async move {
        let channel = c.channel_with("gateway", |e| {
            e.http2_keep_alive_interval(secs(10))
                .keep_alive_timeout(secs(10))
        });
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        let call =
            tokio::spawn(async move { ScoreboardClient::new(channel).upload(Rallies(rx)).await });
        let start = tokio::time::Instant::now();
        for _ in 0..rallies {
            let rally = Rally {
                match_id: "m1".into(),
                player: "p".into(),
                shots: 1,
            };
            if tx.send(rally).await.is_err() {
                break;
            }
            tokio::time::sleep(every).await;
        }
        tokio::time::sleep(hold.saturating_sub(start.elapsed())).await;
        drop(tx);
        let _ = call.await;
        Ok(())
    });
    sim.run()
}

fn verdicts(trace: &Trace) -> Vec<KeepaliveVerdict> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::KeepalivePing(keepalive_ping) => {
                let event::KeepalivePing { verdict, .. } = &**keepalive_ping;
                Some(*verdict)
            }
            _ => None,
        })
        .collect()
}

fn goaways(trace: &Trace) -> usize {
    trace.render().matches("GOAWAY ENHANCE_YOUR_CALM").count()
}

fn data_resets(trace: &Trace) -> usize {
    trace
        .events()
        .iter()
        .filter(|e| matches!(e.kind, EventKind::KeepaliveDataReset { .. }))
        .count()
}

/// Measured against grpcio 1.85: a client-streaming call whose client sends
/// every 15 s under a 10 s keepalive is never cut by C-core, because each
/// message makes it write WINDOW_UPDATEs. Before the emulation modelled
/// them, the same upload was cut on its 4th PING.
#[test]
fn c_core_never_cuts_an_upload_that_sends_every_15s() -> grpc_chaos::Result {
    let trace = upload(KeepalivePolicy::c_core(), 20, secs(15), secs(300))?;
    let v = verdicts(&trace);
    assert!(v.len() >= 25, "{v:?}");
    // Every PING but the first comes after a reset: no strike at all, as
    // against the real server.
    assert!(v.iter().all(|v| *v == KeepaliveVerdict::Ok), "{v:?}");
    let after_reset = trace
        .render()
        .matches("first PING since strikes were reset")
        .count();
    assert_eq!(after_reset, v.len() - 1);
    assert_eq!(goaways(&trace), 0, "{}", trace.render());
    assert_eq!(trace.calls()[0].outcome().map(|o| o.code), Some("OK"));
    // The control: the same upload against C-core's rules without the
    // window updates for client DATA is cut.
    let control = KeepalivePolicy {
        reset_on: grpc_chaos::policy::ResetOn::HEADERS_DATA_OR_WINDOW_UPDATE,
        ..KeepalivePolicy::c_core()
    };
    let trace = upload(control, 20, secs(15), secs(300))?;
    assert_eq!(goaways(&trace), 1, "{}", trace.render());
    Ok(())
}

/// Measured against grpcio 1.85: an upload that sends one message and then
/// stays silent is cut after its 5th PING, not its 4th: the second window
/// update (+5 for the next message header) goes out with the first PING ACK
/// and resets the count once more.
#[test]
fn c_core_cuts_a_silent_upload_after_its_5th_ping() -> grpc_chaos::Result {
    let trace = upload(KeepalivePolicy::c_core(), 1, secs(1), secs(300))?;
    let v: Vec<KeepaliveVerdict> = verdicts(&trace).into_iter().take(5).collect();
    use KeepaliveVerdict::{Ok as OK, Strike, TooManyPings};
    assert_eq!(
        v,
        [
            OK,
            OK,
            Strike { n: 1, of: 2 },
            Strike { n: 2, of: 2 },
            TooManyPings
        ],
        "{}",
        trace.render()
    );
    assert_eq!(data_resets(&trace), 0, "the reset clears no strike");
    assert!(trace
        .render()
        .contains("first PING since strikes were reset"));
    Ok(())
}

/// C-core's `grpc.http2.max_ping_strikes = 0`, copied literally, never
/// sends too_many_pings: the silent upload's strikes are counted and the
/// call runs to its end.
#[test]
fn c_core_with_max_ping_strikes_0_never_goes_away() -> grpc_chaos::Result {
    let policy = KeepalivePolicy {
        max_strikes: MaxStrikes::c_core(0),
        ..KeepalivePolicy::c_core()
    };
    let trace = upload(policy, 1, secs(1), secs(120))?;
    let v = verdicts(&trace);
    assert!(
        v.contains(&KeepaliveVerdict::StrikeWithoutLimit { n: 5 }),
        "{v:?}"
    );
    assert_eq!(goaways(&trace), 0, "{}", trace.render());
    assert!(trace.render().contains("strike 5, no limit"));
    assert_eq!(trace.calls()[0].outcome().map(|o| o.code), Some("OK"));
    Ok(())
}
