//! Token bucket: starts full with `burst` tokens, refills continuously at
//! `rate` up to `burst`; a request of `cost` c is admitted iff at least c
//! tokens are there, and spends them.
//!
//! Tokens are held in scaled units (one token = `per` units, refill =
//! elapsed ns · count), so the refill is exact: there is no fractional
//! carry to lose. A cost above `burst` can never fit (its maximum cost).
//!
//! Spec: `token-bucket:rate=RATE[,burst=N]`, burst 1 by default.

use super::{Decision, Policy};
use crate::time::Nanos;

super::meter::meter!(
    /// A token bucket of `burst` tokens, refilled at `rate`.
    TokenBucket, "token-bucket", burst, paces: false
);

impl TokenBucket {
    fn tokens_at(&self, s: &TokenBucketState, now: Nanos) -> u128 {
        let full = self.rate.intervals(self.burst);
        if !s.seen {
            return full;
        }
        let elapsed = now.saturating_sub(s.last);
        (s.tokens + self.rate.scale(elapsed)).min(full)
    }
}

/// Tokens (scaled) at `last`; a key never seen (`seen == false`) is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenBucketState {
    /// The tokens at `last`, in scaled units (`per` a token); they refill
    /// `count` a nanosecond, up to `burst · per`.
    pub tokens: u128,
    /// The latest admission.
    pub last: Nanos,
    /// False until the first admission: the bucket is then full, whatever
    /// `tokens` holds.
    pub seen: bool,
}

super::rule::plain_state!(TokenBucketState);

impl Policy for TokenBucket {
    type State = TokenBucketState;

    fn check(&self, s: &TokenBucketState, now: Nanos, cost: u64) -> Decision {
        let tokens = self.tokens_at(s, now);
        let need = self.rate.intervals(cost);
        if tokens >= need {
            Decision::Admit { release: now }
        } else {
            let wait = self.rate.unscale_ceil(need - tokens);
            Decision::Refuse {
                retry_at: Some(now.saturating_add(wait)),
            }
        }
    }

    fn admit(&self, s: &mut TokenBucketState, now: Nanos, cost: u64) {
        let tokens = self.tokens_at(s, now);
        s.tokens = tokens - self.rate.intervals(cost);
        s.last = now.max(s.last);
        s.seen = true;
    }

    /// `check`, then `admit`, refilling the bucket once for an admission.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut TokenBucketState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let tokens = self.tokens_at(s, now);
        let need = self.rate.intervals(cost);
        if tokens < need {
            // A refusal changes nothing.
            return super::refusal::<Self, RETRY>(self, s, now, cost);
        }
        s.tokens = tokens - need;
        s.last = now.max(s.last);
        s.seen = true;
        Decision::Admit { release: now }
    }

    fn is_neutral(&self, s: &TokenBucketState, now: Nanos) -> bool {
        self.tokens_at(s, now) == self.rate.intervals(self.burst)
    }

    fn level(&self, s: &TokenBucketState, now: Nanos) -> u64 {
        let used = self.rate.intervals(self.burst) - self.tokens_at(s, now);
        self.rate.units_ceil(used)
    }
}
