//! Traefik's `RateLimit` middleware, in memory, as Traefik v3 runs it
//! (`pkg/middlewares/ratelimiter/`, over `golang.org/x/time/rate`).
//!
//! Per source, a token bucket of `burst` tokens (at least 1, starting
//! full) refilled at `r = average / period` a second, in `float64`. Each
//! request reserves a token: `tokens = min(burst, tokens + elapsed·r) − 1`,
//! and waits `(−tokens / r)` seconds (truncated to nanoseconds) when that
//! is negative. A wait up to `maxDelay` is served after it; a longer one is
//! refused with 429 and its token given back (`Reservation.Cancel`).
//! `maxDelay` is `1s / (2·⌊r⌋)`, 500 ms when `r < 1`.
//!
//! A source's bucket is dropped when it was last used `ttl` whole seconds
//! ago, counted on Unix seconds (`ttlmap`: expiry `⌊t + ttl⌋ ≤ ⌊now⌋`, both
//! in seconds), with `ttl = 2` when `r ≥ 1`, else `1 + ⌊1/r⌋`: its next
//! request finds a full bucket. Every request, refused or not, renews it.
//!
//! Spec: `traefik:rate=RATE[,burst=N]` with `rate` Traefik's
//! `average`/`period` (`average: 100, period: 1m` is `rate=100/min`).

use super::rule::{AxisPoint, Info, LevelKind, Listed, ParamError, Params, Sizing, rate_point};
use super::{Decision, Policy};
use crate::rate::Rate;
use crate::time::Nanos;

const SECOND: i64 = 1_000_000_000;

/// Traefik's `RateLimit`: `rate` (average per period) and `burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraefikRate {
    rate: Rate,
    burst: u64,
    /// Tokens a second, as Traefik's `float64` (bits, so the type is `Eq`).
    per_second: u64,
    /// The longest wait served, ns.
    max_delay: i64,
    /// Seconds an idle bucket is kept.
    ttl: i64,
}

/// One source's bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TraefikRateState {
    /// The bucket exists.
    pub seen: bool,
    /// Tokens at `last` (negative while reservations wait).
    pub tokens: f64,
    /// The last reservation, ns.
    pub last: i64,
    /// The Unix second the bucket is dropped at.
    pub expiry: i64,
}

super::rule::plain_state!(TraefikRateState);

/// Go's `Duration.Seconds()`.
fn seconds(d: i64) -> f64 {
    (d / SECOND) as f64 + (d % SECOND) as f64 / 1e9
}

impl TraefikRate {
    /// `rate` (average per period) with `burst` (at least 1, as Traefik
    /// makes it).
    pub fn new(rate: Rate, burst: u64) -> TraefikRate {
        let r = (rate.count() as f64 * SECOND as f64) / rate.per().0 as f64;
        let max_delay = if r < 1.0 {
            500_000_000
        } else {
            SECOND / (r as i64).saturating_mul(2).max(1)
        };
        let ttl = 1 + if r >= 1.0 { 1 } else { (1.0 / r) as i64 };
        TraefikRate {
            rate,
            burst: burst.max(1),
            per_second: r.to_bits(),
            max_delay,
            ttl,
        }
    }

    fn r(&self) -> f64 {
        f64::from_bits(self.per_second)
    }

    /// The bucket as it stands for a request at `t` (ns): a dropped one is
    /// full again.
    fn live(&self, s: &TraefikRateState, t: i64) -> TraefikRateState {
        if !s.seen || s.expiry <= t.div_euclid(SECOND) {
            return TraefikRateState {
                seen: true,
                tokens: self.burst as f64,
                last: t,
                expiry: (t + self.ttl * SECOND).div_euclid(SECOND),
            };
        }
        *s
    }

    /// `Limiter.advance`: the tokens at `t`.
    fn advance(&self, s: &TraefikRateState, t: i64) -> f64 {
        let elapsed = t - s.last.min(t);
        (s.tokens + seconds(elapsed) * self.r()).min(self.burst as f64)
    }

