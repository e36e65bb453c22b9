//! Keepalive enforcement as a [`ConnectionPolicy`]: one
//! [`KeepaliveEnforcement`] per connection to a server host with a
//! [`KeepalivePolicy`] ([`Sim::keepalive_policy`](crate::Sim::keepalive_policy)),
//! driving an [`Enforcer`] from the frames the wire tap shows it.
//!
//! # How the frames drive the [`Enforcer`]
//!
//! - **Client → server**: every HEADERS that opens a stream, every
//!   END_STREAM and RST_STREAM the client writes is noted; every non-ACK
//!   PING that leaves the client (not dropped by a frame fault) is queued as
//!   *in flight*, with a snapshot of the streams the client had opened
//!   before it. TCP keeps order, so that snapshot is exactly what the server
//!   has read when it reads the PING.
//! - **Server → client**: every HEADERS, DATA and WINDOW_UPDATE the server
//!   writes goes to [`Enforcer::on_server_frame`] (resets strikes per
//!   [`KeepalivePolicy::reset_on`]), END_STREAM and RST_STREAM close
//!   streams. When the server's PING ACK passes, the oldest in-flight PING
//!   with the same opaque data is judged by [`Enforcer::on_ping_received`]:
//!   h2 acks a PING as soon as it reads it, so **the time of a PING is when
//!   the server acked it** — its arrival at the server, in the server's own
//!   order of frames. An ACK dropped by a frame fault still counts: the
//!   server did read the PING.
//! - **Open calls** at that moment: streams the client opened before the
//!   PING that are not closed — neither reset (RST_STREAM either way, the
//!   client's before the PING, the server's before the ACK) nor ended both
//!   ways (the client's END_STREAM before the PING and the server's before
//!   the ACK). Zero open calls means "no active calls": the policy's
//!   `idle_min_time` applies unless it permits PINGs without calls.
//! - **C-core's WINDOW_UPDATEs for client DATA** ([`ResetOn::client_data`](super::ResetOn::client_data)):
//!   see [`KeepalivePolicy::c_core`] for the rule and its source.
//!
//! On [`PingVerdict::TooManyPings`] the ACK goes out as the server wrote it,
//! then the [`reaction`] frames, then the connection is closed: nothing more
//! the server writes on it leaves, the client reads EOF after the GOAWAY,
//! and the server's reads end, so the server's HTTP/2 connection and its
//! handlers go away as with a real close.

use crate::recorder::event;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::fault::FrameView;
use crate::policy::connection::{ConnInfo, ConnectionPolicy, Effects};
use crate::policy::react::encode_action;
use crate::policy::{
    reaction, Action, Enforcer, KeepalivePolicy, OpenStream, PingVerdict, ServerFrame,
    TOO_MANY_PINGS,
};
use crate::recorder::event::{EventKind, Fate, FrameDetail, KeepaliveVerdict};
use crate::wire::{BlockKind, Direction, FrameType};

/// The client side of a stream, as the client wrote it.
#[derive(Clone, Copy, Debug, Default)]
struct ClientSide {
    ended: bool,
    reset: bool,
}

/// One stream, both directions.
#[derive(Clone, Copy, Debug, Default)]
struct StreamState {
    client: ClientSide,
    response_headers: bool,
    server_ended: bool,
    server_reset: bool,
}

impl StreamState {
    fn closed(&self) -> bool {
        self.client.reset || self.server_reset || (self.client.ended && self.server_ended)
    }
}

/// A PING on its way to the server.
struct InFlight {
    opaque: [u8; 8],
    /// The client's view of its open streams when it sent the PING.
    streams: Vec<(u32, ClientSide)>,
    /// Highest stream id the client had opened when it sent the PING: the
    /// highest the server has accepted when it reads the PING.
    highest: u32,
    /// A client DATA frame (its stream) sent after this PING and before
    /// the next: under [`ResetOn::client_data`](super::ResetOn::client_data), C-core's window update
    /// for it resets strikes once this PING was read.
    data_after: Option<u32>,
}

/// How the server judged one PING, for the trace.
#[derive(Debug)]
pub(crate) struct Judged {
    pub(crate) verdict: PingVerdict,
    /// Strikes counted after this PING.
    pub(crate) strikes: u32,
    pub(crate) open_calls: usize,
    /// The reaction to perform, for [`PingVerdict::TooManyPings`].
    pub(crate) reaction: Vec<Action>,
    /// Whether the gap was unmeasured because strikes had been reset by a
    /// server frame since the previous PING (rather than there being no
    /// previous PING at all).
    pub(crate) after_reset: bool,
    /// A client DATA frame's stream, sent right after this PING: C-core's
    /// window update for it goes out now ([`ResetOn::client_data`](super::ResetOn::client_data)).
    pub(crate) data_after: Option<u32>,
}

/// When C-core's window updates for client DATA are written, relative to
/// the server frame being written ([`KeepaliveConn::window_updates`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stage {
    /// A PING ACK, before its PING is judged.
    Before,
    /// A PING ACK, after its PING was judged; `data_after` from the
    /// judgment.
    After { data_after: Option<u32> },
    /// Any other server frame.
    Write,
}

/// Up to two strike resets of one write, as `(stream, cleared)`; no
/// allocation.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Resets([Option<(u32, u32)>; 2]);

impl Resets {
    fn push(&mut self, stream: u32, cleared: u32) {
        if let Some(slot) = self.0.iter_mut().find(|s| s.is_none()) {
            *slot = Some((stream, cleared));
        }
    }

