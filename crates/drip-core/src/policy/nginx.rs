//! nginx `limit_req` (ngx_http_limit_req_module, 1.22), decision by decision
//! and delay by delay, in nginx's own integer units:
//!
//! - time in whole milliseconds (finer timestamps are floored);
//! - rate in thousandths of a request per second (`rate_m`): `Nr/s` → N·1000,
//!   `Nr/m` → ⌊N·1000/60⌋ (so `7r/m` is 116, one request per 8.6207 s);
//! - the bucket level `excess` in thousandths of a request.
//!
//! For a key seen before (`excess`, `last`), a request at `now`:
//!
//! ```text
//! ms   = now − last        (negative → 0; below −60 s → 1)
//! e    = excess − ⌊rate_m·ms/1000⌋ + 1000, clamped at 0 after the add
//! refuse iff e > burst·1000                  (excess and last untouched)
//! excess = e; last = now unless ms == 0
//! wait = 0 if e ≤ delay·1000 else ⌊(e − delay·1000)·1000 / rate_m⌋ ms
//! ```
//!
//! A key never seen is not limited: `e = 0`, stored `{0, now}`.
//! `nodelay` makes the delay threshold infinite. This is a leaky bucket of
//! capacity `burst + 1` (GCRA with τ = burst·T), delayed as a FIFO shaper,
//! except for nginx's integer effects: `r/m` truncation, the leak remainder
//! lost on every admitted request with `ms ≠ 0` (only for `rate_m` not a
//! multiple of 1000), and the delay truncated to whole ms. nginx's zone
//! eviction of long-idle keys is not modelled (a key is forgotten here only
//! when forgetting it changes nothing). Refused requests answer
//! `limit_req_status`, 503 unless configured.
//!
//! A `cost` c > 1 (not an nginx notion) pours c units: `e` gains
//! `(c−1)·1000` before the comparison; c = 1 is nginx exactly.
//!
//! Spec: `nginx:rate=Nr/s|Nr/m|N[,burst=N][,delay=N | ,nodelay]`, burst 0
//! and delay 0 by default.

use super::rule::{
    AxisPoint, Info, LevelKind, Listed, ParamError, Params, RateForm, Sizing, rate_point, saturate,
};
use super::{Decision, Policy};
use crate::rate::Rate;
use crate::time::Nanos;
use std::fmt;

/// One `limit_req zone=… [burst=B] [delay=D | nodelay]` with its zone's rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NginxLimitReq {
    /// Thousandths of a request per second (nginx's `rate`).
    rate_m: u64,
    /// burst · 1000.
    burst_m: u64,
    /// delay · 1000; `u64::MAX` for `nodelay`.
    delay_m: u64,
    /// The rate as written, for display.
    rate_text: RateText,
    burst: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RateText {
    PerSec(u64),
    PerMin(u64),
}

impl NginxLimitReq {
    /// `delay`: `None` for `nodelay`, else the number of requests passed
    /// without delay (0 = every queued request is delayed).
    pub fn new(rate: NginxRate, burst: u64, delay: Option<u64>) -> NginxLimitReq {
        let (rate_m, rate_text) = match rate {
            NginxRate::PerSec(n) => (n * 1000, RateText::PerSec(n)),
            NginxRate::PerMin(n) => (n * 1000 / 60, RateText::PerMin(n)),
        };
        NginxLimitReq {
            rate_m,
            burst_m: burst * 1000,
            delay_m: delay.map_or(u64::MAX, |d| d * 1000),
            rate_text,
            burst,
        }
    }

    /// nginx's `rate` in thousandths of a request per second.
    #[cfg(test)]
    pub fn rate_m(&self) -> u64 {
        self.rate_m
    }

    /// `delay=` as configured (0 when not given); `None` for `nodelay`.
    pub fn delay(&self) -> Option<u64> {
        (self.delay_m != u64::MAX).then_some(self.delay_m / 1000)
    }

