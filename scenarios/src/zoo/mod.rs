//! The bug zoo: services with a bug planted on purpose, each found by the
//! explorer ([`grpc_chaos::explore`]) from a generic fault space, never
//! told the instant; the fixed service passes the same exploration.
//!
//! | bug | what leaks |
//! |---|---|
//! | [`cancel_unsafe`] | a handler takes stock, awaits, replies: a cancel at the await leaks the stock |
//! | [`retry_two_hops`] | two hops each retry 3 times: while the store fails, one order costs it up to 9 Saves |
//! | [`stale_release`] | reservations in tasks of their own: a request a healed partition releases late is committed after its caller gave up |
//! | [`deadline_retry`] | a gateway propagates its caller's deadline, but its retry builds a fresh request: the retried call has no deadline |
//! | [`upload_stall`] | an archive stops reading an upload while its own call to the store hangs; the uploader set no deadline: its sends wait on the stream window forever |
//!
//! Where each is known from in the field is its [`Bug::source`].

pub mod cancel_unsafe;
pub mod deadline_retry;
pub mod retry_two_hops;
pub mod stale_release;
pub mod upload_stall;

use grpc_chaos::explore::{Explorer, FailureGroup, Report, Schedule, Space};
use grpc_chaos::{Sim, Trace};

/// An invariant over a trace: `Err` says what is wrong.
pub type Check = fn(&Trace) -> Result<(), String>;

/// One planted bug.
#[derive(Debug, Clone, Copy)]
pub struct Bug {
    /// Short name (`cancel-unsafe-reserve`).
    pub name: &'static str,
    /// Where the bug is known from in the field.
    pub source: &'static str,
    /// The bug in one sentence.
    pub story: &'static str,
    /// The scenario with the bug (`fixed` false) or with it fixed.
    pub scenario: fn(seed: u64, fixed: bool) -> Sim,
    /// The generic space the explorer searches.
    pub space: fn() -> Space,
    /// The invariant the bug breaks (the user's own), and its name.
    pub invariant: (&'static str, Check),
}

impl Bug {
    /// An explorer of the buggy (`fixed` false) or fixed scenario, over
    /// the bug's space, with its invariant.
    pub fn explorer(&self, fixed: bool) -> Explorer<impl Fn(u64) -> Sim> {
        let scenario = self.scenario;
        let (name, check) = self.invariant;
        Explorer::new(move |seed| scenario(seed, fixed))
            .space((self.space)())
            .invariant(name, check)
    }
}

/// What [`Bug::hunt`] found: the exploration of the buggy service, of the
/// fixed one, and the trace of the minimal failing run.
#[derive(Debug)]
pub struct Hunt {
    /// The bug hunted.
    pub bug: Bug,
    /// The exploration of the service with the bug.
    pub buggy: Report,
    /// The same exploration of the fixed service.
    pub fixed: Report,
    /// The run of the minimal schedule that breaks the bug's invariant
    /// (shrunk, else as found), replayed; `None` when the bug was not
    /// found or the run left no trace.
    pub minimal: Option<Trace>,
}

impl Bug {
    /// Explores the buggy service and the fixed one with the explorer's
    /// defaults (100 random schedules, each failure shrunk) from `seed`,
    /// and replays the minimal failing schedule for its trace.
    ///
    /// # Errors
    /// What [`Explorer::explore`] refuses (a misconfigured space, a
    /// baseline that fails or is not deterministic).
    pub fn hunt(&self, seed: u64) -> Result<Hunt, grpc_chaos::Error> {
        let buggy = self.explorer(false).seed(seed).explore()?;
        let fixed = self.explorer(true).seed(seed).explore()?;
        let minimal = buggy.broken(self.invariant.0).and_then(|g| {
            let schedule = g.shrunk.as_ref().map_or(&g.first.schedule, |s| &s.schedule);
            match self.explorer(false).seed(seed).run(schedule) {
                Ok(trace) => Some(trace),
                Err(e) => e.trace().cloned(),
            }
        });
        Ok(Hunt {
            bug: *self,
            buggy,
            fixed,
            minimal,
        })
    }
}

impl Hunt {
    /// The failures of the bug's invariant in the buggy service's
    /// exploration: `None` when the explorer missed the bug.
    pub fn found(&self) -> Option<&FailureGroup> {
        self.buggy.broken(self.bug.invariant.0)
    }

    /// The minimal schedule found (shrunk, else as found).
    pub fn schedule(&self) -> Option<&Schedule> {
        self.found()
            .map(|g| g.shrunk.as_ref().map_or(&g.first.schedule, |s| &s.schedule))
    }

    /// True when the bug was found and the fixed service broke nothing.
    pub fn passed(&self) -> bool {
        self.found().is_some() && self.fixed.passed()
    }

    /// One line: `found, shrunk to N faults in M runs` (or `NOT found in
    /// N runs`), then the fixed service's verdict.
    pub fn line(&self) -> String {
        let found = match self.found() {
            Some(g) => match &g.shrunk {
                Some(s) => format!(
                    "found, shrunk to {} in {}",
                    count(s.schedule.faults.len(), "fault"),
                    count(s.runs, "run")
                ),
                None => format!("found, {}", count(g.first.schedule.faults.len(), "fault")),
            },
            None => format!("NOT found in {}", count(self.buggy.runs, "run")),
        };
        let fixed = if self.fixed.passed() {
            format!("the fixed service passes {}", count(self.fixed.runs, "run"))
        } else {
            let broken: Vec<&str> = self
                .fixed
                .failures
                .iter()
                .map(|g| g.invariant.as_str())
                .collect();
            format!("the fixed service FAILS: {} broken", broken.join(", "))
        };
        format!("{found}; {fixed}")
    }

    /// What the minimal run's trace should say it shows: the invariant
    /// broken and how.
    pub fn verdict(&self) -> Option<String> {
        let g = self.found()?;
        let message = g.shrunk.as_ref().map_or(&g.first.message, |s| &s.message);
        Some(format!("invariant `{}` broken: {message}", g.invariant))
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Every bug of the zoo.
pub fn all() -> Vec<Bug> {
    vec![
        cancel_unsafe::BUG,
        retry_two_hops::BUG,
        stale_release::BUG,
        deadline_retry::BUG,
        upload_stall::BUG,
    ]
}

/// The bug named `name`.
pub fn find(name: &str) -> Option<Bug> {
    all().into_iter().find(|b| b.name == name)
}
