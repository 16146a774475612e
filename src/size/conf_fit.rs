//! The sweep and the pick of `size --nginx-conf`: every candidate is the
//! audit replay of the whole config with one zone's rate or one line's
//! burst changed, so the figures of a line are what nginx does to the rows
//! it sees with every other limit of the request as it stands.
//!
//! What a line sees and does, per nginx (all limits of a location are
//! checked in order; the first that refuses rejects the request and nginx
//! checks no further; a rejected request stores nothing in any zone; an
//! admitted one waits for the largest delay of its limits):
//! - seen: the rows routed to one of its locations whose key in its zone
//!   is not empty, and that no earlier limit of the list refused;
//! - dropped: the rows it refused;
//! - delayed and wait: its own delay of the rows every limit admitted
//!   (the request waits for the largest of its limits' delays, so a wait
//!   target met by each line is met by the request).
//!
//! The pick, per zone in the order zones are written: on a ladder of
//! round nginx rates, each line of the zone at the smallest burst that
//! meets the targets (found by doubling, then halving the gap, assuming
//! fewer drops with a larger burst); of the rates where every line meets
//! them, the tightest as `size -p` picks (the fewest requests through in
//! any `--horizon`, then the smaller bursts, then the lower rate). A burst the log cannot test (a
//! full burst refills over more than the log's span) is never picked. Lines sized later can change what
//! an earlier line sees, so the whole sized config is replayed again, and
//! sized again (at most three rounds) until every line meets the targets.

use super::conf_guard::{Factor, Guard, Kept, zone_text};
use super::conf_rows::{Rows, Setting, Unit};
use super::goal::Goal;
use super::outliers::Found;
use crate::engine::candidates::per::PeriodCount;
use crate::engine::conf::{ConfExec, Met, ZoneUse};
use crate::nginx_conf::NginxConf;
use crate::policy::nginx::NginxRate;
use crate::policy::{Listed, NginxLimitReq};
use crate::time::Nanos;
use crate::wait_stats::{Percentiles, WaitStats};
use anyhow::Result;
use std::collections::{HashMap, HashSet};

/// What one line did over a replay.
#[derive(Clone, Debug, Default)]
pub struct Fig {
    pub seen: u64,
    pub dropped: u64,
    pub delayed: u64,
    waits: WaitStats,
    keys: HashSet<u32>,
    /// Drops by key, for the keys it refused at least once.
    hurt: HashMap<u32, u64>,
    /// `--per`: (requests, drops) by period index.
    periods: HashMap<u64, (u64, u64)>,
    /// The rows of keys left out of the targets (`--exclude-keys`) it
    /// saw, and dropped; counted in none of the figures above.
    pub excluded: (u64, u64),
    /// The same for its outliers, and each outlier's drops.
    pub outliers: (u64, u64),
    pub outlier_drops: HashMap<u32, u64>,
}

impl Fig {
    fn count(&mut self, at: u64, key: u32, met: Option<u64>, per: Option<u64>) {
        self.seen += 1;
        self.keys.insert(key);
        let dropped = met.is_none();
        if let Some(w) = met {
            self.delayed += u64::from(w > 0);
            self.waits.record(w);
        } else {
            self.dropped += 1;
            *self.hurt.entry(key).or_default() += 1;
        }
        if let Some(p) = per {
            let c = self.periods.entry(at / p).or_default();
            c.0 += 1;
            c.1 += u64::from(dropped);
        }
    }

    fn count_outlier(&mut self, key: u32, dropped: bool) {
        self.outliers.0 += 1;
        if dropped {
            self.outliers.1 += 1;
            *self.outlier_drops.entry(key).or_default() += 1;
        }
    }

    pub fn keys(&self) -> u64 {
        self.keys.len() as u64
    }

    pub fn keys_hurt(&self) -> u64 {
        self.hurt.len() as u64
    }

    /// The keys it refused, and how often.
    pub fn hurt(&self) -> &HashMap<u32, u64> {
        &self.hurt
    }

