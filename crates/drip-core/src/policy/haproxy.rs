//! HAProxy's request rate: a stick table storing `http_req_rate(W)`, an
//! entry tracked by `http-request track-sc0 …` and refused by
//! `http-request deny if { sc_http_req_rate(0) gt LIMIT }`, as HAProxy 2.6
//! computes it (`include/haproxy/freq_ctr.h`, `src/freq_ctr.c`).
//!
//! An entry holds a period start `tick` (milliseconds), the hits of the
//! current period `curr` and of the previous one `prev`. Tracking a request
//! counts it first, refused or not (`update_freq_ctr_period`):
//!
//! - within the period (`now − tick < W`): `curr += 1`;
//! - else the period turns: `prev = curr`, `curr = 1`, `tick += W`; and
//!   when that is still two periods behind (`now − tick ≥ W`), `prev = 0`
//!   and `tick = now`. A new entry starts at its first hit.
//!
//! HAProxy keeps the low bit of `tick` for a lock, so a stored `tick` is
//! rounded down to an even millisecond. The rate the rule reads
//! (`read_freq_ctr_period`, `freq_ctr_total`) is, with `remain = tick + W −
//! now`,
//!
//! ```text
//! rate = ⌊(prev · remain + curr · W) / W⌋
//! ```
//!
//! (a period over by less than W reads its count as `prev` with `curr = 0`;
//! with `curr = 0` and `prev ≤ 1` the rate is `prev`). The request is
//! refused when `rate > limit`. `expire=DURATION` is the table's `expire`:
//! an entry idle that long is gone, and the next hit starts a new one.
//!
//! Spec: `haproxy:limit=N,window=DURATION[,expire=DURATION]` (the window is
//! the `http_req_rate` period, whole milliseconds).

use super::rule::{
    AxisPoint, Info, Listed, ParamError, Params, Sizing, limit_per_window, positive, window_point,
};
use super::{Decision, Policy, Window};
use crate::time::Nanos;
use std::num::NonZeroU64;

const MS: u64 = Nanos::PER_MS;

/// `sc_http_req_rate(0) gt limit` over a stick table's `http_req_rate(window)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HaproxyRate {
    limit: u64,
    /// The period, in milliseconds.
    period: u64,
    /// The table's `expire`, in milliseconds (`u64::MAX`: none).
    expire: u64,
}

/// A stick-table entry's request-rate counter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HaproxyRateState {
    /// The entry exists.
    pub seen: bool,
    /// The current period's start, an even millisecond.
    pub tick: u64,
    /// Hits counted in the current period.
    pub curr: u64,
    /// Hits counted in the previous period.
    pub prev: u64,
    /// The millisecond of the last hit (the entry's expiry counts from it).
    pub last: u64,
}

super::rule::plain_state!(HaproxyRateState);

impl HaproxyRate {
    /// Refuses past `limit` requests per `window` (whole milliseconds),
    /// entries expiring after `expire` idle.
    pub fn new(limit: NonZeroU64, window: Window, expire: Option<Nanos>) -> Self {
        HaproxyRate {
            limit: limit.get(),
            period: (window.span().0 / MS).max(1),
            expire: expire.map_or(u64::MAX, |e| (e.0 / MS).max(1)),
        }
    }

    /// A stick table's `http_req_rate(period)` counter alone (no limit),
    /// its entries expiring after `expire` idle (milliseconds): what a
    /// config's rules read and compare themselves.
    pub fn counter(period_ms: u64, expire_ms: Option<u64>) -> Self {
        HaproxyRate {
            limit: u64::MAX,
            period: period_ms.max(1),
            expire: expire_ms.map_or(u64::MAX, |e| e.max(1)),
        }
    }

    /// Counts one request of entry `s` at `now_ms`, as `track-sc` does.
    pub fn hit(&self, s: &mut HaproxyRateState, now_ms: u64) {
        *s = self.updated(s, now_ms, 1);
    }

    /// What `sc_http_req_rate` reads from entry `s` at `now_ms`.
    pub fn read(&self, s: &HaproxyRateState, now_ms: u64) -> u64 {
        self.rate(s, now_ms)
    }

    /// The entry after `inc` hits at `now` (milliseconds).
    fn updated(&self, s: &HaproxyRateState, now: u64, inc: u64) -> HaproxyRateState {
        let fresh = HaproxyRateState {
            seen: true,
            tick: now & !1,
            curr: inc,
            prev: 0,
            last: now,
        };
        if !s.seen || now.saturating_sub(s.last) >= self.expire {
            return fresh;
        }
        let mut n = HaproxyRateState { last: now, ..*s };
        if now - s.tick < self.period {
            n.curr += inc;
            return n;
        }
        n.prev = s.curr;
        n.curr = inc;
        let tick = s.tick + self.period;
        if now - tick >= self.period {
            return HaproxyRateState { last: now, ..fresh };
        }
        n.tick = tick & !1;
        n
    }

