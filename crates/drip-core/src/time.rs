//! Time in the core: `Nanos`, an instant or a span in integer nanoseconds.
//!
//! Audit instants are nanoseconds since the Unix epoch (UTC); pace instants are
//! monotonic-clock readings. Only differences matter to a policy, so both fit.

use std::fmt;

/// An instant or a span in whole nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// No time: an empty span, or the axis's origin.
    pub const ZERO: Nanos = Nanos(0);
    /// The latest instant, about 584 years after the origin; where the
    /// saturating operations stop.
    pub const MAX: Nanos = Nanos(u64::MAX);
    /// Nanoseconds in a millisecond: 10⁶.
    pub const PER_MS: u64 = 1_000_000;
    /// Nanoseconds in a second: 10⁹.
    pub const PER_SEC: u64 = 1_000_000_000;

    /// Saturates at `Nanos::MAX`.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s.saturating_mul(Self::PER_SEC))
    }
    /// Saturates at `Nanos::MAX`.
    pub const fn from_millis(ms: u64) -> Nanos {
        Nanos(ms.saturating_mul(Self::PER_MS))
    }
    /// The count of nanoseconds.
    pub const fn as_u64(self) -> u64 {
        self.0
    }
    /// `self + d`, saturating at `Nanos::MAX`.
    pub fn saturating_add(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_add(d.0))
    }
    /// `self − d`, saturating at zero.
    pub fn saturating_sub(self, d: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(d.0))
    }
    /// Converts a `u128` count of nanoseconds, saturating at `Nanos::MAX`.
    pub fn from_u128(v: u128) -> Nanos {
        Nanos(u64::try_from(v).unwrap_or(u64::MAX))
    }
    /// The same span as a `Duration`, exactly.
    pub fn to_duration(self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.0)
    }
    /// Converts a `Duration`, saturating at `Nanos::MAX`.
    pub fn from_duration(d: std::time::Duration) -> Nanos {
        Nanos::from_u128(d.as_nanos())
    }
    /// Whole seconds, rounded up (as HTTP `Retry-After` shows a wait).
    pub fn ceil_secs(self) -> u64 {
        self.0.div_ceil(Self::PER_SEC)
    }
}

/// Formats a span as decimal milliseconds with up to six fraction digits,
/// exact (no float): 1_500_000 ns → `1.5`, 333_333_334 ns → `333.333334`.
pub fn fmt_millis(span: Nanos) -> String {
    let ms = span.0 / Nanos::PER_MS;
    let frac = span.0 % Nanos::PER_MS;
    if frac == 0 {
        return ms.to_string();
    }
    let digits = format!("{frac:06}");
    format!("{ms}.{}", digits.trim_end_matches('0'))
}

impl fmt::Display for Nanos {
    /// Human form of a span: `0s`, `1.5ms`, `2.000333s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n == 0 {
            return f.write_str("0s");
        }
        let (unit, div) = if n >= Nanos::PER_SEC {
            ("s", Nanos::PER_SEC)
        } else if n >= Nanos::PER_MS {
            ("ms", Nanos::PER_MS)
        } else if n >= 1_000 {
            ("µs", 1_000)
        } else {
            ("ns", 1)
        };
        let whole = n / div;
        let frac = n % div;
        if frac == 0 {
            return write!(f, "{whole}{unit}");
        }
        let width = div.ilog10() as usize;
        let s = format!("{frac:0width$}");
        // Three fraction digits are enough for a person reading a report.
        let s = s[..3.min(width)].trim_end_matches('0');
        if s.is_empty() {
            write!(f, "{whole}{unit}")
        } else {
            write!(f, "{whole}.{s}{unit}")
        }
    }
}

/// A wait for people: `0`, `1.5ms`, `2.5s`.
pub fn human_wait(ns: u64) -> String {
    if ns == 0 {
        "0".into()
    } else {
        Nanos(ns).to_string()
    }
}

/// A configured span as written: `1s`, `500ms`, `3h`, `1h 30m`.
pub fn span(ns: u64) -> String {
    humantime::format_duration(std::time::Duration::from_nanos(ns)).to_string()
}

/// An instant as RFC 3339 UTC with milliseconds when there are any.
pub fn instant(ns: u64) -> String {
    let ts =
        jiff::Timestamp::from_nanosecond(i128::from(ns)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    if ns.is_multiple_of(Nanos::PER_SEC) {
        ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        ts.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_are_exact() {
        assert_eq!(fmt_millis(Nanos(0)), "0");
        assert_eq!(fmt_millis(Nanos(1_500_000)), "1.5");
        assert_eq!(fmt_millis(Nanos(333_333_334)), "333.333334");
        assert_eq!(fmt_millis(Nanos(1)), "0.000001");
        assert_eq!(fmt_millis(Nanos(2_000_000_000)), "2000");
    }

    #[test]
    fn display_is_short() {
        assert_eq!(Nanos(0).to_string(), "0s");
        assert_eq!(Nanos(1_500_000).to_string(), "1.5ms");
        assert_eq!(Nanos(2_000_333_000).to_string(), "2s");
        assert_eq!(Nanos(2_500_000_000).to_string(), "2.5s");
        assert_eq!(Nanos(750).to_string(), "750ns");
        assert_eq!(Nanos(333_333_334).to_string(), "333.333ms");
    }

    #[test]
    fn retry_after_rounds_up() {
        assert_eq!(Nanos(1).ceil_secs(), 1);
        assert_eq!(Nanos(1_000_000_000).ceil_secs(), 1);
        assert_eq!(Nanos(1_000_000_001).ceil_secs(), 2);
    }
}