    /// A reservation at `t`: the tokens after it and its wait (ns).
    fn reserve(&self, s: &TraefikRateState, t: i64, cost: u64) -> (f64, i64) {
        let tokens = self.advance(&self.live(s, t), t) - cost as f64;
        let wait = if tokens < 0.0 {
            ((-tokens / self.r()) * SECOND as f64) as i64
        } else {
            0
        };
        (tokens, wait)
    }

    /// The bucket after a request at `t`, served (`true`) or refused.
    fn after(&self, s: &TraefikRateState, t: i64, cost: u64) -> (TraefikRateState, bool) {
        let live = self.live(s, t);
        let (tokens, wait) = self.reserve(&live, t, cost);
        let expiry = (t + self.ttl * SECOND).div_euclid(SECOND);
        let served = wait <= self.max_delay;
        // A refused reservation gives its tokens back.
        let tokens = match served {
            true => tokens,
            false => (tokens + cost as f64).min(self.burst as f64),
        };
        let n = TraefikRateState {
            seen: true,
            tokens,
            last: t,
            expiry,
        };
        (n, served)
    }
}

impl Listed for TraefikRate {
    const NAME: &'static str = "traefik";
    const PARAMS: &'static [&'static str] = &["rate", "burst"];
    const SIZING: Sizing = Sizing::rates("burst");

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let rate = p.rate()?;
        if rate.count() > 9_000_000 {
            return Err(ParamError::new(
                "rate: at most 9000000 a period, as Traefik's average·1e9 stays exact; e.g. rate=100/s",
            ));
        }
        let burst = p.positive("burst", Some(1))?;
        Ok(TraefikRate::new(rate, burst.get()))
    }

    fn info(&self) -> Info {
        Info {
            shapes: true,
            level_kind: LevelKind::Level,
            max_level: self.burst + 1,
            max_cost: self.burst,
            refusal_counts: false,
            holds_memory: false,
        }
    }

    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let rate = rate_point(Self::NAME, at)?;
        Ok(TraefikRate::new(rate, size.max(1)))
    }

    /// `burst`, the refill over `h` and the wait it may borrow ahead.
    fn worst_within(&self, h: Nanos) -> u64 {
        let ahead = h.saturating_add(Nanos(self.max_delay as u64));
        let refill = super::rule::refill_within(self.rate, ahead);
        super::rule::saturate(u128::from(self.burst) + refill + 1)
    }
}

impl Policy for TraefikRate {
    type State = TraefikRateState;

