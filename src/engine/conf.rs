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
//! same millisecond at the same location, so such a group is compared as a
//! multiset (the same statuses in any order).

use crate::ingest::input::Event;
use crate::ingest::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::nginx_conf::{NginxConf, Status, location::normalize};
use crate::policy::nginx::NginxState;
use crate::policy::{Decision, Listed, NginxLimitReq, Policy};
use crate::engine::outcome::{NginxLocationRow, NginxReport, VerifyReport, VerifyRow};
use crate::time::Nanos;
use anyhow::{Result, bail};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Where a zone's key comes from for each row.
enum KeyPlan {
    /// One field, as it stands: the column's own ids are the keys.
    Field(usize),
    /// An expression (maps, concatenation, constants), evaluated per row
    /// and interned here.
    Expr,
}

/// A key expression compiled for one server: text, field slots and maps,
/// evaluated per row without looking names up.
enum CPart {
    Lit(Vec<u8>),
    Field(usize),
    /// A variable that reads nothing (a field no key column holds).
    Absent,
    Map(Box<CMap>),
}

struct CMap {
    source: Vec<CPart>,
    /// Keys lowercased, as nginx compares them.
    entries: HashMap<Vec<u8>, Vec<CPart>>,
    default: Vec<CPart>,
}

fn compile(
    conf: &NginxConf,
    e: &crate::nginx_conf::expr::Expr,
    server: usize,
    overrides: &HashMap<String, String>,
    fields: &HashMap<String, usize>,
) -> Vec<CPart> {
    use crate::nginx_conf::{VarSource, expr::Part};
    e.parts
        .iter()
        .map(|p| match p {
            Part::Lit(l) => CPart::Lit(l.as_bytes().to_vec()),
            Part::Var(v) => match conf.var_source(v, server, overrides) {
                Ok(VarSource::Field(f)) => {
                    fields.get(&f).map_or(CPart::Absent, |&s| CPart::Field(s))
                }
                Ok(VarSource::Const(c)) => CPart::Lit(c.into_bytes()),
                Ok(VarSource::Map(m)) => {
                    let m = &conf.maps[m];
                    CPart::Map(Box::new(CMap {
                        source: compile(conf, &m.source, server, overrides, fields),
                        entries: m
                            .entries
                            .iter()
                            .map(|(k, x)| (k.clone(), compile(conf, x, server, overrides, fields)))
                            .collect(),
                        default: compile(conf, &m.default, server, overrides, fields),
                    }))
                }
                Err(_) => CPart::Absent,
            },
        })
        .collect()
}

/// Appends the value of `parts` for the row to `out`.
fn eval(parts: &[CPart], ev: &Event, names: &[KeyNames], out: &mut Vec<u8>) {
    for p in parts {
        match p {
            CPart::Lit(l) => out.extend_from_slice(l),
            CPart::Field(s) => {
                if ev.keys[*s] != EMPTY_KEY {
                    out.extend_from_slice(names[*s].get(ev.keys[*s]));
                }
            }
            CPart::Absent => {}
            CPart::Map(m) => {
                let start = out.len();
                eval(&m.source, ev, names, out);
                out[start..].make_ascii_lowercase();
                let chosen = m.entries.get(&out[start..]).unwrap_or(&m.default);
                out.truncate(start);
                eval(chosen, ev, names, out);
            }
        }
    }
}

struct ZoneRun {
    plan: KeyPlan,
    /// The key compiled per server (on first use), for `KeyPlan::Expr`.
    compiled: Vec<Option<Vec<CPart>>>,
    interner: Interner,
    states: Vec<NginxState>,
    activity: Activity,
}

/// Keys active within nginx's 60 s eviction horizon.
#[derive(Default)]
struct Activity {
    last_hit: Vec<i64>,
    hits: VecDeque<(i64, u32)>,
    active: u64,
    peak: u64,
}

const HORIZON_MS: i64 = 60_000;

