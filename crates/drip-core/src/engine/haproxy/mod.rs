//! `--haproxy-cfg`: a haproxy.cfg as one audited policy. Each row enters
//! the frontend its log line names (`frontend_name`; the only one when
//! the config has one), runs that frontend's rules in order, switches to
//! the backend its `use_backend` lines choose (or `default_backend`), and
//! runs the backend's rules, as HAProxy 2.6 does:
//!
//! - `track-scN SAMPLE` finds the sample's entry in the table (the key
//!   cast to the table's type; a failed fetch or cast tracks nothing) and
//!   counts the request in its `http_req_rate` at once, refused or not; a
//!   counter already tracked for the request is left as it is;
//! - `sc_http_req_rate(N)` reads counter N's rate now (HAProxy's
//!   two-period estimate, [`HaproxyRate`]); an untracked counter reads
//!   nothing, so a comparison on it does not match;
//! - `deny`/`reject` and `tarpit` refuse, `return`/`redirect` answer,
//!   `allow` ends the proxy's rules.
//!
//! A table's entries expire after its `expire` idle. Its `size` is not
//! modelled (a note says when more keys were tracked than it holds).

mod row;
mod verify;

use super::config_run::{ConfigOptions, ConfigRun, count_limited, section};
use super::outcome::{Gateway, NginxLocationRow, NginxReport};
use crate::haproxy_cfg::{Action, HaproxyCfg, KeyType, RateLimit, Rule};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::policy::Decision;
use crate::policy::haproxy::{HaproxyRate, HaproxyRateState};
use crate::time::Nanos;
use anyhow::{Result, bail};
use row::{Row, View};
use std::collections::HashMap;
use std::sync::Arc;
use verify::{Fate, Verify};

/// The key columns a config reads.
struct Cols {
    client: usize,
    method: Option<usize>,
    uri: Option<usize>,
    frontend: Option<usize>,
    captures: Option<usize>,
}

/// One stick-table's entries.
struct TableRun {
    counter: Option<HaproxyRate>,
    key: KeyType,
    ids: HashMap<Vec<u8>, u32>,
    states: Vec<HaproxyRateState>,
}

/// Rows that left a proxy: passed on with a counter tracked, refused,
/// passed on with none tracked, answered by HAProxy.
#[derive(Clone, Copy, Default)]
struct Ends {
    passed: u64,
    refused: u64,
    untracked: u64,
    answered: u64,
}

/// The counters a request tracks: (table, entry) per slot.
type Slots = [Option<(usize, u32)>; 3];

/// One haproxy.cfg being replayed.
pub struct HapExec {
    cfg: Arc<HaproxyCfg>,
    cols: Cols,
    tables: Vec<TableRun>,
    ends: Vec<Ends>,
    /// Rows of frontends the config does not have, by name.
    strangers: HashMap<String, u64>,
    verify: Option<Verify>,
    limited_by_key: Vec<u64>,
    probe: Option<Probe>,
}

/// A row a rate limit saw: the counter's table and entry, when, the rate.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub table: u32,
    pub entry: u32,
    pub ms: u64,
    pub rate: u64,
}

/// `size --haproxy-cfg`'s view of a replay: for each rate limit of the
/// config, every row that reached its rule with the rest of the condition
/// holding, and the rate it read. HAProxy counts a request whether or not
/// it is refused, so a row's rate does not depend on the limit: the rows
/// above a candidate limit are exactly those it would refuse (the other
/// rules held as written).
pub struct Probe {
    pub limits: Vec<RateLimit>,
    /// Per limit, each row it saw.
    pub seen: Vec<Vec<Seen>>,
    /// Per stick-table, each entry's key as HAProxy shows it.
    pub keys: Vec<Vec<Vec<u8>>>,
}

