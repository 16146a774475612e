//! What one run counts as it decides: admissions, drops, waits, levels,
//! per key and per timeline interval.

use super::counts::Counts;
use crate::ingest::input::{Event, MAX_KEYS};
use crate::ingest::keys::EMPTY_KEY;
use crate::policy::Decision;
use crate::policy::keyed::Levels;
use crate::time::Nanos;
use crate::wait_stats::WaitStats;
use anyhow::{Result, bail};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Per-interval counts of one policy.
#[derive(Clone, Copy, Default)]
pub(super) struct Bin {
    pub(super) arrived: u64,
    pub(super) sent: u64,
    pub(super) dropped: u64,
    pub(super) level: u64,
}

/// One key's waits under a policy that delays: the longest, and how many
/// of its rows waited (saturating).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct KeyWait {
    pub max: u64,
    pub delayed: u32,
}

impl KeyWait {
    /// Adds what `other` counted of the same key.
    #[inline]
    fn add(&mut self, other: KeyWait) {
        self.max = self.max.max(other.max);
        self.delayed = self.delayed.saturating_add(other.delayed);
    }
}

/// Most timeline intervals kept per policy.
pub const MAX_BINS: usize = 1_000_000;

/// The intervals an automatic timeline steps through as the log's span
/// grows, each a whole multiple of the one before, so coarsening merges
/// whole intervals and never splits one.
pub const AUTO_STEPS: [u64; 12] = [
    1_000_000,              // 1 ms
    10_000_000,             // 10 ms
    100_000_000,            // 100 ms
    1_000_000_000,          // 1 s
    10_000_000_000,         // 10 s
    60_000_000_000,         // 1 min
    600_000_000_000,        // 10 min
    3_600_000_000_000,      // 1 h
    86_400_000_000_000,     // 1 day
    864_000_000_000_000,    // 10 days
    8_640_000_000_000_000,  // 100 days
    17_280_000_000_000_000, // 200 days
];

/// Most intervals an automatic timeline's arrivals span before it moves
/// to the next step: fine enough for any later choice of a few hundred.
pub const AUTO_BINS: u64 = 20_000;

/// What one run has counted.
pub struct Tally {
    /// The highest level the policy can reach: once `peak` is there, no
    /// level needs computing (without a timeline).
    pub(super) peak_cap: u64,
    pub(super) report_slot: Option<usize>,
    /// Requests, admitted, delayed and dropped (the keys are counted from
    /// `drops_by_key` when the report is made).
    pub(super) counts: Counts,
    pub(super) waits: WaitStats,
    pub(super) peak: u64,
    /// Drops per key id of the report column (saturating).
    pub(super) drops_by_key: Vec<u32>,
    /// Waits per key id of the report column, for the delayed rows (only
    /// a policy that delays has any).
    pub(super) waits_by_key: Vec<KeyWait>,
    /// For a run split over threads: non-zero waits counted by all of
    /// them so far (each adds its own after every chunk), and how many of
    /// this one's are in. Past the exact cap the merged waits would be a
    /// histogram, so each part turns to one: memory stays that of one.
    pub(super) shared_waits: Option<(Arc<AtomicU64>, u64)>,
    pub(super) bins: Vec<Bin>,
}

impl Tally {
    /// Which levels the next decision should compute.
    #[inline]
    pub(super) fn levels(&self, timeline: bool) -> Levels {
        if timeline {
            Levels::All
        } else if self.peak < self.peak_cap {
            Levels::Rises
        } else {
            Levels::None
        }
    }

    /// Merges the bins, kept every `from.0` from `from.1`, into bins every
    /// `to.0` from `to.1` (a whole multiple, starting at or before): counts
    /// add up, levels keep their peak.
    pub(super) fn coarsen(&mut self, from: (Nanos, u64), to: (Nanos, u64)) {
        let mut merged: Vec<Bin> = Vec::new();
        for (j, b) in self.bins.iter().enumerate() {
            let start = from.1 + j as u64 * from.0.0;
            let i = ((start - to.1) / to.0.0) as usize;
            if merged.len() <= i {
                merged.resize(i + 1, Bin::default());
            }
            let m = &mut merged[i];
            m.arrived += b.arrived;
            m.sent += b.sent;
            m.dropped += b.dropped;
            m.level = m.level.max(b.level);
        }
        self.bins = merged;
    }

