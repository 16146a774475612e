//! Which location decides a row: the one `--nginx-location` names, else
//! the row's server (see `server`) and that server's location for the
//! URI, as nginx chooses them. Each URI is looked up once per key id.

use super::server::Servers;
use super::{ConfOptions, LogFields};
use crate::ingest::input::Event;
use crate::ingest::key_values::KeyValues;
use crate::ingest::keys::EMPTY_KEY;
use crate::nginx_conf::NginxConf;
use crate::nginx_conf::location::{Match, Node, Target, bad_request, normalize};
use crate::nginx_conf::rewrite::Rewritten;
use crate::notes::Notes;
use anyhow::{Result, anyhow, bail};

/// Where rows go, and what has been learnt of their hosts and URIs.
pub(super) struct Router {
    /// The location of every row (`--nginx-location`).
    pub(super) forced: Option<usize>,
    uri_slot: Option<usize>,
    /// True when the URI field is the target as the client sent it (from
    /// `$request`), which nginx may refuse with 400.
    raw_target: bool,
    servers: Servers,
    /// Per URI id, per server: the location (`u32::MAX`: not yet known),
    /// with [`FILE`] set when `--static` says the URI is a file.
    routes: Vec<Vec<u32>>,
    /// Per server, per URI id: the location an internal redirect sends the
    /// request to (`index` for a directory, `error_page 404` for a file
    /// `--static` does not name; `u32::MAX`: none).
    indexed: Vec<Vec<u32>>,
    /// (location, the one its `index` or `error_page` sent rows to, and
    /// which of the two), for the report.
    pub(super) redirected: std::collections::BTreeSet<(usize, usize, Redirect)>,
    /// Per location, the named location its `try_files` passes rows to
    /// (`u32::MAX`: none); empty when no location has one.
    tries: Vec<u32>,
    /// Per server, where a row without a URI goes (as `/`).
    roots: Vec<(usize, Option<usize>)>,
    /// `--static`: URIs of files that exist (`try_files` serves them).
    pub(super) static_files: Option<regex::Regex>,
    /// When the config has rewrites: what they made of each URI.
    rewrites: Option<RowRewrites>,
}

/// The `$uri` and `$args` rewrites made of each URI, for keys.
struct RowRewrites {
    table: Vec<Rewritten>,
    /// Per server, per URI id: index into `table` (`u32::MAX`: unchanged).
    ids: Vec<Vec<u32>>,
    /// The row being decided's.
    row: u32,
}

impl RowRewrites {
    fn record(&mut self, server: usize, i: usize, r: Option<Rewritten>) {
        let ids = &mut self.ids[server];
        if i >= ids.len() {
            ids.resize(i + 1, u32::MAX);
        }
        ids[i] = r.map_or(u32::MAX, |r| {
            self.table.push(r);
            (self.table.len() - 1) as u32
        });
    }
}

