//! What bounds an exploration: a number of runs, a wall-time budget, or
//! both, whichever ends first. The wall clock here is the one the harness
//! reads outside a run: it decides how many schedules run, never what a
//! schedule is or what its run does (schedule `n` is the same from the
//! seed and `n` whenever it runs).

use std::time::{Duration, Instant};

/// Runs when neither budget is given.
pub(super) const DEFAULT_RUNS: usize = 100;

/// The budgets an explorer was given.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Budget {
    /// [`super::Explorer::budget`]; `None`: 100 runs, or no bound on runs
    /// when a wall-time budget is given.
    pub(super) runs: Option<usize>,
    /// [`super::Explorer::budget_time`].
    pub(super) wall: Option<Duration>,
}

impl Budget {
    /// How many schedules may run.
    pub(super) fn runs(&self) -> usize {
        match (self.runs, self.wall) {
            (Some(n), _) => n,
            (None, Some(_)) => usize::MAX,
            (None, None) => DEFAULT_RUNS,
        }
    }

    /// Starts the wall-time budget's clock (after the baseline).
    pub(super) fn start(&self) -> Clock {
        let now = Instant::now();
        Clock {
            wall: self.wall,
            // A budget too large for the clock is no bound.
            deadline: self.wall.and_then(|w| now.checked_add(w)),
        }
    }
}

/// The wall-time budget's clock, started.
pub(super) struct Clock {
    wall: Option<Duration>,
    deadline: Option<Instant>,
}

impl Clock {
    /// The wall-time budget when it has run out (checked before each
    /// schedule, so a zero budget runs none).
    pub(super) fn ran_out(&self) -> Option<Duration> {
        let out = self.deadline.is_some_and(|d| Instant::now() >= d);
        if out {
            self.wall
        } else {
            None
        }
    }
}

/// The order in which the instant sweep runs its placements under a
/// wall-time budget: positions `0..n` so that every prefix is spread over
/// the whole list (van der Corput order: 0, n/2, n/4, 3n/4, …), so that a
/// budget that ends the sweep early has still placed faults across the
/// window, not only in its first part.
pub(super) fn spread(n: usize) -> Vec<usize> {
    if n <= 1 {
        return (0..n).collect();
    }
    let bits = usize::BITS - (n - 1).leading_zeros();
    (0..1usize << bits)
        .map(|k| k.reverse_bits() >> (usize::BITS - bits))
        .filter(|&p| p < n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_visits_every_position_once_and_halves_first() {
        assert_eq!(spread(0), Vec::<usize>::new());
        assert_eq!(spread(1), [0]);
        assert_eq!(spread(8), [0, 4, 2, 6, 1, 5, 3, 7]);
        let mut five = spread(5);
        assert_eq!(five, [0, 4, 2, 1, 3]);
        five.sort_unstable();
        assert_eq!(five, [0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_wall_time_budget_alone_bounds_no_runs_and_a_zero_one_is_out_at_once() {
        let none = Budget::default();
        assert_eq!(none.runs(), DEFAULT_RUNS);
        assert_eq!(none.start().ran_out(), None);
        let wall = Budget {
            runs: None,
            wall: Some(Duration::ZERO),
        };
        assert_eq!(wall.runs(), usize::MAX);
        assert_eq!(wall.start().ran_out(), Some(Duration::ZERO));
        let both = Budget {
            runs: Some(3),
            wall: Some(Duration::MAX),
        };
        assert_eq!(both.runs(), 3);
        assert_eq!(
            both.start().ran_out(),
            None,
            "too large for the clock: no bound"
        );
    }
}
