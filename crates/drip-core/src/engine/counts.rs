//! The counts a run's report states, whoever counted them: an audit
//! replay counts them row by row into its [`Tally`](super::tally::Tally),
//! a size probe ([`candidates`](super::candidates)) for K candidates at
//! once, and both reports are made from them by [`Counts::report`], so the
//! figures `size` shows for a spec are audit's by construction.

use super::outcome::PolicyReport;

/// Requests, admissions, waits and drops of one run, and its keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub requests: u64,
    pub admitted: u64,
    /// Admitted requests that waited.
    pub delayed: u64,
    pub dropped: u64,
    /// Keys the run saw (1 for one bucket over any row, 0 for no row).
    pub keys_seen: u64,
    /// Keys with at least one drop.
    pub keys_with_drops: u64,
}

impl Counts {
    /// Adds what `other` counted over other rows (and, for the keys, other
    /// keys).
    pub fn add(&mut self, other: Counts) {
        self.requests += other.requests;
        self.admitted += other.admitted;
        self.delayed += other.delayed;
        self.dropped += other.dropped;
        self.keys_seen += other.keys_seen;
        self.keys_with_drops += other.keys_with_drops;
    }

    /// The report of a run labelled `label` of `spec` with these counts:
    /// its drop percentage worked out, every other figure at its default
    /// for the caller to fill in.
    pub fn report(self, label: String, spec: String) -> PolicyReport {
        PolicyReport {
            label,
            spec,
            requests: self.requests,
            admitted: self.admitted,
            delayed: self.delayed,
            dropped: self.dropped,
            drop_pct: percent(self.dropped, self.requests),
            keys_seen: self.keys_seen,
            keys_with_drops: self.keys_with_drops,
            ..PolicyReport::default()
        }
    }

    /// The counts a report states.
    pub fn of(r: &PolicyReport) -> Counts {
        Counts {
            requests: r.requests,
            admitted: r.admitted,
            delayed: r.delayed,
            dropped: r.dropped,
            keys_seen: r.keys_seen,
            keys_with_drops: r.keys_with_drops,
        }
    }
}

/// `part / whole · 100` (0 when `whole` is 0).
pub(super) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
