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

use super::rule::{
    AxisPoint, Info, Listed, Params, Prefetch, Shared, Sizing, positive, rate_point, refill_within,
    saturate,
};
use super::{Decision, Policy};
use crate::rate::Rate;
use crate::time::Nanos;
use std::num::NonZeroU64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeakyBucket {
    rate: Rate,
    capacity: u64,
}

impl LeakyBucket {
    pub fn new(rate: Rate, capacity: NonZeroU64) -> LeakyBucket {
        LeakyBucket {
            rate,
            capacity: capacity.get(),
        }
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

impl Prefetch for LeakyBucketState {
    fn owns(&self) -> bool {
        false
    }
}

impl Listed for LeakyBucket {
    const NAME: &'static str = "leaky-bucket";
    const PARAMS: &'static [&'static str] = &["rate", "capacity"];
    const SIZING: Sizing = Sizing::rates("capacity");

    fn parse(p: &mut Params<'_>) -> Result<Self, String> {
        let rate = p.rate()?;
        Ok(LeakyBucket::new(rate, p.positive("capacity", Some(1))?))
    }

    fn info(&self) -> Info {
        Info::bounded(self.capacity)
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, String> {
        let rate = rate_point(Self::NAME, at)?;
        Ok(LeakyBucket::new(rate, positive("capacity", size)?))
    }

    /// An empty bucket filled, then ⌊rate · h⌋ drained.
    fn worst_within(&self, h: Nanos) -> u64 {
        saturate(u128::from(self.capacity) + refill_within(self.rate, h))
    }

    fn shared(&self) -> Option<Shared> {
        Some(Shared::meter(self.rate, self.capacity))
    }
}

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
