//! Waits and their percentiles, one definition for every command: audit's
//! report and pace's `--stats` both count waits here.
//!
//! **Percentile (nearest rank).** Of `n` recorded waits sorted ascending,
//! the p-th percentile is the wait at rank ⌈p·n/100⌉ (1-based, at least 1):
//! the smallest recorded wait that at least p% of all waits are at or below.
//! "p99 = 40 ms" means at least 99% of the requests waited 40 ms or less and
//! 40 ms is a wait some request had. No interpolation between ranks.
//!
//! **Precision.** Zero waits (the common case) are only counted. Non-zero
//! waits are kept exactly, in nanoseconds, while there are at most
//! [`EXACT_CAP`] of them, so a percentile is the exact wait at its rank.
//! Past that they go into an HDR histogram with three significant digits:
//! a percentile is then the upper end of the bucket that holds the wait at
//! its rank, never below that wait and at most 0.1% above it (and never
//! above the largest wait, which is always exact). The maximum is exact in
//! every case. Waits of 0 and the ranks they cover stay exact too.
//!
//! Tallies of the same kind of waits kept apart (say, one per replay
//! thread) merge into exactly the tally one would have kept of them all.

use hdrhistogram::Histogram;

/// Most non-zero waits kept exactly before the histogram takes over.
pub const EXACT_CAP: usize = 1 << 20;

/// Waits, in nanoseconds.
#[derive(Clone, Debug, Default)]
pub struct WaitStats {
    zeros: u64,
    exact: Vec<u64>,
    hist: Option<Histogram<u64>>,
    max: u64,
}

/// Percentiles of a set of waits, ns (all 0 when there are none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

impl WaitStats {
    pub fn new() -> WaitStats {
        WaitStats::default()
    }

    /// Waits recorded.
    fn count(&self) -> u64 {
        self.zeros + self.exact.len() as u64 + self.hist.as_ref().map_or(0, |h| h.len())
    }

    /// Records one wait of `ns` nanoseconds.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.max = self.max.max(ns);
        if ns == 0 {
            self.zeros += 1;
        } else if let Some(h) = &mut self.hist {
            put(h, ns);
        } else {
            self.exact.push(ns);
            if self.exact.len() > EXACT_CAP {
                self.spill();
            }
        }
    }

    /// Records `n` waits of zero at once.
    #[inline]
    pub fn record_zeros(&mut self, n: u64) {
        self.zeros += n;
    }

    /// Non-zero waits recorded.
    pub fn nonzero(&self) -> u64 {
        self.exact.len() as u64 + self.hist.as_ref().map_or(0, |h| h.len())
    }

    /// Moves the exact waits into the histogram: for a part of a larger
    /// tally that is known to pass [`EXACT_CAP`] non-zero waits, as the
    /// merged tally then would.
    pub fn spill(&mut self) {
        let h = self
            .hist
            .get_or_insert_with(|| Histogram::new(3).expect("3 significant digits is valid"));
        for &v in &self.exact {
            put(h, v);
        }
        self.exact = Vec::new();
    }

    /// Adds every wait of `other`: the result is what one tally of both
    /// sets of waits would hold.
    pub fn merge(&mut self, other: WaitStats) {
        self.zeros += other.zeros;
        self.max = self.max.max(other.max);
        self.exact.extend_from_slice(&other.exact);
        if let Some(theirs) = other.hist {
            match &mut self.hist {
                Some(h) => h.add(&theirs).expect("histograms of the same precision"),
                None => self.hist = Some(theirs),
            }
        }
        if self.hist.is_some() || self.exact.len() > EXACT_CAP {
            self.spill();
        }
    }

    /// The p-th percentile by nearest rank (`p` in 1..=100).
    #[cfg(test)]
    fn percentile(&mut self, p: u64) -> u64 {
        self.exact.sort_unstable();
        self.at_rank(p)
    }

    /// The wait at nearest rank ⌈p·n/100⌉, with `exact` sorted.
    fn at_rank(&self, p: u64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = (p * n).div_ceil(100).max(1); // 1-based
        if rank <= self.zeros {
            return 0;
        }
        let i = rank - self.zeros;
        match &self.hist {
            Some(h) => h.value_at_quantile(i as f64 / h.len() as f64).min(self.max),
            None => self.exact[i as usize - 1],
        }
    }

    /// p50, p95, p99 and the maximum.
    pub fn percentiles(&mut self) -> Percentiles {
        self.exact.sort_unstable();
        Percentiles {
            p50: self.at_rank(50),
            p95: self.at_rank(95),
            p99: self.at_rank(99),
            max: self.max,
        }
    }
}

