//! Shaper: the leaky bucket as a queue, held as one number.
//!
//! `next_free` is the earliest instant the next request may be released.
//! With `T = 1/rate`, a request of `cost` c at `now`:
//!
//! ```text
//! release = max(now, next_free)
//! refuse iff (release − now) + (c−1)·T > limit      limit = burst·T, or max-wait
//! on admit: next_free = release + c·T; the request is held until release
//! ```
//!
//! An idle key gets one immediate release, then one per interval: idle time
//! is never banked. A refused request does not move the schedule. A request
//! of cost c is c consecutive slots and is admitted when its last slot starts
//! within the limit, so `shaper(burst=B)` admits exactly what
//! `gcra(burst=B+1)` admits, for every cost. The retry time of a refusal is
//! `next_free − limit − (c−1)·T` (for a cost of 1, the request's own
//! would-be release less `burst` intervals),
//! shown rounded up to whole seconds where a `Retry-After` is displayed.
//! Release instants are rounded up to the next whole nanosecond.
//!
//! Spec: `shaper:rate=RATE[,burst=N | ,max-wait=DURATION]`, burst 0 by
//! default.

use super::rule::{
    AxisPoint, Info, LevelKind, Listed, ParamError, Params, Shared, SharedDelay, Sizing,
    rate_point, refill_within, saturate,
};
use super::{Decision, Policy};
use crate::rate::Rate;
use crate::time::Nanos;

/// A FIFO shaper at `rate`: each request is delayed to its slot, and one
/// that would wait past the bound is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shaper {
    rate: Rate,
    /// Longest delay allowed, in scaled units.
    limit: u128,
    /// How the limit was given, for display.
    bound: ShaperBound,
}

/// The bound on waiting, as configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShaperBound {
    /// At most `burst` requests waiting: delay ≤ burst·T.
    Burst(u64),
    /// Delay ≤ this span.
    MaxWait(Nanos),
}

impl Shaper {
    /// Releases at `rate`, delays bounded by `bound`.
    pub fn new(rate: Rate, bound: ShaperBound) -> Shaper {
        let limit = match bound {
            ShaperBound::Burst(b) => rate.intervals(b),
            ShaperBound::MaxWait(w) => rate.scale(w),
        };
        Shaper { rate, limit, bound }
    }
    /// The release rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }
    /// The bound on waiting, as configured.
    pub fn bound(&self) -> ShaperBound {
        self.bound
    }
}

/// `next_free` in scaled units; 0 for a key never seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShaperState {
    /// The earliest instant the next request may be released, in ns ·
    /// count.
    pub next_free: u128,
}

super::rule::plain_state!(ShaperState);

impl Listed for Shaper {
    const NAME: &'static str = "shaper";
    const PARAMS: &'static [&'static str] = &["rate", "burst", "max-wait"];
    const SIZING: Sizing = Sizing {
        min_size: 0,
        refused: &[(
            "max-wait",
            "size finds the shaper's burst; give the longest acceptable wait as the target --max-wait instead of max-wait=",
        )],
        ..Sizing::rates("burst")
    };

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let rate = p.rate()?;
        let has_burst = p.has("burst");
        let burst = p.count("burst", Some(0))?;
        let bound = match p.duration("max-wait")? {
            Some(_) if has_burst => {
                return Err(ParamError::new("give burst= or max-wait=, not both"));
            }
            Some(w) => ShaperBound::MaxWait(w),
            None => ShaperBound::Burst(burst),
        };
        Ok(Shaper::new(rate, bound))
    }

    fn info(&self) -> Info {
        // An admitted request's last unit starts within the limit, so at
        // most ⌈limit / T⌉ units wait after it (`burst` for `burst=`); a
        // cost c fits while its c − 1 later units do.
        let within = self.limit / self.rate.intervals(1);
        Info {
            shapes: true,
            level_kind: LevelKind::Backlog,
            max_level: self.rate.units_ceil(self.limit),
            max_cost: u64::try_from(within).unwrap_or(u64::MAX).saturating_add(1),
            refusal_counts: false,
            holds_memory: false,
        }
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let rate = rate_point(Self::NAME, at)?;
        Ok(Shaper::new(rate, ShaperBound::Burst(size)))
    }

    /// Releases are `T` apart whatever the burst: one, then ⌊rate · h⌋.
    fn worst_within(&self, h: Nanos) -> u64 {
        saturate(1 + refill_within(self.rate, h))
    }

    fn shared(&self) -> Option<Shared> {
        Some(Shared {
            rate: self.rate,
            max_delay: match self.bound {
                ShaperBound::Burst(b) => SharedDelay::Intervals(b),
                ShaperBound::MaxWait(w) => SharedDelay::Span(w),
            },
            waits: true,
        })
    }

    fn pace_rate(&self) -> Option<Rate> {
        Some(self.rate)
    }
}

impl Policy for Shaper {
    type State = ShaperState;

    fn check(&self, s: &ShaperState, now: Nanos, cost: u64) -> Decision {
        let extra = self.rate.intervals(cost.saturating_sub(1));
        if extra > self.limit {
            return Decision::Refuse { retry_at: None };
        }
        let now_s = self.rate.scale(now);
        let release = s.next_free.max(now_s);
        if release - now_s + extra <= self.limit {
            Decision::Admit {
                release: self.rate.unscale_ceil(release).max(now),
            }
        } else {
            Decision::Refuse {
                retry_at: Some(self.rate.unscale_ceil(s.next_free - (self.limit - extra))),
            }
        }
    }

    fn admit(&self, s: &mut ShaperState, now: Nanos, cost: u64) {
        let release = s.next_free.max(self.rate.scale(now));
        s.next_free = release + self.rate.intervals(cost);
    }

    /// `check`, then `admit`, scaling `now` once for an admission.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut ShaperState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let extra = self.rate.intervals(cost.saturating_sub(1));
        let now_s = self.rate.scale(now);
        let release = s.next_free.max(now_s);
        if extra > self.limit || release - now_s + extra > self.limit {
            // A refusal changes nothing.
            return super::refusal::<Self, RETRY>(self, s, now, cost);
        }
        s.next_free = release + self.rate.intervals(cost);
        Decision::Admit {
            release: self.rate.unscale_ceil(release).max(now),
        }
    }

    fn is_neutral(&self, s: &ShaperState, now: Nanos) -> bool {
        s.next_free <= self.rate.scale(now)
    }

    /// The backlog: units admitted and not yet released at `now` (at most
    /// `burst`). Releases are `T` apart and the last is at `next_free − T`,
    /// so ⌈(next_free − now)/T⌉ − 1 of them are still ahead.
    fn level(&self, s: &ShaperState, now: Nanos) -> u64 {
        let pending = s.next_free.saturating_sub(self.rate.scale(now));
        self.rate.units_ceil(pending).saturating_sub(1)
    }
}
