//! The bug zoo: services with a bug planted on purpose, each found by the
//! explorer ([`grpc_chaos::explore`]) from a generic fault space, never
//! told the instant; the fixed service passes the same exploration.
//!
//! | bug | what leaks |
//! |---|---|
//! | [`cancel_unsafe`] | a handler takes stock, awaits, replies: a cancel at the await leaks the stock |

pub mod cancel_unsafe;

use grpc_chaos::explore::{Explorer, Space};
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

/// Every bug of the zoo.
pub fn all() -> Vec<Bug> {
    vec![cancel_unsafe::BUG]
}