    /// The rate `sc_http_req_rate` reads from `s` at `now` (milliseconds).
    fn rate(&self, s: &HaproxyRateState, now: u64) -> u64 {
        if !s.seen || now.saturating_sub(s.last) >= self.expire {
            return 0;
        }
        let p = i128::from(self.period);
        let (mut curr, mut past) = (i128::from(s.curr), i128::from(s.prev));
        let mut remain = i128::from(s.tick) + p - i128::from(now);
        if remain < 0 {
            remain += p;
            past = if remain >= 0 { curr } else { 0 };
            curr = 0;
        }
        if curr == 0 && past <= 1 {
            return past as u64;
        }
        ((past * remain + curr * p) / p) as u64
    }

    /// The first millisecond from `now` on at which `cost` more hits read
    /// a rate within the limit, if the entry is left as it is until then.
    fn first_fit(&self, s: &HaproxyRateState, now: u64, cost: u64) -> Option<u64> {
        if cost > self.limit {
            return None;
        }
        let fits = |t: u64| self.rate(&self.updated(s, t, cost), t) <= self.limit;
        // In this period the rate falls as the previous one's share does;
        // the next period holds this one's count as `prev`; after that, or
        // once the entry expires, it starts again.
        let p = self.period;
        let mut ends = [
            s.tick + p,
            s.tick + 2 * p,
            s.last.saturating_add(self.expire),
        ];
        ends.sort_unstable();
        let mut from = now;
        for end in ends.into_iter().filter(|&e| e > now) {
            if fits(end.saturating_sub(1).max(from)) {
                return Some(search(from, end - 1, fits));
            }
            from = from.max(end);
        }
        Some(from)
    }
}

/// The least `t` in `[lo, hi]` with `fits(t)`, `fits` true at `hi` and
/// false then true over the span.
fn search(mut lo: u64, mut hi: u64, fits: impl Fn(u64) -> bool) -> u64 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) { hi = mid } else { lo = mid + 1 }
    }
    lo
}

impl Listed for HaproxyRate {
    const NAME: &'static str = "haproxy";
    const PARAMS: &'static [&'static str] = &["limit", "window", "expire"];
    const SIZING: Sizing = Sizing::WINDOWS;

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let (limit, window) = p.limit_window()?;
        if window.0 % MS != 0 {
            return Err(ParamError::new(
                "window: HAProxy counts periods in whole milliseconds; give e.g. window=10s",
            ));
        }
        let expire = p.duration("expire")?;
        if expire.is_some_and(|e| e.0 < MS) {
            return Err(ParamError::new(
                "expire: at least 1ms, as a stick table's expire; e.g. expire=30s",
            ));
        }
        Ok(HaproxyRate::new(limit, Params::window(window)?, expire))
    }

    fn info(&self) -> Info {
        Info {
            // Refused hits count too: no bound on the rate.
            refusal_counts: true,
            max_level: u64::MAX,
            ..Info::bounded(self.limit)
        }
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let window = window_point(Self::NAME, at)?;
        let expire = (self.expire != u64::MAX).then(|| Nanos(self.expire * MS));
        Ok(HaproxyRate::new(positive("limit", size)?, window, expire))
    }

    /// `limit` in each period `h` touches, and one more before them.
    fn worst_within(&self, h: Nanos) -> u64 {
        limit_per_window(self.limit, Nanos(self.period * MS), h, 1)
    }
}

impl Policy for HaproxyRate {
    type State = HaproxyRateState;

    fn check(&self, s: &HaproxyRateState, now: Nanos, cost: u64) -> Decision {
        let ms = now.0 / MS;
        if self.rate(&self.updated(s, ms, cost), ms) <= self.limit {
            return Decision::Admit { release: now };
        }
        Decision::Refuse {
            retry_at: self.first_fit(s, ms, cost).map(|t| Nanos(t * MS).max(now)),
        }
    }

