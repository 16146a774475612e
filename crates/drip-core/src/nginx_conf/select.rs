//! Choosing as nginx chooses: the server for a `Host`, the location for a
//! URI, and a location by the name `--nginx-location` gives.

use super::{NginxConf, location};

impl NginxConf {
    /// The server for a `Host` value (`None`: the log has no host), as
    /// nginx chooses it: an exact name; else the longest wildcard name
    /// starting with `*.` (or `.`, which also matches the name without
    /// it); else the longest one ending with `.*`; else the first regex
    /// name (`~…`) that matches, in the config's order; else the default
    /// server (the one marked `default_server`, else the first).
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
        // The server whose name `score` rates highest (0: no match); the
        // first on a tie.
        let best = |score: &dyn Fn(&str) -> usize| {
            let mut best = (0, default);
            for (i, s) in self.servers.iter().enumerate() {
                for n in &s.names {
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
                self.servers
                    .iter()
                    .position(|s| s.regexes.iter().any(|r| r.is_match(&host)))
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
