//! nginx.conf → what `limit_req` does with each request.
//!
//! [`NginxConf::load`] reads a config (with its includes) and keeps what
//! decides `limit_req`: the zones (`limit_req_zone`: key expression, rate,
//! size), the `limit_req` lists of `http`, `server` and `location` blocks
//! with nginx's inheritance (a level with any `limit_req` replaces the
//! whole inherited list; `limit_req_dry_run` and `limit_req_status` inherit
//! one by one), `map` blocks with exact keys, `log_format` and
//! `access_log`. Each location becomes one entry of a flat list with its
//! effective settings; [`NginxConf::route`] picks the entry for a URI as
//! nginx picks the location. Directives drip does not model are passed
//! over in silence when they cannot change a decision; the others leave a
//! note ([`NginxConf::notes`]) saying what is not modelled.

pub mod expr;
pub mod location;
pub mod setup;
mod status;
pub mod tree;

pub use status::Status;

use crate::policy::nginx::{NginxRate, parse_nginx_rate};
use expr::{Expr, Map};
use location::{Match, Node};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tree::{Directive, Pos};

/// A config error: file, line and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfError {
    pub file: PathBuf,
    pub line: usize,
    pub msg: String,
}

impl std::fmt::Display for ConfError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.msg)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.msg)
        }
    }
}

impl std::error::Error for ConfError {}

/// `limit_req_zone KEY zone=NAME:SIZE rate=RATE`.
#[derive(Clone, Debug)]
pub struct Zone {
    pub name: String,
    pub key: Expr,
    pub rate: NginxRate,
    pub rate_text: String,
    /// Shared memory size in bytes.
    pub size: u64,
    pub pos: Pos,
}

impl Zone {
    /// About how many keys the zone holds before nginx must evict: nginx
    /// documents 128 bytes a key on 64-bit systems for short keys.
    pub fn capacity(&self) -> u64 {
        self.size / 128
    }
}

/// `limit_req zone=NAME [burst=B] [delay=D | nodelay]`.
#[derive(Clone, Debug)]
pub struct Limit {
    /// Index into [`NginxConf::zones`].
    pub zone: usize,
    pub burst: u64,
    /// `None` for `nodelay` (never delayed); 0 by default.
    pub delay: Option<u64>,
}

/// The settings one location (or a server with no matching location)
/// applies to a request.
#[derive(Clone, Debug)]
pub struct Location {
    /// `location = /login`, `location ~* \.php$`, or `server` when no
    /// location matched; prefixed with the server name when there are
    /// several servers.
    pub name: String,
    pub server: usize,
    /// The effective `limit_req` list, in declaration order.
    pub limits: Vec<Limit>,
    pub dry_run: bool,
    /// A `return` answers every request in the rewrite phase, before
    /// `limit_req` runs: never limited.
    pub returns: bool,
}

/// One `server { }`.
#[derive(Clone, Debug)]
pub struct Server {
    /// `server_name`s as written; the first is `$server_name`.
    pub names: Vec<String>,
    pub default: bool,
    /// Index of its own settings in [`NginxConf::locations`].
    pub fallback: usize,
    pub tree: Vec<Node>,
    pub pos: Pos,
}

/// `log_format NAME [escape=…] TEXT…`.
#[derive(Clone, Debug)]
pub struct LogFormat {
    pub name: String,
    pub format: String,
    pub pos: Option<Pos>,
}

/// `access_log PATH [FORMAT]`.
#[derive(Clone, Debug)]
pub struct AccessLog {
    pub path: String,
    pub format: String,
    pub pos: Pos,
}

/// What a variable in a key stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarSource {
    /// A log field of this name.
    Field(String),
    /// The same text for every request of a server (`$server_name`).
    Const(String),
    /// A `map` (index into [`NginxConf::maps`]).
    Map(usize),
}