impl Activity {
    fn hit(&mut self, key: u32, now_ms: i64) {
        while let Some(&(t, k)) = self.hits.front() {
            if t > now_ms - HORIZON_MS {
                break;
            }
            self.hits.pop_front();
            if self.last_hit[k as usize] == t {
                self.active -= 1;
                self.last_hit[k as usize] = i64::MIN;
            }
        }
        let i = key as usize;
        if i >= self.last_hit.len() {
            self.last_hit.resize(i + 1, i64::MIN);
        }
        if self.last_hit[i] == i64::MIN {
            self.active += 1;
            self.peak = self.peak.max(self.active);
        }
        self.last_hit[i] = now_ms;
        self.hits.push_back((now_ms, key));
    }
}

struct LocRun {
    /// (zone, the line's policy).
    limits: Vec<(usize, NginxLimitReq)>,
    dry_run: bool,
    returns: bool,
    counts: [u64; 6],
}

/// A row waiting for its same-millisecond group to be complete.
struct Pending {
    loc: u32,
    /// The (zone, key id) pairs the row was counted against: `keys[from..to]`
    /// of the verifier.
    from: u32,
    to: u32,
    emulated: Status,
    logged: Status,
    file: u32,
    line: u64,
}

/// What verification has counted.
struct Verify {
    slot: usize,
    column: String,
    group_ms: i64,
    pending: Vec<Pending>,
    /// The zone keys of the pending rows.
    keys: Vec<(u32, u32)>,
    rows: u64,
    agreed: u64,
    confusion: HashMap<(Status, Status), u64>,
    first: Vec<VerifyRow>,
    files: Vec<String>,
}

/// Disagreements listed in the report.
const FIRST_DISAGREEMENTS: usize = 10;

impl Verify {
    /// Queues a row decided at `now_ms` against the zone keys `keys`.
    fn push(&mut self, mut p: Pending, keys: impl Iterator<Item = (u32, u32)>, now_ms: i64) {
        if now_ms != self.group_ms {
            self.flush();
            self.group_ms = now_ms;
        }
        p.from = self.keys.len() as u32;
        self.keys.extend(keys);
        p.to = self.keys.len() as u32;
        self.pending.push(p);
    }

    /// Compares each group of same-ms rows as a multiset of statuses: rows
    /// of one location sharing a zone key (their order can change their
    /// decisions; the order of rows with no key in common cannot), so a
    /// disagreement is blamed on a row of the key drip decided that way.
    fn flush(&mut self) {
        let rows = std::mem::take(&mut self.pending);
        let keys = std::mem::take(&mut self.keys);
        // Union-find over the rows: joined when they share a zone key.
        let mut parent: Vec<usize> = (0..rows.len()).collect();
        fn root(parent: &mut [usize], mut i: usize) -> usize {
            while parent[i] != i {
                parent[i] = parent[parent[i]];
                i = parent[i];
            }
            i
        }
        let mut owner: HashMap<(u32, u32, u32), usize> = HashMap::new();
        for (i, p) in rows.iter().enumerate() {
            for &(z, k) in &keys[p.from as usize..p.to as usize] {
                match owner.entry((p.loc, z, k)) {
                    std::collections::hash_map::Entry::Occupied(o) => {
                        let (a, b) = (root(&mut parent, *o.get()), root(&mut parent, i));
                        parent[a.max(b)] = a.min(b);
                    }
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(i);
                    }
                }
            }
        }
        let mut order: Vec<(usize, usize)> =
            (0..rows.len()).map(|i| (root(&mut parent, i), i)).collect();
        order.sort_unstable();
        let mut rows: Vec<Option<Pending>> = rows.into_iter().map(Some).collect();
        let mut grouped: Vec<(usize, Pending)> = Vec::with_capacity(rows.len());
        for (g, i) in order {
            grouped.push((g, rows[i].take().expect("each row once")));
        }
        for group in grouped.chunk_by(|a, b| a.0 == b.0) {
            let group: Vec<&Pending> = group.iter().map(|(_, p)| p).collect();
            let n = group.len();
            let mut emu: Vec<Status> = group.iter().map(|p| p.emulated).collect();
            let mut log: Vec<(Status, usize)> = group
                .iter()
                .enumerate()
                .map(|(i, p)| (p.logged, i))
                .collect();
            emu.sort();
            log.sort();
            // Match equal statuses; what is left on each side disagrees.
            let (mut i, mut j) = (0, 0);
            let mut left_e = Vec::new();
            let mut left_l = Vec::new();
            while i < n || j < n {
                if i < n && j < n && emu[i] == log[j].0 {
                    *self.confusion.entry((emu[i], emu[i])).or_default() += 1;
                    self.agreed += 1;
                    i += 1;
                    j += 1;
                } else if j >= n || (i < n && emu[i] < log[j].0) {
                    left_e.push(emu[i]);
                    i += 1;
                } else {
                    left_l.push(log[j]);
                    j += 1;
                }
            }
            for (e, (l, at)) in left_e.into_iter().zip(left_l) {
                *self.confusion.entry((e, l)).or_default() += 1;
                if self.first.len() < FIRST_DISAGREEMENTS {
                    let p = group[at];
                    let emulated = if n == 1 {
                        e.text().to_string()
                    } else {
                        format!("{} (in a group of {n} same-ms rows)", e.text())
                    };
                    self.first.push(VerifyRow {
                        at: format!("{}:{}", self.files[p.file as usize], p.line),
                        emulated,
                        logged: l.text().to_string(),
                    });
                }
            }
            self.rows += n as u64;
        }
    }
}

