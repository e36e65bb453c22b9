//! [`BoxConn`] driven frame by frame and timer by timer, as the tap drives
//! it: the timers it arms, what it does when one runs out, and in what
//! words. Times are *simulated*; the connection opens at 2 s, so that a
//! deadline `open + after` differs from `open - after` and `open * after`.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::policy::{Close, TimerChange};
use crate::recorder::event::FrameFlags;

const OPENED: Duration = Duration::from_secs(2);
const ES: FrameFlags = FrameFlags::END_STREAM;
const NO: FrameFlags = FrameFlags::NONE;
const UP: Direction = Direction::ClientToServer;
const DOWN: Direction = Direction::ServerToClient;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// One connection from `player` through `cfg`, and the effects of the
/// last call.
struct Wire(crate::policy::drive::Drive<BoxConn>);

impl Wire {
    fn new(cfg: Middlebox) -> Self {
        let cfg = Arc::new(cfg);
        Self(crate::policy::drive::Drive::new(OPENED, |info| {
            BoxConn::new(cfg, info)
        }))
    }

    /// A frame at `at`, passed by the frame faults.
    fn frame(
        &mut self,
        at: Duration,
        direction: Direction,
        frame: FrameType,
        flags: FrameFlags,
        stream: u32,
    ) -> &Effects {
        let detail = match frame {
            FrameType::Ping => FrameDetail::Ping { payload: [7; 8] },
            _ => FrameDetail::Empty,
        };
        self.0
            .frame(at, direction, frame, flags, stream, &detail, Fate::Passed)
    }

    fn timer(&mut self, at: Duration) -> &Effects {
        self.0.timer(at)
    }

    /// The client opens `stream` at `at`.
    fn open(&mut self, at: Duration, stream: u32) -> &Effects {
        self.frame(at, UP, FrameType::Headers, NO, stream)
    }
}

/// The box's own trace lines.
fn acts(fx: &Effects) -> Vec<String> {
    fx.records
        .iter()
        .filter_map(|e| match e {
            EventKind::PolicyActed(acted) => Some(crate::trace::act_words::policy(&acted.action)),
            _ => None,
        })
        .collect()
}

/// The frames the box sent: `(direction, type, stream)`.
fn sent(fx: &Effects) -> Vec<(Direction, u8, u32)> {
    fx.sends
        .iter()
        .map(|s| {
            let stream = u32::from_be_bytes([s.bytes[5], s.bytes[6], s.bytes[7], s.bytes[8]]);
            (s.direction, s.bytes[3], stream & 0x7fff_ffff)
        })
        .collect()
}

fn closed(fx: &Effects) -> Option<String> {
    match &fx.close {
        Some(Close::Policy { policy, reason }) => {
            assert_eq!(policy, "box");
            Some(crate::trace::act_words::policy_end(reason))
        }
        other => other.as_ref().map(|c| panic!("not the box's close: {c:?}")),
    }
}

/// Why the box reset the connection (a TCP RST), if it did.
fn reset(fx: &Effects) -> Option<String> {
    fx.reset.as_ref().map(|r| {
        assert_eq!(r.policy, "box");
        crate::trace::act_words::policy_end(&r.reason)
    })
}

const RST: u8 = 0x3;
const GOAWAY: u8 = 0x7;

fn idle(after: u64, reset_by: Activity, on_expiry: Expiry) -> IdleTimeout {
    IdleTimeout::new(secs(after), reset_by, on_expiry)
}

