//! `--per DUR`: the targets hold in every period of DUR (aligned to the
//! epoch, as `audit --timeline` aligns its buckets), counted within the
//! same replay as the whole log. Each period's requests and keys are
//! counted once here; each candidate's drops and keys hurt per period are
//! counted by the probe ([`super::probe::ProbeJob`]).

use super::log::Log;
use crate::ingest::keys::EMPTY_KEY;

/// One period's figures for one candidate.
#[derive(Clone, Copy, Debug, Default)]
pub struct PeriodCount {
    pub dropped: u64,
    pub keys_hurt: u64,
    /// Requests and keys the targets count in the period.
    pub requests: u64,
    pub keys: u64,
}

/// The periods of the log and what each counts.
pub struct Periods<'a> {
    /// The period's length, ns.
    pub len: u64,
    /// Index (start / len) of the first period.
    pub first: u64,
    pub requests: Vec<u64>,
    pub keys: Vec<u64>,
    /// True when a period's figures meet the drop targets.
    pub ok: &'a (dyn Fn(PeriodCount) -> bool + Sync),
}

/// The most periods [`Periods::of`] lays out: each takes 16 bytes here
/// and a flag per candidate in a probe.
pub const MAX_PERIODS: u64 = 1 << 24;

/// A period so short that the log spans more than [`MAX_PERIODS`] of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooManyPeriods {
    /// The periods the log spans.
    pub periods: u64,
    /// The shortest period (ns) that fits, rounded up to 1, 2 or 5 of a
    /// power of ten.
    pub shortest: u64,
}

impl std::fmt::Display for TooManyPeriods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the log spans {} periods of it, more than {MAX_PERIODS}",
            self.periods
        )
    }
}

impl std::error::Error for TooManyPeriods {}

/// How many periods of `len` ns the log spans, first to last row.
pub fn spanned(log: &Log, len: u64) -> u64 {
    let len = len.max(1);
    let first = log.at.first().map_or(0, |t| t / len);
    let last = log.at.last().map_or(0, |t| t / len);
    last - first + 1
}

/// Checks that periods of `len` ns fit (before anything is laid out).
pub fn check(log: &Log, len: u64) -> Result<(), TooManyPeriods> {
    let periods = spanned(log, len);
    if periods <= MAX_PERIODS {
        return Ok(());
    }
    let span = log.at.last().copied().unwrap_or(0) - log.at.first().copied().unwrap_or(0);
    let need = span.div_ceil(MAX_PERIODS - 1).max(1);
    let mut shortest = 1u64;
    'up: loop {
        for step in [1, 2, 5] {
            if shortest.saturating_mul(step) >= need {
                shortest = shortest.saturating_mul(step);
                break 'up;
            }
        }
        shortest = shortest.saturating_mul(10);
    }
    Err(TooManyPeriods { periods, shortest })
}

impl<'a> Periods<'a> {
    /// The periods of `len` ns over `log`, counting the keys `counted`
    /// (empty: all); refused when the log spans more than
    /// [`MAX_PERIODS`] of them.
    pub fn of(
        log: &Log,
        counted: &[bool],
        len: u64,
        ok: &'a (dyn Fn(PeriodCount) -> bool + Sync),
    ) -> Result<Periods<'a>, TooManyPeriods> {
        check(log, len)?;
        let first = log.at.first().map_or(0, |t| t / len);
        let n = spanned(log, len) as usize;
        let (mut requests, mut keys) = (vec![0u64; n], vec![0u64; n]);
        let mut seen_in = vec![u64::MAX; log.keys()];
        for i in 0..log.len() {
            let k = log.key[i];
            if k == EMPTY_KEY || !(counted.is_empty() || counted[k as usize]) {
                continue;
            }
            let p = log.at[i] / len;
            requests[(p - first) as usize] += 1;
            if seen_in[k as usize] != p {
                seen_in[k as usize] = p;
                keys[(p - first) as usize] += 1;
            }
        }
        Ok(Periods {
            len,
            first,
            requests,
            keys,
            ok,
        })
    }

    /// The counts of period `p` (an index, start / len) with a candidate's
    /// drops and keys hurt.
    pub fn count(&self, p: u64, dropped: u64, keys_hurt: u64) -> PeriodCount {
        let i = (p - self.first) as usize;
        PeriodCount {
            dropped,
            keys_hurt,
            requests: self.requests[i],
            keys: self.keys[i],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(at: &[u64]) -> Log {
        let mut l = Log::default();
        l.at = at.to_vec();
        l
    }

    #[test]
    fn too_short_a_period_is_refused_with_the_shortest_that_fits() {
        let day = 86_400 * 1_000_000_000u64;
        let log = log_of(&[0, day]);
        assert!(check(&log, 1_000_000_000).is_ok());
        let e = check(&log, 1_000).unwrap_err();
        assert_eq!(e.periods, day / 1_000 + 1);
        // 86,400 s over 2^24 - 1 periods: 5.15 ms, rounded up to 10 ms.
        assert_eq!(e.shortest, 10_000_000);
        assert!(check(&log, e.shortest).is_ok());
        assert!(check(&log_of(&[]), 1).is_ok());
    }
}