    /// Adds this part's new non-zero waits to the count shared with the
    /// other parts of a split run, and turns to a histogram once the
    /// whole is past the exact cap.
    pub(super) fn share_waits(&mut self) {
        let Some((total, counted)) = &mut self.shared_waits else {
            return;
        };
        let mine = self.waits.nonzero();
        let new = mine - *counted;
        *counted = mine;
        let all = total.fetch_add(new, Ordering::Relaxed) + new;
        if all > crate::wait_stats::EXACT_CAP as u64 {
            self.waits.spill();
        }
    }

    /// Adds what `other` counted of the same run (over other rows).
    pub(super) fn merge(&mut self, other: Tally) {
        self.counts.add(other.counts);
        self.waits.merge(other.waits);
        self.peak = self.peak.max(other.peak);
        if self.drops_by_key.len() < other.drops_by_key.len() {
            self.drops_by_key.resize(other.drops_by_key.len(), 0);
        }
        for (mine, theirs) in self.drops_by_key.iter_mut().zip(other.drops_by_key) {
            *mine = mine.saturating_add(theirs);
        }
        if self.waits_by_key.len() < other.waits_by_key.len() {
            self.waits_by_key
                .resize(other.waits_by_key.len(), KeyWait::default());
        }
        for (mine, theirs) in self.waits_by_key.iter_mut().zip(other.waits_by_key) {
            mine.add(theirs);
        }
        if self.bins.len() < other.bins.len() {
            self.bins.resize(other.bins.len(), Bin::default());
        }
        for (m, b) in self.bins.iter_mut().zip(other.bins) {
            m.arrived += b.arrived;
            m.sent += b.sent;
            m.dropped += b.dropped;
            m.level = m.level.max(b.level);
        }
    }

    /// Moves drops and waits counted under a lane's renumbered key ids
    /// into `drops` and `waits`, under the ids they stand for.
    pub(super) fn by_key_into(
        &mut self,
        share: &Share,
        drops: &mut Vec<u32>,
        waits: &mut Vec<KeyWait>,
    ) {
        let mine = std::mem::take(&mut self.drops_by_key);
        share.add_global(mine, drops, |g, d| *g = g.saturating_add(d));
        let mine = std::mem::take(&mut self.waits_by_key);
        share.add_global(mine, waits, KeyWait::add);
    }

    /// Counts one decision (`level`: the level just after it, or 0), but
    /// for what [`Tally::settle`] adds up for a run of decisions: the
    /// requests, the admitted ones, the zero waits. Nothing is counted for
    /// the common decision (admitted at once, below the peak, no timeline)
    /// but a comparison.
    #[inline(always)]
    pub(super) fn count(
        &mut self,
        ev: &Event,
        d: Decision,
        level: u64,
        timeline: Option<(Nanos, u64)>,
    ) -> Result<()> {
        let now = ev.at;
        self.peak = self.peak.max(level);
        match d {
            Decision::Admit { release } => {
                if release > now {
                    self.counts.delayed += 1;
                    self.waits.record(release.0 - now.0);
                    self.waited(ev, release.0 - now.0);
                }
            }
            Decision::Refuse { .. } => self.refused(ev),
        }
        match timeline {
            None => Ok(()),
            Some(t) => self.bin(ev, d, level, t),
        }
    }

    /// Where [`Tally::settle`] takes up after the decisions to count.
    #[inline(always)]
    pub(super) fn mark(&self) -> (u64, u64) {
        (self.counts.dropped, self.counts.delayed)
    }

    /// Adds up what `count` left out for the `n` decisions counted since
    /// `mark`: each is a request; those not refused were admitted, and
    /// those admitted but not delayed waited zero.
    #[inline(always)]
    pub(super) fn settle(&mut self, n: usize, (dropped, delayed): (u64, u64)) {
        let n = n as u64;
        let c = &mut self.counts;
        let admitted = n - (c.dropped - dropped);
        c.requests += n;
        c.admitted += admitted;
        self.waits.record_zeros(admitted - (c.delayed - delayed));
    }

    /// The row's key id in the report column, if it has one there.
    #[inline(always)]
    fn report_key(&self, ev: &Event) -> Option<usize> {
        let &id = ev.keys.get(self.report_slot?)?;
        (id != EMPTY_KEY).then_some(id as usize)
    }

    /// Counts a refusal, by key for the report.
    #[inline]
    pub(super) fn refused(&mut self, ev: &Event) {
        self.counts.dropped += 1;
        if let Some(i) = self.report_key(ev) {
            if i >= self.drops_by_key.len() {
                self.drops_by_key.resize(i + 1, 0);
            }
            self.drops_by_key[i] = self.drops_by_key[i].saturating_add(1);
        }
    }