    /// The resets, in the order written.
    pub(crate) fn iter(self) -> impl Iterator<Item = (u32, u32)> {
        self.0.into_iter().flatten()
    }
}

/// Keepalive state of one connection.
pub(crate) struct KeepaliveConn {
    enforcer: Enforcer,
    streams: BTreeMap<u32, StreamState>,
    highest: u32,
    in_flight: VecDeque<InFlight>,
    pings: u32,
    reset_since_ping: bool,
    /// Under [`ResetOn::client_data`](super::ResetOn::client_data): the
    /// stream of a client DATA frame sent before any PING now in flight,
    /// whose window update the server has not written yet.
    unwritten: Option<u32>,
    /// Likewise: the stream of a client DATA frame whose second window
    /// update (C-core's `+5` for the next message header) goes out with
    /// the server's next write.
    next_write_resets: Option<u32>,
}

impl KeepaliveConn {
    /// State for a connection opened at `opened_at` (simulated time).
    pub(crate) fn new(policy: KeepalivePolicy, opened_at: Duration) -> Self {
        Self {
            enforcer: Enforcer::opened_at(policy, opened_at),
            streams: BTreeMap::new(),
            highest: 0,
            in_flight: VecDeque::new(),
            pings: 0,
            reset_since_ping: false,
            unwritten: None,
            next_write_resets: None,
        }
    }

    /// Client → server HEADERS on `stream` (a new stream when its id is
    /// higher than any before, RFC 9113 §5.1.1; else trailers).
    pub(crate) fn client_headers(&mut self, stream: u32, end_stream: bool) {
        self.highest = self.highest.max(stream);
        let s = self.streams.entry(stream).or_default();
        s.client.ended |= end_stream;
        if end_stream {
            self.read_closed(stream);
        }
        self.prune();
    }

    /// Client → server DATA with END_STREAM.
    pub(crate) fn client_ended(&mut self, stream: u32) {
        self.streams.entry(stream).or_default().client.ended = true;
        self.read_closed(stream);
        self.prune();
    }

    /// Client → server RST_STREAM.
    pub(crate) fn client_reset(&mut self, stream: u32) {
        self.streams.entry(stream).or_default().client.reset = true;
        self.read_closed(stream);
        self.prune();
    }

    /// The client closed `stream` for the server's reading before the
    /// server wrote the window update for its DATA: C-core writes none for
    /// a stream whose read side is closed (`writing.cc`,
    /// `FlushWindowUpdates`: `if (s_->read_closed) return;`); a unary call's
    /// message and END_STREAM arrive together.
    fn read_closed(&mut self, stream: u32) {
        if self.unwritten == Some(stream) {
            self.unwritten = None;
        }
        for ping in &mut self.in_flight {
            if ping.data_after == Some(stream) {
                ping.data_after = None;
            }
        }
    }

    /// Client → server PING without ACK, on its way.
    pub(crate) fn ping_sent(&mut self, opaque: [u8; 8]) {
        let streams = self
            .streams
            .iter()
            .filter(|(_, s)| !s.client.reset)
            .map(|(id, s)| (*id, s.client))
            .collect();
        self.in_flight.push_back(InFlight {
            opaque,
            streams,
            highest: self.highest,
            data_after: None,
        });
    }

    /// Client → server DATA without END_STREAM, carrying `len` octets of
    /// flow-controlled payload, on `stream`. Under
    /// [`ResetOn::client_data`](super::ResetOn::client_data) (C-core) the
    /// server writes a stream and a connection WINDOW_UPDATE once it has
    /// read it, unless the stream's END_STREAM comes with it: noted here,
    /// written (and strikes reset) by [`KeepaliveConn::window_updates`] when
    /// the server next writes, in the server's order of reads: before the
    /// next PING it reads when no PING is in flight now, else right after
    /// the newest PING in flight.
    pub(crate) fn client_data(&mut self, stream: u32, len: u32) {
        let open = self
            .streams
            .get(&stream)
            .is_some_and(|s| !s.client.reset && !s.server_reset && !s.client.ended);
        if !self.enforcer.policy().reset_on.client_data || len == 0 || !open {
            return;
        }
        match self.in_flight.back_mut() {
            Some(last) => last.data_after = Some(stream),
            None => self.unwritten = Some(stream),
        }
    }

    /// The window updates C-core writes with a server frame of type `ty`,
    /// each as `(stream, strikes cleared)`, in the order written: for a
    /// PING ACK, `before` are those written before the PING was judged
    /// (for DATA read before it) and `after` those written with the ACK
    /// (the second update of earlier DATA, then the first for DATA read
    /// right after the PING, `data_after`). h2's own SETTINGS and
    /// WINDOW_UPDATE writes (at connection start, right behind the first
    /// request) have no C-core counterpart at that moment and carry none.
    pub(crate) fn window_updates(&mut self, ty: FrameType, stage: Stage) -> Resets {
        let mut out = Resets::default();
        if matches!(ty, FrameType::Settings | FrameType::WindowUpdate) {
            return out;
        }
        match stage {
            Stage::Before => {
                if let Some(stream) = self.unwritten.take() {
                    out.push(stream, self.first_update(stream));
                }
            }
            Stage::After { data_after } => {
                if let Some(stream) = self.next_write_resets.take() {
                    out.push(stream, self.reset_for_data());
                }
                if let Some(stream) = data_after {
                    out.push(stream, self.first_update(stream));
                }
            }
            Stage::Write => {
                if let Some(stream) = self.next_write_resets.take() {
                    out.push(stream, self.reset_for_data());
                }
                if let Some(stream) = self.unwritten.take() {
                    out.push(stream, self.first_update(stream));
                }
            }
        }
        out
    }

