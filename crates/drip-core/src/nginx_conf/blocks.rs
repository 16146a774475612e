//! The `http`, `server` and `location` blocks → servers and one flat list
//! of locations, each with its effective settings: a level with any
//! `limit_req` replaces the whole inherited list, `limit_req_dry_run`
//! inherits on its own; a `return` leaves its block unlimited. `limit_req`
//! lines wait in `pending` until every zone is known.

use super::location::{Match, Node};
use super::rewrite::Step;
use super::tree::{Directive, Pos};
use super::{ConfError, Level, LimitLine, Listen, Location, NginxConf, Server};

/// Directives that make a location answer requests with something other
/// than its files: no `index` there (`try_files` runs its own list).
const CONTENT: &[&str] = &[
    "proxy_pass",
    "fastcgi_pass",
    "uwsgi_pass",
    "scgi_pass",
    "grpc_pass",
    "memcached_pass",
    "empty_gif",
    "return",
    "try_files",
    "stub_status",
    "perl",
    "js_content",
    "mp4",
    "flv",
];

impl NginxConf {
    /// Reads the `http` block: its zones, maps, log formats and servers.
    pub(super) fn http(
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
                "geo" => self.geo(d)?,
                "split_clients" | "perl_set" | "js_set" | "geoip_country" | "geoip_city"
                | "geoip2" => {
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
                listens: vec![Listen::ANY_80],
                regexes: Vec::new(),
                fallback: loc,
                tree: Vec::new(),
                steps: Vec::new(),
                twin: None,
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
            let first = |s: &Server| s.names.first().cloned().unwrap_or_else(|| "\"\"".into());
            // Two servers of one name (port 80 and 443) are told apart by
            // their ports.
            let names: Vec<String> = self
                .servers
                .iter()
                .map(|s| {
                    let n = first(s);
                    let twins = self.servers.iter().filter(|o| first(o) == n).count();
                    match twins {
                        1 => n,
                        _ => format!("{n}:{}", s.listens[0].port_text()),
                    }
                })
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
            try_named: None,
            steps: Vec::new(),
            twin: None,
            answered: None,
            index: None,
            missing_to: None,
            try_uri: None,
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
        let mut listens = Vec::new();
        let mut rewrites = Vec::new();
        for x in block {
            match x.name.as_str() {
                "server_name" => names.extend(x.args.iter().cloned()),
                "listen" => {
                    let l = Listen::parse(&x.args).map_err(|e| x.pos.err(e))?;
                    default |= l.default;
                    listens.push(l);
                }
                "return" | "rewrite" | "break" => rewrites.push(x),
                "location" => {}
                _ => self.level_directive(x, &mut own, "server")?,
            }
        }
        let level = own.inherit(http);
        let si = self.servers.len();
        let (steps, returns) = self.rewrite_phase(&rewrites, false);
        let fallback = self.push_location("server".into(), si, &level, returns);
        let twin = self.answered_twin(fallback, &steps);
        pending.push((fallback, level.limits.clone().unwrap_or_default()));
        let mut tree = Vec::new();
        let mut named = Vec::new();
        for x in block.iter().filter(|x| x.name == "location") {
            let n = self.location(x, si, &level, returns, None, pending)?;
            match &n.how {
                Match::Named(name) => named.push((name.clone(), n.index)),
                _ => tree.push(n),
            }
        }
        self.resolve_try_files(&named);
        let regexes = names
            .iter()
            .filter_map(|n| n.strip_prefix('~'))
            .map(|r| name_regex(d, r))
            .collect::<Result<_, _>>()?;
        if listens.is_empty() {
            listens.push(Listen::ANY_80);
        }
        self.servers.push(Server {
            names,
            default,
            listens,
            regexes,
            fallback,
            tree,
            steps,
            twin,
            pos: d.pos.clone(),
        });
        Ok(())
    }

    /// A location block (`parent`: the one it is nested in). A `return`
    /// of the server answers every request; one of a location answers
    /// only the requests of that location, not of the ones nested in it
    /// (rewrite-phase directives are not inherited).
    fn location(
        &mut self,
        d: &Directive,
        server: usize,
        outer: &Level,
        server_returns: bool,
        parent: Option<&Match>,
        pending: &mut Vec<(usize, Vec<LimitLine>)>,
    ) -> Result<Node, ConfError> {
        let Some(block) = d.block.as_deref() else {
            return Err(d.pos.err("location needs a block { … }"));
        };
        if let Some(p) = parent {
            nested_check(d, p)?;
        }
        let how = match d.args.as_slice() {
            [u] if u.starts_with('@') => Match::Named(u.clone()),
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
        let mut rewrites = Vec::new();
        let mut try_files: Option<&Directive> = None;
        for x in block {
            match x.name.as_str() {
                "return" | "rewrite" | "break" => rewrites.push(x),
                "location" => {}
                "try_files" => try_files = Some(x),
                _ => self.level_directive(x, &mut own, "location")?,
            }
        }
        let level = own.inherit(outer);
        let name = format!("location {}", d.args.join(" "));
        let (steps, own_return) = self.rewrite_phase(&rewrites, matches!(how, Match::Named(_)));
        let returns = server_returns || own_return;
        let index = self.push_location(name, server, &level, returns);
        self.internal_redirects(index, block, &level);
        if !returns {
            self.locations[index].twin = self.answered_twin(index, &steps);
            self.locations[index].steps = steps;
        }
        let limits = level.limits.clone().unwrap_or_default();
        if let Some(t) = try_files {
            self.try_files(index, t, returns, limits.is_empty());
        }
        pending.push((index, limits));
        let mut children = Vec::new();
        for x in block.iter().filter(|x| x.name == "location") {
            let n = self.location(x, server, &level, server_returns, Some(&how), pending)?;
            children.push(n);
        }
        Ok(Node {
            how,
            index,
            children,
        })
    }

    /// Where location `index` sends a request nginx redirects inside:
    /// its `index` files and `error_page 404`, when it serves files itself
    /// (nginx's index module answers a directory only there).
    fn internal_redirects(&mut self, index: usize, block: &[Directive], level: &Level) {
        if block.iter().any(|x| CONTENT.contains(&x.name.as_str())) {
            return;
        }
        let loc = &mut self.locations[index];
        loc.index = Some(
            level
                .index
                .clone()
                .unwrap_or_else(|| vec!["index.html".into()]),
        );
        loc.missing_to = level
            .error_pages
            .iter()
            .flatten()
            .find(|(codes, _)| codes.contains(&404))
            .map(|(_, to)| to.clone());
    }

    /// Where location `index`'s `try_files` `t` passes a request when no
    /// file exists: a named location (resolved once the server is read), a
    /// URI, or, for a URI built from variables, a note.
    fn try_files(&mut self, index: usize, t: &Directive, returns: bool, unlimited: bool) {
        match t.args.last() {
            Some(to) if to.starts_with('@') => {
                self.try_pending.push((index, to.clone(), t.pos.clone()));
            }
            Some(to)
                if !to.starts_with('=')
                    && !returns
                    && !to.split('?').next().unwrap_or_default().contains('$') =>
            {
                self.locations[index].try_uri = Some(to.clone());
            }
            Some(to) if !to.starts_with('=') && unlimited && !returns => self.note(
                &t.pos,
                "try_files",
                "requests it passes to a URI built from variables are limited by that URI's location in nginx, and not by drip",
            ),
            _ => {}
        }
    }

    /// A block's rewrite-phase lines as steps run per URI, and whether a
    /// `return` answers every request first (then no steps). In a named
    /// location (reached through `try_files`, which drip routes apart)
    /// only a leading `return` is modelled; other lines are noted.
    fn rewrite_phase(&mut self, dirs: &[&Directive], named: bool) -> (Vec<Step>, bool) {
        if dirs.first().is_some_and(|d| d.name == "return") {
            return (Vec::new(), true);
        }
        if named {
            for d in dirs.iter().filter(|d| d.name == "rewrite") {
                self.note(
                    &d.pos,
                    "rewrite",
                    "it is in a named location; rows are routed by the URI as logged",
                );
            }
            return (Vec::new(), dirs.iter().any(|d| d.name == "return"));
        }
        let steps = self.rewrite_steps(dirs);
        self.answers.rewriting |= !steps.is_empty();
        (steps, false)
    }

    /// Points each `try_files … @name` of the server just read at its
    /// named location; one naming none is a note (nginx answers 500).
    fn resolve_try_files(&mut self, named: &[(String, usize)]) {
        for (loc, name, pos) in std::mem::take(&mut self.try_pending) {
            match named.iter().find(|(n, _)| *n == name) {
                Some(&(_, to)) => self.locations[loc].try_named = Some(to),
                None => self.note(
                    &pos,
                    &format!("try_files … {name}"),
                    "the server has no such named location (nginx answers 500); rows stay in this location",
                ),
            }
        }
    }
}

/// What nginx -t checks of a location nested in `parent`: no location
/// inside an exact or a named one, no named location below the server,
/// and a prefix or exact location starting with its parent's text.
fn nested_check(d: &Directive, parent: &Match) -> Result<(), ConfError> {
    let (kind, text) = match d.args.as_slice() {
        [m, u] => (m.as_str(), u.as_str()),
        [u] => match ["=", "^~", "~*", "~", "@"]
            .iter()
            .find(|m| u.starts_with(**m))
        {
            Some(&"@") => ("@", u.as_str()),
            Some(m) => (*m, &u[m.len()..]),
            None => ("", u.as_str()),
        },
        _ => return Ok(()),
    };
    let refuse = |why: String| Err(d.pos.err(format!("{why}: nginx -t refuses this config")));
    match parent {
        Match::Exact(p) => {
            return refuse(format!(
                "location \"{text}\" cannot be inside the exact location \"{p}\""
            ));
        }
        Match::Named(p) => {
            return refuse(format!(
                "location \"{text}\" cannot be inside the named location \"{p}\""
            ));
        }
        _ if kind == "@" => {
            return refuse(format!(
                "named location \"{text}\" can be on the server level only"
            ));
        }
        Match::Prefix(p) | Match::NoRegex(p)
            if !kind.starts_with('~') && !text.starts_with(p.as_str()) =>
        {
            return refuse(format!("location \"{text}\" is outside location \"{p}\""));
        }
        Match::Regex(re) if !kind.starts_with('~') => {
            let p = re.as_str().trim_start_matches("(?i)");
            if !text.starts_with(p) {
                return refuse(format!("location \"{text}\" is outside location \"{p}\""));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A regex `server_name`, caseless as nginx compiles it.
fn name_regex(d: &Directive, r: &str) -> Result<regex::Regex, ConfError> {
    regex::Regex::new(&format!("(?i){r}")).map_err(|e| {
        d.pos.err(format!(
            "server_name regex '~{r}' is not one drip can evaluate ({}); audit a copy of the config with it rewritten without look-around or backreferences",
            e.to_string().lines().last().unwrap_or("invalid").trim()
        ))
    })
}

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
