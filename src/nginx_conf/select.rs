//! Choosing as nginx chooses: the server for a `Host`, the location for a
//! URI, and a location by the name `--nginx-location` gives.

use super::{NginxConf, location};

impl NginxConf {
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
