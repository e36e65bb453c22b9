//! The world of the keepalive stories (seed 000 §6): a `store` whose Save
//! is ten minutes of silence, a server keepalive policy, and a player with
//! kube-apiserver's etcd client keepalive settings.

use std::time::Duration;

use grpc_chaos::policy::KeepalivePolicy;
use grpc_chaos::recorder::event::EventKind;
use grpc_chaos::recorder::event::{Fate, FrameDetail, KeepaliveVerdict};
use grpc_chaos::{Fault, Sim, Trace};
use tonic::transport::Endpoint;

use crate::services::{Store, SAVE};

/// How long the player keeps calling, *simulated* time.
pub(super) const STORY: Duration = Duration::from_secs(600);

/// The PING verdicts of a connection cut by grpc-go or C-core defaults.
pub(super) const STRIKE_OUT: [KeepaliveVerdict; 4] = [
    KeepaliveVerdict::Ok,
    KeepaliveVerdict::Strike { n: 1, of: 2 },
    KeepaliveVerdict::Strike { n: 2, of: 2 },
    KeepaliveVerdict::TooManyPings,
];

/// 10 ms steps keep ten simulated minutes cheap; every time in these
/// stories is a multiple of 10 ms.
pub(super) fn sim(seed: u64, policy: KeepalivePolicy) -> Sim {
    let mut sim = Sim::builder()
        .seed(seed)
        .tick(Duration::from_millis(10))
        .duration(STORY + Duration::from_secs(60))
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    sim.keepalive_policy("store", policy);
    sim
}

/// Every Save is held for the whole story: a long call with nothing on the
/// wire.
pub(super) fn silent_saves() -> Fault {
    Fault::handler("store").method(SAVE).delay(STORY)
}

/// kube-apiserver's etcd client (seed 000 §6.1, `etcd3.go`): a PING every
/// 30 s, 10 s to answer it.
pub(super) fn apiserver(e: Endpoint) -> Endpoint {
    e.http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
}

/// A connection the keepalive policy cut.
pub(super) struct Cut {
    /// When the GOAWAY went out.
    pub(super) at: Duration,
    /// The connection.
    pub(super) conn: u32,
    /// The GOAWAY (`Display`: as the trace shows it).
    pub(super) detail: FrameDetail,
    /// PINGs judged on the connection up to the cut.
    pub(super) pings: usize,
}

/// Every injected GOAWAY, in order.
pub(super) fn cuts(trace: &Trace) -> Vec<Cut> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Frame {
                conn,
                detail: detail @ FrameDetail::GoAway(_),
                fate,
                ..
            } if *fate == Fate::Injected => Some(Cut {
                at: e.at(),
                conn: *conn,
                detail: detail.clone(),
                pings: ping_verdicts(trace, *conn).len(),
            }),
            _ => None,
        })
        .collect()
}

/// The verdicts of the PINGs judged on connection `conn`.
pub(super) fn ping_verdicts(trace: &Trace, conn: u32) -> Vec<KeepaliveVerdict> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::KeepalivePing(ping) if ping.conn == conn => Some(ping.verdict),
            _ => None,
        })
        .collect()
}

/// The verdicts of every PING judged in the run.
pub(super) fn judged_pings(trace: &Trace) -> Vec<KeepaliveVerdict> {
    trace
        .events()
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::KeepalivePing(ping) => Some(ping.verdict),
            _ => None,
        })
        .collect()
}
