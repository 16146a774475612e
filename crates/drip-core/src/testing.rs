//! Helpers the crate's unit, property and end-to-end tests share, so that a
//! seeded property means the same thing in every module (public for the
//! tests in `tests/`, hidden from the documentation).

/// splitmix64: a small seeded generator for reproducible properties. The
/// same seed gives the same cases on every run and every machine.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits (an iterator would never end).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::Rng;

    #[test]
    fn the_same_seed_gives_the_same_numbers_and_below_stays_below() {
        let (mut a, mut b) = (Rng(42), Rng(42));
        let xs: Vec<u64> = (0..100).map(|_| a.next()).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.next()).collect();
        assert_eq!(xs, ys);
        assert_ne!(Rng(43).next(), xs[0]);
        // Every residue turns up: no value is stuck or skipped.
        let mut seen = [false; 7];
        for _ in 0..1_000 {
            let v = a.below(7);
            assert!(v < 7);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
