//! `--replicas N`: one policy run as N independent instances behind a
//! balancer, as local limits are (an nginx zone, an Envoy local rate
//! limit, a Traefik middleware: each replica counts only what it is sent).
//! Each row goes to one instance, chosen by the [`Balance`]; that
//! instance's decision is the row's.
//!
//! Beside them the policy as written, one instance fed every row, is
//! replayed too, so the report can say what clients really get against
//! what the config says: per key (the report's key column) and for all
//! rows together, the most requests admitted in one window (aligned to
//! the epoch, counted when each request is released to the upstream).

use super::config_run::ConfigRun;
use super::outcome::{EdgeFigures, Gateway, NginxReport, ReplicaReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::KeyNames;
use crate::policy::keyed::{KeyId, Levels, Stack};
use crate::policy::table::Info;
use crate::policy::{Decision, LevelKind, Spec};
use crate::time::Nanos;
use anyhow::Result;
use std::collections::VecDeque;
use std::fmt;

/// How a balancer spreads requests over the replicas.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Balance {
    /// One rotation over all requests, as nginx's and HAProxy's default.
    RoundRobin,
    /// Each request to a replica drawn at random (a seeded generator: the
    /// same seed, the same spread).
    Random(u64),
    /// By a hash of the row's value in key column `slot` (named `column`):
    /// every request of one value to one replica (sticky sessions,
    /// `hash $remote_addr`, `balance source`).
    Hash { slot: usize, column: String },
}

impl Balance {
    /// Reads `--balance`: `round-robin`, `random`, `random:SEED` or
    /// `hash(COLUMN)`, `slot` giving the key column's place.
    pub fn parse(
        text: &str,
        slot: impl FnOnce(&str) -> anyhow::Result<usize>,
    ) -> anyhow::Result<Balance> {
        let shown = || crate::quote::shown_str(text);
        Ok(match text {
            "round-robin" | "rr" => Balance::RoundRobin,
            "random" => Balance::Random(0),
            _ => match (text.strip_prefix("random:"), text.strip_prefix("hash(")) {
                (Some(seed), _) => Balance::Random(seed.parse().map_err(|_| {
                    anyhow::anyhow!(
                        "--balance '{}': the seed is not a whole number, e.g. random:7",
                        shown()
                    )
                })?),
                (_, Some(rest)) if rest.ends_with(')') && rest.len() > 1 => {
                    let column = rest[..rest.len() - 1].to_string();
                    Balance::Hash {
                        slot: slot(&column)?,
                        column,
                    }
                }
                _ => anyhow::bail!(
                    "--balance '{}': expected round-robin, random, random:SEED or hash(COLUMN)",
                    shown()
                ),
            },
        })
    }
}

impl fmt::Display for Balance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Balance::RoundRobin => f.write_str("round-robin"),
            Balance::Random(seed) => write!(f, "random:{seed}"),
            Balance::Hash { column, .. } => write!(f, "hash({column})"),
        }
    }
}

/// Windows of one key kept open for late releases (a shaper's delay):
/// a release further back than this is counted in the oldest kept.
const OPEN_WINDOWS: usize = 64;

/// Requests admitted per window, and the most in one.
#[derive(Default)]
struct Windows {
    open: VecDeque<(u64, u64)>,
    peak: u64,
}

impl Windows {
    /// Counts one admitted request in window `w`: its count after.
    fn add(&mut self, w: u64) -> u64 {
        let at = match self.open.iter().rposition(|&(x, _)| x <= w) {
            Some(i) if self.open[i].0 == w => i,
            Some(i) => {
                self.open.insert(i + 1, (w, 0));
                i + 1
            }
            None if self.open.len() < OPEN_WINDOWS => {
                self.open.push_front((w, 0));
                0
            }
            None => 0,
        };
        self.open[at].1 += 1;
        let n = self.open[at].1;
        if self.open.len() > OPEN_WINDOWS {
            self.open.pop_front();
        }
        self.peak = self.peak.max(n);
        n
    }
}

/// What one side (the replicas, or the policy as written) admitted.
struct Edge {
    window: Nanos,
    admitted: u64,
    by_key: Vec<Windows>,
    /// The key with the most in one window, and that count.
    top: Option<(u32, u64)>,
    all: Windows,
}

impl Edge {
    fn new(window: Nanos) -> Edge {
        Edge {
            window,
            admitted: 0,
            by_key: Vec::new(),
            top: None,
            all: Windows::default(),
        }
    }

    fn count(&mut self, d: Decision, key: Option<u32>) {
        let Decision::Admit { release } = d else {
            return;
        };
        self.admitted += 1;
        let w = release.0 / self.window.0;
        self.all.add(w);
        let Some(k) = key else { return };
        let i = k as usize;
        if self.by_key.len() <= i {
            self.by_key.resize_with(i + 1, Windows::default);
        }
        let n = self.by_key[i].add(w);
        if self.top.is_none_or(|(_, best)| n > best) {
            self.top = Some((k, n));
        }
    }