#[test]
fn activity_sets_hold_the_frame_types_they_name() {
    use FrameType::{Data, GoAway, Headers, Ping, Settings};
    let has = |a: Activity| [Data, Headers, Ping, Settings].map(|t| a.contains(t));
    assert_eq!(has(Activity::NONE), [false; 4]);
    assert_eq!(has(Activity::DATA), [true, false, false, false]);
    assert_eq!(has(Activity::HEADERS), [false, true, false, false]);
    assert_eq!(has(Activity::PING), [false, false, true, false]);
    assert_eq!(has(Activity::DATA_OR_HEADERS), [true, true, false, false]);
    assert_eq!(has(Activity::ANY_FRAME), [true; 4]);
    assert!(Activity::ANY_FRAME.contains(GoAway));
    assert_eq!(
        has(Activity::DATA | Activity::PING),
        [true, false, true, false]
    );
    assert_eq!(
        Activity::DATA | Activity::HEADERS,
        Activity::DATA_OR_HEADERS
    );
    // A union: a type in both sets stays in.
    assert_eq!(
        Activity::DATA_OR_HEADERS | Activity::DATA,
        Activity::DATA_OR_HEADERS
    );
    // As the trace records the set: the row says `DATA or PING`.
    use crate::recorder::event::IdleReset;
    assert_eq!(Activity::NONE.recorded(), IdleReset::Never);
    assert_eq!(Activity::ANY_FRAME.recorded(), IdleReset::AnyFrame);
    assert_eq!(
        Activity::DATA_OR_HEADERS.recorded(),
        IdleReset::Frames(vec![FrameType::Data, FrameType::Headers])
    );
    assert_eq!(
        Activity::PING.recorded(),
        IdleReset::Frames(vec![FrameType::Ping])
    );
    assert_eq!(
        (Activity::DATA | Activity::PING).recorded(),
        IdleReset::Frames(vec![FrameType::Data, FrameType::Ping])
    );
}

#[test]
fn writers_count_their_own_frames() {
    let counts = |w: Writers| [UP, DOWN].map(|d| w.counts(d));
    assert_eq!(counts(Writers::Either), [true, true]);
    assert_eq!(counts(Writers::Client), [true, false]);
    assert_eq!(counts(Writers::Server), [false, true]);
    use crate::recorder::event::Writer;
    assert_eq!(Writers::Either.recorded(), None);
    assert_eq!(Writers::Client.recorded(), Some(Writer::Client));
    assert_eq!(Writers::Server.recorded(), Some(Writer::Server));
}

#[test]
fn every_duration_of_a_box_is_checked() {
    let mut cfg = Middlebox::new("box");
    assert!(cfg.durations().is_empty());
    cfg.connection_idle = Some(idle(1, Activity::DATA, Expiry::Close));
    cfg.stream_idle = Some(idle(2, Activity::DATA, Expiry::Close));
    cfg.connection_lifetime = Some(ConnectionLifetime::new(secs(3), secs(9)));
    cfg.stream_lifetime = Some(StreamLifetime::new(secs(4), ErrorCode::Cancel));
    cfg.upstream_timeout = Some(UpstreamTimeout::envoy_route());
    assert_eq!(
        cfg.durations(),
        [
            ("connection_idle.after", secs(1)),
            ("stream_idle.after", secs(2)),
            ("connection_lifetime.after", secs(3)),
            ("stream_lifetime.after", secs(4)),
            ("upstream_timeout.after", secs(15)),
        ]
    );
}

#[test]
fn only_the_listed_clients_pass_the_box() {
    let mut cfg = Middlebox::new("box").for_clients(["other"]);
    cfg.connection_idle = Some(idle(60, Activity::DATA, Expiry::Close));
    assert_eq!(cfg.clients, ["other"]);
    let mut wire = Wire::new(cfg.clone());
    assert!(!wire.0.policy.alters(UP) && !wire.0.policy.alters(DOWN));
    // No timer is armed, so the tap never calls the box back.
    assert_eq!(wire.open(secs(3), 1).timer, TimerChange::Keep);

    let mut wire = Wire::new(cfg.for_clients(["other", "player"]));
    assert!(wire.0.policy.alters(UP) && wire.0.policy.alters(DOWN));
    assert_eq!(wire.0.policy.name(), "box");
    assert_eq!(wire.open(secs(3), 1).timer, TimerChange::Set(secs(62)));
}

