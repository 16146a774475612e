//! Replays of the in-memory log carrying several candidate policies at once
//! (K states per key, laid out together), with the policy core's own
//! `decide`: every figure here is what an audit replay computes for the
//! same spec, decision by decision, and where a probe sees them all its
//! [`Probed::counts`] are what that replay's report is made from.
//!
//! - [`needs`]: each key through unbounded policies (the largest size a
//!   spec takes), recording the size each key needs for zero drops: the
//!   highest occupancy an admitted request brings it to. Below it that
//!   request is the first one refused; at it nothing is, since the replay
//!   then never refuses and so follows the unbounded one.
//! - [`probe`]: K sizes of one policy, counting what the targets ask:
//!   drops, keys with any drop, the longest wait.

use super::log::{ByKey, Log};
use super::per::Periods;
use crate::engine::counts::Counts;
use crate::ingest::keys::EMPTY_KEY;
use crate::policy::keyed::{Store, prefetch_line, prefetch_lines};
use crate::policy::{Decision, Listed, Policy, PolicyConfig};
use crate::time::Nanos;

/// Most candidates one probe carries (a key's drop flags fit in a `u32`).
pub const MAX_K: usize = 32;

/// Rows ahead whose key's states start loading.
const AHEAD: usize = 16;

/// Work done with the candidates as their own type, so the replay loop is
/// compiled per policy.
pub use crate::policy::table::WithPolicies as Job;

/// Runs `job` on `configs` (all of one policy type).
pub fn dispatch<J: Job>(configs: &[PolicyConfig], job: J) -> J::Out {
    PolicyConfig::with_all(configs, job)
}

/// The zero-drop size of every key under each candidate (unbounded).
pub struct NeedJob<'a> {
    pub log: &'a Log,
    /// What the occupancy after an admit exceeds the size by (nginx counts
    /// the admitted request itself: 1; 0 elsewhere).
    pub offset: u64,
}

/// `need[key · k + c]`: the size key needs under candidate c; `u64::MAX`
/// when one of its requests can never fit.
pub struct Needs {
    pub k: usize,
    pub need: Vec<u64>,
    /// `wait[key · k + c]`: the longest wait of key's requests under
    /// candidate c unbounded, ns; at any size of at least its need the
    /// key's replay follows the unbounded one, so its waits are these.
    /// Empty when the policy never delays (every wait 0).
    pub wait: Vec<u64>,
}

impl Needs {
    #[inline]
    pub fn of(&self, key: usize, c: usize) -> u64 {
        self.need[key * self.k + c]
    }

    #[inline]
    pub fn wait_of(&self, key: usize, c: usize) -> u64 {
        self.wait.get(key * self.k + c).copied().unwrap_or(0)
    }
}

impl Job for NeedJob<'_> {
    type Out = Needs;
    fn run<P: Listed>(self, policies: &[P]) -> Needs {
        let log = self.log;
        let k = policies.len();
        let keys = log.keys();
        let mut store = Store::rows(policies);
        store.reserve_keys(keys);
        let policies = store.row().to_vec();
        let mut need = vec![0u64; k * keys];
        // A policy that never delays waits nowhere: no wait to keep (and
        // no memory to touch for it on every row).
        let shapes = store.info().shapes;
        let mut wait = vec![0u64; if shapes { k * keys } else { 0 }];
        let real = |key: u32| key != EMPTY_KEY;
        each_row(log, log.by_key(), real, |i, key, ahead| {
            // In time order most rows' keys are far apart in memory: their
            // states and needs start loading a few rows ahead.
            if let Some(ahead) = ahead {
                store.prefetch_row(u64::from(ahead));
                let at = ahead as usize * k;
                prefetch_lines(&need[at..at + k]);
                if shapes {
                    prefetch_lines(&wait[at..at + k]);
                }
            }
            let now = Nanos(log.at[i]);
            let cost = log.cost(i);
            let states = store.row_mut(u64::from(key), now);
            let at = key as usize * k;
            for (c, (p, s)) in policies.iter().zip(states).enumerate() {
                let n = &mut need[at + c];
                match p.decide(s, now, cost) {
                    Decision::Admit { release } => {
                        let level = p.admitted_level(s, now).saturating_sub(self.offset);
                        if level > *n {
                            *n = level;
                        }
                        if shapes {
                            let w = &mut wait[at + c];
                            *w = (*w).max(release.0 - now.0);
                        }
                    }
                    Decision::Refuse { .. } => *n = u64::MAX,
                }
            }
        });
        Needs { k, need, wait }
    }
}