    fn figures(&self, names: Option<&KeyNames>) -> EdgeFigures {
        let (key, per_key) = match (self.top, names) {
            (Some((k, n)), Some(names)) => (Some(names.get(k).to_vec()), n),
            (Some((_, n)), None) => (None, n),
            (None, _) => (None, self.all.peak),
        };
        EdgeFigures {
            admitted: self.admitted,
            peak_per_key: per_key,
            peak_key: key.map(|k| String::from_utf8_lossy(&k).into_owned()),
            peak_all: self.all.peak,
        }
    }
}

/// A config's N instances behind the balancer, and one more seeing every
/// row (the config as written).
pub type Instances = (Vec<Box<dyn ConfigRun>>, Box<dyn ConfigRun>);

/// One instance: a policy (or stack), or a gateway's config.
enum Part {
    Spec(Stack),
    Conf(Box<dyn ConfigRun>),
}

impl Part {
    fn decide(
        &mut self,
        keys: &[Option<KeyId>],
        ev: &Event,
        names: &KeyValues,
        levels: Levels,
    ) -> Result<(Decision, u64)> {
        match self {
            Part::Spec(s) => Ok(s.decide_level(keys, ev.at, u64::from(ev.cost), levels)),
            Part::Conf(c) => c.decide(ev, names, !matches!(levels, Levels::None)),
        }
    }
}

/// A policy (or config) as N instances behind a balancer, and as written.
pub struct Replicas {
    parts: Vec<Part>,
    written: Part,
    balance: Balance,
    /// Rows decided so far (round robin and the random draw use it).
    rows: u64,
    edge: Edge,
    alone: Edge,
}

impl Replicas {
    /// `n` instances of `spec` behind `balance`; `window` is the span the
    /// report counts admitted requests over.
    pub fn new(spec: &Spec, n: u32, balance: Balance, window: Nanos) -> Replicas {
        Replicas {
            parts: (0..n).map(|_| Part::Spec(spec.build())).collect(),
            written: Part::Spec(spec.build()),
            balance,
            rows: 0,
            edge: Edge::new(window),
            alone: Edge::new(window),
        }
    }

    /// The key column whose values the balancer hashes, if it does.
    pub fn hash_slot(&self) -> Option<usize> {
        match self.balance {
            Balance::Hash { slot, .. } => Some(slot),
            _ => None,
        }
    }

    /// A gateway's config as the instances `parts` behind `balance`, and
    /// `written` (one more instance) seeing every row.
    pub fn of_config(
        parts: Vec<Box<dyn ConfigRun>>,
        written: Box<dyn ConfigRun>,
        balance: Balance,
        window: Nanos,
    ) -> Replicas {
        Replicas {
            parts: parts.into_iter().map(Part::Conf).collect(),
            written: Part::Conf(written),
            balance,
            rows: 0,
            edge: Edge::new(window),
            alone: Edge::new(window),
        }
    }

    /// What reports need of the policy (each instance is one): whether it
    /// delays, its highest level, what the level measures.
    pub fn facts(&self) -> (bool, u64, LevelKind) {
        match &self.written {
            Part::Spec(s) => {
                let i: Info = s.info();
                (i.shapes, i.max_level, i.level_kind)
            }
            Part::Conf(c) => (c.shapes(), c.max_level(), LevelKind::Level),
        }
    }

    /// The key column the report counts drops by, for a config.
    pub fn config_slot(&self) -> Option<Option<usize>> {
        match &self.written {
            Part::Conf(c) => Some(c.report_slot()),
            Part::Spec(_) => None,
        }
    }

    /// For a config: the instances' sections as one (each location's or
    /// proxy's rows added up), and the rows a limit applied to per key.
    pub fn section(&mut self) -> Option<((Gateway, NginxReport), Vec<u64>)> {
        let mut merged: Option<(Gateway, NginxReport)> = None;
        let mut limited: Vec<u64> = Vec::new();
        for p in &mut self.parts {
            let Part::Conf(c) = p else { return None };
            let (g, s) = c.section();
            for (i, n) in c.take_limited_by_key().into_iter().enumerate() {
                if limited.len() <= i {
                    limited.resize(i + 1, 0);
                }
                limited[i] += n;
            }
            match &mut merged {
                None => merged = Some((g, s)),
                Some((_, m)) => add_section(m, s),
            }
        }
        merged.map(|m| (m, limited))
    }

    /// The replica row `value` (the hash column's value) goes to.
    fn pick(&self, value: &[u8]) -> usize {
        let n = self.parts.len() as u64;
        let i = match self.balance {
            Balance::RoundRobin => self.rows % n,
            Balance::Random(seed) => mix(seed ^ mix(self.rows)) % n,
            Balance::Hash { .. } => fnv1a(value) % n,
        };
        i as usize
    }

