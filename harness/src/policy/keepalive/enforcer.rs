//! The per-connection ping-strike state machine.

use std::time::Duration;

use serde::Serialize;

use super::{GapFrom, KeepalivePolicy, MaxStrikes};

/// A frame kind the server sent that may reset the strike count
/// (see [`ResetOn`](super::ResetOn)). Other frame kinds (SETTINGS, PING,
/// RST_STREAM, GOAWAY, PRIORITY, PUSH_PROMISE) reset nothing in any modelled
/// server and need not be reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ServerFrame {
    /// HEADERS (or its CONTINUATION), including trailers.
    Headers,
    /// DATA.
    Data,
    /// WINDOW_UPDATE, stream or connection level.
    WindowUpdate,
}

impl ServerFrame {
    /// Classifies an HTTP/2 frame-type byte (RFC 9113 §6): DATA 0x0,
    /// HEADERS 0x1, CONTINUATION 0x9 (part of a header block), WINDOW_UPDATE
    /// 0x8. Any other type gives `None`.
    pub fn from_type(frame_type: u8) -> Option<Self> {
        match frame_type {
            0x0 => Some(ServerFrame::Data),
            0x1 | 0x9 => Some(ServerFrame::Headers),
            0x8 => Some(ServerFrame::WindowUpdate),
            _ => None,
        }
    }
}

/// What the emulated server makes of one PING. Gaps and allowed gaps are in
/// simulated time.
#[must_use = "a TooManyPings verdict means the tap must send the reaction"]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PingVerdict {
    /// Within policy; acked and forgotten.
    Ok {
        /// Time since the reference point ([`GapFrom`]); `None` when there
        /// is none (first PING, or first after a reset, under
        /// [`GapFrom::PreviousPing`]).
        gap: Option<Duration>,
    },
    /// Too soon: strike `n` of the `of` tolerated. Still acked.
    Strike {
        /// This strike's number, 1-based.
        n: u32,
        /// Strikes tolerated ([`MaxStrikes::Tolerate`]).
        of: u32,
        /// Time since the reference point.
        gap: Duration,
        /// The minimum gap that applied.
        allowed: Duration,
    },
    /// Too soon, and one strike too many: the server acks this PING and then
    /// sends the GOAWAY and the rest of [`reaction`](super::reaction).
    TooManyPings {
        /// Strikes counted, this one included (the tolerated count + 1).
        strikes: u32,
        /// Time since the reference point.
        gap: Duration,
        /// The minimum gap that applied.
        allowed: Duration,
    },
    /// Too soon, under a policy without a strike limit
    /// ([`MaxStrikes::NoLimit`](super::MaxStrikes::NoLimit)): strike `n` is
    /// counted and nothing follows. Still acked.
    StrikeWithoutLimit {
        /// This strike's number, 1-based.
        n: u32,
        /// Time since the reference point.
        gap: Duration,
        /// The minimum gap that applied.
        allowed: Duration,
    },
    /// The GOAWAY has already been decided; this PING was in flight on a
    /// closing connection. No second reaction.
    AlreadyGoingAway {
        /// Strikes counted when the GOAWAY was decided.
        strikes: u32,
    },
}

/// Ping-strike state for one connection of the emulated server.
///
/// Feed it the PINGs the server receives and the frames the server sends, in
/// wire order, with non-decreasing simulated times. See the
/// [module docs](crate::policy) for the exact rules.
#[derive(Clone, Debug)]
pub struct Enforcer {
    policy: KeepalivePolicy,
    opened_at: Duration,
    /// Where the next PING's gap is measured from; `None` = nowhere.
    reference: Option<Duration>,
    strikes: u32,
    /// Simulated time of the PING that used up the patience.
    gone_away_at: Option<Duration>,
}

impl Enforcer {
    /// An enforcer for a connection opened at simulated time zero.
    /// Prefer [`Enforcer::opened_at`] for connections opened later; only
    /// [`GapFrom::LastAcceptedPing`] (grpc-java) looks at the open time.
    pub fn new(policy: KeepalivePolicy) -> Self {
        Self::opened_at(policy, Duration::ZERO)
    }

