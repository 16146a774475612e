//! The sweep step of `size`: the axis points, each key's zero-drop size
//! at every point (one unbounded replay for many points), and at each
//! point the smallest size meeting the targets, found by replays of
//! candidate policies built as values; its figures are the search's own
//! where its replays hold them all, or else audit's replay of its spec.

use super::family::{CAP, Family, Point, per_sec_cmp};
use super::goal::Goal;
use super::shape::Shape;
use crate::engine::candidates::audit;
use crate::engine::candidates::log::Log;
use crate::engine::candidates::per::{PeriodCount, Periods};
use crate::engine::candidates::probe::{self, NeedJob, Needs, ProbeJob, Probed, dispatch};
use crate::policy::PolicyConfig;
use crate::policy::rule::{Axis, AxisPoint};
use crate::progress;
use crate::rate::Rate;
use crate::report::size::{Checked, FrontierRow, readable};
use crate::time::Nanos;
use anyhow::{Result, anyhow, bail};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Candidates per probe replay in a search. Each replay costs about its
/// active rows times K decisions and narrows the range K + 1 times, so a
/// small K decides less in all; a larger one replays fewer times. 3, 7
/// and 15 measured alike within the noise of a shared host.
const K: usize = 7;
/// Most sizes tried one by one when costs vary.
pub const MAX_SCAN: u64 = 2048;
/// Windows tried when none are given.
const DEFAULT_WINDOWS: [&str; 5] = ["1s", "10s", "1m", "10m", "1h"];

/// The points given, or by default: the windows of [`DEFAULT_WINDOWS`],
/// or the round rates from the log's average to its busiest second.
pub fn axis_points(
    family: &Family,
    given: Option<Vec<Point>>,
    shape: &Shape,
    keyed: bool,
) -> Result<Vec<Point>> {
    if let Some(p) = given {
        return Ok(p);
    }
    if family.sizing.axis == Axis::Window {
        return DEFAULT_WINDOWS
            .iter()
            .map(|w| {
                Ok(Point {
                    text: (*w).to_string(),
                    value: AxisPoint::Window(
                        crate::rate::parse_duration(w).map_err(|e| anyhow!(e))?,
                    ),
                })
            })
            .collect();
    }
    let hi = Rate::new(shape.busiest.max(1), Nanos::from_secs(1)).map_err(|e| anyhow!(e))?;
    let hi = family.round_up(hi).map(|p| p.value);
    // A log of one instant has no average rate: from 1/s to its busiest
    // second.
    let one = Rate::new(1, Nanos::from_secs(1)).map_err(|e| anyhow!(e))?;
    let lo = shape.mean_rate(keyed).unwrap_or(one);
    let lo = family.round_up(lo).map(|p| p.value);
    Ok(match (lo, hi) {
        (Some(AxisPoint::Rate(lo)), Some(AxisPoint::Rate(hi))) => {
            let hi = if per_sec_cmp(lo, hi).is_gt() { lo } else { hi };
            family.ladder(lo, hi)
        }
        _ => family.ladder(one, one),
    })
}

/// Replay threads for `points`.
pub fn threads(points: &[Point]) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(points.len())
        .max(1)
}

/// Each key's zero-drop size at every point.
pub struct KeyNeeds {
    needs: Vec<Needs>,
    /// Points per replay.
    group: usize,
}

impl KeyNeeds {
    /// Key `key`'s zero-drop size at point `pi` (`u64::MAX`: never fits).
    pub fn of(&self, pi: usize, key: usize) -> u64 {
        self.needs[pi / self.group].of(key, pi % self.group)
    }

    /// Key `key`'s longest wait at point `pi` at any size of at least its
    /// need, ns.
    pub fn wait_of(&self, pi: usize, key: usize) -> u64 {
        self.needs[pi / self.group].wait_of(key, pi % self.group)
    }

    /// Replays the log through every point's unbounded policy: one replay
    /// for up to [`probe::MAX_K`] points, spread over `threads`.
    pub fn replay(
        family: &Family,
        points: &[Point],
        log: &Log,
        threads: usize,
    ) -> Result<KeyNeeds> {
        let offset = family.sizing.level_over_size;
        let group = points.len().div_ceil(threads).clamp(1, probe::MAX_K);
        let configs: Vec<Vec<PolicyConfig>> = points
            .chunks(group)
            .map(|g| g.iter().map(|p| family.config(p, CAP)).collect())
            .collect::<Result<_>>()?;
        let needs: Vec<Needs> = std::thread::scope(|s| {
            let handles: Vec<_> = configs
                .iter()
                .map(|c| s.spawn(|| dispatch(c, NeedJob { log, offset })))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| anyhow!("a replay thread failed")))
                .collect::<Result<_>>()
        })?;
        Ok(KeyNeeds { needs, group })
    }
}