    pub fn waits(&self) -> Percentiles {
        self.waits.clone().percentiles()
    }
}

/// nginx's rate in thousandths of a request per second.
fn rate_m(rate: NginxRate) -> u64 {
    match rate {
        NginxRate::PerSec(n) => n * 1000,
        NginxRate::PerMin(n) => n * 1000 / 60,
    }
}

/// The rates tried, lowest first: round values from 1r/m to 100000r/s.
fn ladder() -> Vec<NginxRate> {
    let mut out: Vec<NginxRate> = [1, 2, 3, 5, 6, 10, 12, 15, 20, 30]
        .into_iter()
        .map(NginxRate::PerMin)
        .collect();
    let mut scale = 1;
    while scale <= 10_000 {
        for n in [1, 2, 3, 5] {
            out.push(NginxRate::PerSec(n * scale));
        }
        scale *= 10;
    }
    out.push(NginxRate::PerSec(100_000));
    out
}

/// The sized config and what it does.
pub struct Fitted {
    pub setting: Setting,
    /// Each line's figures under `setting`.
    pub after: Vec<Fig>,
    /// Why a line meets the targets at no rate tried (left as written).
    pub missed: Vec<Option<String>>,
    /// By zone: why it was left as written though rows reach it.
    pub kept: Vec<Option<Kept>>,
    pub zone_use: Vec<ZoneUse>,
    pub notes: Vec<String>,
}

/// Replays of one config with settings changed.
pub struct Fit<'a> {
    exec: &'a mut ConfExec,
    units: &'a [Unit],
    rows: &'a Rows,
    /// By line: the targets it is sized to.
    goals: &'a [Goal],
    per: Option<u64>,
    /// The line of (location, index in its list).
    unit_of: Vec<Vec<usize>>,
    /// The rows some limit checks (the others change no zone); all until
    /// the first replay.
    limited: Option<Vec<u32>>,
    reach: Reach,
    /// The lines that see rows (known after the first replay).
    tested: Vec<bool>,
    met: Vec<Met>,
    span_ns: u64,
    /// `--horizon`: how tight a limit is is the most it lets through in
    /// any span of it.
    horizon: Nanos,
    excluded: Excluded,
    /// By line: its outliers, left out of its targets (when not kept).
    outliers: Vec<Option<Found>>,
    /// While finding the outliers: (line, key, time) of every row a line
    /// sees.
    seen: Option<Vec<(u32, u32, u64)>>,
}

/// Which rows can change a zone's lines.
#[derive(Default)]
struct Reach {
    /// The location of each of `limited`'s rows.
    loc_of: Vec<u32>,
    /// The zones of each location's limits.
    zones_of_loc: Vec<Vec<usize>>,
    /// While one zone is sized: the rows that reach it or a zone sharing
    /// a location with it (and so on); no other row changes its lines.
    only: Option<Vec<u32>>,
    /// The rows' times compressed by `num / den` around the first (the
    /// same requests arriving that many times as fast).
    speed: Option<(u64, u64)>,
}

/// Keys left out of the targets (`--exclude-keys`), by their text in a
/// zone; each zone's key ids looked up once.
#[derive(Default)]
struct Excluded {
    names: HashSet<Vec<u8>>,
    by_zone: HashMap<(usize, u32), bool>,
}

