//! A server's certificate rotated at a simulated instant: new handshakes
//! get the new certificate, connections made before keep the old one.

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::secs;

fn save() -> SaveRequest {
    SaveRequest {
        match_id: "m1".into(),
        points: 1,
    }
}

#[test]
fn a_rotation_to_a_chain_clients_do_not_trust_fails_only_new_connections() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(21).build();
    let (ca, other) = (Ca::new(sim.seed()), Ca::new(sim.seed() + 1));
    // From t = 2 s the store serves a certificate of another CA: the
    // rotation that shipped the wrong chain.
    let server = ServerTls::new(ca.leaf("store").identity().expect("a host name")).rotate_at(
        secs(2),
        other.leaf("store").identity().expect("a host name"),
    );
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |c| async move {
        let mut old = StoreClient::new(c.channel_tls("store", trust.clone()));
        old.save(save()).await?;
        tokio::time::sleep(secs(3)).await;
        // The connection made before the rotation lives on.
        old.save(save()).await?;
        // A new one gets the new certificate and refuses it.
        let mut new = StoreClient::new(c.channel_tls("store", trust));
        let err = new.save(save()).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::Unavailable);
        assert_eq!(err.message(), "invalid peer certificate: UnknownIssuer");
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(grpc_chaos_tests::codes(&trace), ["OK", "OK", "UNAVAILABLE"]);
    let client_side: Vec<_> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Client => Some((e.at(), &h.outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(client_side.len(), 2, "{client_side:?}");
    assert!(matches!(client_side[0].1, TlsOutcome::Done { .. }));
    assert!(matches!(
        client_side[1].1,
        TlsOutcome::Failed {
            failure: TlsFailure::UnknownCa,
            ..
        }
    ));
    assert!(client_side[1].0 >= secs(3));
    Ok(())
}
