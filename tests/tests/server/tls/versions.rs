//! TLS 1.2 when an end is set to offer it (`tls_versions`): a TLS 1.2
//! handshake carries the calls with their frames still decoded and its
//! hellos read as TLS 1.2's; ends without a version in common fail with
//! `protocol_version`; the trace is byte-identical for a seed.

use grpc_chaos::recorder::event::{EventKind, TlsFailure, TlsHandshake, TlsOutcome, TlsSide};
use grpc_chaos::tls::{Ca, ClientTls, ServerTls, TlsVersion};
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Sim, Trace};
use grpc_chaos_scenarios::services::pb::store_client::StoreClient;
use grpc_chaos_scenarios::services::pb::SaveRequest;
use grpc_chaos_scenarios::services::Store;

/// `player` saves twice to `store` on one TLS channel, the server
/// accepting `server` versions and the client offering `client` (the
/// default, TLS 1.3 only, for `None`). The first call that fails ends
/// the client.
fn run(
    seed: u64,
    server: Option<&[TlsVersion]>,
    client: Option<&[TlsVersion]>,
) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder().seed(seed).build();
    let ca = Ca::new(sim.seed());
    let mut tls = ServerTls::new(ca.leaf("store").identity().expect("a host name"));
    if let Some(v) = server {
        tls = tls.tls_versions(v);
    }
    sim.server("store", move |s| {
        s.tls(tls.clone())
            .add_service(Store::default().into_server())
    });
    let mut trust = ClientTls::new().ca_certificate(ca.certificate());
    if let Some(v) = client {
        trust = trust.tls_versions(v);
    }
    sim.client("player", move |c| async move {
        let mut store = StoreClient::new(c.channel_tls("store", trust));
        for points in [3, 4] {
            let req = SaveRequest {
                match_id: "m1".into(),
                points,
            };
            if store.save(req).await.is_err() {
                // The call's status is in the trace.
                return Ok(());
            }
        }
        Ok(())
    });
    sim.run()
}

fn handshakes(trace: &Trace) -> Vec<&TlsHandshake> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TlsHandshake(h) => Some(&**h),
            _ => None,
        })
        .collect()
}

const TLS12: &[TlsVersion] = &[TlsVersion::Tls12];
const BOTH: &[TlsVersion] = &[TlsVersion::Tls12, TlsVersion::Tls13];

fn done(trace: &Trace) -> Vec<(TlsSide, u16, u16, bool)> {
    handshakes(trace)
        .into_iter()
        .filter_map(|h| match h.outcome {
            TlsOutcome::Done {
                version,
                cipher_suite,
                h2,
                ..
            } => Some((h.side, version, cipher_suite, h2)),
            TlsOutcome::Failed { .. } => None,
        })
        .collect()
}

fn rows<'a>(render: &'a str, containing: &str) -> Vec<&'a str> {
    render.lines().filter(|l| l.contains(containing)).collect()
}

