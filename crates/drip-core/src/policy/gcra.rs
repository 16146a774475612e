//! GCRA, the generic cell rate algorithm, in its theoretical-arrival-time form.
//!
//! With `T = 1/rate` and a burst of `B` units, a key holds one number, `tat`
//! (the instant its bucket would be empty), kept in scaled time (ns · count,
//! where `T` is exactly `per` units). A request of `cost` c at `now`:
//!
//! ```text
//! start = max(tat, now)
//! admit iff start + c·T − now ≤ B·T        (i.e. now ≥ tat + (c−1)·T − (B−1)·T)
//! on admit: tat = start + c·T
//! ```
//!
//! `tat − now` is the bucket level measured in time, so this is the token
//! bucket and the leaky meter again (tests pin the equivalence). A cost above
//! `B` can never fit (its maximum cost).
//!
//! Spec: `gcra:rate=RATE[,burst=N]`, burst 1 by default.

use super::{Decision, Policy};
use crate::time::Nanos;

super::meter::meter!(
    /// GCRA at `rate` with a burst of `burst` units.
    Gcra, "gcra", burst, paces: true
);

/// Theoretical arrival time in scaled units; 0 for a key never seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcraState {
    /// The instant the bucket is empty again, in ns · count; a bucket
    /// with `tat ≤ now · count` is empty.
    pub tat: u128,
}

super::rule::plain_state!(GcraState);

impl Policy for Gcra {
    type State = GcraState;

    fn check(&self, s: &GcraState, now: Nanos, cost: u64) -> Decision {
        let now_s = self.rate.scale(now);
        let start = s.tat.max(now_s);
        let limit = self.rate.intervals(self.burst - cost);
        if start - now_s <= limit {
            Decision::Admit { release: now }
        } else {
            Decision::Refuse {
                retry_at: Some(self.rate.unscale_ceil(s.tat - limit)),
            }
        }
    }

    fn admit(&self, s: &mut GcraState, now: Nanos, cost: u64) {
        s.tat = s.tat.max(self.rate.scale(now)) + self.rate.intervals(cost);
    }

    /// `check`, then `admit`, scaling `now` once for an admission.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut GcraState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let now_s = self.rate.scale(now);
        let start = s.tat.max(now_s);
        if start - now_s > self.rate.intervals(self.burst - cost) {
            // A refusal changes nothing.
            return super::refusal::<Self, RETRY>(self, s, now, cost);
        }
        s.tat = start + self.rate.intervals(cost);
        Decision::Admit { release: now }
    }

    fn is_neutral(&self, s: &GcraState, now: Nanos) -> bool {
        s.tat <= self.rate.scale(now)
    }

    fn level(&self, s: &GcraState, now: Nanos) -> u64 {
        let pending = s.tat.saturating_sub(self.rate.scale(now));
        self.rate.units_ceil(pending)
    }
}