impl HapExec {
    /// The replay of `cfg`: `slot` gives the key column of a log field.
    pub fn new(
        cfg: Arc<HaproxyCfg>,
        opts: &ConfigOptions,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<HapExec> {
        let reads = Reads::of(&cfg);
        let mut need = |f: &str, why: &str| -> Result<usize> {
            if let Some(fields) = opts.log_fields
                && !fields.iter().any(|x| x == f)
            {
                bail!(
                    "{}: {why}, but the log has no field '{f}' (it has {}); audit HAProxy's own httplog lines (option httplog)",
                    cfg.path.display(),
                    crate::quote::names(fields)
                );
            }
            slot(f)
        };
        let cols = Cols {
            client: need("client", "the rules read the client address")?,
            method: reads
                .method
                .then(|| need("method", "a rule reads the method"))
                .transpose()?,
            uri: reads
                .uri
                .then(|| need("uri", "a rule reads the path"))
                .transpose()?,
            frontend: (cfg.frontends().count() > 1)
                .then(|| need("frontend_name", "the config has several frontends"))
                .transpose()?,
            captures: reads
                .headers
                .then(|| need("captured_request_headers", "a rule reads a captured header"))
                .transpose()?,
        };
        if cfg.frontends().next().is_none() {
            bail!(
                "{}: no frontend or listen section: nothing receives requests",
                cfg.path.display()
            );
        }
        let verify = opts
            .verify
            .map(|c| -> Result<Verify> { Ok(Verify::new(slot(c)?, c, opts.files.clone())) })
            .transpose()?;
        let tables = (cfg.tables.iter())
            .map(|t| TableRun {
                counter: t.rate_ms.map(|p| HaproxyRate::counter(p, t.expire_ms)),
                key: t.key,
                ids: HashMap::new(),
                states: Vec::new(),
            })
            .collect();
        Ok(HapExec {
            ends: vec![Ends::default(); cfg.proxies.len()],
            cfg,
            cols,
            tables,
            strangers: HashMap::new(),
            verify,
            limited_by_key: Vec::new(),
            probe: None,
        })
    }

    /// Records what each rate limit of the config sees (see [`Probe`]).
    pub fn probe(&mut self) {
        let limits = self.cfg.rate_limits();
        self.probe = Some(Probe {
            seen: vec![Vec::new(); limits.len()],
            keys: vec![Vec::new(); self.cfg.tables.len()],
            limits,
        });
    }

    /// What the probe recorded, once every row is decided.
    pub fn probed(&mut self) -> Option<Probe> {
        self.probe.take()
    }

    /// Which rows proxy `p` saw, and how they left it: (entered, refused).
    pub fn proxy_counts(&self, p: usize) -> (u64, u64) {
        let e = self.ends[p];
        (e.passed + e.refused + e.untracked + e.answered, e.refused)
    }

    /// The key column drops are counted by: the client.
    pub fn report_slot(&self) -> Option<usize> {
        Some(self.cols.client)
    }

    /// Decides one row (`levels`: also say the highest rate it read).
    pub fn decide(
        &mut self,
        ev: &Event,
        names: &KeyValues,
        levels: bool,
    ) -> Result<(Decision, u64)> {
        let ms = ev.at.0 / Nanos::PER_MS;
        let value = |c: usize| names.value(ev, c);
        let fe = match self.cols.frontend {
            None => self.cfg.frontends().next(),
            Some(c) => {
                let name = String::from_utf8_lossy(value(c));
                let name = name.strip_suffix('~').unwrap_or(&name);
                let found = self.cfg.find(name, true);
                if found.is_none() {
                    *self.strangers.entry(name.to_string()).or_default() += 1;
                }
                found
            }
        };
        let Some(fe) = fe else {
            return Ok((Decision::Admit { release: ev.at }, 0));
        };
        let cfg = self.cfg.clone();
        let row = Row {
            client: value(self.cols.client),
            method: self.cols.method.map_or(&b""[..], value),
            uri: self.cols.uri.map_or(&b""[..], value),
            headers: match self.cols.captures {
                Some(c) => row::captured(value(c), &cfg.proxies[fe].captures),
                None => Vec::new(),
            },
        };
        let mut slots: Slots = [None; 3];
        let (fate, last) = self.pass(fe, &row, &mut slots, ms);
        let tracked = slots.iter().any(Option::is_some);
        self.end(last, fate, tracked);
        if tracked {
            count_limited(&mut self.limited_by_key, names.id(ev, self.cols.client));
        }
        if let Some(v) = &mut self.verify {
            let logged = value(v.col);
            v.record(
                ms,
                slots[0].or(slots[1]).or(slots[2]),
                fate,
                logged,
                (ev.file, ev.line),
            );
        }
        let level = match levels {
            true => self
                .rates(&slots, ms)
                .iter()
                .flatten()
                .copied()
                .max()
                .unwrap_or(0),
            false => 0,
        };
        let d = match fate {
            Fate::Denied | Fate::Tarpit => Decision::Refuse { retry_at: None },
            _ => Decision::Admit { release: ev.at },
        };
        Ok((d, level))
    }

    /// Runs frontend `fe` and the backend it switches to: the row's fate
    /// and the proxy it ended in (a frontend it passed through is counted
    /// here as passing it).
    fn pass(&mut self, fe: usize, row: &Row, slots: &mut Slots, ms: u64) -> (Fate, usize) {
        if let Some(f) = self.run(fe, row, slots, ms) {
            return (f, fe);
        }
        let view = View {
            row,
            rates: self.rates(slots, ms),
        };
        match self.cfg.proxies[fe].backend(fe, &view) {
            // No backend: HAProxy answers 503 itself.
            None => (Fate::Answered, fe),
            Some(be) if be == fe => (Fate::Passed, fe),
            Some(be) => {
                self.end(fe, Fate::Passed, slots.iter().any(Option::is_some));
                (self.run(be, row, slots, ms).unwrap_or(Fate::Passed), be)
            }
        }
    }

    /// Counts a row leaving proxy `p` with `fate`, with a counter tracked
    /// or none.
    fn end(&mut self, p: usize, fate: Fate, tracked: bool) {
        let e = &mut self.ends[p];
        match fate {
            Fate::Passed if tracked => e.passed += 1,
            Fate::Passed => e.untracked += 1,
            Fate::Denied | Fate::Tarpit => e.refused += 1,
            Fate::Answered => e.answered += 1,
        }
    }

    /// Runs proxy `p`'s rules: the fate if one ends the request there.
    fn run(&mut self, p: usize, row: &Row, slots: &mut Slots, ms: u64) -> Option<Fate> {
        let cfg = self.cfg.clone();
        for (i, rule) in cfg.proxies[p].rules.iter().enumerate() {
            let view = View {
                row,
                rates: self.rates(slots, ms),
            };
            if let Some(probe) = &mut self.probe {
                probe.see(p, i, rule, &view, slots, ms);
            }
            if !rule.applies(&view) {
                continue;
            }
            match &rule.action {
                Action::Track {
                    slot,
                    sample,
                    table,
                } => {
                    let s = usize::from(*slot);
                    if slots[s].is_some() {
                        continue;
                    }
                    let t = &mut self.tables[*table];
                    let Some(key) = sample.key(&view).and_then(|v| row::table_key(t.key, &v))
                    else {
                        continue;
                    };
                    let next = t.states.len() as u32;
                    if let Some(probe) = &mut self.probe
                        && !t.ids.contains_key(&key)
                    {
                        probe.keys[*table].push(row::key_text(t.key, &key));
                    }
                    let id = *t.ids.entry(key).or_insert(next);
                    if id == next {
                        t.states.push(HaproxyRateState::default());
                    }
                    if let Some(c) = &t.counter {
                        c.hit(&mut t.states[id as usize], ms);
                    }
                    slots[s] = Some((*table, id));
                }
                Action::Deny { .. } => return Some(Fate::Denied),
                Action::Tarpit { .. } => return Some(Fate::Tarpit),
                Action::Answer { .. } => return Some(Fate::Answered),
                Action::Allow => return None,
            }
        }
        None
    }

    /// What `sc_http_req_rate(N)` reads for each slot now.
    fn rates(&self, slots: &Slots, ms: u64) -> [Option<u64>; 3] {
        slots.map(|s| {
            let (t, id) = s?;
            let t = &self.tables[t];
            t.counter.map(|c| c.read(&t.states[id as usize], ms))
        })
    }

    /// Rows a counter was tracked for, per client id.
    pub fn take_limited_by_key(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.limited_by_key)
    }