/// The location `--nginx-location` names, if it names one.
pub(super) fn forced(conf: &NginxConf, name: Option<&str>) -> Result<Option<usize>> {
    let Some(name) = name else {
        return Ok(None);
    };
    let l = conf.location_named(name).ok_or_else(|| {
        anyhow!(
            "--nginx-location '{name}': {} has no such location; its locations are: {}",
            conf.path.display(),
            conf.locations
                .iter()
                .filter(|l| l.answered.is_none())
                .map(|l| l.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })?;
    Ok(Some(l))
}

/// A lone `location /` takes every URI: nothing to route.
fn trivial(tree: &[Node]) -> bool {
    match tree {
        [] => true,
        [n] => n.children.is_empty() && matches!(&n.how, Match::Prefix(u) if u == "/"),
        _ => false,
    }
}

impl Router {
    /// Plans routing for `conf` (every row to `forced` when given),
    /// registering the URI field and then the host field through `slot`
    /// when rows must be routed by them.
    pub(super) fn new(
        conf: &NginxConf,
        opts: &ConfOptions,
        notes: &Notes,
        forced: Option<usize>,
        log: LogFields,
        slot: &mut dyn FnMut(&str) -> Result<usize>,
    ) -> Result<Router> {
        let tried =
            opts.static_files.is_some() && conf.locations.iter().any(|l| l.try_named.is_some());
        // Rows are routed by the request's target: a logged `$uri` is
        // nginx's final URI (after rewrites and internal redirects).
        let target = crate::ingest::log::nginx::REQUEST_TARGET;
        let uri_field = match opts.overrides.get("uri") {
            Some(f) => f.clone(),
            None if log.named(target) => target.into(),
            None => "uri".into(),
        };
        let raw_target = uri_field == "request_uri"
            || uri_field == target
            || (uri_field == "uri" && log.derived_uri());
        // A config whose one `location /` takes every URI is not routed
        // (reading each row's URI costs): rows nginx would answer 400 are
        // then decided by that location.
        let mut routed =
            forced.is_none() && (tried || conf.servers.iter().any(|s| !trivial(&s.tree)));
        if forced.is_none() && !routed && conf.answers.rewriting {
            // Rewrites alone need the URI only when the log has it.
            routed = log.has(&uri_field);
            if !routed {
                notes.say(format_args!(
                    "{} has rewrites, and the log has no field '{uri_field}' to run them on: rows are decided as requests for / would be; log $request or $uri, or give --nginx-var uri=FIELD",
                    conf.path.display()
                ));
            }
        }
        if routed && !log.has(&uri_field) {
            bail!(
                "{} has locations, and routing rows to them needs the request's URI, but the log has no field '{uri_field}' (its fields: {}); log $uri or $request, give --nginx-var uri=FIELD, or send every row to one location with --nginx-location",
                conf.path.display(),
                log.listing()
            );
        }
        let uri_slot = routed.then(|| slot(&uri_field)).transpose()?;
        let servers = Servers::new(conf, opts, notes, forced.is_some(), log, slot)?;
        let static_files = opts.static_files.cloned();
        let roots = (0..conf.servers.len())
            .map(|s| {
                let l = conf.route_rewritten(s, "/");
                (l, named(conf, static_files.as_ref(), l, "/"))
            })
            .collect();
        let tries = if conf.locations.iter().any(|l| l.try_named.is_some()) {
            conf.locations
                .iter()
                .map(|l| l.try_named.map_or(u32::MAX, |n| n as u32))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Router {
            tries,
            roots,
            forced,
            uri_slot,
            raw_target,
            servers,
            routes: vec![Vec::new(); conf.servers.len()],
            indexed: vec![Vec::new(); conf.servers.len()],
            redirected: Default::default(),
            static_files,
            rewrites: (routed && conf.answers.rewriting).then(|| RowRewrites {
                table: Vec::new(),
                ids: vec![Vec::new(); conf.servers.len()],
                row: u32::MAX,
            }),
        })
    }

    /// The location entry of `conf` this row goes to, and the one it is
    /// passed to when none of its limits applies: the named location of its
    /// `try_files` (unless `--static` says the file exists), or the location
    /// of its `index` file for a directory.
    #[inline]
    pub(super) fn location(
        &mut self,
        conf: &NginxConf,
        ev: &Event,
        names: &KeyValues,
    ) -> (usize, Option<usize>) {
        if let Some(l) = self.forced {
            return (l, None);
        }
        let server = self.servers.of(conf, ev, names);
        let id = self.uri_slot.map_or(EMPTY_KEY, |u| names.id(ev, u));
        if id == EMPTY_KEY {
            if let Some(rw) = &mut self.rewrites {
                rw.row = u32::MAX;
            }
            return self.roots[server];
        }
        let routes = &mut self.routes[server];
        let i = id as usize;
        if i >= routes.len() {
            routes.resize(i + 1, u32::MAX);
            self.indexed[server].resize(i + 1, u32::MAX);
        }
        if routes[i] == u32::MAX {
            let target = names[self.uri_slot.unwrap_or_default()].get(id);
            let (r, rewritten) = resolve(
                conf,
                server,
                target,
                self.raw_target,
                self.static_files.as_ref(),
            );
            routes[i] = r;
            let l = (r & !FILE) as usize;
            self.indexed[server][i] = match redirect(conf, server, l, target, &self.static_files) {
                Some((to, how)) => {
                    self.redirected.insert((l, to, how));
                    to as u32
                }
                None => u32::MAX,
            };
            if let Some(rw) = &mut self.rewrites {
                rw.record(server, i, rewritten);
            }
        }
        if let Some(rw) = &mut self.rewrites {
            rw.row = rw.ids[server][i];
        }
        let r = self.routes[server][i];
        let l = (r & !FILE) as usize;
        let to = self.indexed[server][i];
        if to != u32::MAX {
            return (l, Some(to as usize));
        }
        if self.tries.is_empty() {
            return (l, None);
        }
        let then = self.tries[l];
        (
            l,
            (r & FILE == 0 && then != u32::MAX).then_some(then as usize),
        )
    }

    /// The `$uri` and `$args` rewrites made of the row last routed, when
    /// they changed them.
    #[inline]
    pub(super) fn rewritten(&self) -> Option<&Rewritten> {
        let rw = self.rewrites.as_ref()?;
        rw.table.get(rw.row as usize)
    }
}

/// The cached route of a URI not seen before in `server`: the location
/// entry, with [`FILE`] when `--static` matches it.
#[cold]
#[inline(never)]
fn resolve(
    conf: &NginxConf,
    server: usize,
    target: &[u8],
    raw_target: bool,
    static_files: Option<&regex::Regex>,
) -> (u32, Option<Rewritten>) {
    if raw_target && bad_request(target) {
        return (conf.answers.bad_request as u32, None);
    }
    let uri = normalize(&String::from_utf8_lossy(target));
    let (l, rewritten) = if conf.answers.rewriting {
        let mut args = Vec::new();
        Target::Args.eval(target, &mut args);
        conf.route_request(server, &uri, &String::from_utf8_lossy(&args))
    } else {
        (conf.route(server, &uri), None)
    };
    let l = l as u32;
    let file = static_files.is_some_and(|r| r.is_match(&uri));
    (if file { l | FILE } else { l }, rewritten)
}

/// Which internal redirect sent a row on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Redirect {
    Index,
    /// `error_page 404` (a URI `--static` does not name).
    Missing,
    /// `try_files … /uri` (a URI `--static` does not name).
    TryFiles,
}

/// The location an internal redirect of nginx sends a request for
/// `target` in location `l` to, when it serves files: for a directory
/// (its path ends in `/`) its `index`, the first file taken to exist (the
/// log cannot say) or an index given as a URI; for a file `--static` does
/// not name, its `error_page 404` URI or `@name`. `None` when there is no
/// redirect, or it comes back to `l`.
#[cold]
#[inline(never)]
fn redirect(
    conf: &NginxConf,
    server: usize,
    l: usize,
    target: &[u8],
    static_files: &Option<regex::Regex>,
) -> Option<(usize, Redirect)> {
    let loc = &conf.locations[l];
    let uri = normalize(&String::from_utf8_lossy(target));
    let path = |page: &str| normalize(page.split('?').next().unwrap_or(page));
    let exists = |uri: &str| static_files.as_ref().is_some_and(|r| r.is_match(uri));
    let (to, how) = if let Some(page) = &loc.try_uri {
        if exists(&uri) {
            return None;
        }
        (conf.route(server, &path(page)), Redirect::TryFiles)
    } else if uri.ends_with('/') {
        let first = loc.index.as_ref()?.first()?;
        let file = match first.starts_with('/') {
            true => first.clone(),
            false => format!("{uri}{first}"),
        };
        (conf.route(server, &file), Redirect::Index)
    } else {
        let page = loc.missing_to.as_ref()?;
        if static_files.as_ref().is_none_or(|r| r.is_match(&uri)) {
            return None;
        }
        let to = match page.starts_with('@') {
            true => conf.location_named(page)?,
            false => conf.route(server, &path(page)),
        };
        (to, Redirect::Missing)
    };
    (to != l).then_some((to, how))
}

/// Set in a cached route when the URI is a file that exists (`--static`).
const FILE: u32 = 1 << 31;

/// The named location `try_files` passes a request for `uri` in location
/// `l` to: always, unless `--static` matches the URI.
fn named(
    conf: &NginxConf,
    static_files: Option<&regex::Regex>,
    l: usize,
    uri: &str,
) -> Option<usize> {
    let to = conf.locations[l].try_named?;
    let exists = static_files.is_some_and(|r| r.is_match(uri));
    (!exists).then_some(to)
}
