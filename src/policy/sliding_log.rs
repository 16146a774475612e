//! Sliding log: exact "at most `limit` units in any window of length `W`".
//! Each key keeps the admitted requests (instant, cost) of the last `W`. A
//! request of `cost` c at `now` is admitted iff the admitted units with
//! `t ≥ now − W` plus c is at most `limit`: an entry exactly `W` old still
//! counts, and stops counting one nanosecond later. The retry time of a
//! refusal is `t + W + 1 ns` for the oldest entry whose expiry frees enough
//! room. Memory per key is its entries within the window.
//!
//! Spec: `sliding-log:limit=N,window=DURATION`.

use super::spec::Params;
use super::table::{Info, Listed};
use super::{Decision, Policy, Window};
use crate::time::Nanos;
use std::collections::VecDeque;
use std::num::NonZeroU64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingLog {
    limit: u64,
    window: Nanos,
}

impl SlidingLog {
    pub fn new(limit: NonZeroU64, window: Window) -> Self {
        SlidingLog {
            limit: limit.get(),
            window: window.span(),
        }
    }

    fn live(&self, t: Nanos, now: Nanos) -> bool {
        t.saturating_add(self.window) >= now
    }

    /// Units still inside the window at `now`.
    fn in_window(&self, s: &SlidingLogState, now: Nanos) -> u64 {
        let expired: u64 = s
            .entries
            .iter()
            .take_while(|(t, _)| !self.live(*t, now))
            .map(|(_, c)| *c)
            .sum();
        s.sum - expired
    }

    fn prune(&self, s: &mut SlidingLogState, now: Nanos) {
        while let Some(&(t, c)) = s.entries.front() {
            if self.live(t, now) {
                break;
            }
            s.entries.pop_front();
            s.sum -= c;
        }
        if s.entries.is_empty() && s.entries.capacity() > 0 {
            // An idle key gives its buffer back.
            s.entries = VecDeque::new();
        }
    }
}

/// Admitted (instant, cost) entries, oldest first, their cost sum, and the
/// newest entry's instant (kept beside them so that telling an idle key
/// needs no look into the entries).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlidingLogState {
    pub entries: VecDeque<(Nanos, u64)>,
    pub sum: u64,
    pub newest: Nanos,
}

impl Listed for SlidingLog {
    const NAME: &'static str = "sliding-log";
    const PARAMS: &'static [&'static str] = &["limit", "window"];

    fn parse(p: &mut Params<'_>) -> Result<Self, String> {
        let (limit, window) = p.limit_window()?;
        Ok(SlidingLog::new(limit, Params::window(window)?))
    }

    fn info(&self) -> Info {
        Info {
            holds_memory: true,
            ..Info::bounded(self.limit)
        }
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
        s.sum += cost;
        s.newest = now;
        match s.entries.back_mut() {
            Some((t, c)) if *t == now => *c += cost,
            _ => s.entries.push_back((now, cost)),
        }
    }

    fn refuse(&self, s: &mut SlidingLogState, now: Nanos, _cost: u64) {
        // Dropping expired entries changes no decision; it bounds memory.
        self.prune(s, now);
    }

    fn is_neutral(&self, s: &SlidingLogState, now: Nanos) -> bool {
        s.entries.is_empty() || !self.live(s.newest, now)
    }

    fn level(&self, s: &SlidingLogState, now: Nanos) -> u64 {
        self.in_window(s, now)
    }
}