/// Records `ns`, growing the histogram to hold it. (A saturating record
/// would pin every wait above the histogram's current range to its top:
/// the histogram starts out tiny and only a growing record widens it.)
#[inline]
fn put(h: &mut Histogram<u64>, ns: u64) {
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeded waits: the same every run.
    fn waits(n: usize, seed: u64) -> Vec<u64> {
        let mut rng = crate::testing::Rng(seed);
        (0..n)
            .map(|_| {
                let x = rng.next();
                // A third immediate, the rest spread over 0..10 s.
                if x.is_multiple_of(3) {
                    0
                } else {
                    x % 10_000_000_000
                }
            })
            .collect()
    }

    fn nearest_rank(sorted: &[u64], p: u64) -> u64 {
        let rank = (p * sorted.len() as u64).div_ceil(100).max(1);
        sorted[rank as usize - 1]
    }

    #[test]
    fn exact_percentiles_are_the_nearest_rank() {
        let mut s = WaitStats::new();
        assert_eq!(s.percentiles(), Percentiles::default());
        // 1..=100: p50 is the 50th, p95 the 95th, p99 the 99th.
        for v in (1..=100u64).rev() {
            s.record(v);
        }
        let p = s.percentiles();
        assert_eq!((p.p50, p.p95, p.p99, p.max), (50, 95, 99, 100));
        // Ten waits: p95 and p99 both round up to the 10th.
        let mut s = WaitStats::new();
        for v in [0, 0, 0, 5, 6, 7, 8, 9, 10, 1000] {
            s.record(v);
        }
        let p = s.percentiles();
        assert_eq!((p.p50, p.p95, p.p99, p.max), (6, 1000, 1000, 1000));
        // Rank 3 (of 10) is the last 0, rank ⌈3.1⌉ = 4 the first 5.
        assert_eq!(s.percentile(30), 0);
        assert_eq!(s.percentile(31), 5);
        assert_eq!(s.percentile(41), 6);
        // One wait is every percentile.
        let mut s = WaitStats::new();
        s.record(7);
        assert_eq!(s.percentile(1), 7);
        assert_eq!(s.percentile(100), 7);
    }

    #[test]
    fn past_the_exact_cap_a_percentile_is_within_a_thousandth_above() {
        // A third are 0: twice the cap leaves a third more than it non-zero.
        let all = waits(EXACT_CAP * 2, 0x9e37_79b9_7f4a_7c15);
        let mut s = WaitStats::new();
        for &v in &all {
            s.record(v);
        }
        assert!(s.hist.is_some());
        let mut sorted = all.clone();
        sorted.sort_unstable();
        for p in [1, 20, 33, 34, 50, 95, 99, 100] {
            let truth = nearest_rank(&sorted, p);
            let got = s.percentile(p);
            assert!(got >= truth, "p{p}: {got} < {truth}");
            assert!(got - truth <= truth / 1000, "p{p}: {got} vs {truth}");
        }
        assert_eq!(s.percentiles().max, *sorted.last().unwrap());
        assert_eq!(s.count(), all.len() as u64);
    }

    #[test]
    fn merged_tallies_equal_one_tally_of_everything() {
        // Below the cap; every part below it but the whole past it; one
        // part past it on its own.
        for (n, split) in [(1000, 3), (EXACT_CAP * 2 + 5, 7), (EXACT_CAP * 4, 2)] {
            let all = waits(n, 0x2545_f491_4f6c_dd1d ^ n as u64);
            let mut one = WaitStats::new();
            for &v in &all {
                one.record(v);
            }
            let mut parts = vec![WaitStats::new(); split];
            for (i, &v) in all.iter().enumerate() {
                // Uneven parts: a run of rows to one, then round robin.
                let k = if i < n / 2 { 0 } else { i % split };
                parts[k].record(v);
            }
            let mut merged = WaitStats::new();
            for p in parts {
                merged.merge(p);
            }
            assert_eq!(merged.count(), one.count());
            assert_eq!(merged.percentiles(), one.percentiles(), "n {n}");
            for p in [1, 34, 77] {
                assert_eq!(merged.percentile(p), one.percentile(p));
            }
        }
    }
}
