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

#[test]
fn an_mtls_ca_rotation_locks_out_the_client_it_left_behind() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(22).build();
    let (old_ca, new_ca) = (Ca::new(sim.seed()), Ca::new(sim.seed() + 1));
    // The store trusts client certificates of the old CA, then from
    // t = 2 s of the new one only.
    let server = ServerTls::new(old_ca.leaf("store").identity().expect("a host name"))
        .client_ca_root(old_ca.certificate())
        .rotate_client_ca_at(secs(2), new_ca.certificate());
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(old_ca.certificate());
    // `player` was not redeployed: its certificate is still the old CA's.
    let player = trust
        .clone()
        .identity(old_ca.leaf("player").identity().expect("a host name"));
    // `scorer` got its new certificate in time.
    let scorer = trust.identity(new_ca.leaf("scorer").identity().expect("a host name"));
    sim.client("player", move |c| async move {
        let mut before = StoreClient::new(c.channel_tls("store", player.clone()));
        before.save(save()).await?;
        tokio::time::sleep(secs(3)).await;
        // Its connection from before the rotation still works.
        before.save(save()).await?;
        let err = StoreClient::new(c.channel_tls("store", player))
            .save(save())
            .await
            .unwrap_err();
        // TLS 1.3: the client's handshake is over before the server
        // checks its certificate; it reads the server's unknown_ca alert
        // where HTTP/2 belongs (measured).
        assert_eq!(err.code(), tonic::Code::Unknown);
        assert_eq!(err.message(), "transport error");
        Ok(())
    });
    sim.client("scorer", move |c| async move {
        tokio::time::sleep(secs(3)).await;
        StoreClient::new(c.channel_tls("store", scorer))
            .save(save())
            .await?;
        Ok(())
    });
    let trace = sim.run()?;
    assert_eq!(grpc_chaos_tests::codes(&trace), ["OK", "OK", "UNKNOWN"]);
    let server_side: Vec<_> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Server => {
                Some((h.peer.to_string(), h.outcome.clone()))
            }
            _ => None,
        })
        .collect();
    let failed: Vec<_> = server_side
        .iter()
        .filter(|(_, o)| matches!(o, TlsOutcome::Failed { .. }))
        .collect();
    assert!(
        matches!(
            failed.as_slice(),
            [(peer, TlsOutcome::Failed { failure: TlsFailure::UnknownCa, alert_sent: Some(48), .. })]
                if peer == "player"
        ),
        "{server_side:?}"
    );
    // The scorer's certificate of the new CA was admitted.
    assert!(server_side.iter().any(|(peer, o)| peer == "scorer"
        && matches!(
            o,
            TlsOutcome::Done {
                client_certificate: true,
                ..
            }
        )));
    insta::assert_snapshot!(trace.render());
    Ok(())
}
