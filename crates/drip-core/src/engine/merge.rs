//! A replay's outcome before it is reduced to reports, so that replays of
//! parts of a log can be merged: the outcome of two replays over disjoint
//! sets of keys merges into the outcome of one replay over all of them.
//! Counts add, wait tallies merge (so percentiles are those of all the
//! waits), peaks keep their maximum, and the keys hurt most are merged in
//! the report's order (score, then the key's bytes), which is exact
//! because each key's rows are all in one part.
//!
//! This holds for runs keyed by the column the rows were split on; a run
//! of one bucket for every row (no key) decides differently on parts, and
//! its merged figures are only the sums. A timeline or an nginx.conf run
//! does not merge: [`Outcome::merge`] says so.

use super::outcome::{KeyRow, PolicyReport, Ranked, WaitKeyRow, Waits};
use crate::wait_stats::WaitStats;
use std::cmp::Ordering;
use std::fmt;

/// What one run found, unreduced.
#[derive(Clone, Debug)]
pub struct RunOutcome {
    /// The report, without its wait percentiles and keys hurt (they are
    /// made from `waits`, `top_keys` and `top_waits`).
    pub(super) report: PolicyReport,
    /// Every admitted request's wait (for a run that delays).
    pub(super) waits: WaitStats,
    pub(super) top_keys: Vec<Ranked<KeyRow>>,
    /// For a run that delays.
    pub(super) top_waits: Option<Vec<Ranked<WaitKeyRow>>>,
}

/// A replay's outcome, every run in report order: merge it with the
/// outcomes of replays of other keys, then read the reports.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub(super) runs: Vec<RunOutcome>,
    /// Keys hurt kept per run (`--top`).
    pub(super) top: usize,
    /// The replay kept a timeline.
    pub(super) timeline: bool,
}

/// Why two outcomes cannot be merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError(String);

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for MergeError {}

impl Outcome {
    /// Adds `other`, the outcome of a replay of the same runs over other
    /// keys: the result is the outcome of one replay over the keys of
    /// both.
    pub fn merge(&mut self, other: Outcome) -> Result<(), MergeError> {
        let err = |m: String| Err(MergeError(m));
        if self.timeline || other.timeline {
            return err("an outcome with a timeline does not merge (its intervals start at each part's first row)".into());
        }
        if self.top != other.top {
            return err(format!(
                "the outcomes keep {} and {} keys hurt",
                self.top, other.top
            ));
        }
        // A label can be given (`label=`): the specs must be the same too.
        let labels = |o: &Outcome| {
            o.runs
                .iter()
                .map(|r| (r.report.label.clone(), r.report.spec.clone()))
                .collect::<Vec<_>>()
        };
        if labels(self) != labels(&other) {
            return err(format!(
                "the outcomes are of different runs: {:?} and {:?}",
                labels(self),
                labels(&other)
            ));
        }
        if let Some(r) = self
            .runs
            .iter()
            .chain(&other.runs)
            .find(|r| r.report.config().is_some() || r.report.replicas.is_some())
        {
            let what = match r.report.replicas.is_some() {
                true => "replicated",
                false => "config",
            };
            return err(format!(
                "the outcome of the {what} run '{}' does not merge",
                r.report.label
            ));
        }
        for (mine, theirs) in self.runs.iter_mut().zip(other.runs) {
            mine.merge(theirs, self.top);
        }
        Ok(())
    }

    /// The report of every run, in report order.
    pub fn reports(self) -> Vec<PolicyReport> {
        self.runs.into_iter().map(RunOutcome::report).collect()
    }
}

impl RunOutcome {
    fn merge(&mut self, other: RunOutcome, top: usize) {
        let (a, b) = (&mut self.report, other.report);
        a.requests += b.requests;
        a.admitted += b.admitted;
        a.delayed += b.delayed;
        a.dropped += b.dropped;
        a.peak = a.peak.max(b.peak);
        a.keys_seen += b.keys_seen;
        a.keys_with_drops += b.keys_with_drops;
        a.skipped_bad += b.skipped_bad;
        self.waits.merge(other.waits);
        let drops = |r: &Ranked<KeyRow>| r.row.dropped;
        self.top_keys = by_rank(
            std::mem::take(&mut self.top_keys),
            other.top_keys,
            top,
            drops,
        );
        self.top_waits = match (self.top_waits.take(), other.top_waits) {
            (Some(a), Some(b)) => {
                let score = |r: &Ranked<WaitKeyRow>| (r.row.wait_max_ns, r.row.delayed);
                Some(by_rank(a, b, top, score))
            }
            (a, b) => a.or(b),
        };
    }

    /// The run's report, its percentages and percentiles computed.
    pub(super) fn report(mut self) -> PolicyReport {
        let mut r = self.report;
        r.drop_pct = super::counts::percent(r.dropped, r.requests);
        r.wait = r.shapes.then(|| waits(&mut self.waits));
        r.top_keys = self.top_keys.into_iter().map(|k| k.row).collect();
        r.top_waits = self
            .top_waits
            .map(|w| w.into_iter().map(|k| k.row).collect());
        r
    }
}

/// The `top` highest of two ranked lists of different keys: by score,
/// highest first, then by the key's bytes (the report's order).
fn by_rank<R, S: Ord>(
    a: Vec<Ranked<R>>,
    b: Vec<Ranked<R>>,
    top: usize,
    score: impl Fn(&Ranked<R>) -> S,
) -> Vec<Ranked<R>> {
    let order = |x: &Ranked<R>, y: &Ranked<R>| -> Ordering {
        score(y).cmp(&score(x)).then_with(|| x.bytes.cmp(&y.bytes))
    };
    let mut all: Vec<Ranked<R>> = a.into_iter().chain(b).collect();
    all.sort_by(order);
    all.truncate(top);
    all
}

/// The report's wait percentiles.
pub(super) fn waits(w: &mut WaitStats) -> Waits {
    let p = w.percentiles();
    Waits {
        p50_ns: p.p50,
        p95_ns: p.p95,
        p99_ns: p.p99,
        max_ns: p.max,
    }
}