    /// The excess `e` (thousandths) this request would reach, from the state.
    fn excess_for(&self, s: &NginxState, now_ms: i64, cost: u64) -> i128 {
        let extra = i128::from(cost.saturating_sub(1)) * 1000;
        if !s.seen {
            return extra;
        }
        let ms = clamp_ms(now_ms - s.last);
        let leak = leak(self.rate_m, ms);
        let e = (i128::from(s.excess) - leak + 1000).max(0);
        e + extra
    }

    /// Delay in ms for an admitted request at excess `e`.
    fn wait_ms(&self, e: i128) -> u64 {
        let delay_m = i128::from(self.delay_m);
        if e <= delay_m {
            return 0;
        }
        let over = e - delay_m;
        // 64-bit division when the product fits (the 128-bit one is a
        // slow library call).
        match u64::try_from(over).ok().and_then(|o| o.checked_mul(1000)) {
            Some(p) => p / self.rate_m,
            None => u64::try_from(over * 1000 / i128::from(self.rate_m)).unwrap_or(u64::MAX),
        }
    }
}

impl fmt::Display for NginxLimitReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rate_text {
            RateText::PerSec(n) => write!(f, "rate={n}r/s")?,
            RateText::PerMin(n) => write!(f, "rate={n}r/m")?,
        }
        write!(f, " burst={}", self.burst)?;
        match self.delay_m {
            u64::MAX => write!(f, " nodelay"),
            0 => Ok(()),
            d => write!(f, " delay={}", d / 1000),
        }
    }
}

/// A zone rate as nginx accepts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NginxRate {
    /// `Nr/s` (or a bare `N`): N requests a second.
    PerSec(u64),
    /// `Nr/m`: N requests a minute, which nginx keeps as ⌊N·1000/60⌋
    /// thousandths a second.
    PerMin(u64),
}

impl NginxRate {
    /// `rate` as a whole number of requests per second (`false`) or per
    /// minute (`true`), if it is either.
    fn whole(rate: Rate) -> Option<(u128, bool)> {
        let per_sec = u128::from(rate.count()) * u128::from(Nanos::PER_SEC);
        let per = u128::from(rate.per().0);
        if per_sec.is_multiple_of(per) {
            return Some((per_sec / per, false));
        }
        let per_min = per_sec * 60;
        per_min.is_multiple_of(per).then(|| (per_min / per, true))
    }

    /// `rate` in nginx's spelling (`10r/s`, `30r/m`), when it is a whole
    /// number of requests per second or per minute.
    pub fn spell(rate: Rate) -> Option<String> {
        let (n, per_min) = NginxRate::whole(rate)?;
        Some(format!("{n}r/{}", if per_min { 'm' } else { 's' }))
    }

    /// `rate` as nginx takes it, with [`parse_nginx_rate`]'s errors.
    pub fn of(rate: Rate) -> Result<NginxRate, ParamError> {
        let Some((n, per_min)) = NginxRate::whole(rate) else {
            return Err(ParamError::new(format!(
                "nginx takes a whole number of requests per second or per minute; {rate} is neither"
            )));
        };
        match u64::try_from(n) {
            Ok(n) if n <= 1_000_000_000 && per_min => Ok(NginxRate::PerMin(n)),
            Ok(n) if n <= 1_000_000_000 => Ok(NginxRate::PerSec(n)),
            _ => Err(ParamError::new(format!(
                "invalid nginx rate '{}': too large",
                NginxRate::spell(rate).unwrap_or_default()
            ))),
        }
    }
}