#[test]
fn the_idle_timeout_closes_after_the_last_frame_that_counts() {
    let mut cfg = Middlebox::new("box");
    cfg.connection_idle = Some(idle(60, Activity::DATA_OR_HEADERS, Expiry::Close));
    let mut wire = Wire::new(cfg);
    // From the open, the client's HEADERS (at the open) and DATA (at 10 s):
    // due at 70 s. A PING does not count; neither does a frame the
    // network dropped.
    assert_eq!(wire.open(OPENED, 1).timer, TimerChange::Set(secs(62)));
    let fx = wire.frame(secs(10), UP, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(70)));
    let fx = wire.frame(secs(20), UP, FrameType::Ping, NO, 0);
    assert_eq!(fx.timer, TimerChange::Set(secs(70)));
    let lost = wire.0.frame(
        secs(30),
        DOWN,
        FrameType::Data,
        NO,
        1,
        &FrameDetail::Empty,
        Fate::Dropped,
    );
    assert_eq!(lost.timer, TimerChange::Keep);
    // Early: nothing due, the timer is armed again.
    let fx = wire.timer(secs(69));
    assert!(fx.close.is_none() && fx.records.is_empty());
    assert_eq!(fx.timer, TimerChange::Set(secs(70)));
    let fx = wire.timer(secs(70));
    assert_eq!(
        closed(fx).as_deref(),
        Some("idle timeout 60000ms: no DATA or HEADERS since 10000ms")
    );
}

#[test]
fn an_idle_timeout_counts_only_its_writers_frames() {
    let mut cfg = Middlebox::new("box");
    let mut t = idle(60, Activity::ANY_FRAME, Expiry::Close);
    t.written_by = Writers::Server;
    cfg.connection_idle = Some(t);
    let mut wire = Wire::new(cfg);
    wire.open(secs(5), 1);
    wire.frame(secs(6), DOWN, FrameType::Headers, NO, 1);
    let fx = wire.frame(secs(30), UP, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(66)));
    assert_eq!(
        closed(wire.timer(secs(66))).as_deref(),
        Some("idle timeout 60000ms: no frame from the server since 6000ms")
    );
}

#[test]
fn a_timer_nothing_resets_runs_from_the_open() {
    let mut cfg = Middlebox::new("box");
    cfg.connection_idle = Some(idle(60, Activity::NONE, Expiry::Close));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    let fx = wire.frame(secs(9), UP, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(62)));
    assert_eq!(
        closed(wire.timer(secs(62))).as_deref(),
        Some("idle timeout 60000ms: open since 2000ms")
    );
}

#[test]
fn envoys_idle_timer_runs_only_without_streams_and_restarts_at_the_last_end() {
    let mut cfg = Middlebox::new("box");
    let mut t = idle(60, Activity::NONE, Expiry::Close);
    t.only_without_streams = true;
    cfg.connection_idle = Some(t);
    let mut wire = Wire::new(cfg);
    assert_eq!(wire.open(secs(3), 1).timer, TimerChange::Clear);
    // Half closed either way the stream is still open.
    assert_eq!(
        wire.frame(secs(4), UP, FrameType::Data, ES, 1).timer,
        TimerChange::Clear
    );
    wire.open(secs(5), 3);
    wire.frame(secs(6), DOWN, FrameType::Headers, ES, 3);
    assert_eq!(
        wire.frame(secs(7), DOWN, FrameType::Headers, ES, 1).timer,
        TimerChange::Clear,
        "s3 is still open"
    );
    // s3 ends at 8 s: the last stream, the timer starts over.
    let fx = wire.frame(secs(8), UP, FrameType::Data, ES, 3);
    assert_eq!(fx.timer, TimerChange::Set(secs(68)));
    assert_eq!(
        closed(wire.timer(secs(68))).as_deref(),
        Some("idle timeout 60000ms: open since 8000ms")
    );
}

