//! Leaky bucket as a meter (seed 000): the bucket starts empty and drains
//! continuously at `rate`; a request of `cost` c is admitted iff
//! `level + c ≤ capacity`, and pours c units in. Nothing waits: a request
//! that would overflow is refused. Default capacity 1: exact spacing.
//!
//! The level is held in scaled units (one unit = `per`, drain = elapsed ns ·
//! count): the same exact ledger as seed 000's whole level plus thousandths
//! carry, without the carry's rounding. At 3/s after an admit at 0 ms the
//! next admit on a millisecond clock is at 334 ms.

use super::{Decision, Policy};
use crate::rate::Rate;
use crate::time::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyBucket {
    rate: Rate,
    capacity: u64,
}

impl LeakyBucket {
    /// `capacity` ≥ 1 units.
    pub fn new(rate: Rate, capacity: u64) -> Result<LeakyBucket, String> {
        if capacity == 0 {
            return Err("capacity must be at least 1".into());
        }
        Ok(LeakyBucket { rate, capacity })
    }
    pub fn rate(&self) -> Rate {
        self.rate
    }
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    fn level_at(&self, s: &LeakyBucketState, now: Nanos) -> u128 {
        let elapsed = now.saturating_sub(s.last);
        s.level.saturating_sub(self.rate.scale(elapsed))
    }
}

/// Level (scaled) at `last`; a key never seen is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeakyBucketState {
    pub level: u128,
    pub last: Nanos,
}

impl Policy for LeakyBucket {
    type State = LeakyBucketState;

    fn check(&self, s: &LeakyBucketState, now: Nanos, cost: u64) -> Decision {
        if cost > self.capacity {
            return Decision::Refuse { retry_at: None };
        }
        let level = self.level_at(s, now);
        let after = level + self.rate.intervals(cost);
        let cap = self.rate.intervals(self.capacity);
        if after <= cap {
            Decision::Admit { release: now }
        } else {
            let wait = self.rate.unscale_ceil(after - cap);
            Decision::Refuse {
                retry_at: Some(now.saturating_add(wait)),
            }
        }
    }

    fn admit(&self, s: &mut LeakyBucketState, now: Nanos, cost: u64) {
        s.level = self.level_at(s, now) + self.rate.intervals(cost);
        s.last = now.max(s.last);
    }

    fn max_level(&self) -> u64 {
        self.capacity
    }

    fn is_neutral(&self, s: &LeakyBucketState, now: Nanos) -> bool {
        self.level_at(s, now) == 0
    }

    fn level(&self, s: &LeakyBucketState, now: Nanos) -> u64 {
        self.rate.units_ceil(self.level_at(s, now))
    }
}