    /// Counts the hit, then decides: a refusal's retry time is from the
    /// entry with the refused hit in it, so a client that waits until then
    /// is admitted.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut HaproxyRateState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let ms = now.0 / MS;
        *s = self.updated(s, ms, cost);
        if self.rate(s, ms) <= self.limit {
            return Decision::Admit { release: now };
        }
        let retry = RETRY.then(|| self.first_fit(s, ms, cost)).flatten();
        Decision::Refuse {
            retry_at: retry.map(|t| Nanos(t * MS).max(now)),
        }
    }

    fn admit(&self, s: &mut HaproxyRateState, now: Nanos, cost: u64) {
        *s = self.updated(s, now.0 / MS, cost);
    }

    fn refuse(&self, s: &mut HaproxyRateState, now: Nanos, cost: u64) {
        *s = self.updated(s, now.0 / MS, cost);
    }

    fn is_neutral(&self, s: &HaproxyRateState, now: Nanos) -> bool {
        let ms = now.0 / MS;
        !s.seen || ms.saturating_sub(s.last) >= self.expire || ms >= s.tick + 2 * self.period
    }

    fn level(&self, s: &HaproxyRateState, now: Nanos) -> u64 {
        self.rate(s, now.0 / MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(limit: u64, window_ms: u64, expire_ms: Option<u64>) -> HaproxyRate {
        let w = Window::new(Nanos(window_ms * MS)).unwrap();
        let e = expire_ms.map(|e| Nanos(e * MS));
        HaproxyRate::new(NonZeroU64::new(limit).unwrap(), w, e)
    }

    /// (ms, admitted) of each hit, deciding them in order.
    fn run(p: &HaproxyRate, hits: &[u64]) -> Vec<bool> {
        let mut s = HaproxyRateState::default();
        hits.iter()
            .map(|&t| matches!(p.decide(&mut s, Nanos(t * MS), 1), Decision::Admit { .. }))
            .collect()
    }

    #[test]
    fn periods_start_at_the_first_hit_and_turn_every_window() {
        let p = policy(100, 10_000, None);
        let mut s = HaproxyRateState::default();
        p.admit(&mut s, Nanos(1_000_001 * MS), 1);
        // The tick is the even millisecond at or before the first hit.
        assert_eq!((s.tick, s.curr, s.prev), (1_000_000, 1, 0));
        for _ in 0..3 {
            p.admit(&mut s, Nanos(1_005_000 * MS), 1);
        }
        assert_eq!((s.tick, s.curr, s.prev), (1_000_000, 4, 0));
        // The next period: the count moves to prev, the tick by W.
        p.admit(&mut s, Nanos(1_012_500 * MS), 1);
        assert_eq!((s.tick, s.curr, s.prev), (1_010_000, 1, 4));
        // 2.5 s in, 7.5 s remain: 1 + ⌊4 · 7500 / 10000⌋ = 4.
        assert_eq!(p.level(&s, Nanos(1_012_500 * MS)), 4);
        // Two periods idle: the entry starts again at the hit.
        p.admit(&mut s, Nanos(1_031_001 * MS), 1);
        assert_eq!((s.tick, s.curr, s.prev), (1_031_000, 1, 0));
    }

    #[test]
    fn refused_hits_count_and_the_previous_period_fades() {
        // gt 2 over 1 s: three hits in a period pass, the fourth is refused
        // and still counted.
        let p = policy(2, 1_000, None);
        let hits = [0, 10, 20, 30, 1_000, 1_400, 1_800, 1_999];
        // At 1000: 1 + ⌊4 · 1000/1000⌋ = 5 > 2; at 1400: 2 + ⌊4·600/1000⌋ =
        // 4; at 1800: 3 + 0 = 3; at 1999: 4 + 0.
        assert_eq!(
            run(&p, &hits),
            [true, true, false, false, false, false, false, false]
        );
        let hits = [0, 10, 1_600, 1_700];
        // 1 + ⌊2 · 400/1000⌋ = 1, then 2 + ⌊2 · 300/1000⌋ = 2: both pass.
        assert_eq!(run(&p, &hits), [true, true, true, true]);
    }

    #[test]
    fn an_odd_period_rounds_the_tick_down_to_even() {
        let p = policy(10, 999, None);
        let mut s = HaproxyRateState::default();
        p.admit(&mut s, Nanos(2_000 * MS), 1);
        p.admit(&mut s, Nanos(3_000 * MS), 1);
        // 2000 + 999 = 2999, stored as 2998.
        assert_eq!((s.tick, s.curr, s.prev), (2_998, 1, 1));
    }

    #[test]
    fn an_expired_entry_starts_again() {
        let p = policy(1, 10_000, Some(3_000));
        assert_eq!(
            run(&p, &[0, 2_999, 5_998, 9_000]),
            [true, false, false, true]
        );
    }

    #[test]
    fn the_retry_time_is_the_first_that_fits() {
        let p = policy(2, 1_000, None);
        let mut s = HaproxyRateState::default();
        for t in [0, 10, 20] {
            p.decide(&mut s, Nanos(t * MS), 1);
        }
        let Decision::Refuse { retry_at: Some(at) } = p.check(&s, Nanos(30 * MS), 1) else {
            panic!("refused with a retry time");
        };
        // Brute force over the milliseconds ahead.
        let first_from = |s: &HaproxyRateState| {
            (30..5_000)
                .find(|&t| matches!(p.check(s, Nanos(t * MS), 1), Decision::Admit { .. }))
                .unwrap()
        };
        assert_eq!(at, Nanos(first_from(&s) * MS));
        // Deciding counts the refused hit: the retry is from the entry
        // with it, later.
        let before = s;
        let Decision::Refuse { retry_at: Some(at) } = p.decide(&mut s, Nanos(30 * MS), 1) else {
            panic!("refused with a retry time");
        };
        assert_eq!(at, Nanos(first_from(&s) * MS));
        assert!(first_from(&s) > first_from(&before));
    }

    #[test]
    fn specs_read_as_a_stick_table_writes_them() {
        let p = crate::policy::parse_spec("haproxy:limit=20,window=10s,expire=30s").unwrap();
        assert_eq!(p.members.len(), 1);
        for bad in [
            "haproxy:limit=2,window=1500us",
            "haproxy:limit=2,window=1s,expire=10us",
        ] {
            let e = crate::policy::parse_spec(bad).unwrap_err().to_string();
            assert!(e.contains("e.g."), "{bad}: {e}");
        }
    }
}