#[test]
fn a_stream_idle_timeout_resets_that_stream_both_ways() {
    let mut cfg = Middlebox::new("box");
    let t = idle(5, Activity::DATA, Expiry::RstStream(ErrorCode::Cancel));
    cfg.stream_idle = Some(t);
    let mut wire = Wire::new(cfg);
    assert_eq!(wire.open(secs(3), 1).timer, TimerChange::Set(secs(8)));
    wire.open(secs(3), 3);
    // s1's DATA moves s1's timer only; other frames move none.
    let fx = wire.frame(secs(4), DOWN, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(8)));
    wire.frame(secs(5), UP, FrameType::WindowUpdate, NO, 3);
    let fx = wire.frame(secs(5), UP, FrameType::WindowUpdate, NO, 0);
    assert_eq!(fx.timer, TimerChange::Set(secs(8)));
    let fx = wire.timer(secs(8));
    assert_eq!(
        acts(fx),
        ["RST_STREAM(CANCEL) on s3 both ways: s3 idle timeout 5000ms: no DATA since 3000ms"]
    );
    assert_eq!(sent(fx), [(DOWN, RST, 3), (UP, RST, 3)]);
    assert!(fx.close.is_none());
    assert_eq!(fx.timer, TimerChange::Set(secs(9)));
    let fx = wire.timer(secs(9));
    assert_eq!(sent(fx), [(DOWN, RST, 1), (UP, RST, 1)]);
    assert_eq!(fx.timer, TimerChange::Clear, "no stream left");
}

#[test]
fn a_ping_resets_every_stream_timer_that_counts_pings() {
    let mut cfg = Middlebox::new("box");
    cfg.stream_idle = Some(idle(
        5,
        Activity::PING,
        Expiry::RstStream(ErrorCode::Cancel),
    ));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    wire.open(secs(4), 3);
    // Other frames on stream 0 do not count.
    let fx = wire.frame(secs(5), DOWN, FrameType::Settings, NO, 0);
    assert_eq!(fx.timer, TimerChange::Set(secs(8)));
    let fx = wire.frame(secs(6), DOWN, FrameType::Ping, FrameFlags::ACK, 0);
    assert_eq!(fx.timer, TimerChange::Set(secs(11)));
}

#[test]
fn a_stream_timer_ends_with_the_stream_not_with_half_of_it() {
    let mut cfg = Middlebox::new("box");
    cfg.stream_idle = Some(idle(5, Activity::NONE, Expiry::Close));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    // The request ends: the response may still take its time.
    assert_eq!(
        wire.frame(secs(4), UP, FrameType::Data, ES, 1).timer,
        TimerChange::Set(secs(8))
    );
    assert_eq!(
        wire.frame(secs(5), DOWN, FrameType::Headers, ES, 1).timer,
        TimerChange::Clear
    );
    // A reset either way ends it too.
    wire.open(secs(6), 3);
    assert_eq!(
        wire.frame(secs(7), DOWN, FrameType::RstStream, NO, 3).timer,
        TimerChange::Clear
    );
}

#[test]
fn only_a_new_odd_stream_the_client_opens_is_tracked() {
    let mut cfg = Middlebox::new("box");
    cfg.stream_lifetime = Some(StreamLifetime::new(secs(10), ErrorCode::Cancel));
    let mut wire = Wire::new(cfg);
    // An even id, or HEADERS the server writes: no stream.
    assert_eq!(wire.open(secs(3), 2).timer, TimerChange::Clear);
    assert_eq!(
        wire.frame(secs(3), DOWN, FrameType::Headers, NO, 5).timer,
        TimerChange::Clear
    );
    assert_eq!(wire.open(secs(3), 3).timer, TimerChange::Set(secs(13)));
    // The client's trailers on s3, and a HEADERS on a lower id, open none.
    wire.frame(secs(6), UP, FrameType::Headers, ES, 3);
    assert_eq!(wire.open(secs(7), 1).timer, TimerChange::Set(secs(13)));
    let fx = wire.timer(secs(13));
    assert_eq!(
        acts(fx),
        ["RST_STREAM(CANCEL) on s3 both ways: stream lifetime 10000ms reached (opened at 3000ms)"]
    );
    assert_eq!(fx.timer, TimerChange::Clear);
}

