//! Fixed window counter: at most `limit` units per window of length `W`.
//!
//! `align=epoch` (default): windows are `[k·W, (k+1)·W)` on the timestamps'
//! own axis (Unix epoch in audit). `align=first-hit`: a key's window opens at
//! its first hit and lasts `W`; the next hit after it closes opens the next.
//! A request of `cost` c is admitted iff `count + c ≤ limit`.
//! `count=admitted` (default) counts admitted units only; `count=all` counts
//! refused units too, as the Redis `INCR` + `EXPIRE` limiter (and Python
//! `limits`) does: with `align=first-hit,count=all` this is that limiter.
//! A refusal's retry time is the start of the next window; a cost above
//! `limit` can never fit and gets none. With `count=all` every hit adds its
//! cost to the counter, a cost above `limit` too (Redis `INCRBY` and
//! Python `limits` count it); the window's end frees the key.
//!
//! Spec: `fixed-window:limit=N,window=DURATION[,align=epoch|first-hit]
//! [,count=admitted|all]`.

use super::rule::{
    AxisPoint, Info, Listed, ParamError, Params, Sizing, limit_per_window, positive, window_point,
};
use super::{Decision, Policy, Window};
use crate::time::Nanos;
use std::num::NonZeroU64;

/// Where a key's window starts (`align=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// `[k·W, (k+1)·W)` on the timestamps' axis (`epoch`, the default).
    Epoch,
    /// At the key's first hit after its last window closed (`first-hit`).
    FirstHit,
}

/// Which units the window's counter counts (`count=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountMode {
    /// Admitted units only (`admitted`, the default).
    Admitted,
    /// Refused units too, as Redis `INCR` + `EXPIRE` does (`all`).
    All,
}

/// At most `limit` units per window of length `window`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedWindow {
    limit: u64,
    window: Nanos,
    align: Align,
    count: CountMode,
}

impl FixedWindow {
    /// At most `limit` units per `window`, its windows placed by `align`
    /// and counted by `count`.
    pub fn new(limit: NonZeroU64, window: Window, align: Align, count: CountMode) -> Self {
        FixedWindow {
            limit: limit.get(),
            window: window.span(),
            align,
            count,
        }
    }

    /// (window start, count so far) of the window that holds `now`.
    fn current(&self, s: &FixedWindowState, now: Nanos) -> (Nanos, u64) {
        if s.count > 0 && now < s.start.saturating_add(self.window) && now >= s.start {
            return (s.start, s.count);
        }
        let start = match self.align {
            Align::Epoch => Nanos(now.0 - now.0 % self.window.0),
            Align::FirstHit => now,
        };
        (start, 0)
    }
}

/// The open window's start and count; count 0 means no open window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedWindowState {
    /// The instant the open window started.
    pub start: Nanos,
    /// Units counted in it (see [`CountMode`]).
    pub count: u64,
}

super::rule::plain_state!(FixedWindowState);

impl Listed for FixedWindow {
    const NAME: &'static str = "fixed-window";
    const PARAMS: &'static [&'static str] = &["limit", "window", "align", "count"];
    const SIZING: Sizing = Sizing::WINDOWS;

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let (limit, window) = p.limit_window()?;
        let align = match p.value("align")? {
            None | Some("epoch") => Align::Epoch,
            Some("first-hit") => Align::FirstHit,
            Some(v) => {
                return Err(ParamError::new(format!(
                    "align='{v}': valid: epoch, first-hit"
                )));
            }
        };
        let count = match p.value("count")? {
            None | Some("admitted") => CountMode::Admitted,
            Some("all") => CountMode::All,
            Some(v) => {
                return Err(ParamError::new(format!(
                    "count='{v}': valid: admitted, all"
                )));
            }
        };
        Ok(FixedWindow::new(
            limit,
            Params::window(window)?,
            align,
            count,
        ))
    }

    fn info(&self) -> Info {
        Info {
            refusal_counts: self.count == CountMode::All,
            // `count=all` counts refused hits too: no bound.
            max_level: match self.count {
                CountMode::Admitted => self.limit,
                CountMode::All => u64::MAX,
            },
            ..Info::bounded(self.limit)
        }
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let window = window_point(Self::NAME, at)?;
        Ok(FixedWindow::new(
            positive("limit", size)?,
            window,
            self.align,
            self.count,
        ))
    }

    /// `limit` in each window `h` touches, and one more before them.
    fn worst_within(&self, h: Nanos) -> u64 {
        limit_per_window(self.limit, self.window, h, 1)
    }
}

impl Policy for FixedWindow {
    type State = FixedWindowState;

    fn check(&self, s: &FixedWindowState, now: Nanos, cost: u64) -> Decision {
        let (start, count) = self.current(s, now);
        if count + cost <= self.limit {
            Decision::Admit { release: now }
        } else {
            Decision::Refuse {
                retry_at: Some(start.saturating_add(self.window)),
            }
        }
    }

    fn admit(&self, s: &mut FixedWindowState, now: Nanos, cost: u64) {
        let (start, count) = self.current(s, now);
        *s = FixedWindowState {
            start,
            count: count + cost,
        };
    }

    fn refuse(&self, s: &mut FixedWindowState, now: Nanos, cost: u64) {
        // An oversized hit counts too, as `INCRBY` does; it cannot wedge the
        // key because the window's end resets the counter.
        if self.count == CountMode::All {
            let (start, count) = self.current(s, now);
            *s = FixedWindowState {
                start,
                count: count.saturating_add(cost),
            };
        }
    }

    /// `check`, then `admit` or `refuse`, finding the current window once.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut FixedWindowState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let (start, count) = self.current(s, now);
        if count + cost <= self.limit {
            *s = FixedWindowState {
                start,
                count: count + cost,
            };
            return Decision::Admit { release: now };
        }
        if self.count == CountMode::All {
            *s = FixedWindowState {
                start,
                count: count.saturating_add(cost),
            };
        }
        Decision::Refuse {
            retry_at: RETRY.then(|| start.saturating_add(self.window)),
        }
    }

    fn is_neutral(&self, s: &FixedWindowState, now: Nanos) -> bool {
        self.current(s, now).1 == 0
    }

    fn level(&self, s: &FixedWindowState, now: Nanos) -> u64 {
        self.current(s, now).1
    }
}
