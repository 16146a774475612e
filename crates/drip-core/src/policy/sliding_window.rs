//! Sliding window counter: the approximation used by Cloudflare and Python
//! `limits`. Windows are epoch-aligned, `[k·W, (k+1)·W)`; a key keeps the
//! admitted units of the current window (`cur`) and of the previous one
//! (`prev`). With `e = now mod W`, a request of `cost` c is admitted iff
//!
//! ```text
//! c ≤ limit  and  floor(prev · (W − e) / W) + cur + c ≤ limit
//! ```
//!
//! (the floor rule: the weighted previous count is rounded down). The retry
//! time of a refusal is the first instant the inequality holds with the
//! counts as they stand, found in closed form, at most two windows ahead.
//!
//! Spec: `sliding-window:limit=N,window=DURATION`.

use super::rule::{
    AxisPoint, Info, Listed, ParamError, Params, Sizing, limit_per_window, positive, window_point,
};
use super::{Decision, Policy, Window};
use crate::time::Nanos;
use std::num::NonZeroU64;

/// At most `limit` units in a sliding window of length `window`, the
/// previous window's count weighted by how much of it the sliding one
/// still covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingWindow {
    limit: u64,
    window: Nanos,
}

impl SlidingWindow {
    /// At most `limit` units per sliding `window`.
    pub fn new(limit: NonZeroU64, window: Window) -> Self {
        SlidingWindow {
            limit: limit.get(),
            window: window.span(),
        }
    }

    /// (window index, cur, prev) as they stand at `now`.
    fn roll(&self, s: &SlidingWindowState, now: Nanos) -> (u64, u64, u64) {
        let idx = now.0 / self.window.0;
        if idx == s.idx {
            (idx, s.cur, s.prev)
        } else if idx == s.idx + 1 {
            (idx, 0, s.cur)
        } else {
            (idx, 0, 0)
        }
    }

    /// floor(prev · (W − e) / W).
    fn weighted(&self, prev: u64, e: u64) -> u64 {
        let w = self.window.0;
        crate::rate::mul_div(prev, w - e, w) as u64
    }

    /// Smallest offset e in [0, W) with floor(prev·(W−e)/W) ≤ room, if any.
    fn first_offset(&self, prev: u64, room: u64) -> Option<u64> {
        if prev == 0 {
            return Some(0);
        }
        let w = u128::from(self.window.0);
        // floor(p(W−e)/W) ≤ r  ⟺  p(W−e) ≤ (r+1)W − 1  ⟺  e ≥ W − ⌊((r+1)W − 1)/p⌋
        let span = ((u128::from(room) + 1) * w - 1) / u128::from(prev);
        let e = w.saturating_sub(span);
        (e < w).then_some(e as u64)
    }
}

/// Units admitted in window `idx` (`cur`) and in window `idx − 1` (`prev`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlidingWindowState {
    /// The window of the last admission: ⌊t / W⌋.
    pub idx: u64,
    /// Units admitted in window `idx`.
    pub cur: u64,
    /// Units admitted in window `idx − 1`.
    pub prev: u64,
}

super::rule::plain_state!(SlidingWindowState);

impl Listed for SlidingWindow {
    const NAME: &'static str = "sliding-window";
    const PARAMS: &'static [&'static str] = &["limit", "window"];
    const SIZING: Sizing = Sizing::WINDOWS;

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let (limit, window) = p.limit_window()?;
        Ok(SlidingWindow::new(limit, Params::window(window)?))
    }

    fn info(&self) -> Info {
        Info::bounded(self.limit)
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let window = window_point(Self::NAME, at)?;
        Ok(SlidingWindow::new(positive("limit", size)?, window))
    }

    /// `limit` in each window `h` touches, and one more before them.
    fn worst_within(&self, h: Nanos) -> u64 {
        limit_per_window(self.limit, self.window, h, 1)
    }
}

impl Policy for SlidingWindow {
    type State = SlidingWindowState;

    fn check(&self, s: &SlidingWindowState, now: Nanos, cost: u64) -> Decision {
        let (idx, cur, prev) = self.roll(s, now);
        let e = now.0 % self.window.0;
        if self.weighted(prev, e) + cur + cost <= self.limit {
            return Decision::Admit { release: now };
        }
        let w = self.window.0;
        let retry = match (self.limit - cost).checked_sub(cur) {
            Some(room) => self
                .first_offset(prev, room)
                .map(|e| idx.saturating_mul(w).saturating_add(e))
                .filter(|&t| t > now.0),
            None => None,
        }
        .or_else(|| {
            // Next window: this one's count becomes `prev`, nothing current.
            self.first_offset(cur, self.limit - cost)
                .map(|e| (idx + 1).saturating_mul(w).saturating_add(e))
        })
        .unwrap_or_else(|| (idx + 2).saturating_mul(w));
        Decision::Refuse {
            retry_at: Some(Nanos(retry)),
        }
    }

    fn admit(&self, s: &mut SlidingWindowState, now: Nanos, cost: u64) {
        let (idx, cur, prev) = self.roll(s, now);
        *s = SlidingWindowState {
            idx,
            cur: cur + cost,
            prev,
        };
    }

    /// `check`, then `admit`, rolling the windows once for an admission.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut SlidingWindowState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let (idx, cur, prev) = self.roll(s, now);
        if self.weighted(prev, now.0 % self.window.0) + cur + cost <= self.limit {
            *s = SlidingWindowState {
                idx,
                cur: cur + cost,
                prev,
            };
            return Decision::Admit { release: now };
        }
        // A refusal changes nothing.
        super::refusal::<Self, RETRY>(self, s, now, cost)
    }

    fn is_neutral(&self, s: &SlidingWindowState, now: Nanos) -> bool {
        let (_, cur, prev) = self.roll(s, now);
        cur == 0 && prev == 0
    }

    fn level(&self, s: &SlidingWindowState, now: Nanos) -> u64 {
        let (_, cur, prev) = self.roll(s, now);
        self.weighted(prev, now.0 % self.window.0) + cur
    }
}
