//! Token bucket: starts full with `burst` tokens, refills continuously at
//! `rate` up to `burst`; a request of `cost` c is admitted iff at least c
//! tokens are there, and spends them.
//!
//! Tokens are held in scaled units (one token = `per` units, refill =
//! elapsed ns · count), so the refill is exact: there is no fractional
//! carry to lose. A cost above `burst` can never fit (its maximum cost).
//!
//! Spec: `token-bucket:rate=RATE[,burst=N]`, burst 1 by default.

use super::rule::{
    AxisPoint, Info, Listed, Params, Prefetch, Shared, Sizing, positive, rate_point, refill_within,
    saturate,
};
use super::{Decision, Policy};
use crate::rate::Rate;
use crate::time::Nanos;
use std::num::NonZeroU64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    rate: Rate,
    burst: u64,
}

impl TokenBucket {
    pub fn new(rate: Rate, burst: NonZeroU64) -> TokenBucket {
        TokenBucket {
            rate,
            burst: burst.get(),
        }
    }

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
    pub tokens: u128,
    pub last: Nanos,
    pub seen: bool,
}

impl Prefetch for TokenBucketState {
    fn owns(&self) -> bool {
        false
    }
}

impl Listed for TokenBucket {
    const NAME: &'static str = "token-bucket";
    const PARAMS: &'static [&'static str] = &["rate", "burst"];
    const SIZING: Sizing = Sizing::rates("burst");

    fn parse(p: &mut Params<'_>) -> Result<Self, String> {
        let rate = p.rate()?;
        Ok(TokenBucket::new(rate, p.positive("burst", Some(1))?))
    }

    fn info(&self) -> Info {
        Info::bounded(self.burst)
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, String> {
        let rate = rate_point(Self::NAME, at)?;
        Ok(TokenBucket::new(rate, positive("burst", size)?))
    }

    /// A full bucket, then ⌊rate · h⌋ refilled.
    fn worst_within(&self, h: Nanos) -> u64 {
        saturate(u128::from(self.burst) + refill_within(self.rate, h))
    }

    fn shared(&self) -> Option<Shared> {
        Some(Shared::meter(self.rate, self.burst))
    }
}

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
