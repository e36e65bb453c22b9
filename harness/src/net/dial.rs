//! The client side of a connection: one dial of a tonic channel, from the
//! attempt to its outcome, recorded as connection lifecycle events; and the
//! wait of a SYN across a partitioned link or to a paused host.
//!
//! tonic calls the connector for every (re)connect of a channel, inside
//! `Endpoint::connect_timeout` when one is set: a dial the caller gives up
//! is dropped here mid-wait, and that is recorded too
//! ([`EventKind::ConnectAbandoned`]).

use std::io;
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::Wiring;
use crate::fault::{LinkState, SYN_GIVE_UP};
use crate::recorder::event::{CallFailedConnecting, ConnectFailure, EventKind, Outcome};

/// A dial of a plain tonic channel, whose calls the harness does not
/// record: its failure is the failure of the call that waited for it, and
/// is recorded as that call's ([`EventKind::CallFailedConnecting`], where
/// the rule is read). Holds the channel's connector weakly: tonic's
/// `Reconnect` drops its connector before its pending dial (field order,
/// `transport/channel/service/reconnect.rs`), so a dial dropped while the
/// connector is still there was given up by the connect timeout
/// (hyper-timeout, around the connector), one dropped after it went with
/// the whole channel (no call waited any more, or the host stopped).
pub(crate) struct Witness {
    pub(crate) connector: Weak<()>,
}

/// One connection attempt. Dropped before [`Dial::connected`] or
/// [`Dial::failed`], it records that the caller abandoned it.
pub(crate) struct Dial {
    wiring: Wiring,
    me: Arc<str>,
    to: Arc<str>,
    attempt: u32,
    started: Duration,
    /// Whether it waited for a link (a partition, a pause).
    waited: bool,
    done: bool,
    /// For a plain tonic channel's dial: its failure fails a call.
    witness: Option<Witness>,
}

impl Dial {
    /// Starts attempt number `attempt` of a channel from `me` to `to`.
    pub(crate) fn start(wiring: Wiring, me: Arc<str>, to: Arc<str>, attempt: u32) -> Self {
        let started = wiring.tap.recorder.now();
        wiring.tap.recorder.push(
            &me,
            EventKind::ConnectStarted {
                to: (&to).into(),
                attempt,
            },
        );
        Self {
            wiring,
            me,
            to,
            attempt,
            started,
            waited: false,
            done: false,
            witness: None,
        }
    }

    /// Records its failure as the failure of the call that waited for it
    /// (see [`Witness`]).
    pub(crate) fn witnessed(mut self, witness: Option<Witness>) -> Self {
        self.witness = witness;
        self
    }

    /// For a witnessed dial, the call that waited for it failed with
    /// `status` (made by tonic's own `Status::from_error`, as its client
    /// makes it).
    fn call_failed(&self, status: &tonic::Status) {
        if self.witness.is_none() {
            return;
        }
        let recorder = &self.wiring.tap.recorder;
        let (spec, rule) = crate::spec::classify(status);
        let outcome = Outcome {
            code: crate::spec::code_name(status.code()),
            message: status.message().to_owned(),
            spec_code: crate::spec::code_name(spec),
            rule,
        };
        recorder.push(
            &self.me,
            EventKind::CallFailedConnecting(Box::new(CallFailedConnecting {
                call: recorder.next_call(),
                target: (&self.to).into(),
                attempt: self.attempt,
                outcome,
            })),
        );
    }

    /// Waits while the link to the server holds bytes: a real SYN is
    /// retransmitted until one gets through, so the connect completes after
    /// the repair or resume. Gives up with `TimedOut` after the
    /// partition's `reset_after`, else after [`SYN_GIVE_UP`], counted from
    /// the start of the attempt (*simulated* time).
    pub(crate) async fn wait_for_link(&mut self) -> io::Result<()> {
        let links = &self.wiring.tap.links;
        if !links.active() {
            return Ok(());
        }
        loop {
            let opened = links.next_opening();
            let state = links.state(&self.me, &self.to);
            if !state.holds() {
                return Ok(());
            }
            if !self.waited {
                self.waited = true;
                self.wiring.tap.recorder.push(
                    &self.me,
                    EventKind::ConnectWaiting {
                        to: (&self.to).into(),
                        attempt: self.attempt,
                        paused: state == LinkState::Paused,
                    },
                );
            }
            let limit = match state {
                LinkState::Partitioned {
                    reset_after: Some(limit),
                } => limit,
                _ => SYN_GIVE_UP,
            };
            let give_up = self.started.saturating_add(limit);
            self.wiring.tap.recorder.timer_at(give_up);
            let left = give_up.saturating_sub(self.wiring.tap.recorder.now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "connect to {} timed out: the link stayed partitioned for {}",
                        self.to,
                        crate::units::fmt_duration(limit)
                    ),
                ));
            }
            tokio::select! {
                () = opened => {}
                () = tokio::time::sleep(left) => {}
            }
        }
    }

    /// The attempt succeeded: connection `conn`.
    pub(crate) fn connected(mut self, conn: u32) {
        self.done = true;
        let took = self.took();
        self.wiring.tap.recorder.push(
            &self.me,
            EventKind::Connected {
                conn,
                to: (&self.to).into(),
                attempt: self.attempt,
                took,
                waited: self.waited,
            },
        );
    }

    /// The attempt failed with `error`.
    pub(crate) fn failed(mut self, error: &io::Error) {
        self.done = true;
        let reason = match error.kind() {
            io::ErrorKind::ConnectionRefused => ConnectFailure::Refused,
            io::ErrorKind::NotFound => ConnectFailure::UnknownHost,
            io::ErrorKind::TimedOut => ConnectFailure::TimedOut,
            _ => ConnectFailure::Other,
        };
        let took = self.took();
        self.wiring.tap.recorder.push(
            &self.me,
            EventKind::ConnectFailed {
                to: (&self.to).into(),
                attempt: self.attempt,
                reason,
                took,
                waited: self.waited,
            },
        );
        // tonic wraps the connector's error in a `ConnectError`, which
        // `Status::from_error` makes UNAVAILABLE with its words.
        let error = io::Error::new(error.kind(), error.to_string());
        let connect = tonic::ConnectError(Box::new(error));
        self.call_failed(&tonic::Status::from_error(Box::new(connect)));
    }

    fn took(&self) -> Duration {
        self.wiring.tap.recorder.now().saturating_sub(self.started)
    }
}

impl Drop for Dial {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let after = self.took();
        self.wiring.tap.recorder.push(
            &self.me,
            EventKind::ConnectAbandoned {
                to: (&self.to).into(),
                attempt: self.attempt,
                after,
                waited: self.waited,
            },
        );
        let timed_out = self
            .witness
            .as_ref()
            .is_some_and(|w| w.connector.upgrade().is_some());
        if timed_out {
            // hyper-timeout's error reaches the caller as tonic's
            // `transport::Error`, which no status is found in:
            // `Status::from_error` makes it UNKNOWN with its words
            // ("transport error", measured), keeping it as the source.
            let transport = io::Error::other("transport error");
            self.call_failed(&tonic::Status::from_error(Box::new(transport)));
        }
    }
}
