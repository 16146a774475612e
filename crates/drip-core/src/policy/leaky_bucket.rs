//! Leaky bucket as a meter: the bucket starts empty and drains
//! continuously at `rate`; a request of `cost` c is admitted iff
//! `level + c ≤ capacity`, and pours c units in. Nothing waits: a request
//! that would overflow is refused. Default capacity 1: exact spacing.
//!
//! The level is held in scaled units (one unit = `per`, drain = elapsed ns ·
//! count): the same exact ledger as a whole level with a carry of
//! thousandths, without the carry's rounding (the vectors in
//! `fixtures/seeds/seed000.csv` pin it). At 3/s after an admit at 0 ms the
//! next admit on a millisecond clock is at 334 ms. A cost above `capacity`
//! can never fit (its maximum cost).
//!
//! Spec: `leaky-bucket:rate=RATE[,capacity=N]`, capacity 1 by default.

use super::{Decision, Policy};
use crate::time::Nanos;

super::meter::meter!(
    /// A leaky meter of `capacity` units, drained at `rate`.
    LeakyBucket, "leaky-bucket", capacity, paces: false
);

impl LeakyBucket {
    fn level_at(&self, s: &LeakyBucketState, now: Nanos) -> u128 {
        let elapsed = now.saturating_sub(s.last);
        s.level.saturating_sub(self.rate.scale(elapsed))
    }
}

/// Level (scaled) at `last`; a key never seen is empty.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeakyBucketState {
    /// The level at `last`, in scaled units (`per` a unit); it drains
    /// `count` a nanosecond.
    pub level: u128,
    /// The latest admission.
    pub last: Nanos,
}

super::rule::plain_state!(LeakyBucketState);

impl Policy for LeakyBucket {
    type State = LeakyBucketState;

    fn check(&self, s: &LeakyBucketState, now: Nanos, cost: u64) -> Decision {
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

    /// `check`, then `admit`, leaking the bucket once for an admission.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut LeakyBucketState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let after = self.level_at(s, now) + self.rate.intervals(cost);
        if after > self.rate.intervals(self.capacity) {
            // A refusal changes nothing.
            return super::refusal::<Self, RETRY>(self, s, now, cost);
        }
        s.level = after;
        s.last = now.max(s.last);
        Decision::Admit { release: now }
    }

    fn is_neutral(&self, s: &LeakyBucketState, now: Nanos) -> bool {
        self.level_at(s, now) == 0
    }

    fn level(&self, s: &LeakyBucketState, now: Nanos) -> u64 {
        self.rate.units_ceil(self.level_at(s, now))
    }
}
