//! `--nginx-conf`: an nginx.conf as one audited policy. Each row goes to
//! the server and location nginx would choose for it (by its `host` and URI
//! fields, or the location `--nginx-location` names), and is decided by that
//! location's `limit_req` list as nginx decides it: in declaration order,
//! admitted only if every applicable limit admits, delayed by the largest
//! delay, and a rejection stores nothing in any zone. Zones are shared by
//! every location that names them, as nginx's shared memory is. A zone key
//! is evaluated per row (fields, constants, maps); an empty key exempts the
//! row from that zone. Locations answered by `return` are never limited.
//!
//! `--verify-column` compares each row's `$limit_req_status` with the one
//! nginx logged. A log does not say in which order nginx saw requests of the
//! same millisecond sharing a zone key, so such a group is compared as a
//! multiset (the same statuses in any order).

mod key;
mod reorder;
mod route;
mod server;
mod summary;
mod tune;
mod verify;

use super::config_run::{ConfigRun, count_limited};
use super::outcome::{Gateway, NginxReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::nginx_conf::{NginxConf, Status};
use crate::policy::nginx::NginxState;
use crate::policy::{Decision, Listed, NginxLimitReq, Policy};
use crate::time::Nanos;
use anyhow::Result;
use key::Keys;
use reorder::Lim;
use route::Router;
use std::collections::HashMap;
use std::sync::Arc;
pub use tune::{Met, ZoneUse};
use verify::Verify;

/// One location's `limit_req` list, and what it decided.
struct LocRun {
    /// (zone, the line's policy).
    limits: Vec<(usize, NginxLimitReq)>,
    dry_run: bool,
    returns: bool,
    counts: [u64; 6],
}

/// One nginx.conf being replayed.
pub struct ConfExec {
    conf: Arc<NginxConf>,
    router: Router,
    keys: Keys,
    locs: Vec<LocRun>,
    verify: Option<Verify>,
    /// The limits of the row being decided that admit it: (index in its
    /// location's list, zone, key id).
    applied: Vec<(usize, usize, u32)>,
    /// Room for the limits of a verified row.
    lims: Vec<Lim>,
    max_level: u64,
    shapes: bool,
    /// Rows a limit applied to (any status but `-`), per key id of the
    /// report's key column.
    limited_by_key: Vec<u64>,
    /// The last row: the location that decided it, the limit (index in
    /// its list) that refused it, and each applied limit's own delay (ns,
    /// in `applied` order).
    last: tune::Last,
}

/// What a `ConfExec` needs from the command line.
pub struct ConfOptions<'a> {
    /// The log's field names, when they can be known before reading.
    pub log_fields: Option<&'a [String]>,
    pub overrides: &'a HashMap<String, String>,
    pub location: Option<&'a str>,
    pub verify: Option<&'a str>,
    pub files: Vec<String>,
    /// `--static`: URIs of files that exist, which `try_files` serves
    /// instead of passing them to a named location.
    pub static_files: Option<&'a regex::Regex>,
}

/// The log's field names, when they can be known before reading (`None`:
/// any field may be there).
#[derive(Clone, Copy)]
struct LogFields<'a>(Option<&'a [String]>);

