//! Seed 000 §6.1: the etcd fix. The same client as `keepalive-mismatch`
//! (30 s PINGs, 10 s timeout, one long silent call) against etcd's policy,
//! grpc-go's enforcement with MinTime lowered to 5 s: every PING is ok, no
//! GOAWAY for ten simulated minutes, and the call ends OK on the first
//! connection.

use grpc_chaos::policy::KeepalivePolicy;
use grpc_chaos::recorder::event::KeepaliveVerdict;
use grpc_chaos::{Sim, Trace};

use super::keepalive_world::{self, cuts, judged_pings};
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "etcd-keepalive",
    source: "gRFC A8; etcd --grpc-keepalive-min-time (5 s); kube-apiserver etcd3 client",
    story: "The same 30 s PINGs against etcd's 5 s minimum: no strike, the long call ends OK.",
    checks:
        "30s PINGs vs etcd MinTime 5s: every PING ok, no GOAWAY in 10 min, the 10-min call ends OK",
    simulate,
    judge,
};

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim: Sim = keepalive_world::sim(seed, KeepalivePolicy::etcd());
    sim.fault(keepalive_world::silent_saves());
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel_with("store", keepalive_world::apiserver));
        let save = SaveRequest {
            match_id: "final".into(),
            points: 1,
        };
        store.save(save).await?;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let pings = judged_pings(trace);
    let ok = pings.iter().filter(|v| **v == KeepaliveVerdict::Ok).count();
    let cut = cuts(trace);
    let call = trace.calls_from("player").next().and_then(|c| c.outcome());
    let ended = call.map_or("open", |o| o.code);
    Report::from_checks(
        format!(
            "{ok} of {} PINGs ok, {} GOAWAY(s); the call ended {ended}",
            pings.len(),
            cut.len()
        ),
        &[
            (
                pings.len() >= 10,
                format!("only {} PINGs judged", pings.len()),
            ),
            (ok == pings.len(), "a PING was a strike".into()),
            (cut.is_empty(), "the server sent GOAWAY".into()),
            (ended == "OK", format!("the call ended {ended}")),
        ],
    )
    .with_findings(trace)
}
