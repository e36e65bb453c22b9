//! Link faults during a handshake: a partition holds the handshake's
//! octets at their sender, as the wire tap holds frames, until it heals
//! or the caller's connect timeout gives the dial up.

use std::time::Duration;

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsMessageKind, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls};
use grpc_chaos::{Fault, Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;
use grpc_chaos_tests::ms;

/// `player` saves once to `store` over TLS, its channel's connect timeout
/// `timeout`; `player` and `store` are partitioned from 1 ms (the TCP
/// connect is done, the ClientHello not yet written), repaired at
/// `repair` if given. The call's status code and message, and the trace.
fn partitioned_handshake(timeout: Duration, repair: Option<Duration>) -> (String, Trace) {
    let cut = Fault::partition("player", "store").at(ms(1));
    let heal = repair.map(|at| Fault::repair("player", "store").at(at));
    faulted_handshake(timeout, cut, heal)
}

/// The same with `cut` at 1 ms and `heal`, if given.
fn faulted_handshake(timeout: Duration, cut: Fault, heal: Option<Fault>) -> (String, Trace) {
    let mut sim = Sim::builder().seed(9).duration(ms(5_000)).build();
    let ca = Ca::new(sim.seed());
    let server = ServerTls::new(ca.leaf("store").identity().expect("a host name"));
    sim.server("store", move |s| {
        s.tls(server.clone())
            .add_service(Store::default().into_server())
    });
    sim.fault(cut);
    if let Some(heal) = heal {
        sim.fault(heal);
    }
    let trust = ClientTls::new().ca_certificate(ca.certificate());
    let status = std::rc::Rc::new(std::cell::RefCell::new(String::new()));
    let seen = status.clone();
    sim.client("player", move |c| async move {
        let channel = c.channel_tls_with("store", trust, |e| e.connect_timeout(timeout));
        let req = SaveRequest {
            match_id: "m1".into(),
            points: 1,
        };
        *seen.borrow_mut() = match StoreClient::new(channel).save(req).await {
            Ok(_) => "OK".to_owned(),
            Err(e) => format!("{:?} {}", e.code(), e.message()),
        };
        Ok(())
    });
    let trace = sim.run().expect("the run completes");
    let status = status.borrow().clone();
    (status, trace)
}

/// Each end's handshake outcome and when it was recorded.
fn handshakes(trace: &Trace) -> Vec<(Duration, TlsSide, TlsOutcome)> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) => Some((e.at(), h.side, h.outcome.clone())),
            _ => None,
        })
        .collect()
}

fn client_hello_at(trace: &Trace) -> Vec<Duration> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsMessage(m) if matches!(m.message, TlsMessageKind::ClientHello(_)) => {
                Some(e.at())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_partition_during_a_handshake_holds_it_until_the_repair() {
    let (status, trace) = partitioned_handshake(ms(3_000), Some(ms(1_000)));
    let render = trace.render();
    assert_eq!(status, "OK", "{render}");
    // The ClientHello waited at the client and left at the repair; the
    // handshake then took its usual two link latencies.
    assert_eq!(client_hello_at(&trace), [ms(1_000)], "{render}");
    let done: Vec<_> = handshakes(&trace)
        .into_iter()
        .map(|(at, side, o)| (at, side, matches!(o, TlsOutcome::Done { .. })))
        .collect();
    assert_eq!(
        done,
        [
            (ms(1_002), TlsSide::Client, true),
            (ms(1_003), TlsSide::Server, true)
        ],
        "{render}"
    );
}

#[test]
fn a_partition_that_outlasts_the_connect_timeout_gives_the_handshake_up() {
    let (status, trace) = partitioned_handshake(ms(500), None);
    let render = trace.render();
    // As for a handshake the server stalls (`stall.rs`): hyper-timeout's
    // error around the connector.
    assert_eq!(status, "Unknown transport error", "{render}");
    assert!(client_hello_at(&trace).is_empty(), "{render}");
    let client: Vec<_> = handshakes(&trace)
        .into_iter()
        .filter(|(_, side, _)| *side == TlsSide::Client)
        .collect();
    assert!(
        matches!(
            client.as_slice(),
            [(at, _, TlsOutcome::Failed { failure: TlsFailure::Abandoned, .. })] if *at == ms(500)
        ),
        "{render}"
    );
}

#[test]
fn a_pause_of_the_server_during_a_handshake_holds_it_until_the_resume() {
    let (status, trace) = faulted_handshake(
        ms(3_000),
        Fault::pause("store").at(ms(1)),
        Some(Fault::resume("store").at(ms(1_000))),
    );
    let render = trace.render();
    assert_eq!(status, "OK", "{render}");
    assert_eq!(client_hello_at(&trace), [ms(1_000)], "{render}");
    let at: Vec<_> = handshakes(&trace).into_iter().map(|(at, ..)| at).collect();
    assert_eq!(at, [ms(1_002), ms(1_003)], "{render}");
}