impl LogFields<'_> {
    /// True when the log may have field `f` (any case).
    fn has(self, f: &str) -> bool {
        self.0
            .is_none_or(|n| n.iter().any(|x| x.eq_ignore_ascii_case(f)))
    }

    /// True when the log is known to have field `f`, spelt so.
    fn named(self, f: &str) -> bool {
        self.0.is_some_and(|n| n.iter().any(|x| x == f))
    }

    /// True when the `uri` field is the target a reader takes from
    /// `$request` (not a logged `$uri`): the log has `$request`, and
    /// `method`, `uri` and `protocol` follow each other as readers add them.
    fn derived_uri(self) -> bool {
        self.0.is_some_and(|n| {
            n.iter().any(|x| x == "request")
                && n.windows(3).any(|w| w == ["method", "uri", "protocol"])
        })
    }

    /// True when the fields cannot be known before reading.
    fn unknown(self) -> bool {
        self.0.is_none()
    }

    /// The fields, for a message; positional names (`field10`) of line
    /// formats say nothing.
    fn listing(self) -> String {
        self.0.map_or(String::new(), |n| {
            crate::quote::names(
                &n.iter()
                    .filter(|x| {
                        !x.strip_prefix("field")
                            .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .collect::<Vec<_>>(),
            )
        })
    }
}

impl LocRun {
    /// Every location of `conf`, with nothing decided yet.
    fn all(conf: &NginxConf) -> Vec<LocRun> {
        conf.locations
            .iter()
            .map(|l| LocRun {
                limits: l.limits.iter().map(|x| (x.zone, conf.policy(x))).collect(),
                dry_run: l.dry_run,
                returns: l.returns,
                counts: [0; 6],
            })
            .collect()
    }
}

impl ConfExec {
    /// Plans the replay of `conf`; `slot` gives the key column of a field
    /// (registering it): the fields zone keys read, then the URI and host
    /// fields routing reads, then the verified column.
    pub fn new(
        conf: Arc<NginxConf>,
        opts: &ConfOptions,
        notes: &crate::notes::Notes,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<ConfExec> {
        let log = LogFields(opts.log_fields);
        let forced = route::forced(&conf, opts.location)?;
        let keys = Keys::plan(&conf, opts.overrides, log, forced, slot)?;
        let router = Router::new(&conf, opts, notes, forced, log, slot)?;
        let verify = opts
            .verify
            .map(|c| -> Result<Verify> { Ok(Verify::new(slot(c)?, c, opts.files.clone())) })
            .transpose()?;
        let locs = LocRun::all(&conf);
        let max_level = locs
            .iter()
            .flat_map(|l| l.limits.iter().map(|(_, p)| p.info().max_level))
            .max()
            .unwrap_or(0);
        let shapes = locs
            .iter()
            .any(|l| l.limits.iter().any(|(_, p)| p.info().shapes));
        Ok(ConfExec {
            conf,
            router,
            keys,
            locs,
            verify,
            applied: Vec::new(),
            lims: Vec::new(),
            max_level,
            shapes,
            limited_by_key: Vec::new(),
            last: tune::Last::default(),
        })
    }

    pub fn max_level(&self) -> u64 {
        self.max_level
    }

    pub fn shapes(&self) -> bool {
        self.shapes
    }

    /// The key column drops are counted by: the field the first limiting
    /// zone's key is (`$binary_remote_addr`: the client address), else,
    /// for a key nginx builds (a `map`, several variables), the client
    /// address when the key reads it (a map's default is most often
    /// `$binary_remote_addr`), else the first field a key reads. Never a
    /// map's input: that is not the key nginx counts by.
    pub fn report_slot(&self) -> Option<usize> {
        self.keys.report
    }

    /// Decides one row: nginx's decision, the level just after, and the
    /// `$limit_req_status` it would log.
    pub fn decide(
        &mut self,
        ev: &Event,
        names: &KeyValues,
        levels: bool,
    ) -> Result<(Decision, u64)> {
        let now = ev.at;
        let now_ms = (now.0 / Nanos::PER_MS) as i64;
        let cost = u64::from(ev.cost);
        let logged = match &mut self.verify {
            Some(v) => {
                for ((z, k), st) in v.start(now_ms) {
                    let states = &mut self.keys.zones[z as usize].states;
                    if k as usize >= states.len() {
                        states.resize(k as usize + 1, NginxState::default());
                    }
                    states[k as usize] = st;
                }
                Some(v.logged(ev, names)?)
            }
            None => None,
        };
        let (mut l, then) = self.router.location(&self.conf, ev, names);
        self.applied.clear();
        // A `return` answers before `limit_req` runs.
        let mut refused = if self.locs[l].returns {
            None
        } else {
            self.check(l, ev, names, now_ms)
        };
        if let Some(n) = then
            && refused.is_none()
        {
            l = self.pass_on(l, n, ev, names, now_ms, &mut refused);
        }
        if self.last.on {
            self.last.location = l;
            self.last.refused = refused.map(|(_, (_, k))| (self.last.refused_index, k));
        }
        let dry = self.locs[l].dry_run;
        let (decision, status) = if let Some((d, _)) = refused {
            let s = if dry {
                Status::RejectedDryRun
            } else {
                Status::Rejected
            };
            (d, s)
        } else if self.applied.is_empty() {
            (Decision::Admit { release: now }, Status::None)
        } else {
            if let Some(v) = &mut self.verify {
                let states = &self.keys.zones;
                v.before.extend(
                    self.applied
                        .iter()
                        .map(|&(_, z, k)| ((z, k), states[z].states[k as usize])),
                );
            }
            let release = self.admit(l, now, cost);
            let s = match (release > now, dry) {
                (false, _) => Status::Passed,
                (true, false) => Status::Delayed,
                (true, true) => Status::DelayedDryRun,
            };
            (Decision::Admit { release }, s)
        };
        let level = if levels { self.level(l, now) } else { 0 };
        self.locs[l].counts[status as usize] += 1;
        if status != Status::None {
            self.count_limited(ev, names);
        }
        if let Some(logged) = logged {
            self.record(l, ev, names, [status, logged], refused.is_some());
        }
        Ok((decision, level))
    }

    /// Records a row of location `l` decided `status` against the `logged`
    /// one, with the limits after one that `refused` it.
    fn record(
        &mut self,
        l: usize,
        ev: &Event,
        names: &KeyValues,
        [status, logged]: [Status; 2],
        refused: bool,
    ) {
        let now = ev.at;
        let moved = if logged == status {
            [status; 2]
        } else {
            let ms = Nanos::PER_MS;
            let earlier = Nanos(now.0.saturating_sub(ms));
            let later = Nanos(now.0 + ms);
            [
                self.status_at(l, ev, names, earlier),
                self.status_at(l, ev, names, later),
            ]
        };
        let mut lims = std::mem::take(&mut self.lims);
        lims.clear();
        let limit = |i: usize| self.locs[l].limits[i].1;
        lims.extend(self.applied.iter().map(|&(i, z, key)| Lim {
            zone: z as u32,
            key,
            limit: limit(i),
        }));
        if refused {
            self.limits_from(l, self.last.refused_index, ev, names, &mut lims);
        }
        let states = &self.keys.zones;
        let state = |(z, k): (u32, u32)| {
            let z = &states[z as usize].states;
            z.get(k as usize).copied().unwrap_or_default()
        };
        let dry = self.locs[l].dry_run;
        let v = self.verify.as_mut().expect("verifying");
        let now_ms = (now.0 / Nanos::PER_MS) as i64;
        v.record(ev, [status, logged], moved, (&lims, dry), now_ms, state);
        self.lims = lims;
    }

    /// Location `l`'s limits from index `from` on that key the row, as
    /// [`Lim`]s: the one that refused it and those nginx did not reach.
    #[cold]
    fn limits_from(
        &mut self,
        l: usize,
        from: usize,
        ev: &Event,
        names: &KeyValues,
        out: &mut Vec<Lim>,
    ) {
        let server = self.conf.locations[l].server;
        for i in from..self.locs[l].limits.len() {
            let (z, limit) = self.locs[l].limits[i];
            let rw = self.router.rewritten();
            if let Some(key) = self.keys.key(&self.conf, z, server, ev, names, rw) {
                out.push(Lim {
                    zone: z as u32,
                    key,
                    limit,
                });
            }
        }
    }

    /// The status location `l`'s limits would give the row `ev` at `at`
    /// instead, from the states before it (nothing changed): what a move
    /// of a disagreeing row within nginx's clock granularity would log.
    #[cold]
    #[inline(never)]
    fn status_at(&mut self, l: usize, ev: &Event, names: &KeyValues, at: Nanos) -> Status {
        if self.locs[l].returns {
            return Status::None;
        }
        let server = self.conf.locations[l].server;
        let dry = self.locs[l].dry_run;
        let (mut release, mut applied) = (at, false);
        for i in 0..self.locs[l].limits.len() {
            let (z, p) = self.locs[l].limits[i];
            let rw = self.router.rewritten();
            let Some(k) = self.keys.key(&self.conf, z, server, ev, names, rw) else {
                continue;
            };
            let before = self.verify.as_ref().and_then(|v| {
                v.before
                    .iter()
                    .find(|(zk, _)| *zk == (z, k))
                    .map(|(_, s)| *s)
            });
            let state = before
                .or_else(|| self.keys.zones[z].states.get(k as usize).copied())
                .unwrap_or_default();
            match p.check(&state, at, u64::from(ev.cost)) {
                Decision::Admit { release: r } => (release, applied) = (release.max(r), true),
                Decision::Refuse { .. } if dry => return Status::RejectedDryRun,
                Decision::Refuse { .. } => return Status::Rejected,
            }
        }
        match (applied, release > at, dry) {
            (false, _, _) => Status::None,
            (true, false, _) => Status::Passed,
            (true, true, false) => Status::Delayed,
            (true, true, true) => Status::DelayedDryRun,
        }
    }

    /// Counts a row a limit applied to, for its key in the report column.
    #[inline]
    fn count_limited(&mut self, ev: &Event, names: &KeyValues) {
        if let Some(c) = self.keys.report {
            count_limited(&mut self.limited_by_key, names.id(ev, c));
        }
    }

    /// The rows a limit applied to, per key id of the report's key column
    /// (a key past the end had none), once every row is decided.
    pub fn take_limited_by_key(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.limited_by_key)
    }

    /// `try_files` passes the row from location `l` to the named location
    /// `n`, whose limits run when none of `l`'s applied: the location that
    /// decides the row.
    #[cold]
    #[inline(never)]
    fn pass_on(
        &mut self,
        l: usize,
        n: usize,
        ev: &Event,
        names: &KeyValues,
        now_ms: i64,
        refused: &mut Option<(Decision, (u32, u32))>,
    ) -> usize {
        if !self.applied.is_empty() || self.locs[l].returns {
            return l;
        }
        if !self.locs[n].returns {
            *refused = self.check(n, ev, names, now_ms);
        }
        n
    }

    /// Checks the row against location `l`'s limits in order, noting each
    /// that admits it in `applied`, up to the first that refuses it: that
    /// refusal and its (zone, key id), if one does.
    #[inline]
    fn check(
        &mut self,
        l: usize,
        ev: &Event,
        names: &KeyValues,
        now_ms: i64,
    ) -> Option<(Decision, (u32, u32))> {
        let server = self.conf.locations[l].server;
        let (now, cost) = (ev.at, u64::from(ev.cost));
        for i in 0..self.locs[l].limits.len() {
            let (z, p) = self.locs[l].limits[i];
            let rw = self.router.rewritten();
            let Some(k) = self.keys.key(&self.conf, z, server, ev, names, rw) else {
                continue;
            };
            let zone = &mut self.keys.zones[z];
            zone.activity.hit(k, now_ms);
            let ki = k as usize;
            if ki >= zone.states.len() {
                zone.states.resize(ki + 1, NginxState::default());
            }
            match p.check(&zone.states[ki], now, cost) {
                Decision::Admit { .. } => self.applied.push((i, z, k)),
                d @ Decision::Refuse { .. } => {
                    self.last.refused_index = i;
                    return Some((d, (z as u32, k)));
                }
            }
        }
        None
    }

    /// Admits the row under every limit in `applied` (none refused it):
    /// the time it is released, the largest delay of them.
    #[inline]
    fn admit(&mut self, l: usize, now: Nanos, cost: u64) -> Nanos {
        let mut release = now;
        let trace = self.last.on;
        self.last.delays.clear();
        for &(i, z, k) in &self.applied {
            let (_, p) = self.locs[l].limits[i];
            let st = &mut self.keys.zones[z].states[k as usize];
            let mut own = 0;
            if let Decision::Admit { release: r } = p.check(st, now, cost) {
                release = release.max(r);
                own = r.0.saturating_sub(now.0);
            }
            if trace {
                self.last.delays.push(own);
            }
            p.admit(st, now, cost);
        }
        release
    }

    /// The highest level of the applied limits just after the row.
    #[inline]
    fn level(&self, l: usize, now: Nanos) -> u64 {
        self.applied
            .iter()
            .map(|&(i, z, k)| {
                let (_, p) = self.locs[l].limits[i];
                p.level(&self.keys.zones[z].states[k as usize], now)
            })
            .max()
            .unwrap_or(0)
    }
}

impl ConfigRun for ConfExec {
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)> {
        ConfExec::decide(self, ev, names, levels)
    }
    fn section(&mut self) -> (Gateway, NginxReport) {
        (Gateway::Nginx, self.report())
    }
    fn take_limited_by_key(&mut self) -> Vec<u64> {
        ConfExec::take_limited_by_key(self)
    }
    fn shapes(&self) -> bool {
        ConfExec::shapes(self)
    }
    fn max_level(&self) -> u64 {
        ConfExec::max_level(self)
    }
    fn report_slot(&self) -> Option<usize> {
        ConfExec::report_slot(self)
    }
}