    /// The report's section, once every row is decided.
    pub fn report(&mut self) -> NginxReport {
        let cfg = &self.cfg;
        let mut notes = cfg.notes.clone();
        for (t, run) in cfg.tables.iter().zip(&self.tables) {
            if run.states.len() as u64 > t.size {
                notes.push(format!(
                    "the stick-table of {} (line {}) tracked {} keys, more than its size {}: HAProxy would have evicted old entries, which drip does not model",
                    t.proxy, t.line, run.states.len(), t.size
                ));
            }
            if t.rate_ms.is_none() {
                notes.push(format!(
                    "the stick-table of {} (line {}) stores no http_req_rate: sc_http_req_rate on its entries matches nothing",
                    t.proxy, t.line
                ));
            }
        }
        let mut strangers: Vec<_> = self.strangers.iter().collect();
        strangers.sort();
        for (name, n) in strangers {
            notes.push(format!("{n} rows name frontend '{name}', which the config does not have: admitted unlimited"));
        }
        let limits = |p: usize| {
            cfg.proxies[p]
                .rules
                .iter()
                .map(|r| r.text.clone())
                .collect::<Vec<_>>()
                .join("; ")
        };
        let refuses = |p: usize| {
            (cfg.proxies[p].rules.iter())
                .any(|r| matches!(r.action, Action::Deny { .. } | Action::Tarpit { .. }))
        };
        let mut untested = Vec::new();
        let mut locations = Vec::new();
        for (p, e) in self.ends.iter().enumerate() {
            let requests = e.passed + e.refused + e.untracked + e.answered;
            if requests == 0 && refuses(p) {
                untested.push(cfg.proxies[p].title());
            }
            if requests == 0 && !refuses(p) {
                continue;
            }
            locations.push(NginxLocationRow {
                location: cfg.proxies[p].title(),
                limits: limits(p),
                requests,
                passed: e.passed,
                delayed: 0,
                rejected: e.refused,
                unlimited: e.untracked + e.answered,
            });
        }
        let used: Vec<usize> = (cfg.proxies.iter())
            .flat_map(|p| &p.rules)
            .filter_map(|r| match r.action {
                Action::Track { table, .. } => Some(table),
                _ => None,
            })
            .collect();
        let unused_zones: Vec<String> = (0..cfg.tables.len())
            .filter(|t| !used.contains(t))
            .map(|t| {
                format!(
                    "the stick-table of {} (line {})",
                    cfg.tables[t].proxy, cfg.tables[t].line
                )
            })
            .collect();
        let report = NginxReport {
            config: cfg.path.display().to_string(),
            locations,
            notes,
            verify: self.verify.as_mut().map(Verify::report),
            ..NginxReport::default()
        };
        section(
            report,
            (untested, "refuses requests"),
            (unused_zones, "is declared and no track-sc uses it"),
        )
    }
}