/// A whole config, as `limit_req` sees it.
#[derive(Clone, Debug)]
pub struct NginxConf {
    pub path: PathBuf,
    pub zones: Vec<Zone>,
    pub maps: Vec<Map>,
    pub locations: Vec<Location>,
    pub servers: Vec<Server>,
    pub log_formats: Vec<LogFormat>,
    pub access_logs: Vec<AccessLog>,
    /// One line per directive that may change a decision and is not
    /// modelled.
    pub notes: Vec<String>,
    /// Variables set by directives drip cannot evaluate (`geo`, `set`, …),
    /// with where.
    unmodelled_vars: HashMap<String, (Pos, String)>,
}

/// A `limit_req` line before its zone is resolved: zone name, burst,
/// delay (`None`: nodelay), where.
type LimitLine = (String, u64, Option<u64>, Pos);

/// Settings of one level before inheritance.
#[derive(Clone, Default)]
struct Level {
    limits: Option<Vec<LimitLine>>,
    dry_run: Option<bool>,
    status: Option<u16>,
}

impl Level {
    fn inherit(&self, outer: &Level) -> Level {
        Level {
            limits: self.limits.clone().or_else(|| outer.limits.clone()),
            dry_run: self.dry_run.or(outer.dry_run),
            status: self.status.or(outer.status),
        }
    }
}

impl NginxConf {
    /// Reads and checks the config at `path`.
    pub fn load(path: &Path) -> Result<NginxConf, ConfError> {
        let top = tree::parse_file(path)?;
        Self::from_tree(path, &top)
    }

    /// Reads config text held in memory (includes from `root`).
    #[cfg(test)]
    pub fn from_text(text: &str, name: &Path, root: &Path) -> Result<NginxConf, ConfError> {
        let top = tree::parse_text(text, name, root)?;
        Self::from_tree(name, &top)
    }