    /// The first window update for client DATA on `stream`: strikes
    /// reset, and the next write carries the second. Returns the strikes
    /// cleared.
    fn first_update(&mut self, stream: u32) -> u32 {
        let cleared = self.reset_for_data();
        self.next_write_resets = Some(stream);
        cleared
    }

    fn reset_for_data(&mut self) -> u32 {
        let before = self.enforcer.strikes();
        if self.enforcer.reset_strikes() {
            self.reset_since_ping = true;
            before
        } else {
            0
        }
    }

    /// Server → client frame of type `ty` on `stream`; `end_stream` for DATA
    /// and HEADERS. Returns the strikes the frame cleared (0 if none).
    pub(crate) fn server_frame(&mut self, ty: u8, stream: u32, end_stream: bool) -> u32 {
        match ty {
            0x0 | 0x1 if stream != 0 => {
                let s = self.streams.entry(stream).or_default();
                if ty == 0x1 && !end_stream {
                    s.response_headers = true;
                }
                s.server_ended |= end_stream;
            }
            0x3 if stream != 0 => self.streams.entry(stream).or_default().server_reset = true,
            _ => {}
        }
        let before = self.enforcer.strikes();
        let reset = ServerFrame::from_type(ty).is_some_and(|f| self.enforcer.on_server_frame(f));
        if reset {
            self.reset_since_ping = true;
        }
        self.prune();
        if reset {
            before
        } else {
            0
        }
    }

    /// The server acked a PING at `now` (simulated time): judges the oldest
    /// in-flight PING with that opaque data. `None` when no such PING is in
    /// flight (an ACK the harness injected, or one of a PING the tap never
    /// saw).
    pub(crate) fn ping_acked(&mut self, opaque: [u8; 8], now: Duration) -> Option<Judged> {
        let at = self.in_flight.iter().position(|p| p.opaque == opaque)?;
        let ping = self.in_flight.remove(at)?;
        let open: Vec<OpenStream> = ping
            .streams
            .iter()
            .filter_map(|&(id, client)| {
                // Pruned (absent) streams were closed on both sides.
                let live = self.streams.get(&id)?;
                let closed =
                    client.reset || live.server_reset || (client.ended && live.server_ended);
                (!closed).then_some(OpenStream {
                    id,
                    response_headers_sent: live.response_headers,
                })
            })
            .collect();
        let after_reset = self.pings > 0 && self.reset_since_ping;
        self.pings += 1;
        self.reset_since_ping = false;
        let verdict = self.enforcer.on_ping_received(now, open.len());
        let reaction = match verdict {
            PingVerdict::TooManyPings { .. } => {
                reaction(self.enforcer.policy(), ping.highest, &open)
            }
            _ => Vec::new(),
        };
        self.prune();
        Some(Judged {
            verdict,
            strikes: self.enforcer.strikes(),
            open_calls: open.len(),
            reaction,
            after_reset,
            data_after: ping.data_after,
        })
    }

    /// Forgets closed streams once no PING in flight may still count them.
    fn prune(&mut self) {
        if self.in_flight.is_empty() {
            self.streams.retain(|_, s| !s.closed());
        }
    }

    /// The policy this connection is held to.
    pub(crate) fn policy(&self) -> &KeepalivePolicy {
        self.enforcer.policy()
    }
}

/// A [`KeepalivePolicy`] enforced on one connection: the first
/// [`ConnectionPolicy`]. It alters only the server → client direction (its
/// reaction goes there); the client's frames are only watched.
pub(crate) struct KeepaliveEnforcement {
    state: KeepaliveConn,
    conn: u32,
    client: String,
}

impl KeepaliveEnforcement {
    /// Enforcement of `policy` on the connection `info` describes.
    pub(crate) fn new(policy: KeepalivePolicy, info: &ConnInfo<'_>) -> Self {
        Self {
            state: KeepaliveConn::new(policy, info.opened_at()),
            conn: info.conn(),
            client: info.client().to_owned(),
        }
    }

    fn client_frame(&mut self, frame: &FrameView<'_>) {
        // A frame the network lost never reached the server.
        if frame.fate() == Fate::Dropped {
            return;
        }
        let ka = &mut self.state;
        let id = frame.stream();
        let end_stream = frame.flags().end_stream();
        match (frame.frame_type(), frame.detail()) {
            (FrameType::Headers, _) => ka.client_headers(id, end_stream),
            (FrameType::Data, _) if end_stream => ka.client_ended(id),
            (FrameType::Data, _) => ka.client_data(id, frame.len()),
            (FrameType::RstStream, _) => ka.client_reset(id),
            (FrameType::Ping, FrameDetail::Ping { payload }) if !frame.ack() => {
                ka.ping_sent(*payload);
            }
            _ => {}
        }
    }