impl Probe {
    /// Records rule `i` of proxy `p` when it is a rate limit whose other
    /// terms hold for the row and whose counter is tracked.
    fn see(&mut self, p: usize, i: usize, rule: &Rule, view: &View, slots: &Slots, ms: u64) {
        let Some(u) = (self.limits.iter()).position(|l| l.proxy == p && l.rule == i) else {
            return;
        };
        let l = &self.limits[u];
        let (Some((table, entry)), Some(rate)) =
            (slots[usize::from(l.slot)], view.rates[usize::from(l.slot)])
        else {
            return;
        };
        if rule.others_hold(l.term, view) {
            self.seen[u].push(Seen {
                table: table as u32,
                entry,
                ms,
                rate,
            });
        }
    }
}

/// Which request fields the rules read.
struct Reads {
    method: bool,
    uri: bool,
    headers: bool,
}

impl Reads {
    fn of(cfg: &HaproxyCfg) -> Reads {
        use crate::haproxy_cfg::acl::{Fetch, Test};
        let mut r = Reads {
            method: false,
            uri: false,
            headers: false,
        };
        let mut see = |f: &Fetch| match f {
            Fetch::Method => r.method = true,
            Fetch::Path | Fetch::Url | Fetch::Query => r.uri = true,
            Fetch::Base => {
                r.uri = true;
                r.headers = true;
            }
            Fetch::Hdr { .. } => r.headers = true,
            Fetch::Src => {}
        };
        for p in &cfg.proxies {
            let conds = (p.rules.iter().filter_map(|r| r.cond.as_ref()))
                .chain(p.switching.iter().filter_map(|s| s.1.as_ref()));
            for t in conds.flat_map(|c| c.tests()) {
                if let Test::Match { sample, .. } = t {
                    see(&sample.fetch);
                }
            }
            for rule in &p.rules {
                if let Action::Track { sample, .. } = &rule.action {
                    see(&sample.fetch);
                }
            }
        }
        r
    }
}

impl ConfigRun for HapExec {
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)> {
        HapExec::decide(self, ev, names, levels)
    }
    fn section(&mut self) -> (Gateway, NginxReport) {
        (Gateway::Haproxy, self.report())
    }
    fn take_limited_by_key(&mut self) -> Vec<u64> {
        HapExec::take_limited_by_key(self)
    }
    fn shapes(&self) -> bool {
        false
    }
    fn max_level(&self) -> u64 {
        u64::MAX
    }
    fn report_slot(&self) -> Option<usize> {
        HapExec::report_slot(self)
    }
}
