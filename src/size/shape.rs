//! The log's shape, as the rule of thumb and the default rates read it:
//! its average rate, its busiest second, quantiles of per-key figures.

use crate::engine::candidates::log::Log;
use crate::rate::Rate;
use crate::time::Nanos;

/// Nearest-rank quantile of sorted values.
pub fn quantile(sorted: &[u64], num: u64, den: u64) -> Option<u64> {
    if sorted.is_empty() {
        return Some(0);
    }
    let n = sorted.len() as u64;
    let rank = (num * n).div_ceil(den).max(1);
    let v = sorted[rank as usize - 1];
    (v != u64::MAX).then_some(v)
}

/// The log's average rate and busiest second.
pub struct Shape {
    pub span_ns: u64,
    pub rows: u64,
    pub keys: u64,
    /// p99 across keys of requests per key (keyed logs).
    pub p99_requests: u64,
    /// Most requests in one second (of one key when keyed).
    pub busiest: u64,
    pub busiest_key: Option<u32>,
}

impl Shape {
    pub fn of(log: &Log) -> Shape {
        let span_ns = match (log.at.first(), log.at.last()) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        };
        let keys = log.keys();
        // Per key: its current second and count there.
        let mut sec = vec![u64::MAX; keys];
        let mut count = vec![0u64; keys];
        let mut busiest = 0;
        let mut busiest_key = None;
        let mut rows = 0u64;
        for i in 0..log.len() {
            let k = log.key[i];
            if k == crate::ingest::keys::EMPTY_KEY {
                continue;
            }
            rows += 1;
            let (k, s) = (k as usize, log.at[i] / Nanos::PER_SEC);
            if sec[k] != s {
                sec[k] = s;
                count[k] = 0;
            }
            count[k] += 1;
            if count[k] > busiest {
                busiest = count[k];
                busiest_key = Some(k as u32);
            }
        }
        let mut per_key: Vec<u64> = log.requests_by_key.clone();
        per_key.sort_unstable();
        Shape {
            span_ns,
            rows,
            keys: keys as u64,
            p99_requests: quantile(&per_key, 99, 100).unwrap_or(0),
            busiest,
            busiest_key,
        }
    }

    /// Requests per second over the span (per key on average when keyed).
    pub fn mean_rate(&self, keyed: bool) -> Option<Rate> {
        if self.rows == 0 || self.span_ns == 0 {
            return None;
        }
        let per = if keyed {
            self.span_ns.saturating_mul(self.keys.max(1))
        } else {
            self.span_ns
        };
        Rate::new(self.rows, Nanos(per)).ok()
    }

    /// The average rate the rule of thumb compares with (p99 key when keyed).
    pub fn rule_rate(&self, keyed: bool) -> f64 {
        if self.span_ns == 0 {
            return 0.0;
        }
        let n = if keyed { self.p99_requests } else { self.rows };
        n as f64 * 1e9 / self.span_ns as f64
    }
}

/// An average rate as it reads naturally: per second down to 0.1/s, then
/// per minute, per hour or per day, with four significant digits, so a
/// sparse log's rate never shows as zero.
pub fn average_text(per_s: f64) -> String {
    if per_s <= 0.0 || !per_s.is_finite() {
        return "0/s".into();
    }
    let (v, unit) = [(1.0, "s"), (60.0, "min"), (3600.0, "h")]
        .into_iter()
        .map(|(mul, unit)| (per_s * mul, unit))
        .find(|(v, _)| *v >= 0.1)
        .unwrap_or((per_s * 86_400.0, "day"));
    let digits = (3 - v.log10().floor() as i32).clamp(0, 8) as usize;
    let text = format!("{v:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("{text}/{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_rates_read_with_their_significant_digits() {
        assert_eq!(average_text(0.66863), "0.6686/s");
        assert_eq!(average_text(17.0), "17/s");
        assert_eq!(average_text(1234.5678), "1235/s");
        assert_eq!(average_text(0.0004), "1.44/h");
        assert_eq!(average_text(0.01), "0.6/min");
        assert_eq!(average_text(1e-7), "0.00864/day");
        assert_eq!(average_text(0.0), "0/s");
    }
}
