//! `--traefik-config`: a Traefik dynamic configuration as one audited
//! policy. Each row goes to the router its access log names
//! (`RouterName`), and through that router's `rateLimit` middlewares in
//! chain order, each with its own buckets (Traefik builds a router's
//! middlewares for it alone). A middleware that makes a request wait hands
//! it on to the next one when the wait is over; one that refuses answers
//! 429 and the request goes no further (the buckets it passed keep their
//! tokens spent, as Traefik's do).

mod verify;

use super::outcome::{NginxLocationRow, NginxReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::EMPTY_KEY;
use crate::policy::traefik::TraefikRateState;
use crate::policy::{Decision, Policy};
use crate::traefik_cfg::limit::v6_subnet;
use crate::traefik_cfg::{Source, TraefikCfg};
use anyhow::{Result, bail};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use verify::{Fate, Verify};

/// What a `TraefikExec` needs from the command line.
pub struct TraefikOptions<'a> {
    /// The log's field names, when they can be known before reading.
    pub log_fields: Option<&'a [String]>,
    pub verify: Option<&'a str>,
    pub files: Vec<String>,
}

/// The access log's field holding a request header, as Traefik names it:
/// `request_` and the header in Go's canonical form (`X-Api-Key`).
pub fn header_field(name: &str) -> String {
    let mut out = String::from("request_");
    let mut up = true;
    for c in name.chars() {
        out.push(if up {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        up = c == '-';
    }
    out
}

/// A source criterion's key column: the field it reads (`clf`: in
/// Traefik's Common Log Format, which has the client and no headers).
fn source_field(s: &Source, clf: bool) -> String {
    match s {
        Source::Remote { .. } if clf => "remote_addr".into(),
        Source::Remote { .. } => "ClientHost".into(),
        Source::Depth { .. } | Source::Excluded(_) => header_field("X-Forwarded-For"),
        Source::Header(h) => header_field(h),
        Source::Host => "RequestHost".into(),
    }
}

/// Rows that left a router: served at once, served after a wait,
/// refused, or with no limit on the way.
#[derive(Clone, Copy, Default)]
struct Ends {
    passed: u64,
    delayed: u64,
    refused: u64,
    unlimited: u64,
}

/// One router's instance of one `rateLimit`: its buckets by source.
#[derive(Default)]
struct Buckets {
    ids: HashMap<Vec<u8>, u32>,
    states: Vec<TraefikRateState>,
}

/// One Traefik configuration being replayed.
pub struct TraefikExec {
    cfg: Arc<TraefikCfg>,
    router_col: usize,
    client_col: usize,
    /// Per limit of the config, the key column its source reads, and
    /// (a row reached it, a row had a value in the column).
    source_cols: Vec<usize>,
    source_seen: Vec<(bool, bool)>,
    /// Per router, per limit of its chain, the buckets.
    buckets: Vec<Vec<Buckets>>,
    ends: Vec<Ends>,
    /// Rows naming routers the config does not have, by name.
    strangers: HashMap<String, u64>,
    verify: Option<Verify>,
    limited_by_key: Vec<u64>,
}

impl TraefikExec {
    /// The replay of `cfg`: `slot` gives the key column of a log field.
    pub fn new(
        cfg: Arc<TraefikCfg>,
        opts: &TraefikOptions,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<TraefikExec> {
        let mut need = |f: &str, why: &str| -> Result<usize> {
            if let Some(fields) = opts.log_fields
                && !fields.iter().any(|x| x == f)
            {
                bail!(
                    "{}: {why}, but the log has no field '{f}' (it has {}); audit Traefik's JSON access log (accessLog.format: json{})",
                    cfg.path.display(),
                    crate::quote::names(fields),
                    match f.strip_prefix("request_") {
                        Some(h) => format!(", with accessLog.fields.headers.names.{h}: keep"),
                        None => String::new(),
                    }
                );
            }
            slot(f)
        };
        // Traefik's text log (CLF) names fields as drip reads the format.
        let clf = opts.log_fields.is_some_and(|f| {
            f.iter().any(|x| x == "router_name") && !f.iter().any(|x| x == "RouterName")
        });
        let (router, client) = match clf {
            true => ("router_name", "remote_addr"),
            false => ("RouterName", "ClientHost"),
        };
        let router_col = need(router, "each row is sent to the router the log names")?;
        let client_col = need(client, "drops are counted by client")?;
        let mut source_cols = Vec::new();
        for l in &cfg.limits {
            let field = source_field(&l.source, clf);
            let why = format!("{} groups requests by {field}", l.name);
            source_cols.push(need(&field, &why)?);
        }
        let verify = opts
            .verify
            .map(|c| -> Result<Verify> { Ok(Verify::new(slot(c)?, c, opts.files.clone())) })
            .transpose()?;
        let buckets = (cfg.routers.iter())
            .map(|r| r.limits.iter().map(|_| Buckets::default()).collect())
            .collect();
        Ok(TraefikExec {
            ends: vec![Ends::default(); cfg.routers.len()],
            buckets,
            cfg,
            router_col,
            client_col,
            source_seen: vec![(false, false); source_cols.len()],
            source_cols,
            strangers: HashMap::new(),
            verify,
            limited_by_key: Vec::new(),
        })
    }

    /// The key column drops are counted by: the client.
    pub fn report_slot(&self) -> Option<usize> {
        Some(self.client_col)
    }

    /// Decides one row (`levels`: also the most tokens in use it met).
    pub fn decide(
        &mut self,
        ev: &Event,
        names: &KeyValues,
        levels: bool,
    ) -> Result<(Decision, u64)> {
        let value = |c: usize| -> &[u8] {
            match names.id(ev, c) {
                EMPTY_KEY => b"",
                id => names[c].get(id),
            }
        };
        let name = value(self.router_col);
        let router = std::str::from_utf8(name)
            .ok()
            .and_then(|n| self.cfg.router(n));
        let Some(r) = router else {
            if !name.is_empty() {
                let n = String::from_utf8_lossy(name).into_owned();
                *self.strangers.entry(n).or_default() += 1;
            }
            self.record(ev, names, Fate::Passed);
            return Ok((Decision::Admit { release: ev.at }, 0));
        };
        let cfg = self.cfg.clone();
        let mut at = ev.at;
        let mut level = 0;
        let mut refused = None;
        for (k, &l) in cfg.routers[r].limits.iter().enumerate() {
            let limit = &cfg.limits[l];
            let Some(policy) = &limit.policy else {
                continue;
            };
            let field = value(self.source_cols[l]);
            let seen = &mut self.source_seen[l];
            *seen = (true, seen.1 || !field.is_empty());
            let key = source_key(&limit.source, field);
            let b = &mut self.buckets[r][k];
            let next = b.states.len() as u32;
            let id = *b.ids.entry(key).or_insert(next);
            if id == next {
                b.states.push(TraefikRateState::default());
            }
            let state = &mut b.states[id as usize];
            let d = policy.decide(state, at, 1);
            if levels {
                level = level.max(policy.level(state, at));
            }
            match d {
                Decision::Admit { release } => at = release,
                Decision::Refuse { retry_at } => {
                    refused = Some(retry_at);
                    break;
                }
            }
        }
        let limited = cfg.routers[r]
            .limits
            .iter()
            .any(|&l| cfg.limits[l].policy.is_some());
        let e = &mut self.ends[r];
        let (fate, d) = match refused {
            Some(retry_at) => {
                e.refused += 1;
                (Fate::Refused, Decision::Refuse { retry_at })
            }
            None if !limited => {
                e.unlimited += 1;
                (Fate::Passed, Decision::Admit { release: at })
            }
            None if at > ev.at => {
                e.delayed += 1;
                (Fate::Delayed, Decision::Admit { release: at })
            }
            None => {
                e.passed += 1;
                (Fate::Passed, Decision::Admit { release: at })
            }
        };
        if limited {
            let id = names.id(ev, self.client_col);
            if id != EMPTY_KEY {
                let i = id as usize;
                if self.limited_by_key.len() <= i {
                    self.limited_by_key.resize(i + 1, 0);
                }
                self.limited_by_key[i] += 1;
            }
        }
        self.record(ev, names, fate);
        Ok((d, level))
    }

    fn record(&mut self, ev: &Event, names: &KeyValues, fate: Fate) {
        if let Some(v) = &mut self.verify {
            let logged = match names.id(ev, v.col) {
                EMPTY_KEY => &b""[..],
                id => names[v.col].get(id),
            };
            v.record(fate, logged, (ev.file, ev.line));
        }
    }

    /// True when admitted requests may wait.
    pub fn shapes(&self) -> bool {
        self.cfg.limits.iter().any(|l| l.policy.is_some())
    }

    /// Rows a limit applied to, per client id.
    pub fn take_limited_by_key(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.limited_by_key)
    }

    /// The report's section, once every row is decided.
    pub fn report(&mut self) -> NginxReport {
        let cfg = &self.cfg;
        let mut notes = cfg.notes.clone();
        let most = self.buckets.iter().flatten().map(|b| b.states.len()).max();
        if most.is_some_and(|n| n > 65_536) {
            notes.push(
                "a middleware saw more than 65,536 sources: Traefik keeps that many and drops the one expiring first past that; drip keeps every source".into(),
            );
        }
        for (l, limit) in cfg.limits.iter().enumerate() {
            if self.source_seen[l] == (true, false)
                && !matches!(limit.source, Source::Remote { .. })
            {
                let field = source_field(&limit.source, false);
                let keep = match field.strip_prefix("request_") {
                    Some(h) => format!(" (accessLog.fields.headers.names.{h}: keep)"),
                    None => String::new(),
                };
                notes.push(format!(
                    "no row has a value in '{field}', which {} groups requests by: they shared one bucket, as Traefik shares it among requests without one; if the requests had it, log it{keep}",
                    limit.name
                ));
            }
        }
        let mut strangers: Vec<_> = self.strangers.iter().collect();
        strangers.sort();
        for (name, n) in strangers {
            notes.push(format!(
                "{n} rows name router '{}', which the config does not have: admitted unlimited",
                crate::quote::visible(name)
            ));
        }
        let mut untested = Vec::new();
        let mut locations = Vec::new();
        for (r, e) in self.ends.iter().enumerate() {
            let router = &cfg.routers[r];
            let requests = e.passed + e.delayed + e.refused + e.unlimited;
            let limits: Vec<String> = router
                .limits
                .iter()
                .map(|&l| cfg.limits[l].text())
                .collect();
            if requests == 0 {
                if !limits.is_empty() {
                    untested.push(format!("router {} (line {})", router.name, router.line));
                }
                continue;
            }
            locations.push(NginxLocationRow {
                location: router.name.clone(),
                limits: limits.join("; "),
                requests,
                passed: e.passed,
                delayed: e.delayed,
                rejected: e.refused,
                unlimited: e.unlimited,
            });
        }
        for u in &untested {
            notes.push(format!("{u} has a rate limit and no row of the log reached it: untested (--fail-untested makes this fail)"));
        }
        let used: Vec<usize> = cfg
            .routers
            .iter()
            .flat_map(|r| r.limits.iter().copied())
            .collect();
        let unused_zones: Vec<String> = (0..cfg.limits.len())
            .filter(|l| !used.contains(l))
            .map(|l| {
                format!(
                    "middleware {} (line {})",
                    cfg.limits[l].name, cfg.limits[l].line
                )
            })
            .collect();
        for z in &unused_zones {
            notes.push(format!("{z} is a rate limit no router uses"));
        }
        NginxReport {
            config: cfg.path.display().to_string(),
            locations,
            notes,
            verify: self.verify.as_mut().map(Verify::report),
            untested,
            unused_zones,
        }
    }
}

/// The bucket key a source criterion reads from its field.
fn source_key(s: &Source, field: &[u8]) -> Vec<u8> {
    let text = || String::from_utf8_lossy(field);
    match s {
        Source::Remote { v6: Some(bits) } => v6_subnet(&text(), *bits).into_bytes(),
        Source::Remote { v6: None } | Source::Header(_) | Source::Host => field.to_vec(),
        Source::Depth { depth, v6 } => {
            let xff = text();
            let parts: Vec<&str> = xff.split(',').collect();
            if xff.is_empty() && *depth > 0 || parts.len() < *depth {
                return Vec::new();
            }
            let ip = parts[parts.len() - depth].trim();
            match v6 {
                Some(bits) => v6_subnet(ip, *bits).into_bytes(),
                None => ip.as_bytes().to_vec(),
            }
        }
        Source::Excluded(nets) => {
            let xff = text();
            for part in xff.split(',').rev() {
                let p = part.trim();
                if p.is_empty() {
                    continue;
                }
                let inside = p
                    .parse::<IpAddr>()
                    .is_ok_and(|ip| nets.iter().any(|n| n.contains(ip)));
                if !inside {
                    return p.as_bytes().to_vec();
                }
            }
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_canonical() {
        assert_eq!(header_field("x-api-key"), "request_X-Api-Key");
        assert_eq!(header_field("X-FORWARDED-FOR"), "request_X-Forwarded-For");
    }

    #[test]
    fn sources_as_traefik_strategies_read_them() {
        let depth = |d| Source::Depth { depth: d, v6: None };
        // pkg/ip/strategy_test.go: depth 1 of "10.0.0.4,10.0.0.3,10.0.0.2,10.0.0.1" is 10.0.0.1.
        let xff = b"10.0.0.4,10.0.0.3,10.0.0.2,10.0.0.1";
        assert_eq!(source_key(&depth(1), xff), b"10.0.0.1");
        assert_eq!(source_key(&depth(3), xff), b"10.0.0.3");
        assert_eq!(source_key(&depth(5), xff), b"");
        let nets = vec![crate::traefik_cfg::limit::Net {
            addr: "10.0.0.0".parse().unwrap(),
            bits: 8,
        }];
        assert_eq!(
            source_key(
                &Source::Excluded(nets.clone()),
                b"1.2.3.4, 10.0.0.2, 10.0.0.1"
            ),
            b"1.2.3.4"
        );
        assert_eq!(source_key(&Source::Excluded(nets), b"10.0.0.1"), b"");
        let v6 = Source::Remote { v6: Some(64) };
        assert_eq!(source_key(&v6, b"2001:db8:1:2:3:4:5:6"), b"2001:db8:1:2::");
    }
}
