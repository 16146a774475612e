//! Choosing as nginx chooses: the server for a connection's address and
//! port and the request's `Host`, the location for a URI, and a location
//! by the name `--nginx-location` gives.

use super::{NginxConf, location};

/// One `listen` of a server: its address (`None`: every address, `*`)
/// and port, and whether it is the `default_server` there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listen {
    pub addr: Option<String>,
    pub port: u16,
    pub default: bool,
}

impl Listen {
    /// What a server without `listen` listens on: `*:80`.
    pub const ANY_80: Listen = Listen {
        addr: None,
        port: 80,
        default: false,
    };

    /// A `listen` directive's arguments: `80`, `127.0.0.1:8080`,
    /// `[::]:443 ssl`, `*:80`, `localhost` (port 80), `unix:/run/x.sock`
    /// (no port: port 0), then its flags.
    pub fn parse(args: &[String]) -> Result<Listen, String> {
        let Some(first) = args.first() else {
            return Err("listen needs an address or a port".into());
        };
        let default = args[1..]
            .iter()
            .any(|a| a == "default_server" || a == "default");
        let port = |p: &str| {
            p.parse::<u16>()
                .map_err(|_| format!("listen {first}: '{p}' is no port"))
        };
        let (addr, port) = if first.starts_with("unix:") {
            (Some(first.clone()), 0)
        } else if first.bytes().all(|b| b.is_ascii_digit()) {
            (None, port(first)?)
        } else if let Some(rest) = first.strip_prefix('[') {
            let (a, after) = rest
                .split_once(']')
                .ok_or_else(|| format!("listen {first}: no ']' after the IPv6 address"))?;
            let p = match after.strip_prefix(':') {
                Some(p) => port(p)?,
                None => 80,
            };
            (Some(a.to_ascii_lowercase()), p)
        } else if let Some((a, p)) = first.rsplit_once(':') {
            ((a != "*").then(|| a.to_ascii_lowercase()), port(p)?)
        } else {
            ((first != "*").then(|| first.to_ascii_lowercase()), 80)
        };
        Ok(Listen {
            addr,
            port,
            default,
        })
    }

    /// The port as a label says it (`443`, or the socket's path).
    pub fn port_text(&self) -> String {
        match (&self.addr, self.port) {
            (Some(a), 0) => a.clone(),
            (_, p) => p.to_string(),
        }
    }
}

impl NginxConf {
    /// True when its servers listen on more than one port or address:
    /// a row's server then depends on where the connection came in.
    pub fn listens_apart(&self) -> bool {
        let mut all = self.servers.iter().flat_map(|s| &s.listens);
        let Some(first) = all.next() else {
            return false;
        };
        all.any(|l| (l.port, &l.addr) != (first.port, &first.addr))
    }

    /// The server nginx chooses for a connection to `port` (and local
    /// address `addr`, when known) asking for `host`: among the servers
    /// listening there (on that address exactly when one does, else on
    /// every address), by name as [`server_for`](Self::server_for)
    /// chooses, the default being the one marked `default_server` there,
    /// else the first. `port` `None` (the log has no `$server_port`), or a
    /// port no server listens on: every server.
    pub fn server_at(&self, host: Option<&str>, port: Option<u16>, addr: Option<&str>) -> usize {
        let Some(port) = port else {
            return self.server_for(host);
        };
        let addr = addr.map(|a| {
            a.trim_start_matches('[')
                .trim_end_matches(']')
                .to_ascii_lowercase()
        });
        let on = |l: &Listen, exact: bool| {
            l.port == port
                && match (&l.addr, &addr) {
                    (Some(a), Some(x)) => a == x,
                    (None, _) => !exact,
                    (Some(_), None) => !exact,
                }
        };
        let exact = addr.is_some()
            && self
                .servers
                .iter()
                .any(|s| s.listens.iter().any(|l| on(l, true)));
        let here: Vec<usize> = (0..self.servers.len())
            .filter(|&i| self.servers[i].listens.iter().any(|l| on(l, exact)))
            .collect();
        if here.is_empty() {
            return self.server_for(host);
        }
        let default = here
            .iter()
            .copied()
            .find(|&i| {
                self.servers[i]
                    .listens
                    .iter()
                    .any(|l| on(l, exact) && l.default)
            })
            .unwrap_or(here[0]);
        self.choose(host, &here, default)
    }

    /// The server for a `Host` value (`None`: the log has no host), as
    /// nginx chooses it: an exact name; else the longest wildcard name
    /// starting with `*.` (or `.`, which also matches the name without
    /// it); else the longest one ending with `.*`; else the first regex
    /// name (`~…`) that matches, in the config's order; else the default
    /// server (the one marked `default_server`, else the first).
    pub fn server_for(&self, host: Option<&str>) -> usize {
        let default = self.servers.iter().position(|s| s.default).unwrap_or(0);
        let all: Vec<usize> = (0..self.servers.len()).collect();
        self.choose(host, &all, default)
    }

    /// The server of `among` named `host`, else `default`.
    fn choose(&self, host: Option<&str>, among: &[usize], default: usize) -> usize {
        let Some(host) = host else {
            return default;
        };
        let host = host.trim().trim_end_matches('.');
        let host = match host.rsplit_once(':') {
            Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) && !h.contains(':') => h,
            _ => host,
        };
        let host = host.to_ascii_lowercase();
        // The server whose name `score` rates highest (0: no match); the
        // first on a tie.
        let best = |score: &dyn Fn(&str) -> usize| {
            let mut best = (0, default);
            for &i in among {
                for n in &self.servers[i].names {
                    let v = score(&n.to_ascii_lowercase());
                    if v > best.0 {
                        best = (v, i);
                    }
                }
            }
            (best.0 > 0).then_some(best.1)
        };
        let exact = |n: &str| {
            let n = n.strip_prefix('.').unwrap_or(n);
            usize::from(!n.starts_with('~') && n == host)
        };
        let leading = |n: &str| {
            let suffix = n
                .strip_prefix('*')
                .or_else(|| n.strip_prefix('.').map(|_| n));
            match suffix {
                Some(s) if s.starts_with('.') && host.ends_with(s) && host.len() > s.len() => {
                    s.len()
                }
                _ => 0,
            }
        };
        let trailing = |n: &str| match n.strip_suffix('*') {
            Some(p) if p.ends_with('.') && host.starts_with(p) && host.len() > p.len() => p.len(),
            _ => 0,
        };
        best(&exact)
            .or_else(|| best(&leading))
            .or_else(|| best(&trailing))
            .or_else(|| {
                among
                    .iter()
                    .copied()
                    .find(|&i| self.servers[i].regexes.iter().any(|r| r.is_match(&host)))
            })
            .unwrap_or(default)
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
            if l.answered.is_some() {
                return false;
            }
            let n = l
                .name
                .rsplit_once("location ")
                .map_or(l.name.as_str(), |x| x.1);
            n == want || l.name == name
        })
    }
}