/// Calls `step(row, key, ahead)` for every row whose key `wanted` picks
/// (never an exempt row): key after key, each key's rows in time order,
/// with `by_key`; else in time order, `ahead` being the wanted key of the
/// row [`AHEAD`] rows on, if any, whose state the step may start loading.
#[inline(always)]
fn each_row(
    log: &Log,
    by_key: Option<&ByKey>,
    wanted: impl Fn(u32) -> bool,
    mut step: impl FnMut(usize, u32, Option<u32>),
) {
    let Some(by_key) = by_key else {
        for i in 0..log.len() {
            let ahead = log.key.get(i + AHEAD).copied().filter(|&k| wanted(k));
            let key = log.key[i];
            if wanted(key) {
                step(i, key, ahead);
            }
        }
        return;
    };
    let rows = by_key.rows();
    for key in 0..log.keys() {
        if !wanted(key as u32) {
            continue;
        }
        for p in by_key.of_key(key) {
            // A key's rows are spread over the log: the times of the rows
            // a few on (this key's or the next ones') start loading; the
            // key's states stay in cache.
            if let Some(&r) = rows.get(p + AHEAD) {
                prefetch_line(&log.at[r as usize]);
                if let Some(c) = &log.cost {
                    prefetch_line(&c[r as usize]);
                }
            }
            step(rows[p] as usize, key as u32, None);
        }
    }
}

/// What one candidate did, counting only the keys the targets count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Probed {
    pub dropped: u64,
    /// Keys with at least one drop.
    pub keys_hurt: u64,
    /// The longest wait of an admitted request, ns.
    pub max_wait: u64,
    /// With `--per`: some period misses the drop targets.
    pub period_miss: bool,
    /// With `--per`: the start (ns) of the period with the most drops, and
    /// its drops.
    pub worst_period: Option<(u64, u64)>,
    /// The counts of the candidate's audit replay over the whole log, when
    /// the probe saw them all: the policy never delays (no wait figures to
    /// miss) and every key counts (so the drops and keys hurt above are the
    /// log's; the keys skipped as settled needed no more than the smallest
    /// size carried, so had no drop). `None`: replay it as audit does.
    pub counts: Option<Counts>,
}

impl Probed {
    /// Adds what the settled keys did (their longest wait) and, when the
    /// probe saw the whole log (`whole`), the counts of its audit replay.
    fn complete(&mut self, log: &Log, settled_wait: u64, whole: bool) {
        self.max_wait = self.max_wait.max(settled_wait);
        let requests = log.len() as u64;
        self.counts = whole.then(|| Counts {
            requests,
            admitted: requests - self.dropped,
            delayed: 0,
            dropped: self.dropped,
            keys_seen: log.keys() as u64,
            keys_with_drops: self.keys_hurt,
        });
    }
}

/// K candidates in one replay.
pub struct ProbeJob<'a> {
    pub log: &'a Log,
    /// By key id: false for keys left out of the targets (empty: all count).
    pub counted: &'a [bool],
    /// Each key's zero-drop size and the smallest size carried: a key that
    /// needs no more is never refused here, so its rows are skipped (only
    /// where no wait is measured).
    pub settled: Option<(&'a [u64], u64)>,
    /// The longest wait of the settled keys (their waits are the same at
    /// every size carried).
    pub settled_wait: u64,
    /// `--per`: the periods each target must hold in.
    pub per: Option<&'a Periods<'a>>,
}

/// Most period × candidate counts a probe keeps to take the keys one by
/// one with `--per` (beyond, it replays in time order, one period at once).
const MAX_PERIOD_COUNTS: usize = 1 << 20;

/// One probe's drops and keys hurt by period.
struct InPeriod<'a> {
    periods: &'a Periods<'a>,
    k: usize,
    /// The current period's index.
    at: u64,
    /// Where the current period starts and ends, ns (a key's rows come in
    /// time order, so two comparisons tell a row of the same period).
    start: u64,
    end: u64,
    /// Per candidate: its drops and keys hurt in the current period; or,
    /// when the keys come one by one, in every period (`k` a period).
    dropped: Vec<u64>,
    hurt: Vec<u64>,
    /// Keys one by one: the periods entered (the first always, as in time
    /// order); `None` in time order.
    entered: Option<Vec<bool>>,
    /// Per active key: the period of its flags, and the candidates that
    /// refused it there.
    key_at: Vec<u64>,
    key_flags: Vec<u32>,
}