/// What the search found at one axis point.
struct Found {
    size: u64,
    feasible: bool,
    method: &'static str,
    /// Replays of the search (the audit replay not counted).
    replays: u32,
    note: Option<String>,
    /// What the search's replays counted at `size`.
    tally: Probed,
}

/// The sweep's shared inputs.
pub struct Sweep<'a> {
    pub family: &'a Family,
    pub log: &'a Log,
    pub goal: &'a Goal,
    /// By key id: false for keys left out of the targets (empty: all count).
    pub counted: &'a [bool],
    pub costs_vary: bool,
    pub keyed: bool,
    /// The span the recommendation ranks by.
    pub horizon: Nanos,
    /// `--per`: the periods every target holds in.
    pub per: Option<&'a Periods<'a>>,
    /// The keys a row's audit replay keeps, most refused first (`--top`
    /// and the keys left out): what a pick names as the clients it refuses.
    pub top: usize,
}

/// Each key's zero-drop size at one point, and its longest wait at any
/// size of at least that.
type KeyFacts<'a> = (&'a [u64], &'a [u64]);

/// The tallies tried so far at one point, and the replays that tried them.
struct Tried<'a> {
    sweep: &'a Sweep<'a>,
    point: &'a Point,
    key_need: KeyFacts<'a>,
    seen: HashMap<u64, Probed>,
    replays: u32,
}

impl Tried<'_> {
    /// Replays the sizes not tried yet, in one replay.
    fn run(&mut self, sizes: &[u64]) -> Result<()> {
        let fresh: Vec<u64> = sizes
            .iter()
            .copied()
            .filter(|s| !self.seen.contains_key(s))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        self.replays += 1;
        let tallies = self.sweep.probe(self.point, self.key_need, &fresh)?;
        for (s, t) in fresh.iter().zip(tallies) {
            self.seen.insert(*s, t);
        }
        Ok(())
    }

    fn at(&self, size: u64) -> Probed {
        self.seen[&size]
    }
}

