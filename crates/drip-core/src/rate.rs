//! Exact rates: `count` events per `per` nanoseconds, reduced to lowest terms.
//!
//! A rate is never turned into a rounded interval: 3/s stays 3 per
//! 1_000_000_000 ns. Policies keep their state in *scaled time*, nanoseconds
//! multiplied by `count`, in which one interval is exactly `per` units. Every
//! decision is then integer arithmetic; a scaled instant is converted back to
//! nanoseconds by rounding up (`Rate::unscale_ceil`), so a reported wait or
//! retry time is the first whole nanosecond that satisfies the rule.

use crate::time::Nanos;
use std::fmt;

/// Largest count accepted: 10^12 events per period. Keeps every scaled
/// product (`now · count`, `burst · per`) far inside `u128`.
const MAX_COUNT: u64 = 1_000_000_000_000;

/// An exact rate: `count` events per `per` nanoseconds (both ≥ 1, coprime).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    count: u64,
    per: u64,
}

/// Why a rate text was rejected; the text is quoted in `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateError {
    /// The text as given, untrimmed.
    pub text: String,
    /// What is wrong with it: the clause after the quoted text.
    pub reason: String,
}

impl fmt::Display for RateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid rate '{}': {} (examples: 5/s, 300/min, 2/h, 1/200ms, 30r/m, 10k/s, 10)",
            self.text, self.reason
        )
    }
}

impl std::error::Error for RateError {}

/// Why `count` events per `per` nanoseconds is no [`Rate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RatioError {
    /// The count is 0.
    ZeroCount,
    /// The period is 0 ns.
    ZeroPeriod,
    /// The count in lowest terms is above 10^12.
    TooFast,
    /// The period in lowest terms does not fit in `u64` nanoseconds
    /// (about 584 years).
    TooLong,
}

impl fmt::Display for RatioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RatioError::ZeroCount => "the count must be at least 1",
            RatioError::ZeroPeriod => "the period must be longer than zero",
            RatioError::TooFast => "too fast to represent exactly (at most 10^12 per period)",
            RatioError::TooLong => "the period is too long",
        })
    }
}

impl std::error::Error for RatioError {}

/// Why a duration text was rejected; the text is quoted in `Display`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationError {
    /// The text as given, trimmed.
    pub text: String,
    /// What is wrong with it, as the duration parser says.
    pub reason: String,
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid duration '{}': {} (examples: 500ms, 2s, 1m, 1h 30m)",
            crate::quote::shown_str(&self.text),
            crate::quote::visible(&self.reason)
        )
    }
}

impl std::error::Error for DurationError {}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Rate {
    /// `count` per `per`, reduced. Errors on zero or out-of-range values.
    pub fn new(count: u64, per: Nanos) -> Result<Rate, RatioError> {
        Self::from_ratio(u128::from(count), u128::from(per.0))
    }

    fn from_ratio(count: u128, per: u128) -> Result<Rate, RatioError> {
        if count == 0 {
            return Err(RatioError::ZeroCount);
        }
        if per == 0 {
            return Err(RatioError::ZeroPeriod);
        }
        let g = gcd(count, per);
        let (count, per) = (count / g, per / g);
        if count > u128::from(MAX_COUNT) {
            return Err(RatioError::TooFast);
        }
        let per = u64::try_from(per).map_err(|_| RatioError::TooLong)?;
        Ok(Rate {
            count: count as u64,
            per,
        })
    }

    /// Events per period, in lowest terms.
    pub fn count(self) -> u64 {
        self.count
    }
    /// The period in nanoseconds, in lowest terms.
    pub fn per(self) -> Nanos {
        Nanos(self.per)
    }

    /// `now` in scaled units (ns · count).
    #[inline]
    pub fn scale(self, now: Nanos) -> u128 {
        u128::from(now.0) * u128::from(self.count)
    }

    /// `n` intervals in scaled units (n · per).
    #[inline]
    pub fn intervals(self, n: u64) -> u128 {
        u128::from(n) * u128::from(self.per)
    }