/// Parses nginx's `rate=` value: `Nr/s`, `Nr/m` or bare `N` (r/s), N a
/// positive integer. Everything nginx rejects is rejected.
pub fn parse_nginx_rate(text: &str) -> Result<NginxRate, ParamError> {
    let t = text.trim();
    let (num, per_min) = if let Some(n) = t.strip_suffix("r/s") {
        (n, false)
    } else if let Some(n) = t.strip_suffix("r/m") {
        (n, true)
    } else {
        (t, false)
    };
    let hint = "nginx accepts a positive whole number of requests per second or minute, e.g. 10r/s, 30r/m, 10";
    let invalid = || ParamError::new(format!("invalid nginx rate '{t}': {hint}"));
    let too_large = || ParamError::new(format!("invalid nginx rate '{t}': too large"));
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let n: u64 = num.parse().map_err(|_| too_large())?;
    if n == 0 {
        return Err(invalid());
    }
    if n > 1_000_000_000 {
        return Err(too_large());
    }
    Ok(if per_min {
        NginxRate::PerMin(n)
    } else {
        NginxRate::PerSec(n)
    })
}

/// Thousandths of a request leaked in `ms` (not negative) at `rate_m`.
#[inline]
fn leak(rate_m: u64, ms: i64) -> i128 {
    crate::rate::mul_div(rate_m, ms as u64, 1000) as i128
}

fn clamp_ms(ms: i64) -> i64 {
    if ms < -60_000 { 1 } else { ms.max(0) }
}

fn to_ms(now: Nanos) -> i64 {
    (now.0 / Nanos::PER_MS) as i64
}

/// nginx's node: excess (thousandths) left by the last admitted request,
/// excluding that request's own unit, and that request's time in ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NginxState {
    /// The `e` the last admission left, in thousandths of a request.
    pub excess: u64,
    /// The time, in whole ms, the excess was last leaked to: the last
    /// admission at which the elapsed `ms` was not 0.
    pub last: i64,
    /// False for a key never seen, which is not limited.
    pub seen: bool,
}

impl NginxState {
    /// The logged `excess` value after the last admitted request, in requests
    /// (nginx prints it with three decimals).
    #[cfg(test)]
    pub fn excess_text(&self) -> String {
        format!("{}.{:03}", self.excess / 1000, self.excess % 1000)
    }
}

super::rule::plain_state!(NginxState);

impl Listed for NginxLimitReq {
    const NAME: &'static str = "nginx";
    const PARAMS: &'static [&'static str] = &["rate", "burst", "delay", "nodelay"];
    const SIZING: Sizing = Sizing {
        rate_form: RateForm::NginxWhole,
        min_size: 0,
        level_over_size: 1,
        ..Sizing::rates("burst")
    };

    fn parse(p: &mut Params<'_>) -> Result<Self, ParamError> {
        let v = p.required("rate", "nginx:rate=10r/s,burst=5")?;
        let rate = parse_nginx_rate(v)?;
        let burst = p.count("burst", Some(0))?;
        let nodelay = match p.take("nodelay") {
            None => false,
            Some(None) => true,
            Some(Some(_)) => {
                return Err(ParamError::new(
                    "nodelay is a flag: write it without a value",
                ));
            }
        };
        let delay = p.count("delay", Some(0))?;
        let delay = if nodelay {
            if delay != 0 {
                return Err(ParamError::new("give delay= or nodelay, not both"));
            }
            None
        } else {
            Some(delay)
        };
        Ok(NginxLimitReq::new(rate, burst, delay))
    }

    fn info(&self) -> Info {
        Info {
            shapes: self.delay_m != u64::MAX,
            level_kind: LevelKind::Level,
            // `e ≤ burst·1000` after an admit, plus the admitted unit.
            max_level: self.burst_m / 1000 + 1,
            // A cost c pours (c − 1)·1000 before the comparison.
            max_cost: self.burst.saturating_add(1),
            refusal_counts: false,
            holds_memory: false,
        }
    }

    /// At a whole number of requests per second or minute (nginx's own
    /// reading of it, `r/m` truncated); `delay=` or `nodelay` kept.
    fn resized(&self, at: AxisPoint, size: u64) -> Result<Self, ParamError> {
        let rate = rate_point(Self::NAME, at)?;
        let whole = NginxRate::of(rate)?;
        Ok(NginxLimitReq::new(whole, size, self.delay()))
    }

    /// The burst and the admitted request (the delay threshold when
    /// nginx delays: the rest is released on nginx's rate), then nginx's
    /// rate over `h`.
    fn worst_within(&self, h: Nanos) -> u64 {
        let refill = u128::from(self.rate_m) * u128::from(h.0) / 1_000_000_000_000;
        let first = match self.delay() {
            Some(d) => d.min(self.burst),
            None => self.burst,
        };
        saturate(u128::from(first) + 1 + refill)
    }
}

