//! Shrinking a failing schedule to a minimal one that still breaks the
//! same invariant, the way proptest and Hypothesis shrink a failing input:
//! greedy steps, each kept only when the run still fails, repeated until a
//! round changes nothing or the budget of runs is spent.
//!
//! A round, in order (fewest calls and faults first, because every later
//! step costs a run per fault, and a run with fewer calls is shorter):
//! 0. for a scenario that takes a count of calls, bisect toward the
//!    fewest calls that still fail (as proptest shrinks a collection's
//!    length first);
//! 1. drop each fault in turn (never the last one: the baseline passes);
//! 2. swap each fault for a simpler kind the space has on the same host or
//!    link ([`rank`]), simplest first;
//! 3. move each fault to the baseline's nearest instant at or before it
//!    (else the next one after it), then bisect toward the earliest
//!    instant that still fails;
//! 4. shorten each outage (crash to restart, partition to repair, a
//!    handler fault's window) and each handler delay by bisection in whole
//!    milliseconds, toward the shortest that still fails.
//!
//! The sweep's schedules are one fault at an instant already: for them
//! only steps 0 and 4 run. Nothing here is random; a schedule already tried is
//! never run again, and neither is a candidate the run would refuse (two
//! crashes of one host at once, [`super::clashes`]) nor a cancel outside
//! its call's life in the baseline (where the space would not place it).

use std::collections::HashSet;
use std::time::Duration;

use super::schedule::{Placed, Schedule};
use super::space::Target;

/// What shrinking may change, and what it knows of the baseline.
pub(super) struct Moves<'a> {
    /// Every step; `false`: only shortening (step 4).
    pub(super) all: bool,
    /// The baseline's instants in the window, sorted and distinct.
    pub(super) instants: &'a [Duration],
    /// The end of the run (*simulated*).
    pub(super) end: Duration,
    /// The space's points: the kinds a fault may be swapped for.
    pub(super) targets: &'a [Target],
    /// The streams of calls from the caller to the server open at an
    /// instant in the baseline, in order of their first frame: where a
    /// swapped-in cancel lands (the first), and where a moved one may go
    /// (while its stream is open, as the space places cancels).
    pub(super) streams_at: &'a dyn Fn(&str, &str, Duration) -> Vec<u32>,
}

/// The minimal schedule found, what its run said, and what it took.
#[derive(Debug)]
pub(super) struct Shrinking<T> {
    pub(super) schedule: Schedule,
    pub(super) found: T,
    /// Runs made (each a candidate schedule run once).
    pub(super) runs: usize,
    /// The budget ran out before a round changed nothing.
    pub(super) exhausted: bool,
}

/// Shrinks `start` (which failed, saying `found`), calling `fails` on
/// each candidate (at most `budget` times): `Some` with what the run said
/// when it still breaks the invariant, `None` when it does not.
pub(super) fn shrink<T>(
    start: Schedule,
    found: T,
    moves: &Moves<'_>,
    budget: usize,
    fails: impl FnMut(&Schedule) -> Option<T>,
) -> Shrinking<T> {
    let mut tried = HashSet::new();
    tried.insert((start.calls, start.faults.clone()));
    let mut s = Shrinker {
        done: HashSet::new(),
        best: start,
        found,
        runs: 0,
        budget,
        exhausted: false,
        tried,
        moves,
        fails,
    };
    loop {
        let before = (s.best.calls, s.best.faults.clone());
        s.fewer_calls();
        if moves.all {
            s.drop_faults();
            s.each(Step::Kind, Shrinker::simpler_kind);
            s.each(Step::Move, Shrinker::move_earlier);
        }
        s.each(Step::Shorten, Shrinker::shorten);
        if (s.best.calls, &s.best.faults) == (before.0, &before.1) || s.exhausted {
            break;
        }
    }
    Shrinking {
        schedule: s.best,
        found: s.found,
        runs: s.runs,
        exhausted: s.exhausted,
    }
}

/// The steps run fault by fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Step {
    Kind,
    Move,
    Shorten,
}

struct Shrinker<'a, T, F> {
    /// Each step, the fault it ran on, and the schedule it left: run
    /// again on the same, it would only retry what it learnt (a
    /// bisection from a lower bound retries new lengths it need not).
    done: HashSet<(Step, usize, Vec<Placed>)>,
    best: Schedule,
    found: T,
    runs: usize,
    budget: usize,
    exhausted: bool,
    tried: HashSet<(Option<usize>, Vec<Placed>)>,
    moves: &'a Moves<'a>,
    fails: F,
}

