//! Sliding log: exact "at most `limit` units in any window of length `W`".
//! Each key keeps the admitted requests (instant, cost) of the last `W`. A
//! request of `cost` c at `now` is admitted iff the admitted units with
//! `t ≥ now − W` plus c is at most `limit`: an entry exactly `W` old still
//! counts, and stops counting one nanosecond later. The retry time of a
//! refusal is `t + W + 1 ns` for the oldest entry whose expiry frees enough
//! room. Memory per key is its entries within the window: the first two
//! inside the key's state, more in a queue of its own, which a key keeps
//! until a sweep of its store resets it once idle, or gives the queue's
//! room back (all of it when two entries or fewer are left).
//!
//! Spec: `sliding-log:limit=N,window=DURATION`.

use super::rule::{
    AxisPoint, Info, Listed, ParamError, Params, Prefetch, Sizing, limit_per_window, positive,
    prefetch_line, window_point,
};
use super::{Decision, Policy, Window};
use crate::time::Nanos;
use std::collections::VecDeque;
use std::num::NonZeroU64;

/// At most `limit` units in any window of length `window`, exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingLog {
    limit: u64,
    window: Nanos,
}

impl SlidingLog {
    /// At most `limit` units in any `window`.
    pub fn new(limit: NonZeroU64, window: Window) -> Self {
        SlidingLog {
            limit: limit.get(),
            window: window.span(),
        }
    }

    #[inline]
    fn live(&self, t: Nanos, now: Nanos) -> bool {
        t.saturating_add(self.window) >= now
    }

    /// Units still inside the window at `now`.
    #[inline]
    fn in_window(&self, s: &SlidingLogState, now: Nanos) -> u64 {
        let mut expired = 0;
        for part in s.entries.parts() {
            for &(t, c) in part {
                if self.live(t, now) {
                    return s.sum - expired;
                }
                expired += c;
            }
        }
        s.sum - expired
    }

    /// Records an admitted request (the window pruned already).
    #[inline(always)]
    fn enter(s: &mut SlidingLogState, now: Nanos, cost: u64) {
        s.sum += cost;
        match s.entries.back_mut() {
            Some((t, c)) if *t == now => *c += cost,
            _ => s.entries.push_back((now, cost)),
        }
    }

    #[inline(always)]
    fn prune(&self, s: &mut SlidingLogState, now: Nanos) {
        while let Some(&(t, c)) = s.entries.front() {
            if self.live(t, now) {
                break;
            }
            s.entries.pop_front();
            s.sum -= c;
        }
    }
}

/// Admitted (instant, cost) entries, oldest first, and their cost sum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlidingLogState {
    /// The admitted requests, oldest first; those past the window stay
    /// until the next admission or refusal drops them.
    pub entries: Entries,
    /// The sum of the entries' costs.
    pub sum: u64,
}

/// Entries kept in the state itself, before a queue is allocated.
const INLINE: usize = 2;

/// Entries oldest first: `first[..len]`, then `more`. Most keys of a log
/// hold one or two entries within a window, and keep them without an
/// allocation; a busier key's newer entries go to `more`, a queue behind
/// one pointer so that the state stays small. Equal when they hold the
/// same entries, wherever kept.
#[derive(Clone, Debug, Default)]
pub struct Entries {
    first: [(Nanos, u64); INLINE],
    len: usize,
    #[expect(
        clippy::box_collection,
        reason = "one pointer in every key's state instead of a queue's four words"
    )]
    more: Option<Box<VecDeque<(Nanos, u64)>>>,
}

impl PartialEq for Entries {
    fn eq(&self, other: &Entries) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Entries {}

impl Entries {
    /// The queue of the entries past the first two, if there is one.
    pub fn queue(&self) -> Option<&VecDeque<(Nanos, u64)>> {
        self.more.as_deref()
    }

    /// True when no entry is kept.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0 && self.more.as_ref().is_none_or(|m| m.is_empty())
    }

    /// The entries in order as three runs: those kept in the state, then
    /// the queue's two halves.
    #[inline]
    fn parts(&self) -> [&[(Nanos, u64)]; 3] {
        let (a, b) = self
            .more
            .as_deref()
            .map_or((&[][..], &[][..]), |m| m.as_slices());
        [&self.first[..self.len], a, b]
    }

    fn iter(&self) -> impl Iterator<Item = &(Nanos, u64)> {
        self.first[..self.len]
            .iter()
            .chain(self.more.iter().flat_map(|m| m.iter()))
    }

    #[inline]
    fn front(&self) -> Option<&(Nanos, u64)> {
        self.first[..self.len]
            .first()
            .or_else(|| self.more.as_ref()?.front())
    }

    #[inline]
    fn back(&self) -> Option<&(Nanos, u64)> {
        match self.more.as_ref().and_then(|m| m.back()) {
            Some(e) => Some(e),
            None => self.first[..self.len].last(),
        }
    }

