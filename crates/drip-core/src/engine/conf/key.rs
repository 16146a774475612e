//! Zone keys per row: where each zone's key comes from (one field as it
//! stands, or an expression of fields, constants and maps compiled per
//! server and interned here), and the keys each zone holds active.

use super::LogFields;
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::nginx_conf::geo::Geo;
use crate::nginx_conf::location::Target;
use crate::nginx_conf::rewrite::Rewritten;
use crate::nginx_conf::{NginxConf, VarSource};
use crate::policy::nginx::NginxState;
use anyhow::{Result, anyhow, bail};
use std::collections::{HashMap, VecDeque};

/// Where a zone's key comes from for each row.
pub(super) enum KeyPlan {
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
    /// A part of the request target held in a field.
    Target(Target, usize),
    Map(Box<CMap>),
    /// A `geo`: its address expression, and the block.
    Geo(Box<(Vec<CPart>, Geo)>),
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
    use crate::nginx_conf::expr::Part;
    e.parts
        .iter()
        .map(|p| match p {
            Part::Lit(l) => CPart::Lit(l.as_bytes().to_vec()),
            Part::Var(v) => match conf.var_source(v, server, overrides) {
                Ok(VarSource::Field(f)) => {
                    fields.get(&f).map_or(CPart::Absent, |&s| CPart::Field(s))
                }
                Ok(VarSource::Const(c)) => CPart::Lit(c.into_bytes()),
                Ok(VarSource::Geo(g)) => {
                    let g = &conf.geos[g];
                    let source = compile(conf, &g.source, server, overrides, fields);
                    CPart::Geo(Box::new((source, g.clone())))
                }
                Ok(VarSource::Request(t, f)) => fields
                    .get(&f)
                    .map_or(CPart::Absent, |&s| CPart::Target(t, s)),
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
#[inline]
fn eval(parts: &[CPart], ev: &Event, names: &KeyValues, rw: Option<&Rewritten>, out: &mut Vec<u8>) {
    for p in parts {
        match p {
            CPart::Lit(l) => out.extend_from_slice(l),
            CPart::Field(s) => {
                let id = names.id(ev, *s);
                if id != EMPTY_KEY {
                    out.extend_from_slice(names[*s].get(id));
                }
            }
            CPart::Absent => {}
            CPart::Target(t, _) if let Some(r) = rw.filter(|_| *t != Target::RequestUri) => {
                t.eval_rewritten(r.uri.as_bytes(), r.args.as_bytes(), out)
            }
            CPart::Target(t, s) => {
                let id = names.id(ev, *s);
                if id != EMPTY_KEY {
                    t.eval(names[*s].get(id), out);
                }
            }
            CPart::Geo(g) => {
                let start = out.len();
                eval(&g.0, ev, names, rw, out);
                let value = g.1.lookup(&out[start..]);
                out.truncate(start);
                out.extend_from_slice(value.as_bytes());
            }
            CPart::Map(m) => {
                let start = out.len();
                eval(&m.source, ev, names, rw, out);
                out[start..].make_ascii_lowercase();
                let chosen = m.entries.get(&out[start..]).unwrap_or(&m.default);
                out.truncate(start);
                eval(chosen, ev, names, rw, out);
            }
        }
    }
}

pub(super) struct ZoneRun {
    pub(super) plan: KeyPlan,
    /// The key compiled per server (on first use), for `KeyPlan::Expr`.
    compiled: Vec<Option<Vec<CPart>>>,
    interner: Interner,
    /// The keys an expression gave, by id (for reports naming them).
    pub(super) names: KeyNames,
    pub(super) states: Vec<NginxState>,
    pub(super) activity: Activity,
    /// The longest key an expression gave, bytes.
    pub(super) longest: usize,
}

/// Keys active within nginx's 60 s eviction horizon.
#[derive(Default)]
pub(super) struct Activity {
    last_hit: Vec<i64>,
    hits: VecDeque<(i64, u32)>,
    active: u64,
    pub(super) peak: u64,
}

const HORIZON_MS: i64 = 60_000;

impl Activity {
    #[inline]
    pub(super) fn hit(&mut self, key: u32, now_ms: i64) {
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

/// Every zone's keys and states, and what evaluating keys needs.
pub(super) struct Keys {
    pub(super) zones: Vec<ZoneRun>,
    overrides: HashMap<String, String>,
    /// Key column slot of each field a key reads.
    fields: HashMap<String, usize>,
    buf: Vec<u8>,
    /// The key column drops are counted by (see `ConfExec::report_slot`).
    pub(super) report: Option<usize>,
}

impl Keys {
    /// Plans each zone's key from the locations rows can reach (`forced`:
    /// the only one), registering the fields keys read through `slot`, in
    /// the order keys name them.
    pub(super) fn plan(
        conf: &NginxConf,
        overrides: &HashMap<String, String>,
        log: LogFields,
        forced: Option<usize>,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<Keys> {
        let overrides = &logged_targets(overrides, log);
        let mut fields = HashMap::new();
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
                let plan = plan_key(
                    conf,
                    lim.zone,
                    loc.server,
                    overrides,
                    log,
                    &mut fields,
                    slot,
                )?;
                // A key reading `$server_name` differs by server: evaluate it.
                let plan = match (&plans[lim.zone], plan) {
                    (Some(KeyPlan::Expr), _) => KeyPlan::Expr,
                    (Some(KeyPlan::Field(a)), KeyPlan::Field(b)) if *a != b => KeyPlan::Expr,
                    (_, p) => p,
                };
                plans[lim.zone] = Some(plan);
            }
        }
        let report = report_slot(&plans, &fields, overrides);
        Ok(Keys {
            zones: plans
                .into_iter()
                .map(|p| ZoneRun {
                    plan: p.unwrap_or(KeyPlan::Expr),
                    compiled: (0..conf.servers.len()).map(|_| None).collect(),
                    interner: Interner::default(),
                    names: KeyNames::default(),
                    states: Vec::new(),
                    activity: Activity::default(),
                    longest: 0,
                })
                .collect(),
            overrides: overrides.clone(),
            fields,
            buf: Vec::new(),
            report,
        })
    }

    /// The key id of zone `z` for this row of `server` (`rw`: its `$uri`
    /// and `$args` after rewrites); `None` exempts it.
    #[inline]
    pub(super) fn key(
        &mut self,
        conf: &NginxConf,
        z: usize,
        server: usize,
        ev: &Event,
        names: &KeyValues,
        rw: Option<&Rewritten>,
    ) -> Option<u32> {
        match self.zones[z].plan {
            KeyPlan::Field(slot) => {
                let id = names.id(ev, slot);
                (id != EMPTY_KEY).then_some(id)
            }
            KeyPlan::Expr => {
                let zone = &mut self.zones[z];
                let parts = zone.compiled[server].get_or_insert_with(|| {
                    compile(
                        conf,
                        &conf.zones[z].key,
                        server,
                        &self.overrides,
                        &self.fields,
                    )
                });
                self.buf.clear();
                eval(parts, ev, names, rw, &mut self.buf);
                // nginx exempts empty keys and keys over 65535 bytes.
                if self.buf.is_empty() || self.buf.len() > 65535 {
                    return None;
                }
                let zone = &mut self.zones[z];
                zone.longest = zone.longest.max(self.buf.len());
                let (id, new) = zone.interner.intern(&self.buf);
                if new {
                    zone.names.push(&self.buf);
                }
                Some(id)
            }
        }
    }
}

/// `overrides` with each request-target variable the log holds itself
/// (`$args`, `$request_uri`, `$arg_NAME`, …) read from its own field, and
/// `$request_method` and `$server_protocol`, when the log has no field of
/// their own, read from the parts of a logged `$request`.
fn logged_targets(overrides: &HashMap<String, String>, log: LogFields) -> HashMap<String, String> {
    let mut out = overrides.clone();
    for f in log.0.unwrap_or_default() {
        if f != "uri" && Target::of(f).is_some() && !out.contains_key(f) {
            out.insert(f.clone(), f.clone());
        }
    }
    // Variables of the request target are read off the target, not off a
    // logged `$uri` (the final URI, without the query).
    let target = crate::ingest::log::nginx::REQUEST_TARGET;
    if log.named(target) && !out.contains_key("uri") && !out.contains_key("request_uri") {
        // `$request_uri` is the target as sent; `$uri`, `$args` and
        // `$arg_NAME` are worked out from it.
        out.insert("request_uri".to_string(), target.to_string());
    }
    if log.derived_uri() || log.named(target) {
        for (var, part) in [
            ("request_method", "method"),
            ("server_protocol", "protocol"),
        ] {
            if !log.named(var) && !out.contains_key(var) {
                out.insert(var.to_string(), part.to_string());
            }
        }
    }
    out
}

/// The plan of zone `z`'s key in `server`, registering the fields it reads
/// (each must be in the log).
fn plan_key(
    conf: &NginxConf,
    z: usize,
    server: usize,
    overrides: &HashMap<String, String>,
    log: LogFields,
    fields: &mut HashMap<String, usize>,
    slot: &mut dyn FnMut(&str) -> Result<usize>,
) -> Result<KeyPlan> {
    let zone = &conf.zones[z];
    let mut fs = Vec::new();
    conf.fields_of(&zone.key, server, overrides, &mut fs)
        .map_err(|e| anyhow!("{}: zone \"{}\" key {}: {e}", zone.pos, zone.name, zone.key))?;
    for f in &fs {
        if !log.has(f) {
            bail!(
                "{}: zone \"{}\" key {} reads the field '{f}', which the log does not have (its fields: {}); log that variable, or give --nginx-var {f}=FIELD",
                zone.pos,
                zone.name,
                zone.key,
                log.listing()
            );
        }
        if !fields.contains_key(f) {
            fields.insert(f.to_string(), slot(f)?);
        }
    }
    let single = zone
        .key
        .single_var()
        .and_then(|v| match conf.var_source(v, server, overrides) {
            Ok(VarSource::Field(f)) => Some(f),
            _ => None,
        });
    Ok(match single {
        Some(f) => KeyPlan::Field(fields[&f]),
        None => KeyPlan::Expr,
    })
}

/// The field the first limiting zone's key is, else the client address
/// when a key reads it, else the first field a key reads.
fn report_slot(
    plans: &[Option<KeyPlan>],
    fields: &HashMap<String, usize>,
    overrides: &HashMap<String, String>,
) -> Option<usize> {
    let client = overrides
        .get("remote_addr")
        .or_else(|| overrides.get("binary_remote_addr"))
        .map_or("remote_addr", String::as_str);
    match plans.iter().flatten().next() {
        Some(KeyPlan::Field(slot)) => Some(*slot),
        _ => fields
            .get(client)
            .or_else(|| fields.values().min())
            .copied(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