    /// A scaled instant back in nanoseconds, rounded up (first instant at or after it).
    #[inline]
    pub fn unscale_ceil(self, scaled: u128) -> Nanos {
        Nanos::from_u128(div_ceil(scaled, u128::from(self.count)))
    }

    /// A scaled span in whole intervals, rounded up (a level in units).
    #[inline]
    pub fn units_ceil(self, scaled: u128) -> u64 {
        u64::try_from(div_ceil(scaled, u128::from(self.per))).unwrap_or(u64::MAX)
    }

    /// The interval `per / count` in nanoseconds, rounded up. For display only.
    pub fn interval_ceil(self) -> Nanos {
        Nanos(self.per.div_ceil(self.count))
    }
}

impl fmt::Display for Rate {
    /// Shortest faithful form: `5/s`, `300/min` → `5/s`, `1/200ms`, `7/60s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 6] = [
            (3_600_000_000_000, "h"),
            (60_000_000_000, "min"),
            (1_000_000_000, "s"),
            (1_000_000, "ms"),
            (1_000, "us"),
            (1, "ns"),
        ];
        for (ns, name) in UNITS {
            if self.per == ns {
                return write!(f, "{}/{}", self.count, name);
            }
        }
        // Prefer a whole count per second when the rate is one.
        let per_sec = u128::from(self.count) * 1_000_000_000;
        if per_sec.is_multiple_of(u128::from(self.per)) && self.per < 1_000_000_000 {
            return write!(f, "{}/s", per_sec / u128::from(self.per));
        }
        for (ns, name) in UNITS {
            if self.per.is_multiple_of(ns) {
                return write!(f, "{}/{}{}", self.count, self.per / ns, name);
            }
        }
        unreachable!("every period is a whole number of nanoseconds")
    }
}

/// ⌊a · b / d⌋, in 64-bit arithmetic when the product fits (a 128-bit
/// division is a slow library call), else in 128 bits: the same value.
#[inline]
pub fn mul_div(a: u64, b: u64, d: u64) -> u128 {
    match a.checked_mul(b) {
        Some(p) => u128::from(p / d),
        None => u128::from(a) * u128::from(b) / u128::from(d),
    }
}

/// ⌈a / b⌉, through 64-bit division when both fit (the common case; the
/// 128-bit one is a slow library call).
#[inline]
pub fn div_ceil(a: u128, b: u128) -> u128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a.div_ceil(b)),
        _ => a.div_ceil(b),
    }
}

/// Nanoseconds in a bare unit name (`s`, `min`, `m`, `h`, ...), if it is one.
fn unit_nanos(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" | "nsec" => 1,
        "us" | "µs" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" | "second" | "seconds" | "secs" => 1_000_000_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hr" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        _ => return None,
    })
}

/// The multiplier of an SI suffix on a count: `k` (10^3, also `K`), `M`
/// (10^6), `G` (10^9), `T` (10^12). A lower-case `m` would read as milli,
/// so it is not one.
fn si_multiplier(suffix: char) -> Option<u128> {
    Some(match suffix {
        'k' | 'K' => 1_000,
        'M' => 1_000_000,
        'G' => 1_000_000_000,
        'T' => 1_000_000_000_000,
        _ => return None,
    })
}

/// Parses a decimal count (`5`, `0.5`, `1.25`), optionally with an SI
/// suffix (`10k`, `1.5k`, `2M`), exactly as numerator/denominator: `1.5k`
/// is 15·1000/10, i.e. 1500.
fn parse_count(text: &str) -> Result<(u128, u128), String> {
    let t = text.trim();
    if t.starts_with('-') {
        return Err("the count must be positive".into());
    }
    let (t, mult) = match t.chars().last().and_then(|c| Some((c, si_multiplier(c)?))) {
        Some((c, m)) => (&t[..t.len() - c.len_utf8()], m),
        None => (t, 1),
    };
    let (int, frac) = match t.split_once('.') {
        Some((i, f)) => (i, f),
        None => (t, ""),
    };
    if int.is_empty() && frac.is_empty()
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(format!("'{t}' is not a number"));
    }
    if frac.len() > 9 {
        return Err("at most 9 fraction digits".into());
    }
    let digits = format!("{int}{frac}");
    let num: u128 = digits
        .parse::<u128>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| "the count is too large".to_string())?;
    Ok((num, 10u128.pow(frac.len() as u32)))
}

