//! Invariants on what callers are told and on calls left hanging (issue
//! #26 §3): every caller-visible code is the one the spec requires for
//! what happened; a handler does not turn a retryable failure of its own
//! call into a code its callers will not retry; no call is still open past
//! its deadline when the run ends.

use super::assert::Violation;
use super::{CallEnd, RunEnd, Trace};
use crate::units::fmt_duration;

const CODES: &str = "codes";
const MASKED: &str = "retryable failure masked";
const HANG: &str = "hang";

impl Trace {
    /// Checks that every call recorded at its caller ended with the code
    /// the gRPC spec requires for what happened: the trace's findings
    /// (tonic's CANCELLED "Timeout expired" for an expired deadline, UNKNOWN
    /// "transport error" for a connection lost, …; [`crate::spec`] has the
    /// rules) are each a violation here.
    ///
    /// # Errors
    /// A [`Violation`] naming the first call whose code differs, both codes
    /// and the rule.
    pub fn assert_codes_as_spec(&self) -> Result<(), Violation> {
        let differs = self.calls().iter().find_map(|c| {
            let o = c.outcome()?;
            (o.code != o.spec_code).then_some((c, o))
        });
        let Some((c, o)) = differs else {
            return Ok(());
        };
        Err(self.keep(Violation::new(
            CODES,
            format!(
                "{} {} from {} ended {} {:?} where the spec requires {}{}",
                c.id,
                c.path,
                c.host,
                o.code,
                o.message,
                o.spec_code,
                o.rule.map(|r| format!(" ({r})")).unwrap_or_default()
            ),
        )))
    }

    /// Checks that no handler answered with a code other than UNAVAILABLE
    /// after a call it made failed UNAVAILABLE by the spec (a connection
    /// lost or refused, a server going away): UNAVAILABLE is the code
    /// callers' retry policies retry (gRFC A6's usual `retryableStatusCodes`,
    /// and `statuscodes.md`: "the service is currently unavailable … may be
    /// corrected by retrying"), and passing tonic's UNKNOWN "transport
    /// error" on as it is, or wrapping the failure as INTERNAL, turns a
    /// blip into a failure no caller retries.
    ///
    /// # Errors
    /// A [`Violation`] naming the handler run, what it answered, and the
    /// failed call it made.
    pub fn assert_no_masked_unavailable(&self) -> Result<(), Violation> {
        for run in self.runs.iter() {
            let RunEnd::Finished { code, message } = &run.end else {
                continue;
            };
            if matches!(*code, "OK" | "UNAVAILABLE") {
                continue;
            }
            let failed = self.calls().iter().find(|c| {
                c.parent == Some(run.id)
                    && c.outcome().is_some_and(|o| o.spec_code == "UNAVAILABLE")
                    && c.ended_at
                        .is_some_and(|t| run.ended_at.is_none_or(|r| t <= r))
            });
            let Some(c) = failed else {
                continue;
            };
            let o = c.outcome().expect("found by its outcome");
            return Err(self.keep(Violation::new(
                MASKED,
                format!(
                    "{} {} on {} answered {code} {message:?} after its call {} to {} failed {} {:?} \
                     (UNAVAILABLE by the spec): its callers will not retry it",
                    run.id, run.path, run.host, c.id, c.target, o.code, o.message
                ),
            )));
        }
        Ok(())
    }

    /// Checks that no call recorded at its caller was still open when the
    /// run ended past its deadline: a call that should have ended, and
    /// hangs instead (a channel redialling with the call in its buffer, a
    /// handler that never answers with no timeout anywhere).
    ///
    /// # Errors
    /// A [`Violation`] naming the first such call, how far past its
    /// deadline the run ended, and what the trace knows it waits on.
    pub fn assert_no_hang(&self) -> Result<(), Violation> {
        let end = self.ended_at();
        let hung = self.calls().iter().find(|c| {
            matches!(c.end, CallEnd::Open)
                && !c.seen_on_wire
                && c.deadline().is_some_and(|d| d < end)
        });
        let Some(c) = hung else {
            return Ok(());
        };
        let deadline = c.deadline().expect("found by its deadline");
        let prefix = format!("{} ", c.id);
        let why = super::open_calls(self.events(), &c.host, end)
            .into_iter()
            .find(|w| w.starts_with(&prefix))
            .unwrap_or_else(|| format!("{} {} to {}", c.id, c.path, c.target));
        Err(self.keep(Violation::new(
            HANG,
            format!(
                "{why}: still open when the run ended at {}, {} past its deadline at {}",
                fmt_duration(end),
                fmt_duration(end - deadline),
                fmt_duration(deadline)
            ),
        )))
    }
}
