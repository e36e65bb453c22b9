//! Seed 000 §6: the peer is dead but the connection looks open. The player
//! pings the store every 10 s of silence (keepalive timeout 1 s); every PING
//! ACK from the store is lost. A Load that waits for its response headers
//! (the store's handler hangs) is failed when keepalive closes the
//! connection, and the next call dials a new connection.

use std::time::Duration;

use grpc_chaos::recorder::event::{Event, EventKind};
use grpc_chaos::trace::fmt_duration;
use grpc_chaos::trace::{CallEnd, RunEnd};
use grpc_chaos::wire::FrameType;
use grpc_chaos::{Fault, Sim, Trace};

use super::world::ms;
use super::{Report, Scenario};
use crate::services::pb::store_client::StoreClient;
use crate::services::pb::LoadRequest;
use crate::services::{Store, LOAD};

/// The catalog entry.
pub(super) const SCENARIO: Scenario = Scenario {
    name: "dead-peer",
    source: "gRFC A8 (client-side keepalive); grpc doc/keepalive.md",
    story: "A server that stops answering is found only when a keepalive PING goes unanswered.",
    checks: "keepalive 10s/1s, PING ACKs lost, unary call waiting for headers: closed ~1s after the unanswered PING, UNAVAILABLE, next call redials",
    simulate,
    judge,
};

/// The player's keepalive: a PING after this much silence …
pub(super) const KEEPALIVE: Duration = ms(10_000);
/// … and the connection is closed if its ACK has not come back by then.
pub(super) const KEEPALIVE_TIMEOUT: Duration = ms(1_000);
/// The story is 11 s of mostly silence: 10 ms steps keep it cheap, and
/// every time in it is a multiple of 10 ms.
pub(super) const TICK: Duration = ms(10);

fn simulate(seed: u64) -> grpc_chaos::Result<Trace> {
    let mut sim = Sim::builder()
        .seed(seed)
        .duration(ms(20_000))
        .tick(TICK)
        .build();
    sim.server("store", |s| s.add_service(Store::default().into_server()));
    // The store's handler never answers the first Load: the call sits
    // waiting for response headers, which is when keepalive matters.
    sim.fault(
        Fault::handler("store")
            .method(LOAD)
            .during(Duration::ZERO, ms(1_000))
            .hang(),
    );
    sim.fault(
        Fault::frames()
            .from("store")
            .kind(FrameType::Ping)
            .ack(true)
            .drop(),
    );
    sim.client("player", |player| async move {
        let mut store = StoreClient::new(player.channel_with("store", |e| {
            e.http2_keep_alive_interval(KEEPALIVE)
                .keep_alive_timeout(KEEPALIVE_TIMEOUT)
        }));
        let load = || LoadRequest {
            match_id: "final".into(),
        };
        // No deadline: nothing but keepalive ends this call.
        let _ = store.load(load()).await;
        store.load(load()).await?;
        Ok(())
    });
    sim.run()
}

/// The first PING of `from` on connection `conn` that was sent without an
/// ACK (keepalive's probe), and when.
pub(super) fn first_ping(trace: &Trace, from: &str, conn: u32) -> Option<Duration> {
    trace.events_on(from).find_map(|e| match &e.kind {
        EventKind::Frame {
            conn: c,
            frame: FrameType::Ping,
            flags,
            ..
        } if *c == conn && !flags.ack() => Some(e.at()),
        _ => None,
    })
}

/// The connections `from` wrote frames on to `to`, in order of appearance.
pub(super) fn connections(trace: &Trace, from: &str, to: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for e in trace.events_on(from) {
        if let Event {
            kind: EventKind::Frame { conn, to: t, .. },
            ..
        } = e
        {
            if t == to && !out.contains(conn) {
                out.push(*conn);
            }
        }
    }
    out
}

/// What both dead-peer stories must show once keepalive cut the
/// connection: a PING, the call ending ~1 s later as UNAVAILABLE (by the
/// spec), the handler dropped with the connection, and a redial that works.
pub(super) struct Cut<'a> {
    pub(super) ping: Option<Duration>,
    pub(super) closed_after_ping: Option<Duration>,
    pub(super) spec: &'a str,
    pub(super) handler_dropped: bool,
    pub(super) conns: usize,
    pub(super) next_ok: bool,
}

impl Cut<'_> {
    /// The checks, worded for `what` ended ("call", "stream") and `handler`.
    pub(super) fn checks(&self, what: &str, handler: &str) -> Vec<(bool, String)> {
        vec![
            (self.ping.is_some(), "keepalive sent no PING".into()),
            (
                self.closed_after_ping
                    .is_some_and(|d| d >= KEEPALIVE_TIMEOUT && d <= KEEPALIVE_TIMEOUT + ms(20)),
                format!("the {what} did not end ~1s after the unanswered PING"),
            ),
            (
                self.spec == "UNAVAILABLE",
                format!("the {what} ended {}, not UNAVAILABLE", self.spec),
            ),
            (
                self.handler_dropped,
                format!("{handler} was not dropped with the connection"),
            ),
            (
                self.conns == 2,
                format!("{} connections, not 2", self.conns),
            ),
            (self.next_ok, "the next call did not succeed".into()),
        ]
    }
}

fn judge(trace: &Trace) -> Report {
    let calls: Vec<_> = trace.calls_from("player").collect();
    let (Some(first), Some(second)) = (calls.first(), calls.get(1)) else {
        return Report::failed(format!("expected 2 calls, saw {}", calls.len()));
    };
    let conns = connections(trace, "player", "store");
    let ping = conns.first().and_then(|&c| first_ping(trace, "player", c));
    let ended = first.ended_at;
    let spec = first.outcome().map_or("no status", |o| o.spec_code);
    let closed_after_ping = ping.zip(ended).map(|(p, e)| e.saturating_sub(p));
    let handler_dropped = trace
        .runs_on("store")
        .next()
        .is_some_and(|r| r.end == RunEnd::Dropped);
    let happened = format!(
        "PING at {}, no ACK; the waiting Load ended {spec} at {} ({} after the PING); the next Load {} on c{}",
        ping.map_or("never".into(), fmt_duration),
        ended.map_or("never".into(), fmt_duration),
        closed_after_ping.map_or("-".into(), fmt_duration),
        match &second.end {
            CallEnd::Status(o) => o.spec_code.to_owned(),
            _ => "did not end".to_owned(),
        },
        conns.get(1).map_or("?".into(), |c| c.to_string()),
    );
    let cut = Cut {
        ping,
        closed_after_ping,
        spec,
        handler_dropped,
        conns: conns.len(),
        next_ok: second.outcome().is_some_and(|o| o.is_ok()),
    };
    Report::from_checks(happened, &cut.checks("call", "the store's handler")).with_findings(trace)
}