#[test]
fn a_connection_timer_that_resets_streams_resets_all_and_starts_over() {
    let mut cfg = Middlebox::new("box");
    let code = ErrorCode::Cancel;
    cfg.connection_idle = Some(idle(60, Activity::DATA_OR_HEADERS, Expiry::RstStream(code)));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    wire.open(secs(4), 3);
    let fx = wire.timer(secs(64));
    assert_eq!(
        sent(fx),
        [(DOWN, RST, 1), (UP, RST, 1), (DOWN, RST, 3), (UP, RST, 3)]
    );
    assert!(fx.close.is_none());
    assert_eq!(fx.timer, TimerChange::Set(secs(124)));
}

#[test]
fn a_goaway_expiry_names_the_last_stream_then_closes() {
    let mut cfg = Middlebox::new("box");
    let code = ErrorCode::EnhanceYourCalm;
    cfg.connection_idle = Some(idle(60, Activity::DATA, Expiry::GoAway(code)));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 5);
    let fx = wire.timer(secs(62));
    assert_eq!(
        acts(fx),
        ["GOAWAY(ENHANCE_YOUR_CALM, last s5) then close: idle timeout 60000ms: no DATA since 2000ms"]
    );
    assert_eq!(sent(fx), [(DOWN, GOAWAY, 0)]);
    assert_eq!(&fx.sends[0].bytes[9..13], &5u32.to_be_bytes());
    assert_eq!(
        closed(fx).as_deref(),
        Some("idle timeout 60000ms: no DATA since 2000ms")
    );
}

#[test]
fn a_forgotten_flow_has_no_timers_and_resets_at_its_next_frame() {
    let mut cfg = Middlebox::new("box");
    cfg.connection_idle = Some(idle(350, Activity::ANY_FRAME, Expiry::ForgetFlow));
    cfg.stream_idle = Some(idle(400, Activity::ANY_FRAME, Expiry::ForgetFlow));
    cfg.connection_lifetime = Some(ConnectionLifetime::new(secs(3600), secs(1)));
    let mut wire = Wire::new(cfg);
    wire.open(secs(10), 1);
    let fx = wire.timer(secs(360));
    assert_eq!(
        acts(fx),
        [
            "forgets the flow, nothing sent: idle timeout 350000ms: no frame since 10000ms; the \
          next frame either way is answered with a reset"
        ]
    );
    assert!(fx.sends.is_empty() && fx.close.is_none());
    assert_eq!(fx.timer, TimerChange::Clear, "no lifetime, no stream timer");
    let fx = wire.frame(secs(500), DOWN, FrameType::Data, NO, 1);
    assert!(fx.swallow);
    assert!(fx.close.is_none(), "a reset, not a close");
    assert_eq!(
        reset(fx).as_deref(),
        Some(
            "frame after the idle timeout: RST; the flow was forgotten at 360000ms, this DATA \
             from the server did not pass"
        )
    );
    assert_eq!(fx.timer, TimerChange::Clear);
    let fx = wire.frame(secs(501), UP, FrameType::Ping, NO, 0);
    assert!(reset(fx).is_some_and(|r| r.ends_with("this PING from the client did not pass")));
}

#[test]
fn a_box_that_answers_pings_answers_only_the_clients() {
    let mut cfg = Middlebox::new("box");
    cfg.pings = Pings::Answer;
    let mut wire = Wire::new(cfg);
    let fx = wire.frame(secs(3), UP, FrameType::Ping, NO, 0);
    assert!(fx.swallow);
    assert_eq!(sent(fx), [(DOWN, 0x6, 0)]);
    assert_eq!(fx.sends[0].bytes[4], 0x1, "an ACK");
    assert_eq!(&fx.sends[0].bytes[9..], &[7; 8]);
    assert_eq!(acts(fx).len(), 1);
    assert!(acts(fx)[0].starts_with("answers PINGs itself"));
    // Said once.
    let fx = wire.frame(secs(4), UP, FrameType::Ping, NO, 0);
    assert!(fx.swallow && acts(fx).is_empty() && fx.sends.len() == 1);
    // The client's ACK and the server's PING go on.
    for (dir, flags) in [(UP, FrameFlags::ACK), (DOWN, NO)] {
        let fx = wire.frame(secs(5), dir, FrameType::Ping, flags, 0);
        assert!(!fx.swallow && fx.sends.is_empty(), "{dir:?}");
    }
    // Unless it answers the server's too (nginx, measured).
    let mut cfg = Middlebox::new("box");
    cfg.server_pings = Pings::Answer;
    let mut wire = Wire::new(cfg);
    let fx = wire.frame(secs(3), DOWN, FrameType::Ping, NO, 0);
    assert!(fx.swallow);
    assert_eq!(sent(fx), [(UP, 0x6, 0)]);
    assert_eq!(fx.sends[0].bytes[4], 0x1, "an ACK");
    assert!(acts(fx)[0].starts_with("answers the server's PINGs itself"));
    let fx = wire.frame(secs(4), UP, FrameType::Ping, NO, 0);
    assert!(!fx.swallow && fx.sends.is_empty(), "the client's go on");
    // A forwarding box forwards.
    let mut wire = Wire::new(Middlebox::new("box"));
    let fx = wire.frame(secs(3), UP, FrameType::Ping, NO, 0);
    assert!(!fx.swallow && fx.sends.is_empty());
}