    fn server_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        // The server wrote it, whatever the network then does: its own
        // state (strikes, streams) moved on.
        let ka = &mut self.state;
        let ty = frame.frame_type();
        let end_stream =
            matches!(ty, FrameType::Data | FrameType::Headers) && frame.flags().end_stream();
        let cleared = ka.server_frame(ty.code(), frame.stream(), end_stream);
        let ack = match (ty, frame.detail()) {
            (FrameType::Ping, FrameDetail::Ping { payload }) if frame.ack() => Some(*payload),
            _ => None,
        };
        let before = match ack {
            Some(_) => ka.window_updates(ty, Stage::Before),
            None => Resets::default(),
        };
        let judged = ack.and_then(|payload| ka.ping_acked(payload, fx.now()));
        let allowed = judged
            .as_ref()
            .map(|j| ka.policy().allowed_gap(j.open_calls));
        let after = match (ack, &judged) {
            (Some(_), judged) => ka.window_updates(
                ty,
                Stage::After {
                    data_after: judged.as_ref().and_then(|j| j.data_after),
                },
            ),
            (None, _) => ka.window_updates(ty, Stage::Write),
        };
        if cleared > 0 {
            fx.record(EventKind::KeepaliveStrikesReset {
                conn: self.conn,
                to: (&self.client).into(),
                cleared,
                frame: ty,
            });
        }
        for (stream, cleared) in before.iter() {
            self.data_reset(stream, cleared, fx);
        }
        if let Some(judged) = &judged {
            fx.record(self.ping_event(judged, allowed.unwrap_or_default()));
        }
        for (stream, cleared) in after.iter() {
            self.data_reset(stream, cleared, fx);
        }
        if let Some(judged) = judged {
            self.react(&judged, fx);
        }
    }

    fn data_reset(&self, stream: u32, cleared: u32, fx: &mut Effects) {
        if cleared > 0 {
            fx.record(EventKind::KeepaliveDataReset {
                conn: self.conn,
                to: (&self.client).into(),
                cleared,
                stream,
            });
        }
    }

    fn ping_event(&self, judged: &Judged, allowed: Duration) -> EventKind {
        let (verdict, gap, allowed) = match judged.verdict {
            PingVerdict::Ok { gap } => (KeepaliveVerdict::Ok, gap, allowed),
            PingVerdict::Strike {
                n,
                of,
                gap,
                allowed,
            } => (KeepaliveVerdict::Strike { n, of }, Some(gap), allowed),
            PingVerdict::StrikeWithoutLimit { n, gap, allowed } => (
                KeepaliveVerdict::StrikeWithoutLimit { n },
                Some(gap),
                allowed,
            ),
            PingVerdict::TooManyPings { gap, allowed, .. } => {
                (KeepaliveVerdict::TooManyPings, Some(gap), allowed)
            }
            PingVerdict::AlreadyGoingAway { .. } => (KeepaliveVerdict::GoingAway, None, allowed),
        };
        EventKind::KeepalivePing(Box::new(event::KeepalivePing {
            conn: self.conn,
            from: (&self.client).into(),
            verdict,
            strikes: judged.strikes,
            gap,
            allowed,
            open_calls: judged.open_calls,
            after_reset: judged.after_reset,
        }))
    }

    /// Sends the reaction behind the PING ACK that set it off, then closes.
    fn react(&self, judged: &Judged, fx: &mut Effects) {
        if judged.reaction.is_empty() {
            return;
        }
        for action in &judged.reaction {
            let Some(bytes) = encode_action(action) else {
                continue;
            };
            // The block kind the client sees; a decoder of the injected
            // frame alone cannot know the response headers went out.
            let kind = match action {
                Action::SendTrailers { .. } => Some(BlockKind::Trailers),
                _ => None,
            };
            fx.send_as(Direction::ServerToClient, bytes.into(), kind);
        }
        fx.close_keepalive(String::from_utf8_lossy(TOO_MANY_PINGS).into_owned());
    }
}

impl ConnectionPolicy for KeepaliveEnforcement {
    fn on_frame(&mut self, frame: &FrameView<'_>, fx: &mut Effects) {
        match frame.direction() {
            Direction::ClientToServer => self.client_frame(frame),
            Direction::ServerToClient => self.server_frame(frame, fx),
        }
    }

    fn alters(&self, direction: Direction) -> bool {
        direction == Direction::ServerToClient
    }