    fn from_tree(path: &Path, top: &[Directive]) -> Result<NginxConf, ConfError> {
        let mut c = NginxConf {
            path: path.to_path_buf(),
            zones: Vec::new(),
            maps: Vec::new(),
            locations: Vec::new(),
            servers: Vec::new(),
            log_formats: vec![LogFormat {
                name: "combined".into(),
                format: "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"".into(),
                pos: None,
            }],
            access_logs: Vec::new(),
            notes: Vec::new(),
            unmodelled_vars: HashMap::new(),
        };
        let mut pending: Vec<(usize, Vec<LimitLine>)> = Vec::new();
        let mut http_seen = false;
        for d in top {
            if d.name == "http" {
                http_seen = true;
                let block = d.block.as_deref().unwrap_or_default();
                c.http(block, &mut pending)?;
            }
        }
        if !http_seen {
            return Err(ConfError {
                file: path.to_path_buf(),
                line: 0,
                msg: "no 'http { … }' block: nothing for limit_req to do; give the main nginx.conf (the file with the http block)".into(),
            });
        }
        // Zone names are resolved once every zone is known, as nginx does.
        for (loc, limits) in pending {
            let mut resolved = Vec::new();
            for (zone, burst, delay, pos) in limits {
                let z = c.zones.iter().position(|z| z.name == zone).ok_or_else(|| {
                    pos.err(format!(
                        "unknown limit_req_zone \"{zone}\"; zones defined: {}",
                        if c.zones.is_empty() {
                            "none".into()
                        } else {
                            c.zones
                                .iter()
                                .map(|z| z.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        }
                    ))
                })?;
                resolved.push(Limit {
                    zone: z,
                    burst,
                    delay,
                });
            }
            c.locations[loc].limits = resolved;
        }
        c.check_maps()?;
        Ok(c)
    }

    fn note(&mut self, pos: &Pos, what: &str, why: &str) {
        self.notes
            .push(format!("{pos}: '{what}' is not modelled: {why}"));
    }

    fn http(
        &mut self,
        block: &[Directive],
        pending: &mut Vec<(usize, Vec<LimitLine>)>,
    ) -> Result<(), ConfError> {
        let mut level = Level::default();
        let mut servers = Vec::new();
        for d in block {
            match d.name.as_str() {
                "limit_req_zone" => self.zone(d)?,
                "map" => self.map(d)?,
                "log_format" => self.log_format(d)?,
                "server" => servers.push(d),
                "geo" | "split_clients" | "perl_set" | "js_set" | "geoip_country"
                | "geoip_city" | "geoip2" => {
                    let var = d
                        .args
                        .iter()
                        .rev()
                        .find(|a| a.starts_with('$'))
                        .or_else(|| d.args.get(1))
                        .cloned()
                        .unwrap_or_default();
                    if let Some(v) = var.strip_prefix('$') {
                        self.unmodelled_vars
                            .insert(v.to_string(), (d.pos.clone(), d.name.clone()));
                    }
                }
                _ => self.level_directive(d, &mut level, "http")?,
            }
        }
        if servers.is_empty() {
            // No server: nothing is served; keep the http settings as one.
            let loc = self.push_location("server".into(), 0, &level, false);
            self.servers.push(Server {
                names: Vec::new(),
                default: true,
                fallback: loc,
                tree: Vec::new(),
                pos: block.first().map_or(
                    Pos {
                        file: std::sync::Arc::from(self.path.as_path()),
                        line: 0,
                    },
                    |d| d.pos.clone(),
                ),
            });
            pending.push((loc, level.limits.unwrap_or_default()));
            return Ok(());
        }
        for s in servers {
            self.server(s, &level, pending)?;
        }
        if self.servers.len() > 1 {
            let names: Vec<String> = self
                .servers
                .iter()
                .map(|s| s.names.first().cloned().unwrap_or_else(|| "\"\"".into()))
                .collect();
            for (i, n) in names.iter().enumerate() {
                let fb = self.servers[i].fallback;
                self.locations[fb].name = format!("{n} server");
            }
            for l in &mut self.locations {
                if !l.name.ends_with(" server") {
                    l.name = format!("{} {}", names[l.server], l.name);
                }
            }
        }
        Ok(())
    }

    /// Directives valid at http, server and location level.
    fn level_directive(
        &mut self,
        d: &Directive,
        level: &mut Level,
        ctx: &str,
    ) -> Result<(), ConfError> {
        match d.name.as_str() {
            "limit_req" => {
                let l = parse_limit_req(d)?;
                let list = level.limits.get_or_insert_with(Vec::new);
                if list.iter().any(|x| x.0 == l.0) {
                    return Err(d.pos.err(format!("limit_req zone \"{}\" is duplicate in this block", l.0)));
                }
                list.push(l);
            }
            "limit_req_dry_run" => {
                level.dry_run = Some(match d.args.as_slice() {
                    [v] if v == "on" => true,
                    [v] if v == "off" => false,
                    _ => return Err(d.pos.err("limit_req_dry_run takes 'on' or 'off'")),
                });
            }
            "limit_req_status" => {
                let code = match d.args.as_slice() {
                    [v] => v.parse::<u16>().ok().filter(|c| (400..=599).contains(c)),
                    _ => None,
                };
                level.status = Some(code.ok_or_else(|| {
                    d.pos
                        .err("limit_req_status takes one status code from 400 to 599")
                })?);
            }
            "access_log" => {
                if let Some(path) = d.args.first()
                    && path != "off"
                {
                    let format = d
                        .args
                        .get(1)
                        .filter(|a| !a.contains('='))
                        .cloned()
                        .unwrap_or_else(|| "combined".into());
                    self.access_logs.push(AccessLog {
                        path: path.clone(),
                        format,
                        pos: d.pos.clone(),
                    });
                }
            }
            "limit_conn" => self.note(
                &d.pos,
                "limit_conn",
                "it limits concurrent connections, which a log does not show; requests it refuses are counted as limit_req sees them",
            ),
            "rewrite" if ctx != "http" => self.note(
                &d.pos,
                "rewrite",
                "it can change the URI and so the location; rows are routed by the URI as logged",
            ),
            "set" if ctx != "http" => {
                if let Some(v) = d.args.first().and_then(|a| a.strip_prefix('$')) {
                    self.unmodelled_vars
                        .insert(v.to_string(), (d.pos.clone(), "set".into()));
                }
            }
            "if" if ctx != "http" => {
                let inner = d.block.as_deref().unwrap_or_default();
                if let Some(x) = inner
                    .iter()
                    .find(|x| matches!(x.name.as_str(), "return" | "rewrite" | "set"))
                {
                    self.note(
                        &x.pos,
                        &format!("if … {{ {} }}", x.name),
                        "its condition is not evaluated; rows are decided as if it never held",
                    );
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn push_location(
        &mut self,
        name: String,
        server: usize,
        level: &Level,
        returns: bool,
    ) -> usize {
        self.locations.push(Location {
            name,
            server,
            limits: Vec::new(),
            dry_run: level.dry_run.unwrap_or(false),
            returns,
        });
        self.locations.len() - 1
    }

    fn server(
        &mut self,
        d: &Directive,
        http: &Level,
        pending: &mut Vec<(usize, Vec<LimitLine>)>,
    ) -> Result<(), ConfError> {
        let block = d.block.as_deref().unwrap_or_default();
        let mut own = Level::default();
        let mut names = Vec::new();
        let mut default = false;
        let mut returns = false;
        for x in block {
            match x.name.as_str() {
                "server_name" => names.extend(x.args.iter().cloned()),
                "listen" => {
                    default |= x
                        .args
                        .iter()
                        .any(|a| a == "default_server" || a == "default")
                }
                "return" => returns = true,
                "location" => {}
                _ => self.level_directive(x, &mut own, "server")?,
            }
        }
        let level = own.inherit(http);
        let si = self.servers.len();
        let fallback = self.push_location("server".into(), si, &level, returns);
        pending.push((fallback, level.limits.clone().unwrap_or_default()));
        let mut tree = Vec::new();
        for x in block.iter().filter(|x| x.name == "location") {
            if let Some(n) = self.location(x, si, &level, returns, pending)? {
                tree.push(n);
            }
        }
        self.servers.push(Server {
            names,
            default,
            fallback,
            tree,
            pos: d.pos.clone(),
        });
        Ok(())
    }

    fn location(
        &mut self,
        d: &Directive,
        server: usize,
        outer: &Level,
        server_returns: bool,
        pending: &mut Vec<(usize, Vec<LimitLine>)>,
    ) -> Result<Option<Node>, ConfError> {
        let Some(block) = d.block.as_deref() else {
            return Err(d.pos.err("location needs a block { … }"));
        };
        let how = match d.args.as_slice() {
            [u] if u.starts_with('@') => return Ok(None), // reached by internal redirects only
            [m, u] if m == "=" => Match::Exact(u.clone()),
            [m, u] if m == "^~" => Match::NoRegex(u.clone()),
            [m, u] if m == "~" || m == "~*" => Match::Regex(location_regex(d, u, m == "~*")?),
            [u] if u.starts_with('=') && u.len() > 1 => Match::Exact(u[1..].to_string()),
            [u] if u.starts_with("^~") && u.len() > 2 => Match::NoRegex(u[2..].to_string()),
            [u] if u.starts_with("~*") && u.len() > 2 => {
                Match::Regex(location_regex(d, &u[2..], true)?)
            }
            [u] if u.starts_with('~') && u.len() > 1 => {
                Match::Regex(location_regex(d, &u[1..], false)?)
            }
            [u] => Match::Prefix(u.clone()),
            _ => {
                return Err(d
                    .pos
                    .err("location takes a modifier (=, ^~, ~, ~*) and a URI, or a URI"));
            }
        };
        let mut own = Level::default();
        let mut returns = server_returns;
        let mut try_files: Option<&Directive> = None;
        for x in block {
            match x.name.as_str() {
                "return" => returns = true,
                "location" => {}
                "try_files" => try_files = Some(x),
                _ => self.level_directive(x, &mut own, "location")?,
            }
        }
        let level = own.inherit(outer);
        let name = format!("location {}", d.args.join(" "));
        let index = self.push_location(name, server, &level, returns);
        let limits = level.limits.clone().unwrap_or_default();
        if let Some(t) = try_files
            && limits.is_empty()
            && !returns
        {
            self.note(
                &t.pos,
                "try_files",
                "requests it passes to another location are limited there by nginx, and not by drip",
            );
        }
        pending.push((index, limits));
        let mut children = Vec::new();
        for x in block.iter().filter(|x| x.name == "location") {
            if let Some(n) = self.location(x, server, &level, returns, pending)? {
                children.push(n);
            }
        }
        Ok(Some(Node {
            how,
            index,
            children,
        }))
    }

    fn zone(&mut self, d: &Directive) -> Result<(), ConfError> {
        let Some((key, params)) = d.args.split_first() else {
            return Err(d
                .pos
                .err("limit_req_zone needs a key, zone=NAME:SIZE and rate=RATE"));
        };
        let key = Expr::parse(key).map_err(|e| d.pos.err(format!("limit_req_zone key {e}")))?;
        let mut name = None;
        let mut size = 0;
        let mut rate = (NginxRate::PerSec(1), "1r/s".to_string());
        for p in params {
            if let Some(z) = p.strip_prefix("zone=") {
                let (n, s) = z.split_once(':').ok_or_else(|| {
                    d.pos.err(format!(
                        "invalid zone size in \"{p}\"; write zone=NAME:SIZE, e.g. zone=perip:10m"
                    ))
                })?;
                if n.is_empty() {
                    return Err(d.pos.err(format!("invalid zone name in \"{p}\"")));
                }
                size = parse_size(s).ok_or_else(|| {
                    d.pos.err(format!(
                        "invalid zone size \"{s}\"; give bytes with k, m or g, e.g. 10m"
                    ))
                })?;
                if size < 8 * 4096 {
                    return Err(d.pos.err(format!(
                        "zone \"{n}\" is too small; nginx needs at least 32k"
                    )));
                }
                name = Some(n.to_string());
            } else if let Some(r) = p.strip_prefix("rate=") {
                rate = (
                    parse_nginx_rate(r).map_err(|e| d.pos.err(e))?,
                    r.to_string(),
                );
            } else if p == "sync" {
                self.note(
                    &d.pos,
                    "sync",
                    "zones shared across a cluster are decided as one nginx would",
                );
            } else {
                return Err(d
                    .pos
                    .err(format!("invalid limit_req_zone parameter \"{p}\"")));
            }
        }
        let name = name.ok_or_else(|| {
            d.pos
                .err("limit_req_zone must have a zone=NAME:SIZE parameter")
        })?;
        if self.zones.iter().any(|z| z.name == name) {
            return Err(d.pos.err(format!("duplicate zone \"{name}\"")));
        }
        self.zones.push(Zone {
            name,
            key,
            rate: rate.0,
            rate_text: rate.1,
            size,
            pos: d.pos.clone(),
        });
        Ok(())
    }

    fn map(&mut self, d: &Directive) -> Result<(), ConfError> {
        let [source, var] = d.args.as_slice() else {
            return Err(d.pos.err("map takes a source and a $variable"));
        };
        let Some(var) = var.strip_prefix('$') else {
            return Err(d
                .pos
                .err(format!("map result \"{var}\" must be a $variable")));
        };
        let source = Expr::parse(source).map_err(|e| d.pos.err(format!("map source {e}")))?;
        let mut entries = HashMap::new();
        let mut default = Expr::parse("").expect("empty");
        for e in d.block.as_deref().unwrap_or_default() {
            match (e.name.as_str(), e.args.as_slice()) {
                ("hostnames", []) => {
                    return Err(e.pos.err(format!(
                        "map ${var}: 'hostnames' maps are not modelled; use exact keys, or give --nginx-var {var}=FIELD with a field holding the value"
                    )));
                }
                ("volatile", []) => {}
                ("default", [v]) => {
                    default = Expr::parse(v).map_err(|x| e.pos.err(format!("map value {x}")))?;
                }
                (k, [v]) => {
                    if k.starts_with('~') {
                        return Err(e.pos.err(format!(
                            "map ${var}: regex keys ('{k}') are not modelled; use exact keys, or give --nginx-var {var}=FIELD with a field holding the value"
                        )));
                    }
                    let k = k.strip_prefix('\\').unwrap_or(k);
                    let v = Expr::parse(v).map_err(|x| e.pos.err(format!("map value {x}")))?;
                    if entries
                        .insert(k.to_ascii_lowercase().into_bytes(), v)
                        .is_some()
                    {
                        return Err(e.pos.err(format!("map ${var}: duplicate key \"{k}\"")));
                    }
                }
                _ => {
                    return Err(e.pos.err(format!(
                        "map ${var}: invalid entry '{}'; write KEY VALUE;",
                        e.name
                    )));
                }
            }
        }
        if self.maps.iter().any(|m| m.var == var) {
            return Err(d.pos.err(format!("duplicate map variable ${var}")));
        }
        self.maps.push(Map {
            var: var.to_string(),
            source,
            entries,
            default,
        });
        Ok(())
    }

    fn log_format(&mut self, d: &Directive) -> Result<(), ConfError> {
        let Some((name, rest)) = d.args.split_first() else {
            return Err(d.pos.err("log_format needs a name and a format"));
        };
        // `escape=` says how nginx escapes values; the log reader unescapes
        // what any of them writes.
        let parts = match rest.split_first() {
            Some((e, parts)) if e.starts_with("escape=") => parts,
            _ => rest,
        };
        if parts.is_empty() {
            return Err(d
                .pos
                .err(format!("log_format \"{name}\" has no format text")));
        }
        if self
            .log_formats
            .iter()
            .any(|f| f.name == *name && f.pos.is_some())
        {
            return Err(d.pos.err(format!("duplicate log_format name \"{name}\"")));
        }
        self.log_formats.retain(|f| f.name != *name);
        self.log_formats.push(LogFormat {
            name: name.clone(),
            format: parts.concat(),
            pos: Some(d.pos.clone()),
        });
        Ok(())
    }

    /// Maps must not refer to themselves, directly or through others.
    fn check_maps(&self) -> Result<(), ConfError> {
        for (i, m) in self.maps.iter().enumerate() {
            let mut stack = vec![i];
            let mut seen = vec![false; self.maps.len()];
            while let Some(j) = stack.pop() {
                let mj = &self.maps[j];
                let exprs = std::iter::once(&mj.source)
                    .chain(mj.entries.values())
                    .chain(std::iter::once(&mj.default));
                for e in exprs {
                    for v in e.vars() {
                        if let Some(k) = self.maps.iter().position(|x| x.var == v) {
                            if k == i {
                                return Err(ConfError {
                                    file: self.path.clone(),
                                    line: 0,
                                    msg: format!("map ${} depends on itself", m.var),
                                });
                            }
                            if !seen[k] {
                                seen[k] = true;
                                stack.push(k);
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// What variable `name` reads for a request of `server`: an explicit
    /// `overrides` entry (one for `remote_addr` serves
    /// `binary_remote_addr` too), a map, `$remote_addr`/`$binary_remote_addr` (the
    /// `remote_addr` field), `$server_name` (the server's first name), or
    /// the log field of the same name. Variables drip cannot evaluate
    /// (`geo`, `set`, …) are an error naming where they are defined.
    pub fn var_source(
        &self,
        name: &str,
        server: usize,
        overrides: &HashMap<String, String>,
    ) -> Result<VarSource, String> {
        if let Some(f) = overrides.get(name) {
            return Ok(VarSource::Field(f.clone()));
        }
        // Both read the client address: naming its field once is enough.
        if name == "binary_remote_addr"
            && let Some(f) = overrides.get("remote_addr")
        {
            return Ok(VarSource::Field(f.clone()));
        }
        if let Some(m) = self.maps.iter().position(|m| m.var == name) {
            return Ok(VarSource::Map(m));
        }
        if let Some((pos, how)) = self.unmodelled_vars.get(name) {
            return Err(format!(
                "{pos}: ${name} is set by '{how}', which drip does not evaluate; give --nginx-var {name}=FIELD with a log field holding its value"
            ));
        }
        Ok(match name {
            "binary_remote_addr" | "remote_addr" => VarSource::Field("remote_addr".into()),
            "server_name" => VarSource::Const(
                self.servers
                    .get(server)
                    .and_then(|s| s.names.first())
                    .cloned()
                    .unwrap_or_default(),
            ),
            n if n.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(format!(
                    "${name} is a regex capture, which drip does not evaluate; give --nginx-var {name}=FIELD"
                ));
            }
            n => VarSource::Field(n.to_string()),
        })
    }

    /// The log fields an expression reads for `server`, through maps.
    pub fn fields_of(
        &self,
        e: &Expr,
        server: usize,
        overrides: &HashMap<String, String>,
        out: &mut Vec<String>,
    ) -> Result<(), String> {
        for v in e.vars() {
            match self.var_source(v, server, overrides)? {
                VarSource::Field(f) => {
                    if !out.contains(&f) {
                        out.push(f);
                    }
                }
                VarSource::Const(_) => {}
                VarSource::Map(m) => {
                    let m = &self.maps[m];
                    self.fields_of(&m.source, server, overrides, out)?;
                    for x in m.entries.values().chain(std::iter::once(&m.default)) {
                        self.fields_of(x, server, overrides, out)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Evaluates `e` for one request of `server`, appending to `out`;
    /// `field` gives a log field's value (empty when absent).
    #[cfg(test)]
    pub fn eval(
        &self,
        e: &Expr,
        server: usize,
        overrides: &HashMap<String, String>,
        field: &dyn Fn(&str) -> Vec<u8>,
        out: &mut Vec<u8>,
    ) {
        for p in &e.parts {
            match p {
                expr::Part::Lit(l) => out.extend_from_slice(l.as_bytes()),
                expr::Part::Var(v) => match self.var_source(v, server, overrides) {
                    Ok(VarSource::Field(f)) => out.extend_from_slice(&field(&f)),
                    Ok(VarSource::Const(c)) => out.extend_from_slice(c.as_bytes()),
                    Ok(VarSource::Map(m)) => {
                        let map = &self.maps[m];
                        let mut src = Vec::new();
                        self.eval(&map.source, server, overrides, field, &mut src);
                        let value = map.lookup(&src);
                        self.eval(value, server, overrides, field, out);
                    }
                    Err(_) => {}
                },
            }
        }
    }

    /// The server for a `Host` value (`None`: the log has no host): exact
    /// names first, then `*.suffix`/`.suffix`, then `prefix.*`, then the
    /// default server (the one marked `default_server`, else the first).
    pub fn server_for(&self, host: Option<&str>) -> usize {
        let default = self.servers.iter().position(|s| s.default).unwrap_or(0);
        let Some(host) = host else {
            return default;
        };
        let host = host.trim().trim_end_matches('.');
        let host = match host.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !h.contains(':') => h,
            _ => host,
        };
        let host = host.to_ascii_lowercase();
        let by = |f: &dyn Fn(&str) -> bool| {
            self.servers
                .iter()
                .position(|s| s.names.iter().any(|n| f(&n.to_ascii_lowercase())))
        };
        by(&|n| n == host)
            .or_else(|| {
                by(&|n| {
                    n.strip_prefix('*')
                        .map(|s| host.ends_with(s))
                        .or_else(|| {
                            n.strip_prefix('.')
                                .map(|s| host == s || host.ends_with(&format!(".{s}")))
                        })
                        .unwrap_or(false)
                })
            })
            .or_else(|| by(&|n| n.strip_suffix('*').is_some_and(|p| host.starts_with(p))))
            .unwrap_or(default)
    }

    /// The exact nginx policy of one `limit_req` line.
    pub fn policy(&self, l: &Limit) -> crate::policy::NginxLimitReq {
        crate::policy::NginxLimitReq::new(self.zones[l.zone].rate, l.burst, l.delay)
    }

    /// The location entry for a normalized URI in `server`.
    pub fn route(&self, server: usize, uri: &str) -> usize {
        let s = &self.servers[server];
        location::find(&s.tree, uri).unwrap_or(s.fallback)
    }

    /// The location whose name (`/api/`, `= /login`, `~ \.php$`, or the
    /// full `location …` text) is `name`.
    pub fn location_named(&self, name: &str) -> Option<usize> {
        let want = name.trim();
        let want = want.strip_prefix("location ").unwrap_or(want).trim();
        self.locations.iter().position(|l| {
            let n = l
                .name
                .rsplit_once("location ")
                .map_or(l.name.as_str(), |x| x.1);
            n == want || l.name == name
        })
    }
}

/// A `limit_req` line: zone name, burst, delay (`None`: nodelay).
/// A location's regex, as nginx's PCRE would match it; one the regex
/// engine cannot run (look-around, backreferences) is an error saying
/// what to do.
fn location_regex(d: &Directive, u: &str, caseless: bool) -> Result<regex::Regex, ConfError> {
    let pattern = if caseless {
        format!("(?i){u}")
    } else {
        u.to_string()
    };
    regex::Regex::new(&pattern).map_err(|e| {
        d.pos.err(format!(
            "location regex '{u}' is not one drip can evaluate ({}); drip cannot run PCRE look-around or backreferences: audit a copy of the config with this regex rewritten without them",
            e.to_string()
                .lines()
                .last()
                .unwrap_or("invalid")
                .trim()
                .trim_start_matches("error: ")
        ))
    })
}

fn parse_limit_req(d: &Directive) -> Result<LimitLine, ConfError> {
    if d.args.is_empty() || d.args.len() > 3 {
        return Err(d.pos.err("invalid number of arguments in \"limit_req\"; write limit_req zone=NAME [burst=N] [nodelay | delay=N]"));
    }
    let mut zone = None;
    let mut burst = 0;
    let mut delay = Some(0);
    let positive = |v: &str, what: &str| -> Result<u64, ConfError> {
        v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
            d.pos.err(format!(
                "invalid {what} value \"{v}\"; give a positive whole number"
            ))
        })
    };
    for a in &d.args {
        if let Some(z) = a.strip_prefix("zone=") {
            zone = Some(z.to_string());
        } else if let Some(b) = a.strip_prefix("burst=") {
            burst = positive(b, "burst")?;
        } else if let Some(x) = a.strip_prefix("delay=") {
            delay = Some(positive(x, "delay")?);
        } else if a == "nodelay" {
            delay = None;
        } else {
            return Err(d.pos.err(format!("invalid parameter \"{a}\" in limit_req")));
        }
    }
    let zone = zone.ok_or_else(|| d.pos.err("limit_req needs zone=NAME"))?;
    Ok((zone, burst, delay, d.pos.clone()))
}

/// nginx sizes: bytes, or with `k`/`m`/`g` (either case).
fn parse_size(s: &str) -> Option<u64> {
    let (num, mul) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1 << 10),
        b'm' | b'M' => (&s[..s.len() - 1], 1 << 20),
        b'g' | b'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<u64>().ok()?.checked_mul(mul)
}

#[cfg(test)]
mod tests;
