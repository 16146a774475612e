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
pub mod location;
mod maps;
mod select;
pub mod setup;
mod status;
pub mod tree;
mod zones;

pub use status::Status;

use crate::policy::nginx::NginxRate;
use expr::{Expr, Map};
use location::Node;
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
        c.resolve_zones(pending)?;
        c.check_maps()?;
        Ok(c)
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