impl<'a> Fit<'a> {
    pub fn new(
        exec: &'a mut ConfExec,
        conf: &NginxConf,
        units: &'a [Unit],
        rows: &'a Rows,
        goals: &'a [Goal],
        (per, horizon): (Option<u64>, Nanos),
    ) -> Fit<'a> {
        let mut unit_of: Vec<Vec<usize>> = conf
            .locations
            .iter()
            .map(|l| vec![usize::MAX; l.limits.len()])
            .collect();
        for (u, unit) in units.iter().enumerate() {
            for &(l, i) in &unit.members {
                unit_of[l][i] = u;
            }
        }
        let zones_of_loc = (unit_of.iter())
            .map(|l| {
                l.iter()
                    .filter_map(|&u| units.get(u))
                    .map(|u| u.zone)
                    .collect()
            })
            .collect();
        exec.trace();
        let at = |i: usize| rows.events.get(i).map_or(0, |e| e.at.0);
        Fit {
            exec,
            units,
            rows,
            goals,
            per,
            unit_of,
            limited: None,
            reach: Reach {
                zones_of_loc,
                ..Reach::default()
            },
            tested: vec![false; units.len()],
            met: Vec::new(),
            span_ns: at(rows.events.len().saturating_sub(1)) - at(0),
            horizon,
            excluded: Excluded::default(),
            outliers: Vec::new(),
            seen: None,
        }
    }

    /// Each line's outliers on the rows it sees under `s` (the config as
    /// written); unless `keep`, left out of its targets from now on.
    /// Only the lines of `clients` (by line: its zone's key names clients,
    /// not routes) are looked at.
    pub fn find_outliers(
        &mut self,
        s: &Setting,
        keep: bool,
        clients: &[bool],
    ) -> Result<Vec<Option<Found>>> {
        self.seen = Some(Vec::new());
        self.replay(s)?;
        let mut seen = self.seen.take().unwrap_or_default();
        // A line left without rows has too few keys: no outliers.
        seen.retain(|&(u, _, _)| clients[u as usize]);
        let found = Found::per_line(seen, self.units.len());
        if !keep {
            self.outliers = found.clone();
        }
        Ok(found)
    }

    /// True when key `id` is an outlier of line `u` left out of its targets.
    fn is_outlier(&self, u: usize, id: u32) -> bool {
        self.outliers
            .get(u)
            .is_some_and(|f| f.as_ref().is_some_and(|f| f.has(id)))
    }

    /// Leaves the keys `names` (as a zone's key gives them) out of every
    /// line's targets and figures.
    pub fn exclude(&mut self, names: HashSet<Vec<u8>>) {
        self.excluded.names = names;
    }

    /// Every line's figures under `s` with the requests arriving `num /
    /// den` times as fast.
    pub fn at_speed(&mut self, s: &Setting, (num, den): (u64, u64)) -> Result<Vec<Fig>> {
        self.reach.speed = Some((num, den));
        let figs = self.replay(s);
        self.reach.speed = None;
        figs
    }

    /// True when key `id` of zone `z` is left out of the targets.
    fn is_excluded(&mut self, z: usize, id: u32) -> bool {
        if self.excluded.names.is_empty() {
            return false;
        }
        let (exec, rows, ex) = (&self.exec, self.rows, &mut self.excluded);
        *ex.by_zone
            .entry((z, id))
            .or_insert_with(|| ex.names.contains(exec.key_name(z, id, &rows.names)))
    }

    /// True when a line of zone `z` saw rows.
    pub fn zone_reached(&self, z: usize) -> bool {
        self.units
            .iter()
            .zip(&self.tested)
            .any(|(u, &t)| t && u.zone == z)
    }

    /// Every line's figures under `s`.
    pub fn replay(&mut self, s: &Setting) -> Result<Vec<Fig>> {
        self.exec.restart();
        for (u, unit) in self.units.iter().enumerate() {
            let p = NginxLimitReq::new(s.rates[unit.zone], s.bursts[u], unit.delay);
            for &(l, i) in &unit.members {
                self.exec.set_limit(l, i, p);
            }
        }
        let mut figs = vec![Fig::default(); self.units.len()];
        let first = self.limited.is_none();
        let mut limited = Vec::new();
        let all = self.rows.events.len() as u32;
        let order: Box<dyn Iterator<Item = u32>> = match (&self.reach.only, &self.limited) {
            (Some(l), _) | (None, Some(l)) => Box::new(l.clone().into_iter()),
            (None, None) => Box::new(0..all),
        };
        let start = self.rows.events.first().map_or(0, |e| e.at.0);
        for r in order {
            let mut ev = self.rows.events[r as usize];
            if let Some((num, den)) = self.reach.speed {
                let since = u128::from(ev.at.0 - start) * u128::from(den) / u128::from(num);
                ev.at = Nanos(start + since as u64);
            }
            let ev = &ev;
            self.exec.decide(ev, &self.rows.names, false)?;
            let loc = self.exec.last_row(&mut self.met);
            if first && !self.met.is_empty() {
                limited.push(r);
                self.reach.loc_of.push(loc as u32);
            }
            let met = std::mem::take(&mut self.met);
            for &(i, key, d) in &met {
                let u = self.unit_of[loc][i];
                if self.is_excluded(self.units[u].zone, key) {
                    figs[u].excluded.0 += 1;
                    figs[u].excluded.1 += u64::from(d.is_none());
                    continue;
                }
                if let Some(seen) = &mut self.seen {
                    seen.push((u as u32, key, ev.at.0));
                }
                if self.is_outlier(u, key) {
                    figs[u].count_outlier(key, d.is_none());
                } else {
                    figs[u].count(ev.at.0, key, d, self.per);
                }
            }
            self.met = met;
        }
        if first {
            self.limited = Some(limited);
            self.tested = figs.iter().map(|f| f.seen > 0).collect();
        }
        Ok(figs)
    }

    /// Line `u`'s drop targets hold for `f`, over the log and in every
    /// period.
    fn drops_ok(&self, u: usize, f: &Fig) -> bool {
        let goal = &self.goals[u];
        let whole = PeriodCount {
            dropped: f.dropped,
            keys_hurt: f.keys_hurt(),
            requests: f.seen,
            keys: f.keys(),
        };
        goal.period_ok(whole)
            && f.periods.values().all(|&(requests, dropped)| {
                goal.period_ok(PeriodCount {
                    dropped,
                    requests,
                    ..PeriodCount::default()
                })
            })
    }

    /// Why line `u` misses the targets under `s` (`None`: it meets them).
    fn miss(&self, u: usize, s: &Setting, f: &Fig) -> Option<String> {
        if !self.drops_ok(u, f) {
            return Some("drops more than the target".into());
        }
        let max = f.waits().max;
        if let Some(w) = self.goals[u].max_wait.filter(|w| max > w.0) {
            return Some(format!(
                "waits up to {}, over the wait target {}",
                crate::report::size::readable(max),
                crate::report::size::readable(w.0)
            ));
        }
        (s.bursts[u] > self.testable_burst(s.rates[self.units[u].zone])).then(|| {
            "a full burst refills over more than the log's span: the log cannot test it".into()
        })
    }

    /// The largest burst whose refill at `rate` the log spans.
    fn testable_burst(&self, rate: NginxRate) -> u64 {
        (u128::from(self.span_ns) * u128::from(rate_m(rate)) / 1_000_000_000_000) as u64
    }

    /// The smallest burst of line `u` that meets the targets at the rates
    /// of `s`, set in `s`; `None` (today's burst put back) when none does.
    fn smallest_burst(&mut self, s: &mut Setting, u: usize) -> Result<Option<u64>> {
        let today = s.bursts[u];
        let cap = self.testable_burst(s.rates[self.units[u].zone]);
        let ok_at = |fit: &mut Self, s: &mut Setting, b: u64| -> Result<bool> {
            s.bursts[u] = b;
            let figs = fit.replay(s)?;
            Ok(fit.drops_ok(u, &figs[u]))
        };
        let (mut lo, mut hi) = (0, 0);
        if !ok_at(self, s, 0)? {
            hi = 1;
            while !ok_at(self, s, hi)? {
                if hi >= cap {
                    s.bursts[u] = today;
                    return Ok(None);
                }
                lo = hi;
                hi = (hi * 2).min(cap.max(1));
            }
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if ok_at(self, s, mid)? {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
        }
        s.bursts[u] = hi;
        let figs = self.replay(s)?;
        if self.miss(u, s, &figs[u]).is_some() {
            s.bursts[u] = today;
            return Ok(None);
        }
        Ok(Some(hi))
    }

    /// Sizes every line of zone `z` at `rate`: true when each meets the
    /// targets at some burst (set in `s`).
    fn feasible(&mut self, s: &mut Setting, z: usize, rate: NginxRate) -> Result<bool> {
        s.rates[z] = rate;
        for u in 0..self.units.len() {
            if self.units[u].zone == z && self.tested[u] && self.smallest_burst(s, u)?.is_none() {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The most requests zone `z`'s lines that see rows let through in
    /// any `--horizon` under `s` (size's measure of how tight a limit is).
    /// Then their bursts, for ties.
    fn through(&self, s: &Setting, z: usize) -> (u64, u64) {
        (0..self.units.len())
            .filter(|&u| self.units[u].zone == z && self.tested[u])
            .map(|u| {
                let p = NginxLimitReq::new(s.rates[z], s.bursts[u], self.units[u].delay);
                (p.worst_within(self.horizon), s.bursts[u])
            })
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }

    /// Zone `z` at the tightest rate of the ladder where every line meets
    /// the targets: the fewest requests through in any `--horizon`, then
    /// the smallest bursts, then the lowest rate (as `size -p` picks); false (the zone as it was)
    /// when no rate meets them.
    fn size_zone(&mut self, s: &mut Setting, z: usize) -> Result<bool> {
        // Only zone z's lines' figures are read while it is sized.
        self.reach.only = Some(self.rows_reaching(z));
        let sized = self.size_zone_on_its_rows(s, z);
        self.reach.only = None;
        sized
    }

    /// The rows that change what zone `z`'s lines see: those of every
    /// location whose limits name `z`, or a zone that shares a location
    /// with one of those (and so on), since a zone's state is made by
    /// every row that reaches it.
    fn rows_reaching(&self, z: usize) -> Vec<u32> {
        let mut zones = vec![false; self.exec_zones()];
        zones[z] = true;
        let mut grew = true;
        while grew {
            grew = false;
            for l in &self.reach.zones_of_loc {
                if l.iter().any(|&y| zones[y]) {
                    for &y in l {
                        grew |= !zones[y];
                        zones[y] = true;
                    }
                }
            }
        }
        let touches = |loc: u32| {
            self.reach.zones_of_loc[loc as usize]
                .iter()
                .any(|&y| zones[y])
        };
        let limited = self.limited.as_deref().unwrap_or_default();
        (limited.iter().zip(&self.reach.loc_of))
            .filter(|&(_, &loc)| touches(loc))
            .map(|(&r, _)| r)
            .collect()
    }

    /// The number of zones.
    fn exec_zones(&self) -> usize {
        self.units.iter().map(|u| u.zone + 1).max().unwrap_or(0)
    }

    fn size_zone_on_its_rows(&mut self, s: &mut Setting, z: usize) -> Result<bool> {
        let kept = s.clone();
        let ladder = ladder();
        let (mut lo, mut hi) = (0, ladder.len() - 1);
        if !self.feasible(s, z, ladder[hi])? {
            *s = kept;
            return Ok(false);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.feasible(s, z, ladder[mid])? {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        self.feasible(s, z, ladder[hi])?;
        let mut best = (self.through(s, z), s.clone());
        for &rate in &ladder[hi + 1..] {
            // A line lets through at least its rate over the horizon and
            // one request, whatever its burst: no faster rate can win.
            let mut floor = s.clone();
            floor.rates[z] = rate;
            floor.bursts.iter_mut().for_each(|b| *b = 0);
            if self.through(&floor, z).0 > best.0.0 {
                break;
            }
            if self.feasible(s, z, rate)? && self.through(s, z) < best.0 {
                best = (self.through(s, z), s.clone());
            }
        }
        *s = best.1;
        Ok(true)
    }

    /// The text of key `id` of zone `z`.
    pub fn key_name(&self, z: usize, id: u32) -> String {
        String::from_utf8_lossy(self.exec.key_name(z, id, &self.rows.names)).into_owned()
    }

    /// The lines of zone `z` that see rows.
    pub fn lines(&self, z: usize) -> Vec<usize> {
        (0..self.units.len())
            .filter(|&u| self.units[u].zone == z && self.tested[u])
            .collect()
    }

    /// Zone `z`, left as written when `guard` says so: its lines meet the
    /// targets under `today` (figures `before`) and `--tighten` is not
    /// given. The tightest that would meet them is found for the report.
    fn keep_as_written(
        &mut self,
        today: &Setting,
        before: &[Fig],
        z: usize,
        guard: &Guard,
    ) -> Result<Option<Kept>> {
        let lines = self.lines(z);
        let meets = lines
            .iter()
            .all(|&u| self.miss(u, today, &before[u]).is_none());
        if guard.tighten || !meets {
            return Ok(None);
        }
        let mut tight = today.clone();
        let tightest = self.size_zone(&mut tight, z)?.then(|| {
            let f = Factor::of(today, &tight, z, &lines);
            (zone_text(&tight, z, &lines), f)
        });
        let tightest = tightest.filter(|(_, f)| !f.describe().is_empty());
        Ok(Some(Kept::MeetsAsWritten { tightest }))
    }

    /// Sizes every zone a line of which sees rows (after the first
    /// replay, under `today`, whose figures are `before`), within `guard`.
    /// `asked`, by zone: the command line keeps it as written, and why.
    pub fn fit(
        &mut self,
        (today, before): (&Setting, &[Fig]),
        guard: &Guard,
        asked: &[Option<String>],
    ) -> Result<Fitted> {
        let zones = today.rates.len();
        let mut s = today.clone();
        let mut failed = vec![false; zones];
        let mut kept = vec![None; zones];
        for (z, kept) in kept.iter_mut().enumerate() {
            if let Some(why) = &asked[z] {
                *kept = Some(Kept::Asked(why.clone()));
            } else if self.zone_reached(z) {
                *kept = self.keep_as_written(today, before, z, guard)?;
            }
        }
        let mut notes = Vec::new();
        let mut after;
        let mut round = 1;
        loop {
            for z in 0..zones {
                if !self.zone_reached(z) || kept[z].is_some() {
                    continue;
                }
                failed[z] = !self.size_zone(&mut s, z)?;
                let lines = self.lines(z);
                let factor = Factor::of(today, &s, z, &lines);
                if !failed[z] && guard.max_change.is_some_and(|m| factor.worst() > m) {
                    let needs = zone_text(&s, z, &lines);
                    kept[z] = Some(Kept::TooFar { needs, factor });
                    s.rates[z] = today.rates[z];
                    for &u in &lines {
                        s.bursts[u] = today.bursts[u];
                    }
                }
            }
            after = self.replay(&s)?;
            // A zone kept as written is not sized again.
            let missing = (0..self.units.len()).any(|u| {
                kept[self.units[u].zone].is_none() && self.miss(u, &s, &after[u]).is_some()
            });
            if !missing || round == 3 {
                break;
            }
            notes.push(format!(
                "round {round}: a line sized later changed what an earlier one sees; sized again"
            ));
            round += 1;
        }
        let missed = (0..self.units.len())
            .map(|u| {
                let zone = self.units[u].zone;
                // A line kept by request has no targets to miss.
                if let Some(Kept::Asked(_)) = kept[zone] {
                    return None;
                }
                let why = self.miss(u, &s, &after[u])?;
                if let Some(k @ Kept::TooFar { .. }) = &kept[zone] {
                    return Some(format!("{why} as written; {}", k.describe(guard)));
                }
                Some(if failed[zone] {
                    format!(
                        "meets the targets at no rate up to 100000r/s with the other limits as they are; left as written, where it {why}"
                    )
                } else {
                    format!("sized, and with the other lines sized it still {why}")
                })
            })
            .collect();
        let zone_use = (0..zones)
            .map(|z| self.exec.zone_use(z, &self.rows.names))
            .collect();
        Ok(Fitted {
            setting: s,
            after,
            missed,
            kept,
            zone_use,
            notes,
        })
    }
}