#[test]
fn a_connection_lifetime_sends_goaway_then_closes_after_the_grace() {
    let mut cfg = Middlebox::new("box");
    cfg.connection_lifetime = Some(ConnectionLifetime::new(secs(30), secs(5)));
    let mut wire = Wire::new(cfg);
    assert_eq!(wire.open(secs(3), 3).timer, TimerChange::Set(secs(32)));
    let fx = wire.timer(secs(32));
    assert_eq!(
        acts(fx),
        ["GOAWAY(NO_ERROR, last s3): connection lifetime 30000ms reached; close in 5000ms"]
    );
    assert_eq!(sent(fx), [(DOWN, GOAWAY, 0)]);
    assert!(fx.close.is_none());
    assert_eq!(fx.timer, TimerChange::Set(secs(37)));
    assert_eq!(
        closed(wire.timer(secs(37))).as_deref(),
        Some("connection lifetime 30000ms: grace 5000ms after its GOAWAY over")
    );

    let mut cfg = Middlebox::new("box");
    cfg.connection_lifetime = Some(ConnectionLifetime::new(secs(30), Duration::ZERO));
    let mut wire = Wire::new(cfg);
    assert_eq!(
        closed(wire.timer(secs(32))).as_deref(),
        Some("connection lifetime 30000ms: closed right after its GOAWAY")
    );
}

#[test]
fn an_upstream_timeout_ends_the_stream_the_server_has_not_answered() {
    let mut cfg = Middlebox::new("box");
    cfg.upstream_timeout = Some(UpstreamTimeout::envoy_route());
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    // The timer starts at the end of the request.
    assert_eq!(
        wire.frame(secs(3), UP, FrameType::Data, NO, 1).timer,
        TimerChange::Clear
    );
    let fx = wire.frame(secs(4), UP, FrameType::Data, ES, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(19)));
    assert!(wire.timer(secs(18)).sends.is_empty());
    let fx = wire.timer(secs(19));
    // Trailers-only UNAVAILABLE to the client, RST_STREAM(CANCEL) up.
    assert_eq!(sent(fx), [(DOWN, 0x1, 1), (UP, RST, 1)]);
}

#[test]
fn nginxs_read_timeout_runs_from_the_servers_last_headers_or_data() {
    let mut cfg = Middlebox::new("box");
    cfg.upstream_timeout = Some(UpstreamTimeout::nginx_read());
    let mut wire = Wire::new(cfg);
    // Not timed while the request is coming (nginx 1.22.1, measured).
    assert_eq!(wire.open(secs(3), 1).timer, TimerChange::Clear);
    // Response headers at 10 s, DATA at 20 s; the client's DATA does not count.
    let fx = wire.frame(secs(10), DOWN, FrameType::Headers, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(70)));
    let fx = wire.frame(secs(20), DOWN, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(80)));
    let fx = wire.frame(secs(30), UP, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(80)));
    // Its response headers went out: RST_STREAM(INTERNAL_ERROR) to the
    // client rather than a 504.
    let fx = wire.timer(secs(80));
    assert_eq!(sent(fx), [(DOWN, RST, 1), (UP, RST, 1)]);
    assert_eq!(&fx.sends[0].bytes[9..13], &2u32.to_be_bytes());
}

