//! A `rateLimit` middleware's options, read as Traefik v3 reads them
//! (`pkg/config/dynamic/middlewares.go`, `pkg/middlewares/ratelimiter/`,
//! `pkg/ip/strategy.go`).

use crate::policy::traefik::TraefikRate;
use crate::rate::Rate;
use crate::time::Nanos;
use crate::tree::Node;
use std::net::IpAddr;

/// Who shares a bucket (`sourceCriterion`).
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// The connection's address (`ipStrategy` without `depth` or
    /// `excludedIPs`; the default), masked to `ipv6Subnet` bits for IPv6.
    Remote { v6: Option<u8> },
    /// The `depth`-th address of `X-Forwarded-For` from the right (none
    /// when it has fewer: one shared bucket).
    Depth { depth: usize, v6: Option<u8> },
    /// The first address of `X-Forwarded-For` from the right outside
    /// `excludedIPs`.
    Excluded(Vec<Net>),
    /// A request header's value (`requestHeaderName`): requests without it
    /// share one bucket.
    Header(String),
    /// The request's `Host` (`requestHost`).
    Host,
}

/// An address or a CIDR block.
#[derive(Clone, Debug, PartialEq)]
pub struct Net {
    pub addr: IpAddr,
    pub bits: u8,
}

/// One `rateLimit` middleware.
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// Its qualified name (`api-limit@file`).
    pub name: String,
    pub line: u32,
    /// `average`, `period` (ns) and `burst` as written (burst at least 1).
    pub average: i64,
    pub period: u64,
    pub burst: i64,
    /// `None` when `average` is 0: no limit.
    pub policy: Option<TraefikRate>,
    pub source: Source,
    /// `redis:` is set: the buckets live in Redis, shared by instances.
    pub redis: bool,
}

impl Limit {
    /// `average/period, burst` as the report shows it.
    pub fn text(&self) -> String {
        let by = match &self.source {
            Source::Remote { .. } => "client address".to_string(),
            Source::Depth { depth, .. } => format!("X-Forwarded-For depth {depth}"),
            Source::Excluded(_) => "X-Forwarded-For past excludedIPs".to_string(),
            Source::Header(h) => format!("header {h}"),
            Source::Host => "Host".to_string(),
        };
        format!(
            "{}: average {} per {}, burst {}, by {by}",
            self.name,
            self.average,
            crate::time::span(self.period),
            self.burst
        )
    }
}

/// Reads a `rateLimit` node: `Err((line, message))` for what Traefik
/// refuses.
pub(super) fn read(name: &str, node: &Node) -> Result<Limit, (u32, String)> {
    let num = |key: &str, default: i64| -> Result<i64, (u32, String)> {
        match node.get_ci(key) {
            None => Ok(default),
            Some(n) if n.is_null() => Ok(default),
            Some(n) => n.int().ok_or_else(|| {
                (
                    n.line,
                    format!("{key} must be a whole number, e.g. {key}: 100"),
                )
            }),
        }
    };
    let average = num("average", 0)?;
    let burst = num("burst", 1)?.max(1);
    let period = match node.get_ci("period") {
        None => 1_000_000_000,
        Some(n) if n.is_null() => 1_000_000_000,
        Some(n) => {
            let p = period(n)?;
            if p < 0 {
                return Err((
                    n.line,
                    format!(
                        "negative value not valid for period: {}",
                        n.str().unwrap_or("")
                    ),
                ));
            }
            match p {
                0 => 1_000_000_000,
                p => p as u64,
            }
        }
    };
    if average < 0 {
        return Err((node.line, "average must not be negative".into()));
    }
    let policy = match average {
        0 => None,
        a => {
            let rate = Rate::new(a as u64, Nanos(period)).map_err(|_| {
                (
                    node.line,
                    "average/period is not a rate drip can hold".to_string(),
                )
            })?;
            Some(TraefikRate::new(rate, burst as u64))
        }
    };
    Ok(Limit {
        name: name.to_string(),
        line: node.line,
        average,
        period,
        burst,
        policy,
        source: source(node.get_ci("sourceCriterion"))?,
        redis: node.get_ci("redis").is_some_and(|r| !r.is_null()),
    })
}

