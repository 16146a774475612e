//! The `limit_req_zone` key that counts requests as `size` counted them:
//! the key column(s) the policy was sized by, each read as the nginx
//! variable holding the same value.
//!
//! - a client address column (`remote_addr`, `client`, `ip`, `c-ip`, and
//!   `host` on its own: the first field of the common log format names
//!   the client, and the snippet says it read it so) → `$binary_remote_addr`;
//! - a URL column (`uri`, `url`, `path`, `request_uri`, `cs-uri-stem`) →
//!   `$uri` (the path without its arguments); when the log's URLs carry a
//!   query string, the snippet says that `$uri` counts them under their
//!   path and `$request_uri` (the target as sent) keeps them apart;
//! - a Host header column (`http_host`, `server_name`, `cs-host`) →
//!   `$host`; `host` next to a URL column may be either (the NASA logs
//!   key by client and URL): that is said, and no zone is written;
//! - `--key-prefix 8|16|24` on a client address → a `map` of
//!   `$remote_addr` to its network (IPv6 keeps the whole address, so only
//!   a log without IPv6 clients, or a /128, is expressed);
//! - several columns → their variables one after the other.
//!
//! Anything else has no nginx variable known to hold the same value: that
//! is said plainly, and no `limit_req_zone` is written.

use crate::engine::candidates::log::Log;

/// The zone's key, and what it needs in the http block.
pub struct ZoneKey {
    /// The key expression (`$binary_remote_addr`, `$host$uri`).
    pub key: String,
    /// A `map` building the key, when one is needed (lines).
    pub map: Vec<String>,
    /// How the log's columns became the key, in words.
    pub from: String,
    /// Bytes of one state in the zone, about (key length included).
    pub state_bytes: u64,
}

/// What a column of the log is, as nginx sees it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Client,
    Url,
    Host,
    /// `host` beside a URL: the client or the Host header.
    Unsure,
}

fn part(column: &str, with_url: bool) -> Option<Part> {
    let c = column.trim().to_ascii_lowercase();
    match c.as_str() {
        "remote_addr" | "client" | "client_ip" | "clientip" | "ip" | "c-ip" | "remote_host"
        | "remotehost" | "addr" => Some(Part::Client),
        "host" if !with_url => Some(Part::Client),
        "host" => Some(Part::Unsure),
        "uri" | "url" | "path" | "request_uri" | "cs-uri-stem" | "uri_path" => Some(Part::Url),
        "http_host" | "server_name" | "cs-host" | "vhost" | "host_header" => Some(Part::Host),
        _ => None,
    }
}

/// True when every column of `key_col` is a URL or a Host header: its
/// keys are the site's routes, not its clients, so the busiest key is
/// the most used route, not an outlier.
pub fn routes_only(key_col: &str) -> bool {
    let columns: Vec<&str> = key_col.split(',').map(str::trim).collect();
    let with_url = columns.iter().any(|c| part(c, false) == Some(Part::Url));
    columns
        .iter()
        .all(|c| matches!(part(c, with_url), Some(Part::Url | Part::Host)))
}

/// True when every variable of a `limit_req_zone` key is one of a
/// request's route (`$uri`, `$host`, `$server_name`, …), none of its client.
pub fn zone_routes_only(key: &str) -> bool {
    const ROUTE: &[&str] = &[
        "uri",
        "request_uri",
        "document_uri",
        "host",
        "http_host",
        "server_name",
        "request_filename",
        "scheme",
        "request_method",
        "args",
        "query_string",
        "server_addr",
        "server_port",
    ];
    let vars: Vec<&str> = key
        .split('$')
        .skip(1)
        .map(|v| {
            let v = v.trim_start_matches('{');
            let end = v
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(v.len());
            &v[..end]
        })
        .collect();
    !vars.is_empty()
        && vars
            .iter()
            .all(|v| ROUTE.contains(v) || v.starts_with("arg_"))
}

