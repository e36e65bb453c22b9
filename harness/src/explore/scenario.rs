//! What an explorer runs: a scenario built from the seed, or from the
//! seed and a number of calls, which shrinking may then lower (as
//! proptest shrinks a collection's length).

use crate::Sim;

/// Builds the sim of one exploration run. Implemented by every
/// `Fn(u64) -> Sim` ([`Explorer::new`](super::Explorer::new)) and by
/// [`WithCalls`] ([`Explorer::with_calls`](super::Explorer::with_calls)).
pub trait Scenario {
    /// The sim for `seed`, making `calls` calls when the scenario takes a
    /// count (`None`: its own count).
    fn build(&self, seed: u64, calls: Option<usize>) -> Sim;

    /// How many calls the scenario makes when not told, if it takes a
    /// count.
    fn calls(&self) -> Option<usize>;
}

impl<F: Fn(u64) -> Sim> Scenario for F {
    fn build(&self, seed: u64, _: Option<usize>) -> Sim {
        self(seed)
    }

    fn calls(&self) -> Option<usize> {
        None
    }
}

/// A scenario that takes a number of calls: `build(seed, calls)`, run
/// with `calls` calls unless a schedule says fewer (see
/// [`Explorer::with_calls`](super::Explorer::with_calls)).
#[derive(Debug, Clone)]
pub struct WithCalls<F> {
    pub(super) calls: usize,
    pub(super) build: F,
}

impl<F: Fn(u64, usize) -> Sim> Scenario for WithCalls<F> {
    fn build(&self, seed: u64, calls: Option<usize>) -> Sim {
        (self.build)(seed, calls.unwrap_or(self.calls))
    }

    fn calls(&self) -> Option<usize> {
        Some(self.calls)
    }
}