impl Sweep<'_> {
    /// The frontier: each point's row, points spread over `threads`.
    pub fn frontier(
        &self,
        points: &[Point],
        needs: &KeyNeeds,
        threads: usize,
        show_progress: bool,
    ) -> Result<Vec<FrontierRow>> {
        let what = if self.family.is_bucket() {
            "rates"
        } else {
            "windows"
        };
        let bar = progress::steps(show_progress, points.len() as u64, what);
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Result<FrontierRow>>>> =
            Mutex::new((0..points.len()).map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= points.len() {
                            break;
                        }
                        let row = self.row(&points[i], |k| (needs.of(i, k), needs.wait_of(i, k)));
                        results.lock().expect("no panics hold the lock")[i] = Some(row);
                        bar.inc(1);
                    }
                });
            }
        });
        bar.finish_and_clear();
        let mut frontier = Vec::new();
        for r in results.into_inner().expect("no panics hold the lock") {
            frontier.push(r.expect("every point swept")?);
        }
        Ok(frontier)
    }

    /// The frontier row at `point`: the size found, with the figures of its
    /// audit replay; `need_of(key)`: the key's zero-drop size there.
    fn row(&self, point: &Point, need_of: impl Fn(usize) -> (u64, u64)) -> Result<FrontierRow> {
        let keys = self.log.keys();
        let (key_need, key_wait): (Vec<u64>, Vec<u64>) = (0..keys).map(need_of).unzip();
        let need = (0..keys)
            .filter(|&k| self.counted.is_empty() || self.counted[k])
            .map(|k| key_need[k])
            .max()
            .unwrap_or(0);
        let found = self.search(point, (&key_need, &key_wait), need)?;
        let spec = self.family.spec(&point.text, found.size);
        // The figures `drip audit -p SPEC` reports: the search's own counts
        // when its probe saw them all, else audit's replay of the spec.
        let (report, audited) = match found.tally.counts {
            Some(counts) => (counts.report(spec.clone(), spec.clone()), 0),
            None => (audit(self.log, &spec, self.keyed, self.top)?, 1),
        };
        let worst = self
            .family
            .config(point, found.size)?
            .worst_within(self.horizon);
        let bucket = self.family.is_bucket();
        let mut row = FrontierRow {
            rate: bucket.then(|| point.text.clone()),
            window: (!bucket).then(|| point.text.clone()),
            spec,
            size: found.size,
            feasible: found.feasible,
            worst_in_horizon: worst,
            tested: self.tests(point, found.size),
            method: found.method,
            replays: found.replays + audited,
            note: found.note,
            ..FrontierRow::default()
        };
        row.fill(&report);
        if audited == 1 && self.keyed {
            row.refused_most = Some(report.top_keys);
        }
        if !self.counted.is_empty() {
            let requests = self.goal.requests;
            row.checked = Some(Checked {
                requests,
                dropped: found.tally.dropped,
                drop_pct: if requests == 0 {
                    0.0
                } else {
                    found.tally.dropped as f64 * 100.0 / requests as f64
                },
                keys_hurt: found.tally.keys_hurt,
            });
        }
        Ok(row)
    }

    /// True when the log can test `size` at `point` (see [`tests`]).
    pub fn tests(&self, point: &Point, size: u64) -> bool {
        tests(self.log, point, size, self.horizon)
    }

    /// Tallies of `sizes` at `point`, one replay; `key_need`: each key's
    /// zero-drop size at this point.
    fn probe(&self, point: &Point, keyed: KeyFacts, sizes: &[u64]) -> Result<Vec<Probed>> {
        let (key_need, key_wait) = keyed;
        let configs = sizes
            .iter()
            .map(|&s| self.family.config(point, s))
            .collect::<Result<Vec<PolicyConfig>>>()?;
        // Drops only happen to keys that need more than the size; a key
        // that needs no more follows its unbounded replay, waits included.
        let smallest = sizes.iter().copied().min().unwrap_or(0);
        let settled_wait = (0..key_need.len())
            .filter(|&k| key_need[k] <= smallest && (self.counted.is_empty() || self.counted[k]))
            .map(|k| key_wait[k])
            .max()
            .unwrap_or(0);
        Ok(dispatch(
            &configs,
            ProbeJob {
                log: self.log,
                counted: self.counted,
                settled: Some((key_need, smallest)),
                settled_wait,
                per: self.per,
            },
        ))
    }

    /// The smallest size meeting the targets at `point`; `need`: the
    /// largest zero-drop size over the counted keys (`u64::MAX`: some
    /// request never fits).
    fn search(&self, point: &Point, key_need: KeyFacts, need: u64) -> Result<Found> {
        let min = self.family.sizing.min_size;
        let mut tried = Tried {
            sweep: self,
            point,
            key_need,
            seen: HashMap::new(),
            replays: 0,
        };
        // The largest size known to meet the drop targets.
        let mut hi = if need == u64::MAX {
            tried.run(&[CAP])?;
            if !self.goal.drops_ok(&tried.at(CAP)) {
                return Ok(Found {
                    size: CAP,
                    feasible: false,
                    method: "search",
                    replays: tried.replays,
                    note: Some(format!(
                        "some requests cost more than any {} up to {CAP} admits, and the drop targets are missed even at {CAP}",
                        self.family.sizing.size_param
                    )),
                    tally: tried.at(CAP),
                });
            }
            CAP
        } else {
            need.max(min)
        };
        let method;
        if self.costs_vary && hi - min < MAX_SCAN {
            method = "scan";
            let Some(s) = self.scan(&mut tried, min, hi)? else {
                return Ok(Found {
                    size: hi,
                    feasible: false,
                    method,
                    replays: tried.replays,
                    note: Some(self.wait_note(hi, &tried.at(hi))),
                    tally: tried.at(hi),
                });
            };
            hi = s;
        } else {
            method = if self.costs_vary {
                "search-unproven"
            } else if self.goal.zero_drops() && need != u64::MAX {
                "zero-drop"
            } else {
                "search"
            };
            if method != "zero-drop" {
                hi = self.narrow(&mut tried, min, hi)?;
            }
        }
        self.confirm(&mut tried, min, hi, method)
    }

    /// Drops may rise with the size: tries every size from `min` to `hi`,
    /// lowest first; the first meeting the targets.
    fn scan(&self, tried: &mut Tried<'_>, min: u64, hi: u64) -> Result<Option<u64>> {
        let mut from = min;
        while from <= hi {
            let to = (from + probe::MAX_K as u64 - 1).min(hi);
            let sizes: Vec<u64> = (from..=to).collect();
            tried.run(&sizes)?;
            if let Some(s) = sizes.iter().copied().find(|s| self.goal.ok(&tried.at(*s))) {
                return Ok(Some(s));
            }
            from = to + 1;
        }
        Ok(None)
    }

    /// A K-ary search between `lo`, below which sizes miss the drop
    /// targets, and `hi`, which meets them: the smallest that meets them.
    /// The first replay tries the sizes around the least the keys' own
    /// needs allow ([`NeedCurve::floor`]); the next ones the sizes around
    /// where the drops over the target, drawn as a line between the two
    /// ends of the range, reach it ([`Sweep::toward`]).
    fn narrow(&self, tried: &mut Tried<'_>, mut lo: u64, mut hi: u64) -> Result<u64> {
        let curve = NeedCurve::new(tried.key_need.0, self.counted);
        let mut first = true;
        while lo < hi {
            let sizes: Vec<u64> = if (hi - lo) as usize <= K {
                (lo..hi).collect()
            } else if first {
                around(curve.floor(self.goal, lo, hi), lo, hi)
            } else {
                self.toward(tried, lo, hi, curve.top())
            };
            first = false;
            tried.run(&sizes)?;
            for &s in &sizes {
                if self.goal.drops_ok(&tried.at(s)) {
                    hi = hi.min(s);
                }
            }
            for &s in &sizes {
                if s < hi && !self.goal.drops_ok(&tried.at(s)) {
                    lo = lo.max(s + 1);
                }
            }
        }
        Ok(hi)
    }

    /// Sizes to try within `lo..hi` (more than K of them): the two thirds
    /// of the range, and where the line through the drops over the target
    /// at `lo - 1` (a miss) and at `hi` (a meet) crosses zero, with the
    /// sizes on either side of it. With one key's drops falling by one a
    /// size, the line is exact. Without both ends tried, or when the miss
    /// is not in the drops (keys hurt), the range is split evenly.
    /// `top`: the largest zero-drop size of the counted keys.
    fn toward(&self, tried: &Tried<'_>, lo: u64, hi: u64, top: u64) -> Vec<u64> {
        let span = hi - lo;
        let even = |parts: u64| -> Vec<u64> {
            (1..parts)
                .map(|j| lo + (u128::from(span) * u128::from(j) / u128::from(parts)) as u64)
                .collect()
        };
        let below = lo.checked_sub(1).and_then(|a| tried.seen.get(&a));
        // At the largest need of the counted keys nothing is dropped, in
        // the period of the miss either.
        let none = Probed {
            worst_period: below.and_then(|t| t.worst_period).map(|(at, _)| (at, 0)),
            ..Probed::default()
        };
        let at_hi = tried.seen.get(&hi).or((hi >= top).then_some(&none));
        let ends = below.zip(at_hi);
        let (a, b) = match ends.map(|(a, b)| (self.over(a), self.over(b))) {
            Some((a, b)) if a > 0 && b <= 0 => (a, b),
            _ => return even(K as u64 + 1),
        };
        let cross = lo - 1 + (i128::from(span + 1) * a / (a - b)) as u64;
        let mut v = even(3);
        v.extend(
            (cross.saturating_sub(2)..=cross.saturating_add(2)).filter(|s| (lo..hi).contains(s)),
        );
        v.sort_unstable();
        v.dedup();
        v
    }

    /// The drops of `t` over what the drop-rate and drop-count targets
    /// allow, over the whole log or (with `--per`) in its period with the
    /// most drops, whichever is more.
    fn over(&self, t: &Probed) -> i128 {
        let allowed = |requests: u64, keys: u64| {
            let ok = |d: u64| {
                self.goal.period_ok(PeriodCount {
                    dropped: d,
                    keys_hurt: 0,
                    requests,
                    keys,
                })
            };
            let (mut lo, mut hi) = (0, requests);
            while lo < hi {
                let mid = hi - (hi - lo) / 2;
                if ok(mid) { lo = mid } else { hi = mid - 1 }
            }
            i128::from(lo)
        };
        let whole = i128::from(t.dropped) - allowed(self.goal.requests, self.goal.keys);
        let period = match (self.per, t.worst_period) {
            (Some(p), Some((start, dropped))) => {
                let c = p.count(start / p.len, dropped, 0);
                i128::from(dropped) - allowed(c.requests, c.keys)
            }
            _ => i128::MIN,
        };
        whole.max(period)
    }

    /// The answer `hi` and the size below it, replayed directly: `hi` must
    /// meet the drop targets and (unless unproven) the size below miss.
    fn confirm(
        &self,
        tried: &mut Tried<'_>,
        min: u64,
        hi: u64,
        method: &'static str,
    ) -> Result<Found> {
        let check: Vec<u64> = if hi > min { vec![hi - 1, hi] } else { vec![hi] };
        tried.run(&check)?;
        let at = tried.at(hi);
        let (size_param, point) = (self.family.sizing.size_param, &tried.point.text);
        if !self.goal.drops_ok(&at) {
            bail!(
                "internal check failed: {size_param} {hi} at {point} misses the drop targets it was found to meet (please report it)"
            );
        }
        if hi > min && method != "search-unproven" && self.goal.ok(&tried.at(hi - 1)) {
            bail!(
                "internal check failed: {size_param} {} at {point} meets the targets below the size found (please report it)",
                hi - 1
            );
        }
        let feasible = self.goal.wait_ok(&at);
        Ok(Found {
            size: hi,
            feasible,
            method,
            replays: tried.replays,
            note: (!feasible).then(|| self.wait_note(hi, &at)),
            tally: at,
        })
    }

    fn wait_note(&self, size: u64, t: &Probed) -> String {
        let size_param = self.family.sizing.size_param;
        match self.goal.max_wait {
            Some(w) if t.max_wait > w.0 => format!(
                "the drop targets need {size_param} {size} or more here, and at {size} a request waits {} (over --max-wait {})",
                readable(t.max_wait),
                readable(w.0)
            ),
            _ => format!("no {size_param} up to {size} meets the targets"),
        }
    }
}