impl<'a> InPeriod<'a> {
    fn new(periods: &'a Periods<'a>, k: usize, active: usize, key_order: bool) -> InPeriod<'a> {
        let n = periods.requests.len();
        let counts = if key_order { n * k } else { k };
        InPeriod {
            periods,
            k,
            at: periods.first,
            start: 0,
            end: 0,
            dropped: vec![0; counts],
            hurt: vec![0; counts],
            entered: key_order.then(|| {
                let mut e = vec![false; n];
                e[0] = true;
                e
            }),
            key_at: vec![u64::MAX; active],
            key_flags: vec![0; active],
        }
    }

    /// Moves to the period of `now`, closing the one before in time order.
    fn enter(&mut self, now: u64, tally: &mut [Probed]) {
        if (self.start..self.end).contains(&now) {
            return;
        }
        let p = now / self.periods.len;
        match self.entered.as_mut() {
            Some(e) => e[(p - self.periods.first) as usize] = true,
            None if p != self.at => self.close(tally),
            None => {}
        }
        self.at = p;
        self.start = p * self.periods.len;
        self.end = (p + 1).saturating_mul(self.periods.len);
    }

    /// Where the current period's counts start.
    fn base(&self) -> usize {
        match self.entered {
            Some(_) => (self.at - self.periods.first) as usize * self.k,
            None => 0,
        }
    }

    /// Counts the refusals `refused` of active key `key`.
    fn refused(&mut self, key: usize, refused: u32) {
        if self.key_at[key] != self.at {
            self.key_at[key] = self.at;
            self.key_flags[key] = 0;
        }
        let first = refused & !self.key_flags[key];
        self.key_flags[key] |= refused;
        let base = self.base();
        let counts = self.dropped[base..base + self.k].iter_mut();
        for (c, (d, h)) in counts.zip(&mut self.hurt[base..base + self.k]).enumerate() {
            *d += u64::from(refused >> c & 1);
            *h += u64::from(first >> c & 1);
        }
    }

    /// Checks the current period for each candidate, and starts afresh.
    fn close(&mut self, tally: &mut [Probed]) {
        judge(self.periods, self.at, &self.dropped, &self.hurt, tally);
        self.dropped.fill(0);
        self.hurt.fill(0);
    }

    /// Checks the periods not checked yet, in time order.
    fn finish(&mut self, tally: &mut [Probed]) {
        let Some(entered) = self.entered.take() else {
            self.close(tally);
            return;
        };
        let k = self.k;
        for (i, _) in entered.iter().enumerate().filter(|(_, e)| **e) {
            let (d, h) = (&self.dropped[i * k..][..k], &self.hurt[i * k..][..k]);
            judge(self.periods, self.periods.first + i as u64, d, h, tally);
        }
    }
}

/// Checks period `at` for each candidate, given its drops and keys hurt
/// there.
fn judge(periods: &Periods, at: u64, dropped: &[u64], hurt: &[u64], tally: &mut [Probed]) {
    for (c, t) in tally.iter_mut().enumerate() {
        let count = periods.count(at, dropped[c], hurt[c]);
        t.period_miss |= !(periods.ok)(count);
        if count.dropped > t.worst_period.map_or(0, |w| w.1) {
            t.worst_period = Some((at * periods.len, count.dropped));
        }
    }
}