/// Parses a rate: `N/UNIT`, `N/DURATION`, nginx's `Nr/s` and `Nr/m`, or a
/// bare `N` meaning N per second. Counts may be decimal when the result is
/// exact (`0.5/s` is 1 per 2 s) and carry an SI suffix (`10k/s`,
/// `1.5k/min` is 1500 per minute, `2M/h`).
pub fn parse_rate(text: &str) -> Result<Rate, RateError> {
    let err = |reason: String| RateError {
        text: text.to_string(),
        reason,
    };
    let t = text.trim();
    if t.is_empty() {
        return Err(err("empty".into()));
    }
    let (count_text, per_text) = match t.split_once('/') {
        Some((c, p)) => (c.trim(), p.trim()),
        None => (t, "s"),
    };
    let count_text = count_text.strip_suffix('r').unwrap_or(count_text);
    let (num, den) = parse_count(count_text).map_err(err)?;
    if per_text.is_empty() {
        return Err(err("missing the period after '/'".into()));
    }
    let per_ns: u128 = match unit_nanos(per_text) {
        Some(ns) => u128::from(ns),
        None => {
            if !per_text.as_bytes()[0].is_ascii_digit() {
                return Err(err(format!("unknown unit '{per_text}'")));
            }
            let d = humantime::parse_duration(per_text)
                .map_err(|e| err(format!("period '{per_text}': {e}")))?;
            d.as_nanos()
        }
    };
    // num/den events per per_ns  ==  num events per per_ns·den.
    Rate::from_ratio(num, per_ns.saturating_mul(den)).map_err(|e| err(e.to_string()))
}