impl<T, F: FnMut(&Schedule) -> Option<T>> Shrinker<'_, T, F> {
    /// Runs `faults` unless tried, empty, refused or over budget; keeps
    /// it when it still fails.
    fn attempt(&mut self, faults: Vec<Placed>) -> bool {
        self.attempt_calls(self.best.calls, faults)
    }

    /// [`Shrinker::attempt`] with the scenario making `calls` calls.
    fn attempt_calls(&mut self, calls: Option<usize>, faults: Vec<Placed>) -> bool {
        let end = self.moves.end;
        let clash = faults
            .iter()
            .enumerate()
            .any(|(i, a)| faults[i + 1..].iter().any(|b| super::clashes(a, b, end)));
        let outside = faults.iter().any(|p| !self.in_life(p));
        let key = (calls, faults);
        if key.1.is_empty() || clash || outside || self.tried.contains(&key) {
            return false;
        }
        if self.runs >= self.budget {
            self.exhausted = true;
            return false;
        }
        self.runs += 1;
        self.tried.insert(key.clone());
        let (calls, faults) = key;
        let mut candidate = Schedule::new(self.best.seed, self.best.number, faults);
        candidate.calls = calls;
        match (self.fails)(&candidate) {
            Some(found) => {
                (self.best, self.found) = (candidate, found);
                true
            }
            None => false,
        }
    }

    /// A cancel lands in its call's life in the baseline (what
    /// [`Target::Cancel`] means); any other fault lands anywhere.
    fn in_life(&self, p: &Placed) -> bool {
        match &p.target {
            Target::Cancel { caller, server } => {
                (self.moves.streams_at)(caller, server, p.at).contains(&p.stream)
            }
            _ => true,
        }
    }

    /// The best schedule with fault `i` replaced by `p`.
    fn with(&self, i: usize, p: Placed) -> Vec<Placed> {
        let mut faults = self.best.faults.clone();
        faults[i] = p;
        faults
    }

    /// Runs `step` on each fault, by index (a step keeps the count),
    /// unless it left the schedule as it is now.
    fn each(&mut self, id: Step, step: fn(&mut Self, usize)) {
        for i in 0..self.best.faults.len() {
            if self.done.contains(&(id, i, self.best.faults.clone())) {
                continue;
            }
            step(self, i);
            self.done.insert((id, i, self.best.faults.clone()));
        }
    }

    /// Bisects `1..calls` for the fewest calls that still fail, the
    /// faults as they are.
    fn fewer_calls(&mut self) {
        let Some(calls) = self.best.calls else {
            return;
        };
        let (mut lo, mut hi) = (1, calls);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let faults = self.best.faults.clone();
            if self.attempt_calls(Some(mid), faults) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
    }

    fn drop_faults(&mut self) {
        let mut i = 0;
        while i < self.best.faults.len() && self.best.faults.len() > 1 {
            let mut fewer = self.best.faults.clone();
            fewer.remove(i);
            if !self.attempt(fewer) {
                i += 1;
            }
        }
    }

    fn simpler_kind(&mut self, i: usize) {
        for alt in simpler(&self.best.faults[i], self.moves) {
            if self.attempt(self.with(i, alt)) {
                return;
            }
        }
    }

    fn move_earlier(&mut self, i: usize) {
        let instants = self.moves.instants;
        let at = self.best.faults[i].at;
        let le = instants.partition_point(|&t| t <= at);
        if le == 0 || instants[le - 1] != at {
            let earlier = le.checked_sub(1).map(|k| instants[k]);
            let snapped = earlier.is_some_and(|t| self.attempt(self.moved(i, t)));
            if !snapped && le < instants.len() {
                self.attempt(self.moved(i, instants[le]));
            }
        }
        let at = self.best.faults[i].at;
        let Ok(j) = instants.binary_search(&at) else {
            return;
        };
        let (mut lo, mut hi) = (0, j);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.attempt(self.moved(i, instants[mid])) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
    }

    /// Fault `i` moved to start at `to`, lasting as long.
    fn moved(&self, i: usize, to: Duration) -> Vec<Placed> {
        let p = &self.best.faults[i];
        let until = p
            .until
            .and_then(|u| heal_within(&p.target, to + (u - p.at), self.moves.end));
        self.with(
            i,
            Placed {
                at: to,
                until,
                ..p.clone()
            },
        )
    }

    fn shorten(&mut self, i: usize) {
        let p = &self.best.faults[i];
        // An instant, or lasting to the end: nothing to shorten.
        if matches!(p.target, Target::Cancel { .. } | Target::Shutdown { .. }) {
            return;
        }
        let lasts = p.until.unwrap_or(self.moves.end).saturating_sub(p.at);
        let end = self.moves.end;
        self.shortest(i, lasts, |p, len| Placed {
            until: heal_within(&p.target, p.at + len, end),
            ..p.clone()
        });
        if let Target::HandlerDelay { delay, .. } = &self.best.faults[i].target {
            let delay = *delay;
            self.shortest(i, delay, |p, len| {
                let mut p = p.clone();
                if let Target::HandlerDelay { delay, .. } = &mut p.target {
                    *delay = len;
                }
                p
            });
        }
    }

    /// Bisects the whole milliseconds of `1..=len` for the shortest that
    /// still fails, `make` giving fault `i` that length.
    fn shortest(&mut self, i: usize, len: Duration, make: impl Fn(&Placed, Duration) -> Placed) {
        let (mut lo, mut hi) = (1, u64::try_from(len.as_millis()).unwrap_or(u64::MAX));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let p = make(&self.best.faults[i], Duration::from_millis(mid));
            if self.attempt(self.with(i, p)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
    }
}

