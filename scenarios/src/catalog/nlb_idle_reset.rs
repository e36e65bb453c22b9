//! A pooled connection behind an AWS Network Load Balancer, quiet between
//! two calls for longer than the NLB's 350 s TCP idle timeout: the NLB
//! forgets the flow and tells neither end, and the next call's first
//! frame is answered with a TCP reset. The player's second Save fails at
//! once (tonic UNKNOWN "transport error", where the spec says
//! UNAVAILABLE) and never reaches the store. A second client with
//! keepalive PINGs every 60 s, idle just as long, keeps its flow alive
//! and its second Save succeeds.

use std::time::Duration;

use grpc_chaos::policy::Middlebox;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::{Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::{Store, SAVE};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "nlb-idle-reset",
    source: "AWS Network Load Balancers: Connection idle timeout (TCP 350 s; data after it gets a TCP RST); gRFC A8 (client-side keepalive)",
    story: "A connection idle past a load balancer's flow timeout looks open to both ends until the next call is reset.",
    checks: "two Saves 400s apart through an AWS NLB (TCP idle 350s): the second is reset at its first frame (tonic UNKNOWN, spec UNAVAILABLE) and never reaches the store; with keepalive PINGs every 60s while idle, both succeed",
    simulate,
    judge,
};

/// Silence between a client's two Saves.
const IDLE: u64 = 400_000;

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(ms(IDLE + 60_000))
        .tick(ms(10))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.middlebox("store", Middlebox::aws_nlb());
    for (client, pings) in [("player", false), ("pinger", true)] {
        sim.client(client, move |host| async move {
            let channel = host.channel_with("store", move |e| match pings {
                true => e
                    .http2_keep_alive_interval(Duration::from_secs(60))
                    .keep_alive_while_idle(true),
                false => e,
            });
            let mut store = StoreClient::new(channel);
            store.save(SaveRequest::default()).await?;
            tokio::time::sleep(ms(IDLE)).await;
            let second = store.save(SaveRequest::default()).await;
            tracing::info!(ok = second.is_ok(), "second Save");
            Ok(())
        });
    }
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let second = |host: &'static str| trace.calls_from(host).nth(1).and_then(|c| c.outcome());
    let (player, pinger) = (second("player"), second("pinger"));
    let code = player.map_or("none", |o| o.code);
    let spec = player.map_or("none", |o| o.spec_code);
    let reset = trace.events().iter().find_map(|e| match &e.kind {
        EventKind::PolicyReset(r) if r.to == "player" && r.policy == "AWS NLB" => Some(e.at()),
        _ => None,
    });
    let saves = trace.attempts("store", SAVE);
    let pinger_ok = pinger.is_some_and(|o| o.is_ok());
    let happened = format!(
        "the player's second Save ended {code} (spec {spec}), the NLB reset its connection at {}; \
         the store saw {saves} Saves; the pinger's second Save ended {}",
        reset.map_or("no time".to_owned(), fmt_duration),
        pinger.map_or("never", |o| o.code)
    );
    let at_second_call = reset.is_some_and(|t| t >= ms(IDLE) && t < ms(IDLE + 100));
    Report::from_checks(
        happened,
        &[
            (
                at_second_call,
                "the NLB did not reset the player's connection at its second call".into(),
            ),
            (
                code == "UNKNOWN" && spec == "UNAVAILABLE",
                format!("the player's second Save ended {code} (spec {spec}), not UNKNOWN (spec UNAVAILABLE)"),
            ),
            (saves == 3, format!("the store saw {saves} Saves, not 3")),
            (pinger_ok, "the pinger's second Save did not succeed".into()),
        ],
    )
    .with_findings(trace)
}