    fn check(&self, s: &TraefikRateState, now: Nanos, cost: u64) -> Decision {
        let t = now.0 as i64;
        let (_, wait) = self.reserve(s, t, cost);
        if wait <= self.max_delay {
            return Decision::Admit {
                release: Nanos(now.0 + wait as u64),
            };
        }
        // The first instant the wait is short enough, if nothing else
        // comes: the tokens only grow until the bucket is full.
        let fits = |t: i64| self.reserve(s, t, cost).1 <= self.max_delay;
        let (mut lo, mut hi) = (t, t + wait);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { hi = mid } else { lo = mid + 1 }
        }
        Decision::Refuse {
            retry_at: Some(Nanos(lo as u64)),
        }
    }

    fn admit(&self, s: &mut TraefikRateState, now: Nanos, cost: u64) {
        *s = self.after(s, now.0 as i64, cost).0;
    }

    fn refuse(&self, s: &mut TraefikRateState, now: Nanos, cost: u64) {
        *s = self.after(s, now.0 as i64, cost).0;
    }

    fn is_neutral(&self, s: &TraefikRateState, now: Nanos) -> bool {
        let t = now.0 as i64;
        !s.seen || s.expiry <= t.div_euclid(SECOND) || self.advance(s, t) >= self.burst as f64
    }

    /// Tokens in use (reserved and not refilled), rounded up.
    fn level(&self, s: &TraefikRateState, now: Nanos) -> u64 {
        let t = now.0 as i64;
        let used = self.burst as f64 - self.advance(&self.live(s, t), t);
        used.max(0.0).ceil() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(count: u64, per_ms: u64, burst: u64) -> TraefikRate {
        TraefikRate::new(Rate::new(count, Nanos(per_ms * 1_000_000)).unwrap(), burst)
    }

    #[test]
    fn max_delay_and_ttl_as_traefik_derives_them() {
        // rate_limiter.go: maxDelay = 1s / (2·⌊r⌋), 500 ms below 1/s;
        // ttl = 2 s from 1/s up, else 1 + ⌊1/r⌋.
        let p = policy(100, 1_000, 1);
        assert_eq!((p.max_delay, p.ttl), (5_000_000, 2));
        let p = policy(3, 2_000, 1);
        assert_eq!((p.max_delay, p.ttl), (500_000_000, 2));
        let p = policy(1, 3_000, 1);
        assert_eq!((p.max_delay, p.ttl), (500_000_000, 4));
    }

    #[test]
    fn a_short_wait_is_served_and_a_long_one_refused_with_its_token_back() {
        // 10/s, burst 2: maxDelay 50 ms. Two go at once; the third at the
        // same instant would wait 100 ms: refused, its token given back;
        // 60 ms later the wait is 40 ms: served after it.
        let p = policy(10, 1_000, 2);
        let mut s = TraefikRateState::default();
        let t0 = 1_700_000_000 * SECOND as u64;
        let at = |ms: u64| Nanos(t0 + ms * 1_000_000);
        for _ in 0..2 {
            assert_eq!(
                p.decide(&mut s, at(0), 1),
                Decision::Admit { release: at(0) }
            );
        }
        let Decision::Refuse { retry_at } = p.decide(&mut s, at(0), 1) else {
            panic!("refused")
        };
        // 1 ns before 50 ms the wait, 50,000,000.99… ns, truncates to 50 ms.
        assert_eq!(retry_at, Some(Nanos(at(50).0 - 1)));
        assert_eq!(s.tokens, 0.0);
        assert_eq!(
            p.decide(&mut s, at(60), 1),
            Decision::Admit { release: at(100) }
        );
    }

    #[test]
    fn an_idle_bucket_is_dropped_on_whole_unix_seconds() {
        // 1/s, burst 3: ttl 2 s. Emptied at 10.9 s past a whole second, it
        // is kept through 11.999 s (1.099 tokens: 2 more would wait 901
        // ms), and dropped at 12.0 s (⌊10.9 + 2⌋ = 12): full again.
        let p = policy(1, 1_000, 3);
        let base = 1_700_000_000 * SECOND as u64;
        let at = |ms: u64| Nanos(base + ms * 1_000_000);
        let mut s = TraefikRateState::default();
        for _ in 0..3 {
            p.decide(&mut s, at(10_900), 1);
        }
        assert!(matches!(
            p.check(&s, at(11_999), 2),
            Decision::Refuse { .. }
        ));
        assert_eq!(
            p.check(&s, at(12_000), 2),
            Decision::Admit {
                release: at(12_000)
            }
        );
    }

    #[test]
    fn reservations_match_x_time_rate_s_own_vectors() {
        // golang.org/x/time/rate, rate_test.go, TestSimpleReserve:
        // NewLimiter(10, 2); reserve 2 at t0 → t0; 2 at t0 → t2; 2 at t3
        // → t4 (d = 100 ms). Each reservation kept, whatever its wait.
        let p = policy(10, 1_000, 2);
        let t0 = 1_700_000_000 * SECOND;
        let d = 100_000_000;
        let mut s = p.live(&TraefikRateState::default(), t0);
        let mut acts = Vec::new();
        for t in [t0, t0, t0 + 3 * d] {
            let (tokens, wait) = p.reserve(&s, t, 2);
            (s.tokens, s.last) = (tokens, t);
            acts.push(t + wait);
        }
        assert_eq!(acts, [t0, t0 + 2 * d, t0 + 4 * d]);
    }
}
