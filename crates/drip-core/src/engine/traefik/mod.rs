//! `--traefik-config`: a Traefik dynamic configuration as one audited
//! policy. Each row goes to the router its access log names
//! (`RouterName`), and through that router's `rateLimit` middlewares in
//! chain order, each with its own buckets (Traefik builds a router's
//! middlewares for it alone). A middleware that makes a request wait hands
//! it on to the next one when the wait is over; one that refuses answers
//! 429 and the request goes no further (the buckets it passed keep their
//! tokens spent, as Traefik's do).

mod source;
mod verify;

use super::config_run::{ConfigOptions, ConfigRun, count_limited, section};
use super::outcome::{Gateway, NginxLocationRow, NginxReport};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::policy::traefik::TraefikRateState;
use crate::policy::{Decision, Policy};
use crate::time::Nanos;
use crate::traefik_cfg::{Source, TraefikCfg};
use anyhow::{Result, bail};
pub use source::header_field;
use std::collections::HashMap;
use std::sync::Arc;
use verify::{Fate, Verify};

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

impl Buckets {
    /// The bucket of `key`, new and full if the source was never seen.
    fn of(&mut self, key: &[u8]) -> &mut TraefikRateState {
        let id = match self.ids.get(key) {
            Some(&id) => id,
            None => {
                let id = self.states.len() as u32;
                self.ids.insert(key.to_vec(), id);
                self.states.push(TraefikRateState::default());
                id
            }
        };
        &mut self.states[id as usize]
    }
}

/// Where the rows of one value of the router column go.
#[derive(Clone, Copy, PartialEq)]
enum Route {
    Unseen,
    Router(u32),
    /// A router the config does not have (or none).
    Stranger,
}

/// A `rateLimit` of the config as the replay met it: rows reached it, and
/// some had a value in the field its source reads.
#[derive(Clone, Copy, Default, PartialEq)]
struct Met {
    reached: bool,
    valued: bool,
}

/// One Traefik configuration being replayed.
pub struct TraefikExec {
    cfg: Arc<TraefikCfg>,
    router_col: usize,
    client_col: usize,
    /// Per limit of the config, the key column its source reads.
    source_cols: Vec<usize>,
    met: Vec<Met>,
    /// Per router, per limit of its chain, the buckets.
    buckets: Vec<Vec<Buckets>>,
    /// Per router: a limit with a rate is on its chain.
    limited: Vec<bool>,
    /// Per id of the router column, the router.
    routes: Vec<Route>,
    ends: Vec<Ends>,
    /// Rows naming routers the config does not have, by id: the name, rows.
    strangers: HashMap<u32, (String, u64)>,
    verify: Option<Verify>,
    limited_by_key: Vec<u64>,
}

impl TraefikExec {
    /// The replay of `cfg`: `slot` gives the key column of a log field.
    pub fn new(
        cfg: Arc<TraefikCfg>,
        opts: &ConfigOptions,
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
            let field = source::field(&l.source, clf);
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
        let limited = (cfg.routers.iter())
            .map(|r| r.limits.iter().any(|&l| cfg.limits[l].policy.is_some()))
            .collect();
        Ok(TraefikExec {
            ends: vec![Ends::default(); cfg.routers.len()],
            met: vec![Met::default(); source_cols.len()],
            buckets,
            limited,
            cfg,
            router_col,
            client_col,
            source_cols,
            routes: Vec::new(),
            strangers: HashMap::new(),
            verify,
            limited_by_key: Vec::new(),
        })
    }

    /// The router a row's line names (looked up once per name).
    fn route(&mut self, ev: &Event, names: &KeyValues) -> Option<usize> {
        let id = names.id(ev, self.router_col);
        let i = id as usize;
        if self.routes.len() <= i {
            self.routes.resize(i + 1, Route::Unseen);
        }
        if self.routes[i] == Route::Unseen {
            let name = names.value(ev, self.router_col);
            let found = std::str::from_utf8(name)
                .ok()
                .and_then(|n| self.cfg.router(n));
            self.routes[i] = found.map_or(Route::Stranger, |r| Route::Router(r as u32));
        }
        match self.routes[i] {
            Route::Router(r) => Some(r as usize),
            _ => {
                let name = names.value(ev, self.router_col);
                if !name.is_empty() {
                    let n = self.strangers.entry(id);
                    n.or_insert_with(|| (String::from_utf8_lossy(name).into_owned(), 0))
                        .1 += 1;
                }
                None
            }
        }
    }

