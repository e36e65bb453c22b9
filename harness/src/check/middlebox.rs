//! "Does this channel keep a Watch alive through that box?" — the
//! middlebox counterpart of [`check_keepalive`](super::check_keepalive):
//! the same `Endpoint` closure the team applies to its channel, a
//! [`Middlebox`] preset (or its own), a [`Traffic`] shape, and a simulated
//! duration; the answer says whether the first call lived that long, and
//! if not, when and how the box ended it and what tonic reported.
//!
//! ```
//! use std::time::Duration;
//! use grpc_chaos::policy::Middlebox;
//! use grpc_chaos::check::{Traffic, check_middlebox};
//!
//! // A silent Watch through an AWS NLB (350 s TCP idle): PINGs every 60 s
//! // are bytes on the connection, so they keep the flow alive.
//! let report = check_middlebox(
//!     |e| e.http2_keep_alive_interval(Duration::from_secs(60)),
//!     Middlebox::aws_nlb(),
//!     Traffic::LongCall,
//!     Duration::from_secs(10 * 60),
//! )?;
//! assert!(report.survived(), "{report}");
//! # Ok::<(), grpc_chaos::Error>(())
//! ```

use crate::recorder::event;
use std::fmt;
use std::time::Duration;

use tonic::transport::Endpoint;

use super::keepalive::{probe_world, CLIENT, SERVER};
use super::Traffic;
use crate::policy::Middlebox;
use crate::recorder::event::{EventKind, Fate, Outcome};
use crate::trace::Trace;
use crate::units::fmt_duration;
use crate::wire::FrameType;

/// Checks whether the first call of `traffic` on a channel configured by
/// `configure` lives for `duration` (*simulated* time) through `middlebox`
/// in front of the server: a 10 ms tick, 1 ms links, seed 0, a probe
/// service on the server (the same as [`check_keepalive`](super::check_keepalive)'s).
/// When the box ends the call, the client opens the next one at once, as
/// a Watch client reconnects.
///
/// # Errors
///
/// A run that did not complete, or a misconfigured box (see
/// [`Sim::run`](crate::Sim::run)).
pub fn check_middlebox(
    configure: impl FnOnce(Endpoint) -> Endpoint + 'static,
    middlebox: Middlebox,
    traffic: Traffic,
    duration: Duration,
) -> crate::Result<MiddleboxReport> {
    let name = middlebox.name.clone();
    let trace = probe_world(0, traffic, duration, configure, |sim| {
        sim.middlebox(SERVER, middlebox);
    })?;
    Ok(MiddleboxReport::from_trace(trace, name, duration))
}

/// The answer of [`check_middlebox`], with the run's trace.
#[derive(Clone)]
pub struct MiddleboxReport {
    /// The box's name.
    pub middlebox: String,
    /// How long the check ran, *simulated* time.
    pub duration: Duration,
    /// When the box first ended a call or the connection, *simulated*
    /// time since the start, and the box's own words for it (the trace
    /// line: `idle timeout 60000ms: no DATA or HEADERS since 20ms`).
    pub first_cut: Option<(Duration, String)>,
    /// How the first call that did not end OK ended, as tonic reported it
    /// and as the spec requires.
    pub calls_end: Option<Outcome>,
    /// PINGs the client sent, and how many of them the box answered itself.
    pub pings: (usize, usize),
    /// The run, for a closer look (`report.trace.render()`).
    pub trace: Trace,
}

impl MiddleboxReport {
    fn from_trace(trace: Trace, middlebox: String, duration: Duration) -> Self {
        // A cut is what the box did to the traffic, told by its effects
        // (a close, a reset, or an RST_STREAM, GOAWAY or synthesized response it
        // injected; its PING ACKs and SETTINGS are not cuts), in the box's
        // own words: its last act on that connection.
        let events = trace.events();
        let first_cut = events.iter().enumerate().find_map(|(i, e)| match &e.kind {
            EventKind::PolicyClosed(policy_closed) => {
                let event::PolicyClosed { reason, .. } = &**policy_closed;
                Some((e.at(), crate::trace::act_words::policy_end(reason)))
            }
            EventKind::PolicyReset(policy_reset) => {
                let event::PolicyReset { reason, .. } = &**policy_reset;
                Some((e.at(), crate::trace::act_words::policy_end(reason)))
            }
            EventKind::Frame {
                conn,
                frame: FrameType::RstStream | FrameType::GoAway | FrameType::Headers,
                fate,
                ..
            } if *fate == Fate::Injected => {
                let why = events[..i].iter().rev().find_map(|p| match &p.kind {
                    EventKind::PolicyActed(acted) if acted.conn == *conn => {
                        Some(crate::trace::act_words::policy(&acted.action))
                    }
                    _ => None,
                });
                Some((e.at(), why.unwrap_or_default()))
            }
            _ => None,
        });
        let calls_end = trace
            .calls()
            .iter()
            .filter_map(|c| c.outcome())
            .find(|o| !o.is_ok())
            .cloned();
        let mut pings = (0, 0);
        for e in trace.events() {
            if let EventKind::Frame {
                frame: FrameType::Ping,
                flags,
                fate,
                ..
            } = &e.kind
            {
                if e.host == CLIENT && !flags.ack() {
                    pings.0 += 1;
                }
                if e.host == SERVER
                    && flags.ack()
                    && *fate == crate::recorder::event::Fate::Injected
                {
                    pings.1 += 1;
                }
            }
        }
        Self {
            middlebox,
            duration,
            first_cut,
            calls_end,
            pings,
            trace,
        }
    }

    /// Whether the box never ended a call or the connection in the whole
    /// run (and no call failed).
    pub fn survived(&self) -> bool {
        self.first_cut.is_none() && self.calls_end.is_none()
    }

    /// When the box first cut, *simulated* time since the start.
    pub fn cut_after(&self) -> Option<Duration> {
        self.first_cut.as_ref().map(|(at, _)| *at)
    }
}

impl fmt::Debug for MiddleboxReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiddleboxReport")
            .field("middlebox", &self.middlebox)
            .field("duration", &self.duration)
            .field("first_cut", &self.first_cut)
            .field("calls_end", &self.calls_end)
            .field("pings", &self.pings)
            .field(
                "trace",
                &format_args!("{} events", self.trace.events().len()),
            )
            .finish()
    }
}

/// `alive through AWS NLB for 600000ms (9 PINGs, 0 answered by the box)`,
/// or `cut by AWS ALB after 60.01s (idle timeout …); calls end with UNKNOWN
/// "…" (spec: UNAVAILABLE)`.
impl fmt::Display for MiddleboxReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (sent, answered) = self.pings;
        match &self.first_cut {
            None if self.calls_end.is_none() => write!(
                f,
                "alive through {} for {} ({sent} PINGs, {answered} answered by the box)",
                self.middlebox,
                fmt_duration(self.duration)
            ),
            None => write!(f, "not cut by {}, but a call failed", self.middlebox),
            Some((at, why)) => write!(
                f,
                "cut by {} after {} ({why})",
                self.middlebox,
                fmt_duration(*at)
            ),
        }?;
        if let Some(o) = &self.calls_end {
            write!(
                f,
                "; calls end with {} {:?} (spec: {})",
                o.code, o.message, o.spec_code
            )?;
        }
        Ok(())
    }
}