#[test]
fn a_tls12_only_server_refuses_a_tls13_only_client_with_protocol_version() -> grpc_chaos::Result {
    let trace = run(3, Some(TLS12), None)?;
    let render = trace.render();
    assert_eq!(grpc_chaos_tests::codes(&trace), ["UNAVAILABLE"], "{render}");
    assert!(
        render.contains(r#"ended UNAVAILABLE "received fatal alert: ProtocolVersion""#),
        "{render}"
    );
    let failed: Vec<_> = handshakes(&trace)
        .into_iter()
        .map(|h| (h.side, h.outcome.clone()))
        .collect();
    // RFC 8446 §4.2.1: a server that supports none of the client's
    // supported_versions aborts with protocol_version (70); rustls
    // `server/hs.rs`, `Tls12NotOfferedOrEnabled`.
    assert_eq!(
        failed,
        [
            (
                TlsSide::Server,
                TlsOutcome::Failed {
                    failure: TlsFailure::NotTls13,
                    alert_sent: Some(70),
                    alert_received: None,
                }
            ),
            (
                TlsSide::Client,
                TlsOutcome::Failed {
                    failure: TlsFailure::AlertReceived,
                    alert_sent: None,
                    alert_received: Some(70),
                }
            ),
        ]
    );
    assert_eq!(
        rows(&render, "handshake failed (server)"),
        ["     2.000  store→player         c1 TLS handshake failed (server): the peer speaks TLS, but no version this end accepts; sent alert protocol_version"]
    );
    assert!(rows(&render, "ServerHello").is_empty(), "{render}");
    Ok(())
}

#[test]
fn tls12_on_both_ends_carries_the_calls_with_their_frames_decoded() -> grpc_chaos::Result {
    let trace = run(3, Some(TLS12), Some(TLS12))?;
    let render = trace.render();
    assert_eq!(grpc_chaos_tests::codes(&trace), ["OK", "OK"], "{render}");
    // TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 (0xc02c, RFC 5289 §3.2):
    // rustls's first TLS 1.2 suite an Ed25519 key can sign for (RFC 8422
    // §5.1.1). The server is done first: in a full TLS 1.2 handshake its
    // Finished is the last message (RFC 5246 §7.3).
    assert_eq!(
        done(&trace),
        [
            (TlsSide::Server, 0x0303, 0xc02c, true),
            (TlsSide::Client, 0x0303, 0xc02c, true)
        ]
    );
    // rustls's TLS 1.2-only ClientHello still carries supported_versions
    // (TLS 1.2 alone); the ServerHello has none (RFC 8446 §4.1.3).
    let hello = rows(&render, "ClientHello sent");
    assert!(
        hello.len() == 1 && hello[0].contains("supported_versions TLS 1.2 (legacy_version TLS 1.2), cipher_suites TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
        "{render}"
    );
    assert_eq!(
        rows(&render, "ServerHello sent"),
        ["     2.000  store→player         c1 TLS ServerHello sent (server): TLS 1.2 (legacy_version, no supported_versions), TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"]
    );
    assert_eq!(rows(&render, "certificate sent (server)").len(), 1);
    assert_eq!(rows(&render, "certificate received (client)").len(), 1);
    // The encrypted Finished records are not read as hellos.
    assert!(rows(&render, "unreadable").is_empty(), "{render}");
    assert!(
        rows(&render, "TLS handshake done")
            .iter()
            .all(|r| r.contains("TLS 1.2 TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, ALPN h2")),
        "{render}"
    );
    let frames = |t: FrameType| {
        trace
            .events()
            .iter()
            .filter(|e| matches!(&e.kind, EventKind::Frame { frame, .. } if *frame == t))
            .count()
    };
    assert!(frames(FrameType::Headers) >= 4, "{render}");
    assert!(frames(FrameType::Data) >= 4, "{render}");
    let again = run(3, Some(TLS12), Some(TLS12))?;
    assert_eq!(render, again.render());
    assert_eq!(trace.to_json(), again.to_json());
    Ok(())
}

#[test]
fn a_client_offering_both_gets_tls13_unless_the_server_accepts_only_tls12() -> grpc_chaos::Result {
    let versions = |server| {
        run(4, server, Some(BOTH)).map(|t| {
            let v: Vec<u16> = done(&t).iter().map(|d| d.1).collect();
            (grpc_chaos_tests::codes(&t).len(), v)
        })
    };
    assert_eq!(versions(None)?, (2, vec![0x0304, 0x0304]));
    assert_eq!(versions(Some(BOTH))?, (2, vec![0x0304, 0x0304]));
    assert_eq!(versions(Some(TLS12))?, (2, vec![0x0303, 0x0303]));
    Ok(())
}

#[test]
fn no_tls_version_is_a_misconfiguration_named_by_the_run() {
    let err = run(3, Some(&[]), None).expect_err("no version to offer");
    assert!(
        err.to_string()
            .starts_with("ServerHost::tls on host `store`: no TLS version: give `TlsVersion::Tls13`, `Tls12` or both"),
        "{err}"
    );
}