    /// Runs router `r`'s chain from `ev.at`: when the row leaves it, the
    /// most tokens in use it met (`levels`), and the refusal if one
    /// refused it (with its retry time).
    fn chain(
        &mut self,
        r: usize,
        ev: &Event,
        names: &KeyValues,
        levels: bool,
    ) -> (Nanos, u64, Option<Option<Nanos>>) {
        let (mut at, mut level) = (ev.at, 0);
        let cfg = &*self.cfg;
        for (k, &l) in cfg.routers[r].limits.iter().enumerate() {
            let limit = &cfg.limits[l];
            let Some(policy) = &limit.policy else {
                continue;
            };
            let field = names.value(ev, self.source_cols[l]);
            let met = &mut self.met[l];
            *met = Met {
                reached: true,
                valued: met.valued || !field.is_empty(),
            };
            let state = self.buckets[r][k].of(&source::key(&limit.source, field));
            let d = policy.decide(state, at, 1);
            if levels {
                level = level.max(policy.level(state, at));
            }
            match d {
                Decision::Admit { release } => at = release,
                Decision::Refuse { retry_at } => return (at, level, Some(retry_at)),
            }
        }
        (at, level, None)
    }

    fn record(&mut self, ev: &Event, names: &KeyValues, fate: Fate) {
        if let Some(v) = &mut self.verify {
            v.record(fate, names.value(ev, v.col), (ev.file, ev.line));
        }
    }

    /// The notes the replay adds to the config's.
    fn notes(&self) -> Vec<String> {
        let cfg = &self.cfg;
        let mut notes = cfg.notes.clone();
        let most = self.buckets.iter().flatten().map(|b| b.states.len()).max();
        if most.is_some_and(|n| n > 65_536) {
            notes.push(
                "a middleware saw more than 65,536 sources: Traefik keeps that many and drops the one expiring first past that; drip keeps every source".into(),
            );
        }
        let unvalued = Met {
            reached: true,
            valued: false,
        };
        for (limit, met) in cfg.limits.iter().zip(&self.met) {
            if *met == unvalued && !matches!(limit.source, Source::Remote { .. }) {
                let field = source::field(&limit.source, false);
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
        let mut strangers: Vec<_> = self.strangers.values().collect();
        strangers.sort();
        for (name, n) in strangers {
            notes.push(format!(
                "{n} rows name router '{}', which the config does not have: admitted unlimited",
                crate::quote::visible(name)
            ));
        }
        notes
    }

    /// The report's section, once every row is decided.
    pub fn report(&mut self) -> NginxReport {
        let cfg = &self.cfg;
        let mut untested = Vec::new();
        let mut locations = Vec::new();
        for (router, e) in cfg.routers.iter().zip(&self.ends) {
            let requests = e.passed + e.delayed + e.refused + e.unlimited;
            let limits: Vec<String> = (router.limits.iter())
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
        let used: Vec<usize> = (cfg.routers.iter())
            .flat_map(|r| r.limits.iter().copied())
            .collect();
        let unused = (0..cfg.limits.len())
            .filter(|l| !used.contains(l))
            .map(|l| {
                format!(
                    "middleware {} (line {})",
                    cfg.limits[l].name, cfg.limits[l].line
                )
            })
            .collect();
        let report = NginxReport {
            config: cfg.path.display().to_string(),
            locations,
            notes: self.notes(),
            verify: self.verify.as_mut().map(Verify::report),
            ..NginxReport::default()
        };
        section(
            report,
            (untested, "has a rate limit"),
            (unused, "is a rate limit no router uses"),
        )
    }
}

impl ConfigRun for TraefikExec {
    /// Decides one row (`levels`: also the most tokens in use it met).
    fn decide(&mut self, ev: &Event, names: &KeyValues, levels: bool) -> Result<(Decision, u64)> {
        let Some(r) = self.route(ev, names) else {
            self.record(ev, names, Fate::Passed);
            return Ok((Decision::Admit { release: ev.at }, 0));
        };
        let (at, level, refused) = self.chain(r, ev, names, levels);
        let e = &mut self.ends[r];
        let (fate, d) = match refused {
            Some(retry_at) => {
                e.refused += 1;
                (Fate::Refused, Decision::Refuse { retry_at })
            }
            None if !self.limited[r] => {
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
        if self.limited[r] {
            count_limited(&mut self.limited_by_key, names.id(ev, self.client_col));
        }
        self.record(ev, names, fate);
        Ok((d, level))
    }

    fn section(&mut self) -> (Gateway, NginxReport) {
        (Gateway::Traefik, self.report())
    }

    fn take_limited_by_key(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.limited_by_key)
    }

    /// True when admitted requests may wait.
    fn shapes(&self) -> bool {
        self.cfg.limits.iter().any(|l| l.policy.is_some())
    }

    fn max_level(&self) -> u64 {
        u64::MAX
    }

    /// The key column drops are counted by: the client.
    fn report_slot(&self) -> Option<usize> {
        Some(self.client_col)
    }
}