    /// Counts a wait of `wait` ns by key for the report: the key's longest
    /// and its delayed rows. Only a delayed row comes here, so a policy
    /// that never delays pays nothing for it.
    #[inline]
    fn waited(&mut self, ev: &Event, wait: u64) {
        if let Some(i) = self.report_key(ev) {
            if i >= self.waits_by_key.len() {
                self.waits_by_key.resize(i + 1, KeyWait::default());
            }
            self.waits_by_key[i].add(KeyWait {
                max: wait,
                delayed: 1,
            });
        }
    }

    /// Counts a decision in the timeline's intervals.
    pub(super) fn bin(
        &mut self,
        ev: &Event,
        d: Decision,
        level: u64,
        timeline: (Nanos, u64),
    ) -> Result<()> {
        let now = ev.at;
        let (interval, t0) = timeline;
        let bin = |t: Nanos| ((t.0 - t0) / interval.0) as usize;
        let (here, sent_at) = match d {
            Decision::Admit { release } => (bin(now), Some(bin(release))),
            Decision::Refuse { .. } => (bin(now), None),
        };
        let need = here.max(sent_at.unwrap_or(0)) + 1;
        if need > MAX_BINS {
            bail!(
                "the timeline would have more than {MAX_BINS} intervals; choose a longer --timeline"
            );
        }
        if self.bins.len() < need {
            self.bins.resize(need, Bin::default());
        }
        let b = &mut self.bins[here];
        b.arrived += 1;
        b.level = b.level.max(level);
        match sent_at {
            Some(s) => self.bins[s].sent += 1,
            None => b.dropped += 1,
        }
        Ok(())
    }
}

/// Which keys a lane decides, for runs split by key: key ids `i` with
/// `i mod n = lane` (rows with an empty key go to lane 0). In the rows the
/// lane decides, a key id becomes `i div n`, so its per-key tables stay
/// dense whatever the number of lanes.
#[derive(Clone, Copy)]
pub(super) struct Share {
    pub(super) lane: u32,
    pub(super) n: u32,
    /// ⌈2⁶⁴ / n⌉: `i div n` is the high half of `i · magic` for any 32-bit
    /// `i` (a multiply instead of a division per row).
    pub(super) magic: u64,
}

impl Share {
    pub(super) fn new(lane: u32, n: u32) -> Share {
        assert!(n >= 2 && lane < n);
        Share {
            lane,
            n,
            magic: u64::MAX / u64::from(n) + 1,
        }
    }

    /// `(i div n, i mod n)`.
    #[inline]
    pub(super) fn split(&self, id: u32) -> (u32, u32) {
        let q = ((u128::from(self.magic) * u128::from(id)) >> 64) as u32;
        (q, id - q * self.n)
    }

    /// The key id a lane's local id stands for.
    pub(super) fn global(&self, local: usize) -> usize {
        local * self.n as usize + self.lane as usize
    }

    /// Adds a table by this lane's key ids into one by the ids they stand
    /// for (entries left at their default are skipped).
    pub(super) fn add_global<T: Copy + Default + PartialEq>(
        &self,
        local: Vec<T>,
        global: &mut Vec<T>,
        add: impl Fn(&mut T, T),
    ) {
        let zero = T::default();
        for (i, x) in local.into_iter().enumerate().filter(|(_, x)| *x != zero) {
            let g = self.global(i);
            if global.len() <= g {
                global.resize(g + 1, zero);
            }
            add(&mut global[g], x);
        }
    }

    /// Deals the rows of `events` out to the lanes by their key in column
    /// `c`, in order: lane i's rows go to `lanes[i]`, their key there
    /// renumbered (rows with an empty key go to lane 0).
    pub(super) fn deal(&self, events: &[Event], c: usize, lanes: &mut [&mut Vec<Event>]) {
        assert_eq!(lanes.len(), self.n as usize);
        assert!(c < MAX_KEYS, "a key column past the last");
        for rows in lanes.iter_mut() {
            rows.clear();
        }
        for ev in events {
            let id = ev.keys[c];
            if id == EMPTY_KEY {
                lanes[0].push(*ev);
                continue;
            }
            let (q, r) = self.split(id);
            let mut mine = *ev;
            mine.keys[c] = q;
            lanes[r as usize].push(mine);
        }
    }
}