/// When a fault starting at some time heals at `heal`: a crash's restart
/// or a partition's repair at or after `end` is left out (the run refuses
/// it; the fault lasts to the end); a handler fault's window may end
/// after the run; a cancel and a shutdown never heal.
pub(super) fn heal_within(target: &Target, heal: Duration, end: Duration) -> Option<Duration> {
    match target {
        Target::Cancel { .. } | Target::Shutdown { .. } => None,
        Target::Crash { .. } | Target::Partition { .. } if heal >= end => None,
        _ => Some(heal),
    }
}

/// How much a kind of fault takes away, least first: one call at one
/// instant (a cancel); the handlers' speed (delay); their answers (fail);
/// any answer (hang); a link (partition); a host's new calls, its calls in
/// flight left to finish (shutdown); a whole host (crash).
pub(super) fn rank(target: &Target) -> u8 {
    match target {
        Target::Cancel { .. } => 0,
        Target::HandlerDelay { .. } => 1,
        Target::HandlerFail { .. } => 2,
        Target::HandlerHang { .. } => 3,
        Target::Partition { .. } => 4,
        Target::Shutdown { .. } => 5,
        Target::Crash { .. } => 6,
    }
}

/// The hosts a target lands on.
fn lands_on(target: &Target) -> Vec<&str> {
    match target {
        Target::Crash { host }
        | Target::HandlerDelay { host, .. }
        | Target::HandlerFail { host, .. }
        | Target::HandlerHang { host }
        | Target::Shutdown { host } => vec![host],
        Target::Partition { a, b } => vec![a, b],
        Target::Cancel { caller, server } => vec![caller, server],
    }
}

/// `p` as each simpler kind of the space that lands on one of its hosts,
/// simplest first, at the same time and for as long (a cancel: on the
/// stream open then, if any).
fn simpler(p: &Placed, moves: &Moves<'_>) -> Vec<Placed> {
    let hosts = lands_on(&p.target);
    let mut alts: Vec<&Target> = moves
        .targets
        .iter()
        .filter(|t| rank(t) < rank(&p.target))
        .filter(|t| lands_on(t).iter().any(|h| hosts.contains(h)))
        .collect();
    alts.sort_by_key(|t| rank(t));
    let heal = p.until.unwrap_or(moves.end);
    alts.into_iter()
        .filter_map(|t| {
            let stream = match t {
                Target::Cancel { caller, server } => {
                    *(moves.streams_at)(caller, server, p.at).first()?
                }
                _ => 0,
            };
            Some(Placed {
                target: t.clone(),
                at: p.at,
                until: heal_within(t, heal, moves.end),
                stream,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
