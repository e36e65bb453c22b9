//! The frame faults of a run as the wire tap sees them: the frame rules in
//! the order added, the injections, and which named holds were released.
//! The tap holds this plan, not the run's whole state; the run's driver
//! and the hosts' `release` calls change only the released set.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use super::{check_release, FrameInfo, FrameView, Injection, RuleEntry, Verdict};
use crate::error::Error;

/// A run's frame rules and injections, and the holds released so far.
pub(crate) struct FramePlan {
    frame: Vec<RuleEntry>,
    inject: Vec<Injection>,
    /// Names released so far ([`FrameFault::hold`](super::FrameFault::hold)).
    released: Mutex<BTreeSet<String>>,
    /// Wakes every writer task waiting on a named hold when one is released.
    release_notify: Notify,
}

impl FramePlan {
    pub(crate) fn new(frame: Vec<RuleEntry>, inject: Vec<Injection>) -> Self {
        Self {
            frame,
            inject,
            released: Mutex::default(),
            release_notify: Notify::new(),
        }
    }

    /// The frame rules, in the order added.
    pub(crate) fn rules(&self) -> &[RuleEntry] {
        &self.frame
    }

    /// The injections, in the order added.
    pub(crate) fn injections_all(&self) -> &[Injection] {
        &self.inject
    }

    /// What the frame faults do with a frame: the verdict of the first
    /// whose filter matches and whose rule acts, if any.
    pub(crate) fn frame_verdict(
        &self,
        info: &FrameInfo<'_>,
        view: &FrameView<'_>,
    ) -> Option<Verdict> {
        self.frame.iter().find_map(|r| r.verdict(info, view))
    }

    /// Whether any frame fault exists (the tap then cuts the byte stream at
    /// frame boundaries; otherwise it only watches).
    pub(crate) fn has_frame_rules(&self) -> bool {
        !self.frame.is_empty() || !self.inject.is_empty()
    }

    /// `.at` injections into the direction `from` → `to` still due at or
    /// after `now`, soonest first.
    pub(crate) fn injections(&self, from: &str, to: &str, now: Duration) -> Vec<Injection> {
        let mut due: Vec<Injection> = self
            .inject
            .iter()
            .filter(|i| i.from == from && i.to == to && i.at().is_some_and(|at| at >= now))
            .cloned()
            .collect();
        due.sort_by_key(Injection::at);
        due
    }

    /// `.after` injections whose frame goes on a connection between `a`
    /// and `b` (either way), with their index among the run's injections.
    pub(crate) fn triggers_between(&self, a: &str, b: &str) -> Vec<(usize, Injection)> {
        self.inject
            .iter()
            .enumerate()
            .filter(|(_, i)| i.trigger().is_some())
            .filter(|(_, i)| (i.from == a && i.to == b) || (i.from == b && i.to == a))
            .map(|(n, i)| (n, i.clone()))
            .collect()
    }

    /// Marks the frames held under `name` ([`Verdict::Hold`]) released;
    /// `what` names the call for the error when no hold uses `name`. Wake
    /// the writer tasks with [`FramePlan::wake_released`] once the release
    /// is recorded. Returns the host whose frames the hold keeps back, or
    /// else the one they go to, when the hold names one (where a timed
    /// release is shown).
    pub(crate) fn release(&self, what: &str, name: &str) -> Result<Option<&str>, Error> {
        check_release(what, name, &self.frame)?;
        self.released
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_owned());
        Ok(self
            .frame
            .iter()
            .filter(|r| r.hold_name() == Some(name))
            .find_map(|r| r.filter.from.as_deref().or(r.filter.to.as_deref())))
    }

    /// Wakes every writer task waiting on a named hold.
    pub(crate) fn wake_released(&self) {
        self.release_notify.notify_waiters();
    }

    /// Whether the hold `name` was released.
    pub(crate) fn is_released(&self, name: &str) -> bool {
        self.released
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(name)
    }

    /// Resolves at the next release. Create it before checking
    /// [`FramePlan::is_released`]: a release in between still wakes it.
    pub(crate) fn next_release(&self) -> Notified<'_> {
        self.release_notify.notified()
    }
}

impl fmt::Debug for FramePlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramePlan")
            .field("rules", &self.frame.len())
            .field("injections", &self.inject.len())
            .finish_non_exhaustive()
    }
}
