//! The balancer's random numbers, drawn from the run's seed.
//!
//! tower's `Balance::new` seeds its power-of-two-choices sampler with
//! `HasherRng::default()`, which hashes a counter with a std `RandomState`:
//! random keys per process (tower 0.5 `src/util/rng.rs`), so the same run
//! would pick other replicas in another process. The harness builds every
//! balancer with `Balance::from_rng` and this generator instead.

use tower::util::rng::Rng;

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): a fixed, portable sequence for a seed, unlike
/// `rand`'s `SmallRng`, whose algorithm may change between versions and
/// platforms.
#[derive(Debug, Clone)]
pub(super) struct SplitMix64(u64);

impl SplitMix64 {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }
}

impl Rng for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_fixed_for_a_seed() {
        // The reference values of SplitMix64 for seed 0 (as in the
        // algorithm's public test vectors, e.g. Vigna's splitmix64.c).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
        let mut other = SplitMix64::new(1);
        assert_ne!(other.next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn towers_default_rng_is_not_reproducible_even_in_one_process() {
        // Why `Balance::new` cannot be used: each `HasherRng::default()`
        // takes fresh `RandomState` keys, so two balancers built alike draw
        // different picks (and a second process draws others again).
        let mut a = tower::util::rng::HasherRng::default();
        let mut b = tower::util::rng::HasherRng::default();
        let draws = |r: &mut tower::util::rng::HasherRng| -> Vec<u64> {
            (0..4).map(|_| r.next_u64()).collect()
        };
        assert_ne!(draws(&mut a), draws(&mut b));
    }
}