impl Job for ProbeJob<'_> {
    type Out = Vec<Probed>;
    fn run<P: Listed>(self, policies: &[P]) -> Vec<Probed> {
        let log = self.log;
        let k = policies.len();
        assert!(k <= MAX_K);
        // Only the keys that count and may be refused get states, numbered
        // compactly (most keys of a real log need little).
        const SKIP: u32 = u32::MAX;
        let mut active = 0u32;
        let slot: Vec<u32> = (0..log.keys())
            .map(|key| {
                let counted = self.counted.is_empty() || self.counted[key];
                let settled = self.settled.is_some_and(|(need, size)| need[key] <= size);
                if counted && !settled {
                    active += 1;
                    active - 1
                } else {
                    SKIP
                }
            })
            .collect();
        // One bit per key tells a skipped row without touching `slot`
        // (the bits stay in cache; `slot` is four bytes a key).
        let mut live = vec![0u64; log.keys().div_ceil(64)];
        for (key, &s) in slot.iter().enumerate() {
            live[key / 64] |= u64::from(s != SKIP) << (key % 64);
        }
        let is_live = |key: u32| {
            live.get(key as usize / 64)
                .is_some_and(|w| w >> (key % 64) & 1 != 0)
        };
        let mut store = Store::rows(policies);
        store.reserve_keys(active as usize);
        let policies = store.row().to_vec();
        let mut hurt = vec![0u32; active as usize];
        let mut tally = vec![Probed::default(); k];
        let shapes = store.info().shapes;
        // Keys are independent and the tallies add up (with `--per`, by
        // period), so the live keys are taken one by one.
        let by_key = log.by_key().filter(|_| {
            self.per
                .is_none_or(|p| p.requests.len().saturating_mul(k) <= MAX_PERIOD_COUNTS)
        });
        let mut in_period = self
            .per
            .map(|periods| InPeriod::new(periods, k, active as usize, by_key.is_some()));
        each_row(log, by_key, is_live, |i, key, ahead| {
            if let Some(ahead) = ahead {
                store.prefetch_row(u64::from(slot[ahead as usize]));
            }
            let key = slot[key as usize];
            let now = Nanos(log.at[i]);
            if let Some(p) = in_period.as_mut() {
                p.enter(now.0, &mut tally);
            }
            let cost = log.cost(i);
            let mut refused = 0u32;
            let states = store.row_mut(u64::from(key), now);
            for (c, (p, s)) in policies.iter().zip(states).enumerate() {
                match p.decide(s, now, cost) {
                    Decision::Admit { release } => {
                        if shapes {
                            let t = &mut tally[c];
                            t.max_wait = t.max_wait.max(release.0 - now.0);
                        }
                    }
                    Decision::Refuse { .. } => {
                        tally[c].dropped += 1;
                        refused |= 1 << c;
                    }
                }
            }
            if let Some(p) = in_period.as_mut().filter(|_| refused != 0) {
                p.refused(key as usize, refused);
            }
            let h = &mut hurt[key as usize];
            let first = refused & !*h;
            if first != 0 {
                *h |= refused;
                for (c, t) in tally.iter_mut().enumerate() {
                    t.keys_hurt += u64::from(first >> c & 1);
                }
            }
        });
        if let Some(p) = in_period.as_mut() {
            p.finish(&mut tally);
        }
        let whole = !shapes && self.counted.iter().all(|&c| c);
        for t in &mut tally {
            t.complete(log, self.settled_wait, whole);
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::input::Event;
    use crate::ingest::stream::Sink;
    use crate::policy::parse_spec;

    fn log(rows: &[(u64, u32, u32)]) -> Log {
        let mut l = Log::new(false, true);
        let evs: Vec<Event> = rows
            .iter()
            .enumerate()
            .map(|(i, &(t, _, c))| Event {
                at: Nanos::from_millis(t),
                row: i as u64 + 1,
                line: 0,
                file: 0,
                cost: c,
                keys: crate::ingest::input::first_key(0),
            })
            .collect();
        l.take(&evs).unwrap();
        l
    }

    fn config(s: &str) -> PolicyConfig {
        parse_spec(s).unwrap().members[0].config
    }

    /// Key by key visits the same rows as time order, each key's rows in
    /// time order, exempt rows and unwanted keys in neither.
    #[test]
    fn key_order_visits_the_rows_of_time_order() {
        let mut l = Log::new(true, false);
        let mut seed = 5u64;
        let evs: Vec<Event> = (0..500u64)
            .map(|i| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let key = match (seed >> 33) % 9 {
                    0 => EMPTY_KEY,
                    k => (k % 5) as u32,
                };
                Event {
                    at: Nanos::from_millis(i * 37),
                    row: i + 1,
                    line: 0,
                    file: 0,
                    cost: 1,
                    keys: crate::ingest::input::first_key(key),
                }
            })
            .collect();
        for k in 0..5u8 {
            l.names.push(&[b'k', b'0' + k]);
            l.requests_by_key.push(0);
        }
        l.take(&evs).unwrap();
        let wanted = |k: u32| k != EMPTY_KEY && k != 3;
        let mut by_time = Vec::new();
        each_row(&l, None, wanted, |i, k, _| by_time.push((k, i)));
        let mut by_key = Vec::new();
        each_row(&l, l.by_key(), wanted, |i, k, _| by_key.push((k, i)));
        assert!(by_key.windows(2).all(|w| w[0] < w[1]), "{by_key:?}");
        by_time.sort_unstable();
        assert_eq!(by_time, by_key);
        assert!(by_key.iter().all(|&(k, i)| l.key[i] == k && wanted(k)));
        assert!(by_key.len() > 300);
    }

    /// With `--per`, seven candidates in one probe (too many period counts
    /// to take the keys one by one: time order) tally as each alone (keys
    /// one by one): drops, keys hurt, the missed and the worst periods.
    #[test]
    fn per_period_tallies_agree_in_both_orders() {
        let mut l = Log::new(true, false);
        let mut seed = 9u64;
        let mut t = 0;
        let evs: Vec<Event> = (0..600u64)
            .map(|i| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                t += (seed >> 33) % 600;
                Event {
                    at: Nanos::from_millis(t),
                    row: i + 1,
                    line: 0,
                    file: 0,
                    cost: 1,
                    keys: crate::ingest::input::first_key(((seed >> 20) % 4) as u32),
                }
            })
            .collect();
        for k in 0..4u8 {
            l.names.push(&[b'k', b'0' + k]);
            l.requests_by_key.push(0);
        }
        l.take(&evs).unwrap();
        let ok = |c: super::super::per::PeriodCount| c.dropped * 4 <= c.requests && c.keys_hurt < 2;
        let periods = Periods::of(&l, &[], Nanos::from_millis(1).0, &ok).unwrap();
        let configs: Vec<PolicyConfig> = (1..=7)
            .map(|b| config(&format!("gcra:rate=2/s,burst={b}")))
            .collect();
        assert!(periods.requests.len() * configs.len() > MAX_PERIOD_COUNTS);
        assert!(periods.requests.len() <= MAX_PERIOD_COUNTS);
        let job = || ProbeJob {
            log: &l,
            counted: &[],
            settled: None,
            settled_wait: 0,
            per: Some(&periods),
        };
        let together = dispatch(&configs, job());
        for (c, t) in configs.iter().zip(&together) {
            assert_eq!(dispatch(std::slice::from_ref(c), job())[0], *t);
        }
        assert!(together.iter().any(|t| t.period_miss && t.dropped > 0));
        assert!(together.iter().any(|t| !t.period_miss));
    }

    /// The costs counterexample: a larger bucket drops more.
    #[test]
    fn drops_with_costs_are_not_monotone_in_burst() {
        let rows: Vec<(u64, u32, u32)> = [
            (0, 2),
            (0, 3),
            (300, 3),
            (400, 1),
            (400, 3),
            (400, 3),
            (500, 1),
            (800, 2),
            (805, 1),
            (855, 1),
            (855, 1),
            (1855, 1),
        ]
        .iter()
        .map(|&(t, c)| (t, 0, c))
        .collect();
        let l = log(&rows);
        let t = dispatch(
            &[
                config("gcra:rate=1/s,burst=4"),
                config("gcra:rate=1/s,burst=5"),
            ],
            ProbeJob {
                log: &l,
                counted: &[],
                settled: None,
                settled_wait: 0,
                per: None,
            },
        );
        assert_eq!((t[0].dropped, t[1].dropped), (8, 9));
    }

    /// The need is the smallest burst with no drop, checked against every
    /// burst around it.
    #[test]
    fn need_is_the_smallest_size_without_drops() {
        let mut seed = 7u64;
        for round in 0..40 {
            let mut rows = Vec::new();
            let mut t = 0;
            for _ in 0..60 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                t += (seed >> 33) % 700;
                let cost = if round % 2 == 0 {
                    1
                } else {
                    1 + (seed >> 20) as u32 % 3
                };
                rows.push((t, 0, cost));
            }
            let l = log(&rows);
            for family in ["gcra", "shaper", "nginx", "token-bucket"] {
                let rate = if family == "nginx" { "2r/s" } else { "2/s" };
                let param = "burst";
                let big = config(&format!("{family}:rate={rate},{param}={}", 1_000_000_000));
                let (_, sizing) = crate::policy::table::sizing_of(family).unwrap();
                let offset = sizing.level_over_size;
                let need = dispatch(&[big], NeedJob { log: &l, offset }).of(0, 0);
                for b in sizing.min_size..need + 3 {
                    let t = dispatch(
                        &[config(&format!("{family}:rate={rate},{param}={b}"))],
                        ProbeJob {
                            log: &l,
                            counted: &[],
                            settled: None,
                            settled_wait: 0,
                            per: None,
                        },
                    );
                    assert_eq!(
                        t[0].dropped == 0,
                        b >= need,
                        "{family} burst {b}, need {need}"
                    );
                }
            }
        }
    }
}