impl Policy for NginxLimitReq {
    type State = NginxState;

    fn check(&self, s: &NginxState, now: Nanos, cost: u64) -> Decision {
        let now_ms = to_ms(now);
        let e = self.excess_for(s, now_ms, cost);
        if e <= i128::from(self.burst_m) {
            let wait = self.wait_ms(e);
            return Decision::Admit {
                release: now.saturating_add(Nanos::from_millis(wait)),
            };
        }
        if i128::from(cost.saturating_sub(1)) * 1000 > i128::from(self.burst_m) {
            return Decision::Refuse { retry_at: None };
        }
        // First ms at which ⌊rate_m·ms/1000⌋ ≥ excess + c·1000 − burst_m.
        let need = i128::from(s.excess) + i128::from(cost) * 1000 - i128::from(self.burst_m);
        let ms = (need * 1000 + i128::from(self.rate_m) - 1) / i128::from(self.rate_m);
        let at_ms = (i128::from(s.last) + ms).max(i128::from(now_ms) + 1);
        Decision::Refuse {
            retry_at: Some(Nanos::from_millis(u64::try_from(at_ms).unwrap_or(u64::MAX))),
        }
    }

    fn admit(&self, s: &mut NginxState, now: Nanos, cost: u64) {
        let now_ms = to_ms(now);
        let e = self.excess_for(s, now_ms, cost);
        if !s.seen {
            *s = NginxState {
                excess: e as u64,
                last: now_ms,
                seen: true,
            };
            return;
        }
        let ms = clamp_ms(now_ms - s.last);
        s.excess = e as u64;
        if ms != 0 {
            s.last = now_ms;
        }
    }

    /// `check`, then `admit`, working out the excess once for an admission.
    #[inline(always)]
    fn decide_retry<const RETRY: bool>(
        &self,
        s: &mut NginxState,
        now: Nanos,
        cost: u64,
    ) -> Decision {
        let now_ms = to_ms(now);
        let e = self.excess_for(s, now_ms, cost);
        if e > i128::from(self.burst_m) {
            // A refusal changes nothing.
            return super::refusal::<Self, RETRY>(self, s, now, cost);
        }
        let wait = self.wait_ms(e);
        if !s.seen || clamp_ms(now_ms - s.last) != 0 {
            s.last = now_ms;
        }
        s.excess = e as u64;
        s.seen = true;
        Decision::Admit {
            release: now.saturating_add(Nanos::from_millis(wait)),
        }
    }

    /// Forgetting the key changes nothing once a new request would compute
    /// `e = 0` from it, as it would for a key never seen.
    fn is_neutral(&self, s: &NginxState, now: Nanos) -> bool {
        !s.seen || {
            let ms = clamp_ms(to_ms(now) - s.last);
            leak(self.rate_m, ms) >= i128::from(s.excess) + 1000
        }
    }

    /// An admission leaves `last` at (or, on a clock stepped back less
    /// than a minute, after) its own ms: nothing has leaked since.
    #[inline]
    fn admitted_level(&self, s: &NginxState, _now: Nanos) -> u64 {
        if !s.seen {
            return 0;
        }
        (s.excess + 1000).div_ceil(1000)
    }

    /// The bucket level in whole requests, counting the last admitted one.
    #[inline]
    fn level(&self, s: &NginxState, now: Nanos) -> u64 {
        if !s.seen {
            return 0;
        }
        let ms = clamp_ms(to_ms(now) - s.last);
        let leak = leak(self.rate_m, ms);
        let left = (i128::from(s.excess) + 1000 - leak).max(0);
        (left as u64).div_ceil(1000)
    }
}
