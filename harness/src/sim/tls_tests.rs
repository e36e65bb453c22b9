//! The ciphertext below rustls for a seed: here in `sim`, above `tls` in
//! the flow, since the test runs whole simulations.

use crate::tls::{Ca, ClientTls, ServerTls};

/// What one run of two TLS connections made at one instant writes to
/// turmoil's TCP, below rustls, and its rendered trace. The CA is the
/// same whatever the seed, so only the run's random bytes tell two seeds
/// apart.
fn ciphertext_of_a_run(seed: u64) -> (Vec<u8>, String) {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::HealthCheckRequest;
    let ca = Ca::new(1);
    let server = ServerTls::new(ca.leaf("store").identity().unwrap());
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    let mut sim = crate::Sim::builder().seed(seed).build();
    sim.health("store");
    sim.server("store", move |s| s.tls(server.clone()));
    sim.client("player", move |c| async move {
        let calls = ["a", "b"].map(|_| {
            let mut health = HealthClient::new(c.channel_tls("store", trust.clone()));
            async move { health.check(HealthCheckRequest::default()).await }
        });
        let [a, b] = calls;
        let (a, b) = tokio::join!(a, b);
        a?;
        b?;
        Ok(())
    });
    let _ = crate::tls::take_written();
    let trace = sim.run().unwrap();
    (crate::tls::take_written(), trace.render())
}

#[test]
fn the_ciphertext_below_rustls_is_the_same_for_a_seed_and_differs_for_another() {
    let (bytes, trace) = ciphertext_of_a_run(7);
    // Two handshakes, their tickets and the calls' records.
    assert!(bytes.len() > 2_000, "{} octets", bytes.len());
    assert_eq!(trace.matches("TLS handshake done").count(), 4, "{trace}");
    let (again, trace_again) = ciphertext_of_a_run(7);
    assert!(bytes == again, "the same seed wrote other octets");
    assert_eq!(trace, trace_again);
    let (other, _) = ciphertext_of_a_run(8);
    assert!(bytes != other, "another seed wrote the same octets");
}