/// The counted keys' zero-drop sizes at one point, largest first, with
/// their running sums: at a size `b`, every key needing more is refused at
/// least once, and (one request costing one) at least its need less `b`
/// times. Only a guide for where to look: the search decides by replays.
struct NeedCurve {
    desc: Vec<u64>,
    /// `sums[i]`: the sum of `desc[..i]`.
    sums: Vec<u128>,
}

impl NeedCurve {
    fn new(key_need: &[u64], counted: &[bool]) -> NeedCurve {
        let mut desc: Vec<u64> = (0..key_need.len())
            .filter(|&k| counted.is_empty() || counted[k])
            .map(|k| key_need[k])
            .collect();
        desc.sort_unstable_by(|a, b| b.cmp(a));
        let mut sums = Vec::with_capacity(desc.len() + 1);
        sums.push(0u128);
        for (i, &n) in desc.iter().enumerate() {
            // A request no size admits is one refusal, whatever the size.
            let excess = if n == u64::MAX { 1 } else { n };
            sums.push(sums[i] + u128::from(excess));
        }
        NeedCurve { desc, sums }
    }

    /// The largest need (0 without keys).
    fn top(&self) -> u64 {
        self.desc.first().copied().unwrap_or(0)
    }

    /// The keys needing more than `b`, and the least drops they bring.
    fn at(&self, b: u64) -> (u64, u64) {
        let over = self.desc.partition_point(|&n| n > b);
        let finite = self.desc[..over].partition_point(|&n| n == u64::MAX);
        let excess = self.sums[over] - self.sums[finite] - (over - finite) as u128 * u128::from(b);
        let drops = excess + finite as u128;
        (over as u64, u64::try_from(drops).unwrap_or(u64::MAX))
    }

