//! The explorer's random numbers: SplitMix64 (Steele, Lea and Flood,
//! "Fast splittable pseudorandom number generators", OOPSLA 2014; the
//! constants of Vigna's public-domain `splitmix64.c`), seeded from the
//! explorer's seed and the schedule's number.
//!
//! Written out here rather than taken from `rand`: `rand`'s `SmallRng` is
//! another algorithm on 32-bit targets and may change between `rand`
//! releases, and a schedule number printed by one CI machine must draw
//! the same schedule on every other, in every later version.

/// A SplitMix64 stream.
#[derive(Debug, Clone)]
pub(super) struct Rng(u64);

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Rng {
    /// The stream of schedule `number` under `seed`: distinct numbers
    /// give unrelated streams (the pair is mixed through one step first).
    pub(super) fn for_schedule(seed: u64, number: u64) -> Self {
        let mut mix = Self(seed);
        let base = mix.next_u64();
        Self(base ^ number.wrapping_mul(GOLDEN).rotate_left(17))
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0), by Lemire's multiply-shift (its tiny
    /// bias is of no matter here).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        let wide = u128::from(self.next_u64()) * u128::from(n);
        u64::try_from(wide >> 64).unwrap_or(0)
    }

    /// A number in `lo..=hi`.
    pub(super) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        lo + self.below(hi - lo + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_matches_the_reference_and_streams_differ() {
        // splitmix64.c seeded with 0: its first output.
        assert_eq!(Rng(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let draw = |n| Rng::for_schedule(7, n).next_u64();
        assert_eq!(draw(3), draw(3));
        assert_ne!(draw(3), draw(4));
        let mut r = Rng::for_schedule(1, 1);
        assert!((0..1000).all(|_| r.between(5, 9) <= 9 && r.between(5, 9) >= 5));
    }
}