/// One nginx.conf being replayed.
pub struct ConfExec {
    conf: Arc<NginxConf>,
    overrides: HashMap<String, String>,
    /// Key column slot of each field a key reads.
    fields: HashMap<String, usize>,
    uri_slot: Option<usize>,
    host_slot: Option<usize>,
    /// The server of every row when the log has no host field.
    fixed_server: Option<usize>,
    forced: Option<usize>,
    /// Location per URI id, per server (`u32::MAX`: not yet known).
    routes: Vec<Vec<u32>>,
    /// Server per host id.
    hosts: Vec<u32>,
    zones: Vec<ZoneRun>,
    locs: Vec<LocRun>,
    verify: Option<Verify>,
    applied: Vec<(usize, usize, u32)>,
    buf: Vec<u8>,
    max_level: u64,
    shapes: bool,
    report: Option<usize>,
}

/// What a `ConfExec` needs from the command line.
pub struct ConfOptions<'a> {
    /// The log's field names, when they can be known before reading.
    pub log_fields: Option<&'a [String]>,
    pub overrides: &'a HashMap<String, String>,
    pub location: Option<&'a str>,
    pub verify: Option<&'a str>,
    pub files: Vec<String>,
}

impl ConfExec {
    /// Plans the replay of `conf`; `slot` gives the key column of a field
    /// (registering it).
    pub fn new(
        conf: Arc<NginxConf>,
        opts: &ConfOptions,
        quiet: bool,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<ConfExec> {
        let path = conf.path.display().to_string();
        let has = |f: &str| {
            opts.log_fields
                .is_none_or(|n| n.iter().any(|x| x.eq_ignore_ascii_case(f)))
        };
        // Positional names (`field10`) of line formats say nothing.
        let listing = || {
            opts.log_fields.map_or(String::new(), |n| {
                crate::quote::names(
                    &n.iter()
                        .filter(|x| {
                            !x.strip_prefix("field")
                                .is_some_and(|d| d.bytes().all(|b| b.is_ascii_digit()))
                        })
                        .collect::<Vec<_>>(),
                )
            })
        };
        let forced = match opts.location {
            None => None,
            Some(name) => Some(conf.location_named(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "--nginx-location '{name}': {path} has no such location; its locations are: {}",
                    conf.locations
                        .iter()
                        .map(|l| l.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?),
        };
        let mut fields = HashMap::new();
        let mut need = |f: &str, fields: &mut HashMap<String, usize>| -> Result<()> {
            if !fields.contains_key(f) {
                fields.insert(f.to_string(), slot(f)?);
            }
            Ok(())
        };
        // Zones used by a location rows can reach, keyed per server.
        let mut plans: Vec<Option<KeyPlan>> = (0..conf.zones.len()).map(|_| None).collect();
        let reachable: Vec<usize> = match forced {
            Some(l) => vec![l],
            None => (0..conf.locations.len()).collect(),
        };
        for &l in &reachable {
            let loc = &conf.locations[l];
            if loc.returns {
                continue;
            }
            for lim in &loc.limits {
                let z = &conf.zones[lim.zone];
                let mut fs = Vec::new();
                conf.fields_of(&z.key, loc.server, opts.overrides, &mut fs)
                    .map_err(|e| {
                        anyhow::anyhow!("{}: zone \"{}\" key {}: {e}", z.pos, z.name, z.key)
                    })?;
                for f in &fs {
                    if !has(f) {
                        bail!(
                            "{}: zone \"{}\" key {} reads the field '{f}', which the log does not have (its fields: {}); log that variable, or give --nginx-var {f}=FIELD",
                            z.pos,
                            z.name,
                            z.key,
                            listing()
                        );
                    }
                    need(f, &mut fields)?;
                }
                let single = z.key.single_var().and_then(|v| {
                    match conf.var_source(v, loc.server, opts.overrides) {
                        Ok(crate::nginx_conf::VarSource::Field(f)) => Some(f),
                        _ => None,
                    }
                });
                let plan = match single {
                    Some(f) => KeyPlan::Field(fields[&f]),
                    None => KeyPlan::Expr,
                };
                // A key reading `$server_name` differs by server: evaluate it.
                let plan = match (&plans[lim.zone], plan) {
                    (Some(KeyPlan::Expr), _) => KeyPlan::Expr,
                    (Some(KeyPlan::Field(a)), KeyPlan::Field(b)) if *a != b => KeyPlan::Expr,
                    (_, p) => p,
                };
                plans[lim.zone] = Some(plan);
            }
        }
        // A lone `location /` takes every URI: nothing to route.
        let trivial = |t: &[crate::nginx_conf::location::Node]| match t {
            [] => true,
            [n] => {
                n.children.is_empty()
                    && matches!(&n.how, crate::nginx_conf::location::Match::Prefix(u) if u == "/")
            }
            _ => false,
        };
        let routed = forced.is_none() && conf.servers.iter().any(|s| !trivial(&s.tree));
        let uri_field = opts
            .overrides
            .get("uri")
            .cloned()
            .unwrap_or_else(|| "uri".into());
        if routed && !has(&uri_field) {
            bail!(
                "{path} has locations, and routing rows to them needs the request's URI, but the log has no field '{uri_field}' (its fields: {}); log $uri or $request, give --nginx-var uri=FIELD, or send every row to one location with --nginx-location",
                listing()
            );
        }
        let uri_slot = routed.then(|| slot(&uri_field)).transpose()?;
        let several = forced.is_none() && conf.servers.len() > 1;
        let host_field = match opts.overrides.get("host") {
            Some(f) => Some(f.clone()),
            None => ["host", "http_host", "server_name"]
                .into_iter()
                .find(|f| opts.log_fields.is_some_and(|n| n.iter().any(|x| x == f)))
                .map(str::to_string)
                .or_else(|| opts.log_fields.is_none().then(|| "host".to_string())),
        };
        let host_slot = match (several, &host_field) {
            (true, Some(f)) => Some(slot(f)?),
            _ => None,
        };
        let mut fixed_server = None;
        if several && host_slot.is_none() {
            // No host in the log: the server that can limit, if only one
            // can (a plain-HTTP server that only redirects cannot).
            let limiting: Vec<usize> = (0..conf.servers.len())
                .filter(|&s| !conf.locations[conf.servers[s].fallback].returns)
                .collect();
            let chosen = match limiting.as_slice() {
                [one] => *one,
                _ => conf.server_for(None),
            };
            fixed_server = Some(chosen);
            if !quiet {
                let s = &conf.servers[chosen];
                eprintln!(
                    "drip: {path} has {} server blocks and the log has no host field: every row goes to the one at {} ({}); give --nginx-var host=FIELD to route by host",
                    conf.servers.len(),
                    s.pos,
                    s.names.first().map_or("no server_name", |n| n.as_str())
                );
            }
        }
        let verify = opts
            .verify
            .map(|c| -> Result<Verify> {
                Ok(Verify {
                    slot: slot(c)?,
                    column: c.to_string(),
                    group_ms: i64::MIN,
                    pending: Vec::new(),
                    keys: Vec::new(),
                    rows: 0,
                    agreed: 0,
                    confusion: HashMap::new(),
                    first: Vec::new(),
                    files: opts.files.clone(),
                })
            })
            .transpose()?;
        let client = opts
            .overrides
            .get("remote_addr")
            .or_else(|| opts.overrides.get("binary_remote_addr"))
            .map_or("remote_addr", String::as_str);
        let report = match plans.iter().flatten().next() {
            Some(KeyPlan::Field(slot)) => Some(*slot),
            _ => fields
                .get(client)
                .or_else(|| fields.values().min())
                .copied(),
        };
        let locs: Vec<LocRun> = conf
            .locations
            .iter()
            .map(|l| LocRun {
                limits: l.limits.iter().map(|x| (x.zone, conf.policy(x))).collect(),
                dry_run: l.dry_run,
                returns: l.returns,
                counts: [0; 6],
            })
            .collect();
        let max_level = locs
            .iter()
            .flat_map(|l| l.limits.iter().map(|(_, p)| p.info().max_level))
            .max()
            .unwrap_or(0);
        let shapes = locs
            .iter()
            .any(|l| l.limits.iter().any(|(_, p)| p.info().shapes));
        Ok(ConfExec {
            zones: plans
                .into_iter()
                .map(|p| ZoneRun {
                    plan: p.unwrap_or(KeyPlan::Expr),
                    compiled: (0..conf.servers.len()).map(|_| None).collect(),
                    interner: Interner::default(),
                    states: Vec::new(),
                    activity: Activity::default(),
                })
                .collect(),
            routes: vec![Vec::new(); conf.servers.len()],
            hosts: Vec::new(),
            overrides: opts.overrides.clone(),
            fields,
            uri_slot,
            host_slot,
            fixed_server,
            forced,
            locs,
            verify,
            applied: Vec::new(),
            buf: Vec::new(),
            max_level,
            shapes,
            report,
            conf,
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
        self.report
    }

    fn location(&mut self, ev: &Event, names: &[KeyNames]) -> usize {
        if let Some(l) = self.forced {
            return l;
        }
        let server = match self.host_slot {
            Some(h) => {
                let id = ev.keys[h];
                if id == EMPTY_KEY {
                    self.conf.server_for(None)
                } else {
                    let i = id as usize;
                    if i >= self.hosts.len() {
                        self.hosts.resize(i + 1, u32::MAX);
                    }
                    if self.hosts[i] == u32::MAX {
                        let host = String::from_utf8_lossy(names[h].get(id));
                        self.hosts[i] = self.conf.server_for(Some(&host)) as u32;
                    }
                    self.hosts[i] as usize
                }
            }
            None => self
                .fixed_server
                .unwrap_or_else(|| self.conf.server_for(None)),
        };
        let Some(u) = self.uri_slot else {
            return self.conf.route(server, "/");
        };
        let id = ev.keys[u];
        if id == EMPTY_KEY {
            return self.conf.route(server, "/");
        }
        let routes = &mut self.routes[server];
        let i = id as usize;
        if i >= routes.len() {
            routes.resize(i + 1, u32::MAX);
        }
        if routes[i] == u32::MAX {
            let uri = normalize(&String::from_utf8_lossy(names[u].get(id)));
            routes[i] = self.conf.route(server, &uri) as u32;
        }
        routes[i] as usize
    }

    /// The key id of zone `z` for this row; `None` exempts it.
    fn key(&mut self, z: usize, server: usize, ev: &Event, names: &[KeyNames]) -> Option<u32> {
        match self.zones[z].plan {
            KeyPlan::Field(slot) => {
                let id = ev.keys[slot];
                (id != EMPTY_KEY).then_some(id)
            }
            KeyPlan::Expr => {
                let zone = &mut self.zones[z];
                let parts = zone.compiled[server].get_or_insert_with(|| {
                    compile(
                        &self.conf,
                        &self.conf.zones[z].key,
                        server,
                        &self.overrides,
                        &self.fields,
                    )
                });
                self.buf.clear();
                eval(parts, ev, names, &mut self.buf);
                // nginx exempts empty keys and keys over 65535 bytes.
                if self.buf.is_empty() || self.buf.len() > 65535 {
                    return None;
                }
                Some(self.zones[z].interner.intern(&self.buf).0)
            }
        }
    }

    /// Decides one row: nginx's decision, the level just after, and the
    /// `$limit_req_status` it would log.
    pub fn decide(
        &mut self,
        ev: &Event,
        names: &[KeyNames],
        levels: bool,
    ) -> Result<(Decision, u64)> {
        let now = ev.at;
        let now_ms = (now.0 / Nanos::PER_MS) as i64;
        let cost = u64::from(ev.cost);
        let l = self.location(ev, names);
        let server = self.conf.locations[l].server;
        self.applied.clear();
        let mut refused = None;
        let mut refused_key = None;
        if !self.locs[l].returns {
            for i in 0..self.locs[l].limits.len() {
                let (z, p) = self.locs[l].limits[i];
                let Some(k) = self.key(z, server, ev, names) else {
                    continue;
                };
                let zone = &mut self.zones[z];
                zone.activity.hit(k, now_ms);
                let ki = k as usize;
                if ki >= zone.states.len() {
                    zone.states.resize(ki + 1, NginxState::default());
                }
                match p.check(&zone.states[ki], now, cost) {
                    Decision::Admit { .. } => self.applied.push((i, z, k)),
                    d @ Decision::Refuse { .. } => {
                        refused = Some(d);
                        refused_key = Some((z as u32, k));
                        break;
                    }
                }
            }
        }
        let dry = self.locs[l].dry_run;
        let (decision, status) = if let Some(d) = refused {
            let s = if dry {
                Status::RejectedDryRun
            } else {
                Status::Rejected
            };
            (d, s)
        } else if self.applied.is_empty() {
            (Decision::Admit { release: now }, Status::None)
        } else {
            let mut release = now;
            for &(i, z, k) in &self.applied {
                let (_, p) = self.locs[l].limits[i];
                let st = &mut self.zones[z].states[k as usize];
                if let Decision::Admit { release: r } = p.check(st, now, cost) {
                    release = release.max(r);
                }
                p.admit(st, now, cost);
            }
            let s = match (release > now, dry) {
                (false, _) => Status::Passed,
                (true, false) => Status::Delayed,
                (true, true) => Status::DelayedDryRun,
            };
            (Decision::Admit { release }, s)
        };
        let level = if levels {
            self.applied
                .iter()
                .map(|&(i, z, k)| {
                    let (_, p) = self.locs[l].limits[i];
                    p.level(&self.zones[z].states[k as usize], now)
                })
                .max()
                .unwrap_or(0)
        } else {
            0
        };
        self.locs[l].counts[status as usize] += 1;
        if let Some(v) = &mut self.verify {
            let id = ev.keys[v.slot];
            let text = if id == EMPTY_KEY {
                &b""[..]
            } else {
                names[v.slot].get(id)
            };
            let Some(logged) = Status::parse(text) else {
                bail!(
                    "{}:{}: the logged $limit_req_status '{}' in column '{}' is not PASSED, DELAYED, REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN or '-'; check --verify-column",
                    v.files[ev.file as usize],
                    ev.line,
                    String::from_utf8_lossy(text),
                    v.column
                );
            };
            v.push(
                Pending {
                    loc: l as u32,
                    from: 0,
                    to: 0,
                    emulated: status,
                    logged,
                    file: ev.file,
                    line: ev.line,
                },
                self.applied
                    .iter()
                    .map(|&(_, z, k)| (z as u32, k))
                    .chain(refused_key),
                now_ms,
            );
        }
        Ok((decision, level))
    }

    /// The report's nginx section, once every row is decided.
    pub fn report(&mut self) -> NginxReport {
        let conf = &self.conf;
        let mut notes = Vec::new();
        for (z, run) in self.zones.iter().enumerate() {
            let zone = &conf.zones[z];
            if run.activity.peak > zone.capacity() {
                notes.push(format!(
                    "zone \"{}\": up to {} keys were active within 60 s, more than the about {} its {} bytes hold; nginx would have evicted keys, which drip does not model, so decisions after such moments may differ",
                    zone.name,
                    run.activity.peak,
                    zone.capacity(),
                    zone.size
                ));
            }
        }
        if self.locs.iter().any(|l| l.dry_run && !l.limits.is_empty()) {
            notes.push("locations in limit_req_dry_run count what they would drop and delay; nginx served those requests at once".into());
        }
        let locations = self
            .locs
            .iter()
            .zip(&conf.locations)
            .filter(|(l, _)| l.counts.iter().sum::<u64>() > 0)
            .map(|(l, c)| {
                let n = |s: Status| l.counts[s as usize];
                NginxLocationRow {
                    location: c.name.clone(),
                    limits: if l.returns {
                        "return (never limited)".into()
                    } else if c.limits.is_empty() {
                        "none".into()
                    } else {
                        c.limits
                            .iter()
                            .map(|x| {
                                let z = &conf.zones[x.zone];
                                let mut s = format!("{} {}", z.name, z.rate_text);
                                if x.burst > 0 {
                                    s.push_str(&format!(" burst={}", x.burst));
                                }
                                match x.delay {
                                    None => s.push_str(" nodelay"),
                                    Some(0) => {}
                                    Some(d) => s.push_str(&format!(" delay={d}")),
                                }
                                s
                            })
                            .collect::<Vec<_>>()
                            .join(" + ")
                    } + if l.dry_run && !c.limits.is_empty() {
                        " (dry run)"
                    } else {
                        ""
                    },
                    requests: l.counts.iter().sum(),
                    passed: n(Status::Passed),
                    delayed: n(Status::Delayed) + n(Status::DelayedDryRun),
                    rejected: n(Status::Rejected) + n(Status::RejectedDryRun),
                    unlimited: n(Status::None),
                }
            })
            .collect();
        let verify = self.verify.as_mut().map(|v| {
            v.flush();
            let mut confusion: Vec<(String, String, u64)> = v
                .confusion
                .iter()
                .map(|((e, l), n)| (e.text().to_string(), l.text().to_string(), *n))
                .collect();
            let rank = |t: &str| Status::ALL.iter().position(|s| s.text() == t);
            confusion.sort_by_key(|(e, l, _)| (rank(e), rank(l)));
            VerifyReport {
                column: v.column.clone(),
                rows: v.rows,
                agreed: v.agreed,
                disagreed: v.rows - v.agreed,
                agreement_pct: if v.rows == 0 {
                    100.0
                } else {
                    v.agreed as f64 * 100.0 / v.rows as f64
                },
                confusion,
                first_disagreements: std::mem::take(&mut v.first),
            }
        });
        NginxReport {
            config: conf.path.display().to_string(),
            locations,
            notes,
            verify,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_nginx_logs_them() {
        assert_eq!(Status::parse(b"PASSED"), Some(Status::Passed));
        assert_eq!(
            Status::parse(b" rejected_dry_run "),
            Some(Status::RejectedDryRun)
        );
        assert_eq!(Status::parse(b"-"), Some(Status::None));
        assert_eq!(Status::parse(b""), Some(Status::None));
        assert_eq!(Status::parse(b"OK"), None);
        for s in Status::ALL {
            assert_eq!(Status::parse(s.text().as_bytes()), Some(s));
        }
    }

    #[test]
    fn keys_active_within_60_s_are_counted() {
        let mut a = Activity::default();
        a.hit(0, 0);
        a.hit(1, 1_000);
        a.hit(0, 59_999); // key 0 stays active
        assert_eq!((a.active, a.peak), (2, 2));
        a.hit(2, 61_000); // key 1 (last seen at 1 s) is 60 s idle: gone
        assert_eq!((a.active, a.peak), (2, 2));
        a.hit(3, 61_500);
        assert_eq!((a.active, a.peak), (3, 3));
        a.hit(4, 200_000); // everything else idle
        assert_eq!((a.active, a.peak), (1, 3));
    }

    fn pending(emulated: Status, logged: Status, line: u64) -> Pending {
        Pending {
            loc: 0,
            from: 0,
            to: 0,
            emulated,
            logged,
            file: 0,
            line,
        }
    }

    #[test]
    fn a_same_millisecond_group_is_compared_as_a_multiset() {
        let mut v = Verify {
            slot: 0,
            column: "s".into(),
            group_ms: i64::MIN,
            pending: Vec::new(),
            keys: Vec::new(),
            rows: 0,
            agreed: 0,
            confusion: HashMap::new(),
            first: Vec::new(),
            files: vec!["log".into()],
        };
        let k = |z: u32, k: u32| std::iter::once((z, k));
        use Status::*;
        // Same statuses, another order: all agree.
        v.push(pending(Passed, Rejected, 1), k(0, 1), 5);
        v.push(pending(Delayed, Passed, 2), k(0, 1), 5);
        v.push(pending(Rejected, Delayed, 3), k(0, 1), 5);
        // The next millisecond: one row, disagreeing.
        v.push(pending(Rejected, Delayed, 4), k(0, 1), 6);
        // Two rows: one status in common.
        v.push(pending(Passed, Passed, 5), k(0, 1), 7);
        v.push(pending(Rejected, Delayed, 6), k(0, 1), 7);
        // Two keys in one ms: not pooled, each row blamed on its own.
        v.push(pending(Rejected, Passed, 7), k(0, 1), 8);
        v.push(pending(Passed, Rejected, 8), k(0, 2), 8);
        // No key (no limit applied): alone.
        v.push(pending(Passed, Passed, 9), std::iter::empty(), 8);
        v.flush();
        assert_eq!((v.rows, v.agreed), (9, 5));
        assert_eq!(v.confusion[&(Rejected, Passed)], 1);
        assert_eq!(v.confusion[&(Passed, Rejected)], 1);
        assert_eq!(v.confusion[&(Rejected, Delayed)], 2);
        assert_eq!(v.confusion[&(Passed, Passed)], 3);
        let listed: Vec<(&str, &str, &str)> = v
            .first
            .iter()
            .map(|r| (r.at.as_str(), r.emulated.as_str(), r.logged.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("log:4", "REJECTED", "DELAYED"),
                (
                    "log:6",
                    "REJECTED (in a group of 2 same-ms rows)",
                    "DELAYED"
                ),
                ("log:7", "REJECTED", "PASSED"),
                ("log:8", "PASSED", "REJECTED"),
            ]
        );
    }
}