/// `period`: a Go duration (`1m`, `1.5s`) or a whole number of seconds.
fn period(n: &Node) -> Result<i64, (u32, String)> {
    let bad = || {
        (
            n.line,
            format!(
                "period '{}' is not a duration; write e.g. period: 1m",
                n.str().unwrap_or("")
            ),
        )
    };
    if let Some(s) = n.int() {
        return s.checked_mul(1_000_000_000).ok_or_else(bad);
    }
    go_duration(n.str().ok_or_else(bad)?).ok_or_else(bad)
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn go_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(rest.len());
        let (num, tail) = rest.split_at(digits);
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let per: i128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
        if whole.is_empty() && frac.is_empty() {
            return None;
        }
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let w: i128 = if whole.is_empty() {
            0
        } else {
            whole.parse().ok()?
        };
        let mut part = w.checked_mul(per)?;
        let mut scale = per;
        for d in frac.bytes() {
            scale /= 10;
            part += i128::from(d - b'0') * scale;
        }
        total = total.checked_add(part)?;
        rest = next;
    }
    let total = if neg { -total } else { total };
    i64::try_from(total).ok()
}

fn source(node: Option<&Node>) -> Result<Source, (u32, String)> {
    let Some(n) = node.filter(|n| !n.is_null()) else {
        return Ok(Source::Remote { v6: None });
    };
    let ip = n.get_ci("ipStrategy").filter(|s| !s.is_null());
    let header = (n.get_ci("requestHeaderName").and_then(Node::str)).filter(|h| !h.is_empty());
    let host = n.get_ci("requestHost").and_then(Node::bool) == Some(true);
    let exclusive = [ip.is_some(), header.is_some(), host]
        .iter()
        .filter(|x| **x)
        .count();
    if exclusive > 1 {
        return Err((
            n.line,
            "sourceCriterion: ipStrategy, requestHeaderName and requestHost are mutually exclusive; keep one".into(),
        ));
    }
    if let Some(h) = header {
        return Ok(Source::Header(h.to_string()));
    }
    if host {
        return Ok(Source::Host);
    }
    let Some(ip) = ip else {
        return Ok(Source::Remote { v6: None });
    };
    let v6 = match ip.get_ci("ipv6Subnet") {
        None => None,
        Some(s) => match s.int() {
            Some(b @ 1..=128) => Some(b as u8),
            _ => {
                return Err((
                    s.line,
                    format!(
                        "invalid IPv6 subnet {} value, should be greater to 0 and lower or equal to 128",
                        s.str().unwrap_or("")
                    ),
                ));
            }
        },
    };
    let depth = ip.get_ci("depth").and_then(Node::int).unwrap_or(0);
    if depth > 0 {
        return Ok(Source::Depth {
            depth: depth as usize,
            v6,
        });
    }
    let excluded = ip.items_ci("excludedIPs");
    if !excluded.is_empty() {
        let nets = excluded
            .iter()
            .map(|e| {
                let s = e.str().unwrap_or("");
                net(s).ok_or_else(|| {
                    (
                        e.line,
                        format!("excludedIPs: '{s}' is not an address or a CIDR block"),
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(Source::Excluded(nets));
    }
    Ok(Source::Remote { v6 })
}

/// `10.0.0.0/8`, `::1`, `192.168.1.7`.
fn net(s: &str) -> Option<Net> {
    let (a, bits) = match s.split_once('/') {
        Some((a, b)) => (a, Some(b.parse::<u8>().ok()?)),
        None => (s, None),
    };
    let addr: IpAddr = a.trim().parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = bits.unwrap_or(max);
    (bits <= max).then_some(Net { addr, bits })
}

impl Net {
    pub fn contains(&self, ip: IpAddr) -> bool {
        let (a, b, width) = match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                (u128::from(u32::from(a)), u128::from(u32::from(b)), 32)
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
            _ => return false,
        };
        let shift = width - u32::from(self.bits);
        shift >= width || (a >> shift) == (b >> shift)
    }
}

/// An IPv6 address masked to `bits` as Go's `netip` writes it; anything
/// else as it is.
pub fn v6_subnet(ip: &str, bits: u8) -> String {
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(a)) => {
            let mask = if bits >= 128 {
                u128::MAX
            } else {
                !(u128::MAX >> bits)
            };
            std::net::Ipv6Addr::from(u128::from(a) & mask).to_string()
        }
        _ => ip.to_string(),
    }
}
