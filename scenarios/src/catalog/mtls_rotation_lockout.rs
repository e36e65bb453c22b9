//! An mTLS server rotates its client CA, and one client is left behind.
//! The store requires client certificates of the old CA, then from
//! simulated t = 2 s of the new CA only. `player` was not redeployed (its
//! certificate is still the old CA's): its connection from before the
//! rotation goes on (a call every 500 ms from 0 to 4.5 s), and its new
//! connection at 3 s is refused. `scorer` got a new-CA certificate in
//! time and connects at 3 s.
//!
//! What is read: TLS authenticates once, at the handshake (RFC 8446 §4.4),
//! so the rotation changes nothing for a live connection; a server that
//! cannot chain a client's certificate to a CA it trusts aborts with
//! `unknown_ca` (§6.2); in TLS 1.3 the client sends its Certificate and
//! Finished and is done before the server has judged them (§2, §4.4.2),
//! so the client meets the alert on its first read of application data.
//! grpc-go #2167: a credential change takes a new handshake. The issue
//! that asked for the story names grpc-rust #1897 and #1945 (a client
//! with a bad certificate, tonic's accept), #2445 and grpc-go #4163 as
//! users asking for deterministic mTLS failure tests (read there, not
//! here). What is measured (tonic 0.14.9, rustls 0.23): player's old
//! connection serves every call; its new connection's handshake (its
//! `certificate sent` row names the old CA as issuer) is done on the
//! client, failed on the server (sent unknown_ca), and the call
//! ends UNKNOWN "transport error" where the spec requires UNAVAILABLE (a
//! finding); scorer's call is OK.

use std::time::Duration;

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::{Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::SaveRequest;
use crate::services::Store;

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "mtls-rotation-lockout",
    source: "RFC 8446 §2, §4.4, §4.4.2, §6.2 (unknown_ca); grpc doc/statuscodes.md (UNAVAILABLE); grpc-go #2167; named by the issue: grpc-rust #1897, #1945, #2445, grpc-go #4163",
    story: "An mTLS server rotates its client CA: a client still on the old CA's certificate is locked out of new connections while its old connection and the other clients go on.",
    checks: "store's client CA rotated at 2s: player's connection from before serves every call; its new connection at 3s is refused (server sent unknown_ca, the call UNKNOWN 'transport error', spec UNAVAILABLE); scorer with a new-CA certificate is OK",
    simulate,
    judge,
};

/// The instant the store trusts the new client CA only.
const ROTATION: Duration = ms(2000);
/// When the new connections are made.
const RECONNECT: Duration = ms(3000);
/// player's calls on its first connection: every 500 ms, 10 of them.
const EVERY: Duration = ms(500);
const CALLS: u32 = 10;

fn save(n: u32) -> SaveRequest {
    SaveRequest {
        match_id: format!("m{n}"),
        points: 1,
    }
}

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).duration(ms(10_000)).build();
    let (old_ca, new_ca) = (Ca::new(sim.seed()), Ca::new(sim.seed() + 1));
    // ASCII host names: rcgen refuses only names it cannot hold.
    let leaf = |ca: &Ca, name: &str| ca.leaf(name).identity().expect("an ASCII host name");
    let server = ServerTls::new(leaf(&old_ca, "store"))
        .client_ca_root(old_ca.certificate())
        .rotate_client_ca_at(ROTATION, new_ca.certificate());
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(old_ca.certificate());
    let player = trust.clone().identity(leaf(&old_ca, "player"));
    let scorer = trust.identity(leaf(&new_ca, "scorer"));
    sim.client("player", move |c| async move {
        let old = StoreClient::new(c.channel_tls("store", player.clone()));
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..CALLS {
            let mut old = old.clone();
            calls.spawn(async move { old.save(save(n)).await.map(|_| ()) });
            if EVERY * n == RECONNECT {
                let mut new = StoreClient::new(c.channel_tls("store", player.clone()));
                calls.spawn(async move { new.save(save(99)).await.map(|_| ()) });
            }
            tokio::time::sleep(EVERY).await;
        }
        while calls.join_next().await.is_some() {}
        Ok(())
    });
    sim.client("scorer", move |c| async move {
        tokio::time::sleep(RECONNECT).await;
        StoreClient::new(c.channel_tls("store", scorer))
            .save(save(100))
            .await?;
        Ok(())
    });
    sim.run()
}

fn judge(trace: &Trace) -> Report {
    let codes = |host: &'static str| -> Vec<&'static str> {
        trace
            .calls_from(host)
            .map(|c| c.outcome().map_or("open", |o| o.code))
            .collect()
    };
    let player = codes("player");
    let ok = player.iter().filter(|c| **c == "OK").count();
    let locked: Vec<_> = trace
        .calls_from("player")
        .filter(|c| c.outcome().is_some_and(|o| !o.is_ok()))
        .collect();
    let locked_out = locked.len() == 1
        && locked[0].started >= RECONNECT
        && locked[0]
            .outcome()
            .is_some_and(|o| o.code == "UNKNOWN" && o.spec_code == "UNAVAILABLE");
    let refused = server_refused(trace);
    let happened = format!(
        "player: {ok} of {} calls OK on its connection from before the rotation, its new connection's call {}; the store refused {}; scorer: {}",
        CALLS,
        locked.first().and_then(|c| c.outcome()).map_or("not refused".to_owned(), |o| format!("{} {:?}", o.code, o.message)),
        if refused.is_empty() { "no one".to_owned() } else { refused.join(", ") },
        codes("scorer").join(", "),
    );
    Report::from_checks(
        happened,
        &[
            (
                ok == CALLS as usize,
                "a call on player's old connection failed".into(),
            ),
            (
                locked_out,
                "player's new connection was not refused UNKNOWN (spec UNAVAILABLE)".into(),
            ),
            (
                refused == ["player"],
                "the store did not refuse player alone, with unknown_ca".into(),
            ),
            (codes("scorer") == ["OK"], "scorer's call failed".into()),
        ],
    )
    .with_findings(trace)
}

/// The peers whose handshake the store failed on an unknown CA, sending
/// `unknown_ca` (alert 48).
fn server_refused(trace: &Trace) -> Vec<String> {
    const UNKNOWN_CA: u8 = 48;
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Server => match h.outcome {
                TlsOutcome::Failed {
                    failure: TlsFailure::UnknownCa,
                    alert_sent: Some(UNKNOWN_CA),
                    ..
                } => Some(h.peer.to_string()),
                _ => None,
            },
            _ => None,
        })
        .collect()
}
