//! Choosing among the frontier: the rows that may be recommended (they
//! meet the targets and the log tests them), the pick and its
//! alternatives, each by its own rule, and whether another horizon would
//! pick differently.
//!
//! - **tightest** (the pick): the fewest requests through in any window
//!   of `--horizon`, then the smallest size;
//! - **knee**: the row farthest below the straight line from the slowest
//!   to the fastest candidate, rates and sizes both on log scales (where
//!   a faster rate stops buying a much smaller size);
//! - **lowest wait**: the smallest wait p99, then the smallest longest
//!   wait, then the tightest (policies that delay only).

use super::family::{Family, Point};
use crate::report::size::{Alternative, FrontierRow};
use crate::time::Nanos;

/// The horizons the sensitivity note tries.
const HORIZONS: [Nanos; 4] = [
    Nanos::from_secs(1),
    Nanos::from_secs(10),
    Nanos::from_secs(60),
    Nanos::from_secs(3600),
];

/// Index of the tightest candidate: `most(i)` is row i's most requests
/// through in the horizon.
fn tightest(frontier: &[FrontierRow], ok: &[bool], most: impl Fn(usize) -> u64) -> Option<usize> {
    (0..frontier.len())
        .filter(|&i| ok[i])
        .min_by_key(|&i| (most(i), frontier[i].size))
}

/// The rows that may be recommended.
fn candidates(frontier: &[FrontierRow]) -> Vec<bool> {
    frontier.iter().map(|r| r.feasible && r.tested).collect()
}

/// The pick: the tightest candidate.
pub fn pick(frontier: &[FrontierRow]) -> Option<usize> {
    tightest(frontier, &candidates(frontier), |i| {
        frontier[i].worst_in_horizon
    })
}

/// The knee and the lowest-wait row, when they differ from the pick.
pub fn alternatives(frontier: &[FrontierRow], pick: usize, delays: bool) -> Vec<Alternative> {
    let ok = candidates(frontier);
    let mut out = Vec::new();
    let mut add = |i: Option<usize>, rule: &'static str, why: &str| {
        if let Some(i) = i.filter(|&i| i != pick) {
            out.push(Alternative {
                rule,
                why: why.to_string(),
                row: frontier[i].clone(),
            });
        }
    };
    add(
        knee(frontier, &ok),
        "knee",
        "where a faster rate stops buying a much smaller size",
    );
    if delays {
        let lowest = (0..frontier.len()).filter(|&i| ok[i]).min_by_key(|&i| {
            let r = &frontier[i];
            (
                r.wait_p99_ns.unwrap_or(0),
                r.wait_max_ns.unwrap_or(0),
                r.worst_in_horizon,
                r.size,
            )
        });
        add(
            lowest,
            "lowest wait",
            "the shortest waits among the candidates",
        );
    }
    out
}

/// The candidate farthest below the chord from the first to the last
/// candidate, on log scales of the axis position and the size.
fn knee(frontier: &[FrontierRow], ok: &[bool]) -> Option<usize> {
    let idx: Vec<usize> = (0..frontier.len()).filter(|&i| ok[i]).collect();
    if idx.len() < 3 {
        return None;
    }
    // Rows run from the slowest rate (or shortest window) up; the axis
    // position is the row's place, the ladder being roughly geometric.
    let at = |i: usize| ((i + 1) as f64).ln();
    let size = |i: usize| ((frontier[i].size + 1) as f64).ln();
    let (a, b) = (idx[0], idx[idx.len() - 1]);
    let line = |i: usize| size(a) + (size(b) - size(a)) * (at(i) - at(a)) / (at(b) - at(a));
    idx.iter()
        .copied()
        .map(|i| (i, line(i) - size(i)))
        .filter(|&(_, below)| below > 1e-9)
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(i, _)| i)
}

/// One line when another horizon of [`HORIZONS`] would pick another row.
pub fn horizon_note(
    family: &Family,
    points: &[Point],
    frontier: &[FrontierRow],
    span_ok: impl Fn(usize, Nanos) -> bool,
    horizon: Nanos,
    pick: Option<usize>,
) -> Option<String> {
    let mut differ = Vec::new();
    for h in HORIZONS.into_iter().filter(|&h| h != horizon) {
        let ok: Vec<bool> = (0..frontier.len())
            .map(|i| frontier[i].feasible && span_ok(i, h))
            .collect();
        let most = |i: usize| {
            family
                .config(&points[i], frontier[i].size)
                .map_or(u64::MAX, |c| c.worst_within(h))
        };
        let other = tightest(frontier, &ok, most);
        if other != pick {
            let what = other.map_or("nothing".to_string(), |i| frontier[i].spec.clone());
            differ.push(format!("{} → {what}", crate::time::span(h.0)));
        }
    }
    (!differ.is_empty()).then(|| {
        format!(
            "the pick depends on --horizon ({}): {}",
            crate::time::span(horizon.0),
            differ.join("; ")
        )
    })
}