    /// An enforcer for a connection opened at `opened_at` (simulated time).
    pub fn opened_at(policy: KeepalivePolicy, opened_at: Duration) -> Self {
        Enforcer {
            policy,
            opened_at,
            reference: Self::initial_reference(&policy, opened_at),
            strikes: 0,
            gone_away_at: None,
        }
    }

    fn initial_reference(policy: &KeepalivePolicy, opened_at: Duration) -> Option<Duration> {
        match policy.gap_from {
            GapFrom::PreviousPing => None,
            GapFrom::LastAcceptedPing => Some(opened_at),
        }
    }

    /// The policy being enforced.
    pub fn policy(&self) -> &KeepalivePolicy {
        &self.policy
    }

    /// Strikes counted so far (0 after a reset).
    pub fn strikes(&self) -> u32 {
        self.strikes
    }

    /// Simulated time of the PING that triggered the GOAWAY, if one did.
    pub fn gone_away_at(&self) -> Option<Duration> {
        self.gone_away_at
    }

    /// A non-ACK PING reached the server at `now` (simulated time) while it
    /// had `active_calls` open calls. PING ACKs must not be reported.
    pub fn on_ping_received(&mut self, now: Duration, active_calls: usize) -> PingVerdict {
        if self.gone_away_at.is_some() {
            return PingVerdict::AlreadyGoingAway {
                strikes: self.strikes,
            };
        }
        let allowed = self.policy.allowed_gap(active_calls);
        // A time before the reference (a tap bug) reads as gap 0: too soon,
        // like grpc-go's `lastPingAt.Add(MinTime).After(now)`.
        let gap = self.reference.map(|at| now.saturating_sub(at));
        match gap {
            Some(gap) if gap < allowed => {
                // grpc-go and C-core remember every PING, grpc-java only
                // the ones that did not strike.
                if self.policy.gap_from == GapFrom::PreviousPing {
                    self.reference = Some(now);
                }
                self.strike(now, gap, allowed)
            }
            _ => {
                self.reference = Some(now);
                PingVerdict::Ok { gap }
            }
        }
    }

    fn strike(&mut self, now: Duration, gap: Duration, allowed: Duration) -> PingVerdict {
        self.strikes = self.strikes.saturating_add(1);
        match self.policy.max_strikes {
            MaxStrikes::NoLimit => {
                return PingVerdict::StrikeWithoutLimit {
                    n: self.strikes,
                    gap,
                    allowed,
                }
            }
            MaxStrikes::Tolerate(of) if self.strikes <= of => {
                return PingVerdict::Strike {
                    n: self.strikes,
                    of,
                    gap,
                    allowed,
                };
            }
            MaxStrikes::Tolerate(_) => {}
        }
        self.gone_away_at = Some(now);
        PingVerdict::TooManyPings {
            strikes: self.strikes,
            gap,
            allowed,
        }
    }

    /// The server sent `frame`. Returns whether that reset the strike count
    /// and reference point (per [`KeepalivePolicy::reset_on`]); always
    /// `false` once the GOAWAY has been decided.
    pub fn on_server_frame(&mut self, frame: ServerFrame) -> bool {
        if self.gone_away_at.is_some() || !self.policy.reset_on.resets(frame) {
            return false;
        }
        self.reset_strikes()
    }

    /// The server wrote something that resets the strike count and the
    /// reference point whatever [`KeepalivePolicy::reset_on`] lists (C-core's
    /// WINDOW_UPDATEs for client DATA, which the emulated server does not
    /// write: see [`ResetOn::client_data`](super::ResetOn::client_data)).
    /// Returns whether it did: `false` once the GOAWAY has been decided.
    pub fn reset_strikes(&mut self) -> bool {
        if self.gone_away_at.is_some() {
            return false;
        }
        self.strikes = 0;
        self.reference = Self::initial_reference(&self.policy, self.opened_at);
        true
    }
}
