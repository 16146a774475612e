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

mod blocks;
mod directives;
pub mod expr;
pub mod geo;
pub mod location;
mod maps;
pub mod rewrite;
mod select;
pub use select::Listen;
mod status;
pub mod tree;
mod zones;

pub use status::Status;

use crate::policy::nginx::NginxRate;
use expr::{Expr, Map};
use location::Node;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tree::Pos;

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
    /// Where the line is written (inherited lines: where they were written).
    pub pos: Pos,
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
    /// The named location its `try_files … @name` passes requests to
    /// (index into [`NginxConf::locations`]).
    pub try_named: Option<usize>,
    /// Its own `rewrite`, `return` and `break` lines, when they must be run
    /// per URI (not when a `return` comes first: then `returns`).
    pub steps: Vec<rewrite::Step>,
    /// The entry of the rows its rewrite phase answers.
    pub twin: Option<usize>,
    /// For an entry of rows nginx answers before `limit_req` (not a
    /// location of the config): how, for the report.
    pub answered: Option<&'static str>,
    /// Its `index` files (nginx's default `index.html`), when it serves
    /// files itself (no `proxy_pass`, `fastcgi_pass`, `return`, …): a
    /// request for a directory (a URI ending in `/`) is redirected to the
    /// first.
    pub index: Option<Vec<String>>,
    /// Where its `error_page 404 …` sends a request for a file that does
    /// not exist (a URI or `@name`), when it serves files itself.
    pub missing_to: Option<String>,
    /// The URI its `try_files` ends in (`/index.php?$args`; none built
    /// from variables): where a request goes when no file exists.
    pub try_uri: Option<String>,
}

/// One `server { }`.
#[derive(Clone, Debug)]
pub struct Server {
    /// `server_name`s as written; the first is `$server_name`.
    pub names: Vec<String>,
    pub default: bool,
    /// Where it listens (`*:80` when it has no `listen`).
    pub listens: Vec<Listen>,
    /// Its regex names (`~…`), compiled caseless as nginx does.
    pub regexes: Vec<regex::Regex>,
    /// Index of its own settings in [`NginxConf::locations`].
    pub fallback: usize,
    pub tree: Vec<Node>,
    /// Its server-level `rewrite`, `return` and `break` lines, when they
    /// must be run per URI.
    pub steps: Vec<rewrite::Step>,
    /// The entry of the rows its server rewrite phase answers.
    pub twin: Option<usize>,
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
    /// A `geo` (index into [`NginxConf::geos`]).
    Geo(usize),
    /// A part of the request target, read from this log field (the
    /// target as sent, which a log reader takes from `$request`).
    Request(location::Target, String),
}

/// Entries of rows nginx answers before any `limit_req`, whatever the
/// config's locations say.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    /// A target nginx's URI parser refuses (400).
    pub bad_request: usize,
    /// A URI rewritten more than 10 times (500).
    pub cycle: usize,
    /// True when some server or location has rewrites run per URI.
    pub rewriting: bool,
}

/// A whole config, as `limit_req` sees it.
#[derive(Clone, Debug)]
pub struct NginxConf {
    pub path: PathBuf,
    /// Every file read (the main one and its includes).
    pub files: Vec<PathBuf>,
    pub zones: Vec<Zone>,
    pub maps: Vec<Map>,
    pub geos: Vec<geo::Geo>,
    pub locations: Vec<Location>,
    pub servers: Vec<Server>,
    pub log_formats: Vec<LogFormat>,
    pub access_logs: Vec<AccessLog>,
    pub answers: Answers,
    /// One line per directive that may change a decision and is not
    /// modelled.
    pub notes: Vec<String>,
    /// What the results assume of the config (how a fragment was read,
    /// includes that were not found): on stderr and in the report.
    pub assumptions: Vec<String>,
    /// `try_files … @name` lines waiting for their server's named
    /// locations: (location, name, where).
    try_pending: Vec<(usize, String, Pos)>,
    /// Variables set by directives drip cannot evaluate (`geo`, `set`, …),
    /// with where.
    unmodelled_vars: HashMap<String, (Pos, String)>,
}

/// Directives that make a file without `http { }` a fragment read as its
/// content (a `conf.d` or `sites-available` file).
const FRAGMENT: &[&str] = &[
    "server",
    "limit_req_zone",
    "limit_req",
    "map",
    "geo",
    "log_format",
    "upstream",
];

/// A `limit_req` line before its zone is resolved: zone name, burst,
/// delay (`None`: nodelay), where.
type LimitLine = (String, u64, Option<u64>, Pos);

/// Settings of one level before inheritance.
#[derive(Clone, Default)]
struct Level {
    limits: Option<Vec<LimitLine>>,
    dry_run: Option<bool>,
    status: Option<u16>,
    index: Option<Vec<String>>,
    /// `error_page` lines of this level: (codes, target).
    error_pages: Option<Vec<(Vec<u16>, String)>>,
}