/// The key for the columns `key_col` (comma-separated), with `prefix`
/// (`--key-prefix`), over the keys of `log`; `Err`: why nginx cannot
/// express it.
pub fn zone_key(key_col: &str, prefix: Option<(u8, u8)>, log: &Log) -> Result<ZoneKey, String> {
    let columns: Vec<&str> = key_col.split(',').map(str::trim).collect();
    let with_url = columns.iter().any(|c| part(c, false) == Some(Part::Url));
    let mut key = String::new();
    let mut map = Vec::new();
    let mut names = Vec::new();
    for c in &columns {
        let Some(p) = part(c, with_url) else {
            return Err(format!(
                "nginx has no variable known to hold the log's column '{c}': write the limit_req_zone key by hand (a variable with the same value per request), or size by a client address or URL column"
            ));
        };
        let var = match (p, prefix) {
            (Part::Client, Some(pre)) => {
                map = prefix_map(pre, log)?;
                "$drip_net"
            }
            (Part::Client, None) => "$binary_remote_addr",
            (Part::Url, _) => "$uri",
            (Part::Host, _) => "$host",
            (Part::Unsure, _) => {
                return Err(format!(
                    "the column '{c}' may be the client (as the common log format names its first field) or the Host header, and nginx reads them from different variables ($binary_remote_addr, $host): write the limit_req_zone key by hand"
                ));
            }
        };
        names.push(match p {
            Part::Client if c.eq_ignore_ascii_case("host") => {
                format!("'{c}' → {var} (read as the client, as the common log format names it)")
            }
            _ => format!("'{c}' → {var}"),
        });
        key.push_str(var);
    }
    let longest = (0..log.names.len())
        .map(|i| log.names.get(i as u32).len() as u64)
        .max()
        .unwrap_or(0);
    let state_bytes = if key == "$binary_remote_addr" {
        64
    } else {
        (64 + longest).next_power_of_two()
    };
    let mut from = format!("keyed as sized: {}", names.join(", "));
    let queried = queries(log);
    if key.contains("$uri") && queried > 0 {
        from.push_str(&format!(
            "; {queried} of the log's URLs carry a query string, counted apart here: $uri counts them under their path, $request_uri keeps them apart"
        ));
    }
    Ok(ZoneKey {
        key,
        map,
        from,
        state_bytes,
    })
}

/// The keys that hold a query string (`?`).
fn queries(log: &Log) -> usize {
    (0..log.names.len())
        .filter(|&i| log.names.get(i as u32).contains(&b'?'))
        .count()
}

/// A `map` from `$remote_addr` to its IPv4 network of `v4` bits.
fn prefix_map((v4, v6): (u8, u8), log: &Log) -> Result<Vec<String>, String> {
    let has_v6 = (0..log.names.len()).any(|i| log.names.get(i as u32).contains(&b':'));
    if has_v6 && v6 < 128 {
        return Err(format!(
            "nginx cannot group IPv6 addresses by a /{v6} prefix in a map (their text has many forms); key by $binary_remote_addr, or give --key-prefix {v4},128"
        ));
    }
    let octets = match v4 {
        8 => 1,
        16 => 2,
        24 => 3,
        32 => 4,
        _ => {
            return Err(format!(
                "nginx cannot group addresses by a /{v4} prefix in a map (only whole octets: 8, 16, 24); key by $binary_remote_addr, or size with --key-prefix 8, 16 or 24"
            ));
        }
    };
    let net = vec![r"\d+"; octets].join(r"\.");
    let rest = r"\.\d+".repeat(4 - octets);
    Ok(vec![
        "map $remote_addr $drip_net {".into(),
        format!("    \"~^(?<net>{net}){rest}$\" $net;"),
        "    default $remote_addr;".into(),
        "}".into(),
    ])
}

#[cfg(test)]
mod tests {
    use super::{routes_only, zone_routes_only};

    #[test]
    fn route_keys_are_told_from_client_keys() {
        assert!(routes_only("url") && routes_only("uri,http_host"));
        assert!(!routes_only("host") && !routes_only("host,url") && !routes_only("user"));
        assert!(zone_routes_only("$uri") && zone_routes_only("${host}$request_uri"));
        assert!(zone_routes_only("$server_name$arg_page"));
        assert!(!zone_routes_only("$binary_remote_addr$uri"));
        assert!(!zone_routes_only("$limit_key") && !zone_routes_only("all"));
    }
}
