//! A balanced channel over TLS: every replica connection runs its own
//! handshake, and a replica whose certificate the client refuses is a
//! failed connect of that replica.

use grpc_chaos::recorder::event::{EventKind, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

/// `player` makes `calls` saves through a balanced TLS channel to three
/// `store` replicas; `bad` (a replica's name) serves a certificate of
/// another CA.
fn run(calls: u32, bad: Option<&'static str>) -> Trace {
    let mut sim = Sim::builder().seed(51).build();
    let (ca, other) = (Ca::new(sim.seed()), Ca::new(sim.seed() + 1));
    let good = ServerTls::new(ca.leaf("store").identity().expect("a host name"));
    let wrong = ServerTls::new(other.leaf("store").identity().expect("a host name"));
    sim.servers("store", 3, move |s| {
        let tls = if Some(s.name()) == bad { &wrong } else { &good };
        s.tls(tls.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.balanced_channel_tls("store", trust, |e| e));
        for points in 0..calls {
            let req = SaveRequest {
                match_id: "m1".into(),
                points,
            };
            let _ = store.save(req).await;
        }
        Ok(())
    });
    sim.run().expect("the run itself succeeds")
}

fn client_handshakes(trace: &Trace) -> Vec<(String, bool)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Client => Some((
                h.peer.to_string(),
                matches!(h.outcome, TlsOutcome::Done { .. }),
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn every_replica_connection_of_a_balanced_channel_runs_tls() {
    let trace = run(6, None);
    assert_eq!(grpc_chaos_tests::codes(&trace), ["OK"; 6]);
    let mut done = client_handshakes(&trace);
    done.sort();
    assert_eq!(
        done,
        [
            ("store-0".to_owned(), true),
            ("store-1".to_owned(), true),
            ("store-2".to_owned(), true)
        ]
    );
}

#[test]
fn a_replica_with_a_refused_certificate_is_a_failed_connect() {
    let trace = run(6, Some("store-2"));
    let handshakes = client_handshakes(&trace);
    assert!(
        handshakes.contains(&("store-2".to_owned(), false)),
        "{handshakes:?}"
    );
    assert!(
        !handshakes.contains(&("store-0".to_owned(), false)),
        "{handshakes:?}"
    );
    insta::assert_snapshot!(trace.render());
}

/// TLS is one part of a `BalanceConfig`: with health checking on the same
/// channel, each replica's Watch runs on its TLS connection, and the calls
/// go out once the Watches answer SERVING.
#[test]
fn tls_and_health_checking_work_on_one_channel() {
    use grpc_chaos::balance::BalanceConfig;
    use grpc_chaos::recorder::event::{BalancerChange, HealthStatus};

    let mut sim = Sim::builder().seed(52).build();
    let ca = Ca::new(sim.seed());
    let tls = ServerTls::new(ca.leaf("store").identity().expect("a host name"));
    sim.servers("store", 3, move |s| {
        s.tls(tls.clone())
            .add_service(Store::default().into_server())
    });
    sim.health("store");
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |c| {
        let config = BalanceConfig::new()
            .tls(trust.clone())
            .health_check("tt.v1.Store");
        async move {
            let mut store = StoreClient::new(c.balanced_channel_config("store", config));
            for points in 0..6 {
                let _ = store
                    .save(SaveRequest {
                        match_id: "m1".into(),
                        points,
                    })
                    .await;
            }
            Ok(())
        }
    });
    let trace = sim.run().expect("run");
    let saves: Vec<_> = trace
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("/Save"))
        .collect();
    assert_eq!(saves.len(), 6);
    assert!(saves.iter().all(|c| c.outcome().is_some_and(|o| o.is_ok())));
    assert_eq!(
        client_handshakes(&trace)
            .iter()
            .filter(|(_, done)| *done)
            .count(),
        3
    );
    let serving = trace
        .events_on("player")
        .filter(|e| {
            matches!(&e.kind, EventKind::Balancer(b)
                if b.change == BalancerChange::Health { status: HealthStatus::Serving })
        })
        .count();
    assert_eq!(serving, 3, "{}", trace.render());
}