#[test]
fn nginxs_read_timeout_starts_at_the_requests_end_and_server_pings_restart_it() {
    let mut cfg = Middlebox::new("box");
    cfg.upstream_timeout = Some(UpstreamTimeout::nginx_read());
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    let fx = wire.frame(secs(5), UP, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Clear);
    let fx = wire.frame(secs(8), UP, FrameType::Data, ES, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(68)));
    // A PING from the server is a read: measured, it keeps a stream alive.
    let fx = wire.frame(secs(40), DOWN, FrameType::Ping, NO, 0);
    assert_eq!(fx.timer, TimerChange::Set(secs(100)));
    // The client's PINGs are not.
    let fx = wire.frame(secs(50), UP, FrameType::Ping, NO, 0);
    assert_eq!(fx.timer, TimerChange::Set(secs(100)));
    let fx = wire.timer(secs(100));
    assert_eq!(sent(fx), [(DOWN, 0x1, 1), (DOWN, 0x0, 1), (UP, RST, 1)]);
}

#[test]
fn nginxs_client_body_timeout_runs_only_while_the_request_is_open() {
    let mut wire = Wire::new(Middlebox::nginx());
    // From the client's HEADERS, restarted by its DATA only.
    assert_eq!(wire.open(secs(3), 1).timer, TimerChange::Set(secs(63)));
    let fx = wire.frame(secs(10), UP, FrameType::Data, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(70)));
    let fx = wire.frame(secs(20), DOWN, FrameType::Headers, NO, 1);
    assert_eq!(
        fx.timer,
        TimerChange::Set(secs(70)),
        "the read timer is at 80 s"
    );
    // Silent: RST_STREAM(PROTOCOL_ERROR) both ways (measured to the client).
    let fx = wire.timer(secs(70));
    assert_eq!(sent(fx), [(DOWN, RST, 1), (UP, RST, 1)]);
    assert_eq!(&fx.sends[0].bytes[9..13], &1u32.to_be_bytes());
    // A request that ended is no longer timed by it: the read timer is.
    let mut wire = Wire::new(Middlebox::nginx());
    wire.open(secs(3), 1);
    let fx = wire.frame(secs(4), UP, FrameType::Data, ES, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(64)));
    let fx = wire.frame(secs(30), DOWN, FrameType::Headers, NO, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(90)));
}

#[test]
fn a_stream_limit_refuses_the_stream_over_it() {
    let mut cfg = Middlebox::new("box");
    cfg.max_concurrent_streams = Some(1);
    cfg.stream_lifetime = Some(StreamLifetime::new(secs(10), ErrorCode::Cancel));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    let fx = wire.open(secs(4), 3);
    assert_eq!(sent(fx), [(DOWN, RST, 3)]);
    assert_eq!(
        &fx.sends[0].bytes[9..13],
        &7u32.to_be_bytes(),
        "REFUSED_STREAM"
    );
    // Only s1's lifetime runs.
    assert_eq!(fx.timer, TimerChange::Set(secs(13)));
    assert!(
        wire.frame(secs(5), DOWN, FrameType::RstStream, NO, 3)
            .swallow
    );
}

#[test]
fn a_server_reset_reaches_the_client_with_the_box_code_when_set() {
    let mut cfg = Middlebox::new("box");
    cfg.server_reset_code = Some(ErrorCode::InternalError);
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    let cancel = FrameDetail::RstStream {
        code: ErrorCode::Cancel,
    };
    let fx = wire.0.frame(
        secs(4),
        DOWN,
        FrameType::RstStream,
        NO,
        1,
        &cancel,
        Fate::Passed,
    );
    assert_eq!(
        fx.rewrite.as_deref(),
        Some(&crate::wire::encode::rst_stream(1, ErrorCode::InternalError)[..])
    );
    assert_eq!(
        acts(fx),
        [
            "the server's RST_STREAM(CANCEL) on s1 goes on to the client as \
          RST_STREAM(INTERNAL_ERROR), the box's own reset"
        ]
    );
    // The same code, or the client's reset: passed as written.
    let same = FrameDetail::RstStream {
        code: ErrorCode::InternalError,
    };
    let fx = wire.0.frame(
        secs(5),
        DOWN,
        FrameType::RstStream,
        NO,
        3,
        &same,
        Fate::Passed,
    );
    assert!(fx.rewrite.is_none());
    let fx = wire.0.frame(
        secs(6),
        UP,
        FrameType::RstStream,
        NO,
        5,
        &cancel,
        Fate::Passed,
    );
    assert!(fx.rewrite.is_none());
}