    /// Decides row `ev`: `keys` are the members' keys, `key` the report's
    /// key id, `value` the hash column's value (empty without one).
    pub fn decide(
        &mut self,
        keys: &[Option<KeyId>],
        (key, value): (Option<u32>, &[u8]),
        (ev, names): (&Event, &KeyValues),
        levels: Levels,
    ) -> Result<(Decision, u64)> {
        let i = self.pick(value);
        self.rows += 1;
        let (d, level) = self.parts[i].decide(keys, ev, names, levels)?;
        self.edge.count(d, key);
        let (one, _) = self.written.decide(keys, ev, names, Levels::None)?;
        self.alone.count(one, key);
        Ok((d, level))
    }

    /// The report's section: the replicas against the policy as written.
    pub fn report(&self, names: Option<&KeyNames>) -> ReplicaReport {
        ReplicaReport {
            replicas: self.parts.len() as u64,
            balance: self.balance.to_string(),
            window_ns: self.edge.window.0,
            replicated: self.edge.figures(names),
            written: self.alone.figures(names),
        }
    }
}

/// Adds section `s` of one instance into `m`: a location's (proxy's) rows
/// by name, untested only where no instance saw a row, notes once.
fn add_section(m: &mut NginxReport, s: NginxReport) {
    for row in s.locations {
        match m.locations.iter_mut().find(|r| r.location == row.location) {
            Some(r) => {
                r.requests += row.requests;
                r.passed += row.passed;
                r.delayed += row.delayed;
                r.rejected += row.rejected;
                r.unlimited += row.unlimited;
            }
            None => m.locations.push(row),
        }
    }
    m.untested.retain(|u| s.untested.contains(u));
    for n in s.notes {
        if !m.notes.contains(&n) {
            m.notes.push(n);
        }
    }
}

/// SplitMix64's finaliser: a well-spread 64-bit mix.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a over the value's bytes.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::parse_spec;

    const S: u64 = Nanos::PER_SEC;

    fn replay(spec: &str, n: u32, balance: Balance, rows: &[(u64, u32)]) -> ReplicaReport {
        let spec = parse_spec(spec).unwrap();
        let mut r = Replicas::new(&spec, n, balance, Nanos(S));
        let names = KeyValues::new(1);
        for &(at, key) in rows {
            let keys = [Some(KeyId::from(key))];
            let ev = Event {
                at: Nanos(at),
                row: 0,
                line: 0,
                file: 0,
                cost: 1,
                keys: [0; crate::ingest::input::MAX_KEYS],
            };
            let value = key.to_le_bytes();
            r.decide(&keys, (Some(key), &value), (&ev, &names), Levels::None)
                .unwrap();
        }
        r.report(None)
    }

    #[test]
    fn three_round_robin_replicas_let_a_client_through_at_three_times_the_limit() {
        // One client at 100/s for 2 s against 10/s per instance.
        let rows: Vec<(u64, u32)> = (0..200).map(|i| (i * S / 100, 7)).collect();
        let r = replay(
            "fixed-window:limit=10,window=1s",
            3,
            Balance::RoundRobin,
            &rows,
        );
        assert_eq!((r.written.peak_per_key, r.written.admitted), (10, 20));
        assert_eq!((r.replicated.peak_per_key, r.replicated.admitted), (30, 60));
        assert_eq!(r.replicated.peak_all, 30);
    }

    #[test]
    fn hashing_by_the_key_keeps_each_client_on_one_replica() {
        let rows: Vec<(u64, u32)> = (0..400).map(|i| (i * S / 200, (i % 4) as u32)).collect();
        let hash = Balance::Hash {
            slot: 0,
            column: "client".into(),
        };
        let r = replay("fixed-window:limit=10,window=1s", 3, hash, &rows);
        // Each client meets one instance: the written limit holds per key,
        // and the four clients together get 40 per second either way.
        assert_eq!(r.replicated.peak_per_key, 10);
        assert_eq!((r.replicated.peak_all, r.written.peak_all), (40, 40));
    }

    #[test]
    fn a_random_spread_is_the_same_for_one_seed_and_uses_every_replica() {
        let rows: Vec<(u64, u32)> = (0..300).map(|i| (i * S / 100, 1)).collect();
        let a = replay(
            "fixed-window:limit=10,window=1s",
            3,
            Balance::Random(7),
            &rows,
        );
        let b = replay(
            "fixed-window:limit=10,window=1s",
            3,
            Balance::Random(7),
            &rows,
        );
        assert_eq!(a.replicated.admitted, b.replicated.admitted);
        // 100 requests a second spread at random: each instance is sent
        // well over 10 in every second, so all three fill up.
        assert_eq!(a.replicated.admitted, 90);
    }

    #[test]
    fn windows_count_late_releases_where_they_fall() {
        let mut w = Windows::default();
        for x in [5, 6, 5, 4, 6, 6] {
            w.add(x);
        }
        assert_eq!(w.open, VecDeque::from([(4, 1), (5, 2), (6, 3)]));
        assert_eq!(w.peak, 3);
    }
}