    /// The smallest size in `lo..=hi` whose least drops meet the drop
    /// targets (`hi` when none does).
    fn floor(&self, goal: &Goal, mut lo: u64, mut hi: u64) -> u64 {
        let ok = |b: u64| {
            let (keys_hurt, dropped) = self.at(b);
            goal.period_ok(PeriodCount {
                dropped,
                keys_hurt,
                requests: goal.requests,
                keys: goal.keys,
            })
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if ok(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        hi
    }
}

/// The first sizes tried between `lo` and `hi` when the keys' needs put
/// the answer near `floor`: 8 and 1 below it (for policies whose drops
/// fall a little short of the least, as nginx's counting of the request
/// itself), it, and sizes a sixteenth, an eighth, a quarter and a half of
/// it above it; the drops above the floor fall fast, so the answer is
/// most often near it.
fn around(floor: u64, lo: u64, hi: u64) -> Vec<u64> {
    let mut v = vec![floor.saturating_sub(8), floor.saturating_sub(1), floor];
    for shift in [4, 3, 2, 1] {
        v.push(floor.saturating_add((floor >> shift).max(1)));
    }
    v.retain(|s| (lo..hi).contains(s));
    v.dedup();
    v
}

/// True when `log` can test `size` at `point`: it spans `horizon`, and a
/// full burst's refill at the rate (`size / rate`) or one window. A log
/// of one instant tests only the size, at every point alike (nothing
/// follows to refill for).
pub fn tests(log: &Log, point: &Point, size: u64, horizon: Nanos) -> bool {
    let span = match (log.at.first(), log.at.last()) {
        (Some(a), Some(b)) => u128::from(b - a),
        _ => 0,
    };
    if span == 0 {
        return true;
    }
    let needs = match point.value {
        AxisPoint::Rate(r) => u128::from(size) * u128::from(r.per().0) / u128::from(r.count()),
        AxisPoint::Window(w) => u128::from(w.0),
    };
    span >= needs.max(u128::from(horizon.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Decision, parse_spec};

    /// The keys needing more than a size and their least drops, against
    /// counting them one by one; the sizes tried first stay in range.
    #[test]
    fn need_curve_counts_the_keys_over_a_size() {
        let needs = [0, 3, 9, u64::MAX, 3, 1, 40];
        let counted = [true, true, true, true, true, false, true];
        let curve = NeedCurve::new(&needs, &counted);
        assert_eq!(curve.top(), u64::MAX);
        for b in 0..45 {
            let over: Vec<u64> = (0..needs.len())
                .filter(|&k| counted[k] && needs[k] > b)
                .map(|k| needs[k])
                .collect();
            let least: u64 = over
                .iter()
                .map(|&n| if n == u64::MAX { 1 } else { n - b })
                .sum();
            assert_eq!(curve.at(b), (over.len() as u64, least), "size {b}");
        }
        for (floor, lo, hi) in [(10, 1, 100), (1, 1, 9), (50, 0, 51), (5, 5, 1000)] {
            let v = around(floor, lo, hi);
            assert!(v.len() <= K && v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
            assert!(v.iter().all(|s| (lo..hi).contains(s)), "{v:?}");
            assert!(v.contains(&floor) || floor >= hi, "{v:?}");
            assert!(!v.is_empty(), "{v:?}");
        }
    }

    /// No window of the horizon lets more requests through than the bound
    /// the recommendation ranks by (releases, for the policies that delay).
    #[test]
    fn worst_in_horizon_bounds_every_window() {
        let cases = [
            ("gcra", "2/s"),
            ("token-bucket", "3/s"),
            ("leaky-bucket", "1/s"),
            ("shaper", "2/s"),
            ("nginx:nodelay", "2r/s"),
            ("nginx", "2r/s"),
            ("nginx:delay=2", "20r/m"),
            ("fixed-window", "2s"),
            ("fixed-window:align=first-hit,count=all", "3s"),
            ("sliding-window", "2s"),
            ("sliding-log", "2s"),
        ];
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        for (policy, point) in cases {
            let family = Family::parse(policy).unwrap();
            let p = family.points(
                family.is_bucket().then_some(point),
                (!family.is_bucket()).then_some(point),
            );
            let p = p.unwrap().unwrap().remove(0);
            for size in [family.sizing.min_size, 1, 3, 7] {
                let spec = parse_spec(&family.spec(&p.text, size)).unwrap();
                for h in [Nanos::from_millis(700), Nanos::from_secs(5)] {
                    let bound = family.config(&p, size).unwrap().worst_within(h);
                    for _ in 0..20 {
                        let mut stack = spec.build();
                        let mut out = Vec::new();
                        let mut t = 0u64;
                        for _ in 0..300 {
                            t += next() % 400;
                            let now = Nanos::from_millis(t);
                            if let Decision::Admit { release } = stack.decide(&[Some(0)], now, 1) {
                                out.push(release.0);
                            }
                        }
                        out.sort_unstable();
                        let mut tail = 0;
                        for (i, &r) in out.iter().enumerate() {
                            while out[tail] + h.0 <= r {
                                tail += 1;
                            }
                            let through = (i + 1 - tail) as u64;
                            assert!(
                                through <= bound,
                                "{policy} at {point}, size {size}: {through} in {h} > {bound}"
                            );
                        }
                    }
                }
            }
        }
    }
}