#[test]
fn a_stream_idle_reply_answers_before_the_response_headers_and_resets_after() {
    let mut cfg = Middlebox::new("box");
    let t = idle(
        5,
        Activity::DATA_OR_HEADERS,
        Expiry::RstStream(ErrorCode::InternalError),
    );
    cfg.stream_idle = Some(t);
    cfg.stream_idle_reply = Some(LocalReply::Grpc {
        status: 14,
        message: "stream timeout".to_owned(),
    });
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    wire.open(secs(3), 3);
    wire.frame(secs(4), DOWN, FrameType::Headers, NO, 3);
    // s1 never had response headers: the local reply, and a reset upstream.
    let fx = wire.timer(secs(8));
    assert_eq!(sent(fx), [(DOWN, 0x1, 1), (UP, 0x3, 1)]);
    assert_eq!(
        acts(fx),
        [
            "s1 idle timeout 5000ms: no DATA or HEADERS since 3000ms: a trailers-only response \
          grpc-status=14 \"stream timeout\" to the client; RST_STREAM(INTERNAL_ERROR) to the \
          server"
        ]
    );
    // s3's response headers went out at 4 s: the expiry's reset both ways.
    let fx = wire.timer(secs(9));
    assert_eq!(sent(fx), [(DOWN, 0x3, 3), (UP, 0x3, 3)]);
}

#[test]
fn an_idle_drain_sends_two_goaways_then_closes_later() {
    let mut cfg = Middlebox::new("box");
    let mut t = idle(4, Activity::NONE, Expiry::GoAway(ErrorCode::NoError));
    t.only_without_streams = true;
    cfg.connection_idle = Some(t);
    cfg.idle_drain = Some(Drain::new(Duration::from_millis(1_500), secs(1)));
    let mut wire = Wire::new(cfg);
    wire.open(secs(3), 1);
    wire.frame(secs(3), UP, FrameType::Data, ES, 1);
    let fx = wire.frame(secs(3), DOWN, FrameType::Headers, ES, 1);
    assert_eq!(fx.timer, TimerChange::Set(secs(7)));
    // At 7 s: the first GOAWAY refuses nothing; the idle timer is done.
    let fx = wire.timer(secs(7));
    assert_eq!(sent(fx), [(DOWN, 0x7, 0)]);
    assert_eq!(fx.sends[0].bytes[9..13], (u32::MAX >> 1).to_be_bytes());
    assert_eq!(fx.timer, TimerChange::Set(Duration::from_millis(8_500)));
    assert_eq!(closed(fx), None);
    assert_eq!(
        acts(fx),
        [
            "GOAWAY(NO_ERROR, last s2147483647) starts a drain: idle timeout 4000ms: open \
          since 3000ms; the last stream's GOAWAY in 1500ms"
        ]
    );
    // drain_timeout later: the GOAWAY with the last stream.
    let fx = wire.timer(Duration::from_millis(8_500));
    assert_eq!(sent(fx), [(DOWN, 0x7, 0)]);
    assert_eq!(fx.sends[0].bytes[9..13], 1u32.to_be_bytes());
    assert_eq!(fx.timer, TimerChange::Set(Duration::from_millis(9_500)));
    assert_eq!(closed(fx), None);
    // close_delay after it: the close.
    let fx = wire.timer(Duration::from_millis(9_500));
    assert_eq!(
        closed(fx).as_deref(),
        Some("drain over: closed 1000ms after its last GOAWAY")
    );
}