/// Parses a human duration (`500ms`, `2s`, `1h 30m`) into `Nanos`.
pub fn parse_duration(text: &str) -> Result<Nanos, DurationError> {
    let t = text.trim();
    let d = humantime::parse_duration(t).map_err(|e| DurationError {
        text: t.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Nanos::from_duration(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mul_div_is_the_128_bit_quotient() {
        let mut rng = crate::testing::Rng(0x6d75_6c64);
        for _ in 0..20_000 {
            // Small and large operands, so both paths are taken.
            let mut pick = || match rng.below(3) {
                0 => rng.below(1 << 20),
                1 => rng.next() >> rng.below(64),
                _ => rng.next(),
            };
            let (a, b, d) = (pick(), pick(), pick().max(1));
            assert_eq!(
                mul_div(a, b, d),
                u128::from(a) * u128::from(b) / u128::from(d)
            );
        }
        assert_eq!(mul_div(u64::MAX, u64::MAX, 1), u128::from(u64::MAX).pow(2));
    }

    fn r(t: &str) -> Rate {
        parse_rate(t).unwrap()
    }

    #[test]
    fn accepted_spellings() {
        assert_eq!(r("5/s"), Rate::new(5, Nanos::from_secs(1)).unwrap());
        assert_eq!(r("300/min"), Rate::new(5, Nanos::from_secs(1)).unwrap());
        assert_eq!(r("2/h"), Rate::new(1, Nanos::from_secs(1800)).unwrap());
        assert_eq!(r("1/200ms"), Rate::new(1, Nanos::from_millis(200)).unwrap());
        assert_eq!(r("5r/s"), r("5/s"));
        assert_eq!(r("30r/m"), Rate::new(1, Nanos::from_secs(2)).unwrap());
        assert_eq!(r("10"), r("10/s"));
        assert_eq!(r("0.5/s"), Rate::new(1, Nanos::from_secs(2)).unwrap());
        assert_eq!(r("1/1h 30m"), Rate::new(1, Nanos::from_secs(5400)).unwrap());
        assert_eq!(r("3/s").count(), 3);
        assert_eq!(r("3/s").per(), Nanos::from_secs(1));
        assert_eq!(r("100000/s"), Rate::new(1, Nanos(10_000)).unwrap());
    }

    #[test]
    fn si_suffixes_are_exact() {
        assert_eq!(r("10k/s"), r("10000/s"));
        assert_eq!(r("10K/s"), r("10000/s"));
        assert_eq!(r("10k"), r("10000/s"));
        // 1.5k is 1500, not 1499.99...: 1500 per minute is exactly 25/s.
        assert_eq!(r("1.5k/min"), Rate::new(25, Nanos::from_secs(1)).unwrap());
        assert_eq!(r("1.5k/min").to_string(), "25/s");
        assert_eq!(r("2M/h"), Rate::new(5000, Nanos::from_secs(9)).unwrap());
        // 2,000,000 per 3.6·10^12 ns is one per 1.8 ms, in lowest terms.
        assert_eq!(r("2M/h").count(), 1);
        assert_eq!(r("2M/h").per(), Nanos(1_800_000));
        assert_eq!(r("1G/s"), Rate::new(1, Nanos(1)).unwrap());
        assert_eq!(r("0.001k/s"), r("1/s"));
        assert_eq!(r("2.5kr/s"), r("2500/s"));
        assert_eq!(r("1k/200ms"), r("5000/s"));
        // 1.2345k is 1234.5 a second: 2469 per 2 s, never rounded.
        let odd = r("1.2345k/s");
        assert_eq!((odd.count(), odd.per()), (2469, Nanos::from_secs(2)));
        // 10^12 per 3.6·10^12 ns is 5 per 18 ns.
        assert_eq!(r("1T/h"), Rate::new(5, Nanos(18)).unwrap());
    }

    #[test]
    fn si_suffixes_reject_what_is_not_one() {
        // 'm' would be milli; 'k' alone is no number; two suffixes are not one.
        for bad in ["10m/s", "k/s", "10kk/s", "1.k5/s", "10x/s", "2P/s"] {
            let msg = parse_rate(bad).unwrap_err().to_string();
            assert!(msg.contains(&format!("'{bad}'")), "{msg}");
        }
        // Past 10^12 a period it is still refused, not wrapped.
        assert!(parse_rate("2T/ns").is_err());
        assert!(parse_rate("99999999999999999999999999999999999999T/s").is_err());
    }

    #[test]
    fn rejected_texts_are_quoted() {
        for bad in [
            "0/s",
            "-5/s",
            "abc",
            "5/",
            "5/fortnight",
            "",
            "5/0s",
            "1.0000000001/s",
            "99999999999999999999999999999999999999999/s",
            "1e3/s",
        ] {
            let e = parse_rate(bad).unwrap_err();
            let msg = e.to_string();
            assert!(msg.contains(&format!("'{bad}'")), "{msg}");
            assert!(msg.contains("examples"), "{msg}");
        }
        assert!(parse_rate("2000000000000/ns").is_err());
    }

    #[test]
    fn display_round_trips() {
        for t in ["5/s", "1/200ms", "2/h", "7/min", "1/90s", "3/s"] {
            let rate = r(t);
            assert_eq!(r(&rate.to_string()), rate, "{t} -> {rate}");
        }
        assert_eq!(r("300/min").to_string(), "5/s");
        assert_eq!(r("1/200ms").to_string(), "5/s");
    }

    #[test]
    fn scaled_math_is_exact() {
        let rate = r("3/s");
        // One interval of 3/s is 1e9 scaled units; back in ns it rounds up.
        assert_eq!(rate.intervals(1), 1_000_000_000);
        assert_eq!(rate.unscale_ceil(rate.intervals(1)), Nanos(333_333_334));
        assert_eq!(rate.unscale_ceil(rate.intervals(3)), Nanos(1_000_000_000));
    }
}
