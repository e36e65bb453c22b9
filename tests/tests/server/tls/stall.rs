//! A handshake that stalls: the server holds its first flight, and the
//! client's connect timeout gives the dial up mid-handshake.

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::Sim;
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::{ms, secs};

#[test]
fn a_stalled_handshake_is_given_up_by_the_connect_timeout() -> grpc_chaos::Result {
    let mut sim = Sim::builder().seed(41).build();
    let ca = Ca::new(sim.seed());
    let server =
        ServerTls::new(ca.leaf("store").identity().expect("a host name")).stall_handshake(secs(5));
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    sim.client("player", move |c| async move {
        let channel = c.channel_tls_with("store", trust, |e| e.connect_timeout(ms(500)));
        let req = SaveRequest {
            match_id: "m1".into(),
            points: 1,
        };
        let err = StoreClient::new(channel).save(req).await.unwrap_err();
        // hyper-timeout's error around the connector, as for a TCP
        // connect that times out (FACTS.md, "Hosts going away"; measured).
        assert_eq!(err.code(), tonic::Code::Unknown);
        assert_eq!(err.message(), "transport error");
        Ok(())
    });
    let trace = sim.run()?;
    let client: Vec<_> = trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) if h.side == TlsSide::Client => {
                Some((e.at(), h.outcome.clone()))
            }
            _ => None,
        })
        .collect();
    // Given up at the connect timeout, 500 ms after the dial: the
    // server's flight was still held.
    assert!(
        matches!(
            client.as_slice(),
            [(at, TlsOutcome::Failed { failure: TlsFailure::Abandoned, .. })] if *at == ms(500)
        ),
        "{client:?}"
    );
    insta::assert_snapshot!(trace.render());
    Ok(())
}