    fn name(&self) -> String {
        "the keepalive policy".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::event::FrameFlags;

    const OPAQUE: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_stream_the_server_ended_before_the_ack_is_not_open() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, true);
        ka.client_headers(3, true);
        ka.ping_sent(OPAQUE);
        // Stream 1 ends on the server before it reads the PING.
        ka.server_frame(0x1, 1, false);
        ka.server_frame(0x1, 1, true);
        // Stream 5 opens after the PING: not the server's business yet.
        ka.client_headers(5, true);
        let judged = ka.ping_acked(OPAQUE, secs(1)).expect("in flight");
        assert_eq!(judged.open_calls, 1);
        assert!(matches!(judged.verdict, PingVerdict::Ok { gap: None }));
    }

    #[test]
    fn the_reaction_names_the_streams_open_and_the_last_accepted() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, true);
        ka.server_frame(0x1, 1, false);
        ka.client_headers(3, true);
        let mut last = None;
        for t in [10, 20, 30, 40] {
            ka.ping_sent(OPAQUE);
            last = ka.ping_acked(OPAQUE, secs(t));
        }
        let judged = last.expect("judged");
        assert!(matches!(judged.verdict, PingVerdict::TooManyPings { .. }));
        assert_eq!(judged.reaction.len(), 6, "{:?}", judged.reaction);
        assert!(matches!(
            judged.reaction[0],
            Action::SendGoAway {
                last_stream_id: 3,
                ..
            }
        ));
        assert!(matches!(
            judged.reaction[1],
            Action::SendTrailers { stream_id: 1, .. }
        ));
        assert!(matches!(
            judged.reaction[3],
            Action::SendTrailersOnly { stream_id: 3, .. }
        ));
    }

    #[test]
    fn an_unknown_ack_is_not_judged() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        assert!(ka.ping_acked(OPAQUE, secs(1)).is_none());
        ka.ping_sent(OPAQUE);
        assert!(ka.ping_acked([0; 8], secs(1)).is_none());
        assert!(ka.ping_acked(OPAQUE, secs(1)).is_some());
    }

    #[test]
    fn server_data_reports_the_strikes_it_cleared() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        ka.client_headers(1, false);
        for t in [10, 20] {
            ka.ping_sent(OPAQUE);
            let _ = ka.ping_acked(OPAQUE, secs(t));
        }
        assert_eq!(ka.server_frame(0x0, 1, false), 1);
        assert_eq!(ka.server_frame(0x0, 1, false), 0);
        ka.ping_sent(OPAQUE);
        let judged = ka.ping_acked(OPAQUE, secs(30)).expect("in flight");
        assert!(judged.after_reset);
    }

    /// Pings every 10 s after `data`, returning the verdicts.
    fn pings_after(ka: &mut KeepaliveConn, n: u64) -> Vec<PingVerdict> {
        (1..=n)
            .map(|t| {
                ka.ping_sent(OPAQUE);
                let _ = ka.window_updates(FrameType::Ping, Stage::Before);
                let judged = ka.ping_acked(OPAQUE, secs(10 * t)).expect("in flight");
                let _ = ka.window_updates(
                    FrameType::Ping,
                    Stage::After {
                        data_after: judged.data_after,
                    },
                );
                judged.verdict
            })
            .collect()
    }

    #[test]
    fn c_core_writes_window_updates_for_an_upload_not_for_a_unary_call() {
        // An upload's message: the updates reset strikes before the 1st
        // PING and with its ACK, so the GOAWAY comes with the 5th PING.
        let mut upload = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        upload.client_headers(1, false);
        upload.client_data(1, 9);
        let v = pings_after(&mut upload, 5);
        assert!(matches!(v[3], PingVerdict::Strike { n: 2, .. }), "{v:?}");
        assert!(matches!(v[4], PingVerdict::TooManyPings { .. }), "{v:?}");

        // A unary call's END_STREAM comes with its message: no update.
        let mut unary = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        unary.client_headers(1, false);
        unary.client_data(1, 9);
        unary.client_ended(1);
        let v = pings_after(&mut unary, 4);
        assert!(matches!(v[3], PingVerdict::TooManyPings { .. }), "{v:?}");

        // grpc-go writes the same updates, but they do not reset.
        let mut go = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        go.client_headers(1, false);
        go.client_data(1, 9);
        let v = pings_after(&mut go, 4);
        assert!(matches!(v[3], PingVerdict::TooManyPings { .. }), "{v:?}");
    }

    #[test]
    fn data_sent_behind_a_ping_resets_after_that_ping_is_judged() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, false);
        let _ = pings_after(&mut ka, 2);
        // Strike 1 counted; DATA follows the 3rd PING on the wire.
        ka.ping_sent(OPAQUE);
        ka.client_data(1, 9);
        assert!(ka
            .window_updates(FrameType::Ping, Stage::Before)
            .iter()
            .next()
            .is_none());
        let judged = ka.ping_acked(OPAQUE, secs(30)).expect("in flight");
        assert!(matches!(judged.verdict, PingVerdict::Strike { n: 2, .. }));
        let resets: Vec<_> = ka
            .window_updates(
                FrameType::Ping,
                Stage::After {
                    data_after: judged.data_after,
                },
            )
            .iter()
            .collect();
        assert_eq!(resets, [(1, 2)]);
        // h2's own SETTINGS carry no update; the next DATA of the server does.
        assert!(ka
            .window_updates(FrameType::Settings, Stage::Write)
            .iter()
            .next()
            .is_none());
        let second: Vec<_> = ka
            .window_updates(FrameType::Data, Stage::Write)
            .iter()
            .collect();
        assert_eq!(second, [(1, 0)]);
    }

    /// Drives a [`KeepaliveEnforcement`] the way the tap does: one frame at
    /// a time, each with the effects of its own call.
    struct Wire(crate::policy::drive::Drive<KeepaliveEnforcement>);

    impl Wire {
        fn new(policy: KeepalivePolicy) -> Self {
            let mut drive = crate::policy::drive::Drive::new(Duration::ZERO, |info| {
                KeepaliveEnforcement::new(policy, info)
            });
            drive.len = 9;
            Self(drive)
        }

        /// A frame passed by the frame faults, at 0 ms.
        fn passed(
            &mut self,
            direction: Direction,
            frame: FrameType,
            flags: FrameFlags,
            stream: u32,
        ) -> &Effects {
            let detail = FrameDetail::Empty;
            let at = Duration::ZERO;
            self.0
                .frame(at, direction, frame, flags, stream, &detail, Fate::Passed)
        }

        fn client(&mut self, frame: FrameType, flags: FrameFlags, stream: u32) -> &Effects {
            self.passed(Direction::ClientToServer, frame, flags, stream)
        }

        fn server(&mut self, frame: FrameType, flags: FrameFlags, stream: u32) -> &Effects {
            self.passed(Direction::ServerToClient, frame, flags, stream)
        }

        /// A PING (`ack` false) or its ACK, with [`OPAQUE`].
        fn ping(&mut self, at: Duration, direction: Direction, ack: bool, fate: Fate) -> &Effects {
            let flags = FrameFlags::NONE.with(FrameFlags::ACK, ack);
            let detail = FrameDetail::Ping { payload: OPAQUE };
            self.0
                .frame(at, direction, FrameType::Ping, flags, 0, &detail, fate)
        }

        /// The client's PING at `at`, then the server's ACK: the ACK's
        /// effects.
        fn ping_pong(&mut self, at: Duration) -> &Effects {
            self.ping(at, Direction::ClientToServer, false, Fate::Passed);
            self.ping(at, Direction::ServerToClient, true, Fate::Passed)
        }
    }

    /// The `KeepalivePing` records: `(verdict, gap, open calls, after_reset)`.
    fn judged(fx: &Effects) -> Vec<(KeepaliveVerdict, Option<Duration>, usize, bool)> {
        fx.records
            .iter()
            .filter_map(|e| match e {
                EventKind::KeepalivePing(p) => {
                    Some((p.verdict, p.gap, p.open_calls, p.after_reset))
                }
                _ => None,
            })
            .collect()
    }

    /// The open calls the server counted for a PING sent now.
    fn open_calls(wire: &mut Wire, at: Duration) -> usize {
        let judged = judged(wire.ping_pong(at));
        assert_eq!(judged.len(), 1, "{judged:?}");
        judged[0].2
    }

    const ES: FrameFlags = FrameFlags::END_STREAM;
    const NO: FrameFlags = FrameFlags::NONE;

    #[test]
    fn too_many_pings_sends_the_reaction_behind_the_ack_then_closes() {
        let mut wire = Wire::new(KeepalivePolicy::c_core());
        wire.client(FrameType::Headers, NO, 1);
        wire.server(FrameType::Headers, NO, 1);
        let mut verdicts = Vec::new();
        for t in [10, 20, 30] {
            let fx = wire.ping_pong(secs(t));
            assert!(fx.sends.is_empty() && fx.close.is_none(), "{fx:?}");
            verdicts.extend(judged(fx));
        }
        let five_min = secs(300);
        assert_eq!(
            verdicts,
            [
                (KeepaliveVerdict::Ok, None, 1, false),
                (
                    KeepaliveVerdict::Strike { n: 1, of: 2 },
                    Some(secs(10)),
                    1,
                    false
                ),
                (
                    KeepaliveVerdict::Strike { n: 2, of: 2 },
                    Some(secs(10)),
                    1,
                    false
                ),
            ]
        );
        let fx = wire.ping_pong(secs(40));
        assert_eq!(
            judged(fx),
            [(KeepaliveVerdict::TooManyPings, Some(secs(10)), 1, false)]
        );
        assert!(matches!(
            &fx.records[..],
            [EventKind::KeepalivePing(p)] if p.strikes == 3 && p.allowed == five_min
        ));
        // GOAWAY, trailers on the call whose headers went out (the client
        // sees trailers), RST_STREAM(NO_ERROR); CloseConnection is the close.
        let kinds: Vec<_> = fx.sends.iter().map(|s| (s.direction, s.kind)).collect();
        let down = Direction::ServerToClient;
        assert_eq!(
            kinds,
            [
                (down, None),
                (down, Some(BlockKind::Trailers)),
                (down, None)
            ]
        );
        assert_eq!(fx.sends[0].bytes[3], FrameType::GoAway.code());
        assert_eq!(fx.sends[2].bytes[3], FrameType::RstStream.code());
        assert_eq!(
            fx.close,
            Some(crate::policy::Close::Keepalive("too_many_pings".to_owned()))
        );
    }

    #[test]
    fn the_policy_alters_only_what_the_server_writes() {
        let wire = Wire::new(KeepalivePolicy::grpc_go());
        assert!(wire.0.policy.alters(Direction::ServerToClient));
        assert!(!wire.0.policy.alters(Direction::ClientToServer));
        assert_eq!(wire.0.policy.name(), "the keepalive policy");
    }

    #[test]
    fn only_pings_that_reached_the_server_are_judged_and_only_at_their_ack() {
        let mut wire = Wire::new(KeepalivePolicy::grpc_go());
        let (up, down) = (Direction::ClientToServer, Direction::ServerToClient);
        // A PING the network lost, then an ACK of the same data (injected):
        // nothing to judge.
        wire.ping(secs(1), up, false, Fate::Dropped);
        assert!(judged(wire.ping(secs(1), down, true, Fate::Passed)).is_empty());
        // The client's ACK of the server's PING is no PING of the client's.
        wire.ping(secs(2), up, true, Fate::Passed);
        assert!(judged(wire.ping(secs(2), down, true, Fate::Passed)).is_empty());
        // A PING the server sends is no ACK: the client's PING waits.
        wire.ping(secs(3), up, false, Fate::Passed);
        assert!(judged(wire.ping(secs(3), down, false, Fate::Passed)).is_empty());
        // Its ACK is judged, even if a frame fault then drops it.
        let fx = wire.ping(secs(3), down, true, Fate::Dropped);
        assert_eq!(judged(fx), [(KeepaliveVerdict::Ok, None, 0, false)]);
    }

    #[test]
    fn the_calls_open_at_a_ping_follow_the_clients_frames() {
        let mut wire = Wire::new(KeepalivePolicy::grpc_go());
        // s1: a unary request (HEADERS, DATA with END_STREAM), answered
        // with HEADERS only: open.
        wire.client(FrameType::Headers, NO, 1);
        wire.client(FrameType::Data, ES, 1);
        wire.server(FrameType::Headers, NO, 1);
        assert_eq!(open_calls(&mut wire, secs(1)), 1);
        // Its response DATA and trailers end it both ways.
        wire.server(FrameType::Data, NO, 1);
        wire.server(FrameType::Headers, ES, 1);
        assert_eq!(open_calls(&mut wire, secs(2)), 0);
        // s3: a stream the client resets, s5 one the server resets.
        wire.client(FrameType::Headers, NO, 3);
        wire.client(FrameType::Headers, NO, 5);
        assert_eq!(open_calls(&mut wire, secs(3)), 2);
        wire.client(FrameType::RstStream, NO, 3);
        wire.server(FrameType::RstStream, NO, 5);
        assert_eq!(open_calls(&mut wire, secs(4)), 0);
        // s7: the client's DATA without END_STREAM does not end it; a
        // lost HEADERS opens nothing.
        wire.client(FrameType::Headers, NO, 7);
        wire.client(FrameType::Data, NO, 7);
        let detail = FrameDetail::Empty;
        let lost = (Direction::ClientToServer, FrameType::Headers, NO, 9);
        wire.0.frame(
            secs(5),
            lost.0,
            lost.1,
            lost.2,
            lost.3,
            &detail,
            Fate::Dropped,
        );
        wire.server(FrameType::Headers, ES, 7);
        assert_eq!(open_calls(&mut wire, secs(5)), 1);
    }

    #[test]
    fn strikes_a_server_frame_clears_are_recorded_once_and_only_then() {
        let mut wire = Wire::new(KeepalivePolicy::grpc_go());
        wire.client(FrameType::Headers, NO, 1);
        wire.ping_pong(secs(10));
        wire.ping_pong(secs(20));
        let resets = |fx: &Effects| -> Vec<(u32, FrameType)> {
            fx.records
                .iter()
                .filter_map(|e| match e {
                    EventKind::KeepaliveStrikesReset { cleared, frame, .. } => {
                        Some((*cleared, *frame))
                    }
                    _ => None,
                })
                .collect()
        };
        assert_eq!(
            resets(wire.server(FrameType::Headers, NO, 1)),
            [(1, FrameType::Headers)]
        );
        // Nothing left to clear: no line.
        assert!(resets(wire.server(FrameType::Data, NO, 1)).is_empty());
        assert!(wire.0.fx.records.is_empty());
    }

    #[test]
    fn c_cores_update_for_client_data_is_recorded_when_it_clears_strikes() {
        let mut wire = Wire::new(KeepalivePolicy::c_core());
        wire.client(FrameType::Headers, NO, 1);
        wire.ping_pong(secs(10));
        wire.ping_pong(secs(20));
        // Strike 1 counted; the client's DATA (no END_STREAM) is read
        // before its next PING, whose ACK carries the update.
        wire.client(FrameType::Data, NO, 1);
        let fx = wire.ping_pong(secs(30));
        let data_resets: Vec<_> = fx
            .records
            .iter()
            .filter_map(|e| match e {
                EventKind::KeepaliveDataReset {
                    cleared, stream, ..
                } => Some((*cleared, *stream)),
                _ => None,
            })
            .collect();
        // The second update (with the ACK) clears nothing: no line.
        assert_eq!(data_resets, [(1, 1)]);
        assert!(matches!(
            fx.records[..],
            [
                EventKind::KeepaliveDataReset { .. },
                EventKind::KeepalivePing { .. }
            ]
        ));
        assert_eq!(judged(fx), [(KeepaliveVerdict::Ok, None, 1, true)]);
    }

    #[test]
    fn the_first_ping_is_never_after_a_reset() {
        // Server frames before any PING reset nothing the trace can tell.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        ka.client_headers(1, false);
        ka.server_frame(0x1, 1, false);
        ka.ping_sent(OPAQUE);
        let judged = ka.ping_acked(OPAQUE, secs(1)).expect("in flight");
        assert!(!judged.after_reset);
        ka.ping_sent(OPAQUE);
        let judged = ka.ping_acked(OPAQUE, secs(2)).expect("in flight");
        assert!(!judged.after_reset, "no server frame since the first PING");
    }

    #[test]
    fn closed_streams_are_forgotten_once_no_ping_may_count_them() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        // Ended both ways, reset by the client, reset by the server.
        ka.client_headers(1, true);
        ka.server_frame(0x1, 1, true);
        ka.client_headers(3, false);
        ka.client_reset(3);
        ka.client_headers(5, false);
        ka.server_frame(0x3, 5, false);
        assert!(ka.streams.is_empty(), "{:?}", ka.streams);
        // Half-closed either way: kept.
        ka.client_headers(7, true);
        ka.client_headers(9, false);
        ka.server_frame(0x1, 9, true);
        assert_eq!(ka.streams.keys().copied().collect::<Vec<_>>(), [7, 9]);
        // While a PING is in flight a stream it counted stays, even closed:
        // the client had not ended it when it sent the PING.
        ka.client_headers(11, false);
        ka.ping_sent(OPAQUE);
        ka.client_ended(11);
        ka.server_frame(0x1, 11, true);
        assert!(ka.streams.contains_key(&11));
        let judged = ka.ping_acked(OPAQUE, secs(1)).expect("in flight");
        assert_eq!(judged.open_calls, 3, "s7, s9 and s11");
        assert!(!ka.streams.contains_key(&11));
    }

    #[test]
    fn a_frame_on_stream_zero_opens_no_call() {
        // Stream 0 is the connection (RFC 9113 §5.1.1): no stream state,
        // even while a PING in flight keeps closed streams.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        ka.ping_sent(OPAQUE);
        ka.server_frame(0x1, 0, false);
        ka.server_frame(0x0, 0, false);
        ka.server_frame(0x3, 0, false);
        assert!(ka.streams.is_empty(), "{:?}", ka.streams);
        let _ = ka.ping_acked(OPAQUE, secs(1)).expect("in flight");
        ka.ping_sent(OPAQUE);
        let judged = ka.ping_acked(OPAQUE, secs(2)).expect("in flight");
        assert_eq!(judged.open_calls, 0);
    }

    #[test]
    fn a_stream_the_server_reset_before_the_ack_is_not_open() {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::grpc_go(), Duration::ZERO);
        ka.client_headers(1, false);
        ka.client_headers(3, false);
        ka.ping_sent(OPAQUE);
        ka.server_frame(0x3, 1, false);
        let judged = ka.ping_acked(OPAQUE, secs(1)).expect("in flight");
        assert_eq!(judged.open_calls, 1);
    }

    #[test]
    fn a_call_answered_trailers_only_gets_trailers_only_in_the_reaction() {
        // s1: the server answered trailers-only (HEADERS with END_STREAM)
        // while the client still sends; s3: response headers then DATA.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, false);
        ka.server_frame(0x1, 1, true);
        ka.client_headers(3, false);
        ka.server_frame(0x1, 3, false);
        ka.server_frame(0x0, 3, false);
        let mut last = None;
        for t in [10, 20, 30, 40] {
            ka.ping_sent(OPAQUE);
            last = ka.ping_acked(OPAQUE, secs(t));
        }
        let reaction = last.expect("judged").reaction;
        assert!(
            matches!(
                reaction[..],
                [
                    Action::SendGoAway { .. },
                    Action::SendTrailersOnly { stream_id: 1, .. },
                    Action::SendRstStream { stream_id: 1, .. },
                    Action::SendTrailers { stream_id: 3, .. },
                    Action::SendRstStream { stream_id: 3, .. },
                    Action::CloseConnection,
                ]
            ),
            "{reaction:?}"
        );
    }

    /// Whether C-core's update for client DATA of `len` octets on s1,
    /// after `setup`, resets the strike counted before it.
    fn data_resets(setup: impl FnOnce(&mut KeepaliveConn), len: u32) -> bool {
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, false);
        setup(&mut ka);
        let _ = pings_after(&mut ka, 2);
        ka.client_data(1, len);
        ka.window_updates(FrameType::Data, Stage::Write)
            .iter()
            .next()
            .is_some()
    }

    #[test]
    fn c_core_writes_no_update_for_data_it_will_not_read() {
        assert!(data_resets(|_| {}, 9));
        // No flow-controlled octets.
        assert!(!data_resets(|_| {}, 0));
        // A stream either side reset, or one the client ended.
        assert!(!data_resets(|ka| ka.client_reset(1), 9));
        assert!(!data_resets(
            |ka| {
                ka.server_frame(0x3, 1, false);
            },
            9
        ));
        assert!(!data_resets(|ka| ka.client_ended(1), 9));
        // A stream the client never opened.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_data(3, 9);
        assert!(ka
            .window_updates(FrameType::Data, Stage::Write)
            .iter()
            .next()
            .is_none());
    }

    #[test]
    fn only_the_stream_whose_read_side_closed_loses_its_update() {
        // DATA on s1, then s3 ends: s1's update still goes out.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, false);
        ka.client_headers(3, false);
        let _ = pings_after(&mut ka, 2);
        ka.client_data(1, 9);
        ka.client_ended(3);
        let resets: Vec<_> = ka
            .window_updates(FrameType::Data, Stage::Write)
            .iter()
            .collect();
        assert_eq!(resets, [(1, 1)]);

        // DATA on s1 behind a PING, then s1 ends (before the server read
        // the DATA): no update after that PING either.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, false);
        let _ = pings_after(&mut ka, 2);
        ka.ping_sent(OPAQUE);
        ka.client_data(1, 9);
        ka.client_ended(1);
        let judged = ka.ping_acked(OPAQUE, secs(30)).expect("in flight");
        assert_eq!(judged.data_after, None);

        // Same, but s3 ends: s1's update follows the PING.
        let mut ka = KeepaliveConn::new(KeepalivePolicy::c_core(), Duration::ZERO);
        ka.client_headers(1, false);
        ka.client_headers(3, false);
        let _ = pings_after(&mut ka, 2);
        ka.ping_sent(OPAQUE);
        ka.client_data(1, 9);
        ka.client_reset(3);
        let judged = ka.ping_acked(OPAQUE, secs(30)).expect("in flight");
        assert_eq!(judged.data_after, Some(1));
    }
}