    #[inline]
    fn back_mut(&mut self) -> Option<&mut (Nanos, u64)> {
        match self.more.as_mut().and_then(|m| m.back_mut()) {
            Some(e) => Some(e),
            None => self.first[..self.len].last_mut(),
        }
    }

    #[inline(always)]
    fn push_back(&mut self, e: (Nanos, u64)) {
        match &mut self.more {
            None if self.len < INLINE => {
                self.first[self.len] = e;
                self.len += 1;
            }
            _ => self.push_more(e),
        }
    }

    /// `push_back` past the entries kept in the state (kept out of line:
    /// most keys never get here).
    #[inline(never)]
    fn push_more(&mut self, e: (Nanos, u64)) {
        match &mut self.more {
            Some(m) => m.push_back(e),
            None => self.more = Some(Box::new(VecDeque::from([e]))),
        }
    }

    /// Gives back the queue's room beyond its entries: all of it when the
    /// entries fit in the state again (moved there, in order).
    pub fn compact(&mut self) {
        let Some(more) = self.more.as_mut() else {
            return;
        };
        if self.len + more.len() <= INLINE {
            for e in more.drain(..) {
                self.first[self.len] = e;
                self.len += 1;
            }
            self.more = None;
        } else if more.capacity() > 2 * more.len() {
            more.shrink_to_fit();
        }
    }

    #[inline]
    fn pop_front(&mut self) {
        if self.len > 0 {
            self.first.copy_within(1.., 0);
            self.len -= 1;
        } else if let Some(m) = &mut self.more {
            m.pop_front();
        }
    }
}

impl Prefetch for SlidingLogState {
    const DEEP: bool = true;

    #[inline(always)]
    fn is_clear(&self) -> bool {
        self.entries.is_empty() && self.entries.queue().is_none()
    }

    #[inline(always)]
    fn owns(&self) -> bool {
        self.entries.queue().is_some()
    }

    fn compact(&mut self) {
        self.entries.compact();
    }

    #[inline(always)]
    fn prefetch_deep(&self) {
        if let Some(queue) = self.entries.queue() {
            prefetch_line(queue);
        }
    }
}

impl Listed for SlidingLog {
    const NAME: &'static str = "sliding-log";
    const PARAMS: &'static [&'static str] = &["limit", "window"];
    const SIZING: Sizing = Sizing::WINDOWS;

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let (limit, window) = p.limit_window()?;
        Ok(SlidingLog::new(limit, Params::window(window)?))
    }

    fn info(&self) -> Info {
        Info {
            holds_memory: true,
            ..Info::bounded(self.limit)
        }
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let window = window_point(Self::NAME, at)?;
        Ok(SlidingLog::new(positive("limit", size)?, window))
    }

    /// `limit` in each window of `h`, exactly.
    fn worst_within(&self, h: Nanos) -> u64 {
        limit_per_window(self.limit, self.window, h, 0)
    }
}

impl Policy for SlidingLog {
    type State = SlidingLogState;

    fn check(&self, s: &SlidingLogState, now: Nanos, cost: u64) -> Decision {
        let mut used = self.in_window(s, now);
        if used + cost <= self.limit {
            return Decision::Admit { release: now };
        }
        for &(t, c) in s.entries.iter().filter(|(t, _)| self.live(*t, now)) {
            used -= c;
            if used + cost <= self.limit {
                return Decision::Refuse {
                    retry_at: Some(t.saturating_add(self.window).saturating_add(Nanos(1))),
                };
            }
        }
        unreachable!("cost ≤ limit, so emptying the window admits")
    }

    fn admit(&self, s: &mut SlidingLogState, now: Nanos, cost: u64) {
        self.prune(s, now);
        Self::enter(s, now, cost);
    }

    /// `check`, then `admit` or `refuse`, with the expired entries dropped
    /// first (they count for nothing either way): the units in the window
    /// are then their sum, and each entry is looked at once.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut SlidingLogState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        self.prune(s, now);
        if s.sum + cost <= self.limit {
            Self::enter(s, now, cost);
            return Decision::Admit { release: now };
        }
        super::refusal::<Self, RETRY>(self, s, now, cost)
    }

    fn refuse(&self, s: &mut SlidingLogState, now: Nanos, _cost: u64) {
        // Dropping expired entries changes no decision; it bounds memory.
        self.prune(s, now);
    }

    fn is_neutral(&self, s: &SlidingLogState, now: Nanos) -> bool {
        // The newest entry is the last.
        s.entries.back().is_none_or(|&(t, _)| !self.live(t, now))
    }

    fn level(&self, s: &SlidingLogState, now: Nanos) -> u64 {
        self.in_window(s, now)
    }
}
