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

impl<'a> Periods<'a> {
    /// The periods of `len` ns over `log`, counting the keys `counted`
    /// (empty: all).
    pub fn of(
        log: &Log,
        counted: &[bool],
        len: u64,
        ok: &'a (dyn Fn(PeriodCount) -> bool + Sync),
    ) -> Periods<'a> {
        let first = log.at.first().map_or(0, |t| t / len);
        let last = log.at.last().map_or(0, |t| t / len);
        let n = (last - first + 1) as usize;
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
        Periods {
            len,
            first,
            requests,
            keys,
            ok,
        }
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