impl Level {
    fn inherit(&self, outer: &Level) -> Level {
        Level {
            limits: self.limits.clone().or_else(|| outer.limits.clone()),
            dry_run: self.dry_run.or(outer.dry_run),
            status: self.status.or(outer.status),
            index: self.index.clone().or_else(|| outer.index.clone()),
            error_pages: self
                .error_pages
                .clone()
                .or_else(|| outer.error_pages.clone()),
        }
    }
}

impl NginxConf {
    /// Reads and checks the config at `path`; with `strict_includes`, an
    /// include that names no file is an error, else an assumption.
    pub fn load(path: &Path, strict_includes: bool) -> Result<NginxConf, ConfError> {
        let parsed = tree::parse_file(path, strict_includes)?;
        Self::from_tree(path, parsed)
    }

    /// Reads config text held in memory (includes from `root`); `name`
    /// names it in messages.
    pub fn from_text(text: &str, name: &Path, root: &Path) -> Result<NginxConf, ConfError> {
        let parsed = tree::parse_text(text, name, root)?;
        Self::from_tree(name, parsed)
    }

    fn from_tree(path: &Path, parsed: tree::Parsed) -> Result<NginxConf, ConfError> {
        let top = &parsed.top;
        let mut c = NginxConf {
            path: path.to_path_buf(),
            files: parsed.files.clone(),
            zones: Vec::new(),
            maps: Vec::new(),
            geos: Vec::new(),
            locations: Vec::new(),
            servers: Vec::new(),
            log_formats: vec![LogFormat {
                name: "combined".into(),
                format: "$remote_addr - $remote_user [$time_local] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"".into(),
                pos: None,
            }],
            access_logs: Vec::new(),
            answers: Answers::default(),
            notes: Vec::new(),
            assumptions: Vec::new(),
            try_pending: Vec::new(),
            unmodelled_vars: HashMap::new(),
        };
        for (pos, pattern, looked) in &parsed.missing {
            let looked = looked.display().to_string();
            let at = if looked == *pattern {
                String::new()
            } else {
                format!(" ({looked})")
            };
            c.assumptions.push(format!(
                "{pos}: include '{pattern}' was not found{at}; the results assume it holds no limit_req, location, server or map (--strict-includes makes this an error)"
            ));
        }
        let mut pending: Vec<(usize, Vec<LimitLine>)> = Vec::new();
        let mut https = top.iter().filter(|d| d.name == "http");
        if let Some(d) = https.next() {
            if let Some(again) = https.next() {
                return Err(again.pos.err(
                    "\"http\" directive is duplicate: nginx -t refuses a second http block; merge them into one",
                ));
            }
            c.http(d.block.as_deref().unwrap_or_default(), &mut pending)?;
        } else if let Some(d) = top.iter().find(|d| FRAGMENT.contains(&d.name.as_str())) {
            c.assumptions.push(format!(
                "{}: no http block, and '{}' at the top: read as the content of http {{ … }}, as nginx reads a conf.d or sites-available file through an include",
                path.display(),
                d.name
            ));
            c.http(top, &mut pending)?;
        } else {
            return Err(ConfError {
                file: path.to_path_buf(),
                line: 0,
                msg: "no 'http { … }' block and no server or limit_req_zone at the top: nothing for limit_req to do; give the main nginx.conf (the file with the http block) or a conf.d file".into(),
            });
        }
        c.resolve_zones(pending)?;
        c.check_maps()?;
        c.answers.bad_request = c.answered_entry(
            "answered 400 by nginx before any limit",
            "400 (never limited)",
        );
        c.answers.cycle = c.answered_entry(
            "answered 500 by nginx (rewrite cycle) before any limit",
            "500 (never limited)",
        );
        Ok(c)
    }

    /// An entry for rows nginx answers before any location limits them.
    fn answered_entry(&mut self, name: &str, how: &'static str) -> usize {
        self.locations.push(Location {
            name: name.into(),
            server: 0,
            limits: Vec::new(),
            dry_run: false,
            returns: true,
            try_named: None,
            steps: Vec::new(),
            twin: None,
            answered: Some(how),
            index: None,
            missing_to: None,
            try_uri: None,
        });
        self.locations.len() - 1
    }

    fn note(&mut self, pos: &Pos, what: &str, why: &str) {
        self.notes
            .push(format!("{pos}: '{what}' is not modelled: {why}"));
    }

    /// The exact nginx policy of one `limit_req` line.
    pub fn policy(&self, l: &Limit) -> crate::policy::NginxLimitReq {
        crate::policy::NginxLimitReq::new(self.zones[l.zone].rate, l.burst, l.delay)
    }
}

#[cfg(test)]
mod tests;
