//! `geo [$address] $variable { … }`: a value by client address, as nginx
//! evaluates it. Networks (`10.0.0.0/8`, `::1`, a lone address) match by
//! the longest prefix; a repeated network replaces the earlier value,
//! `delete NET` removes one; with `ranges`, `A-B` ranges (IPv4) match and
//! a later range may only lie inside an earlier one (then it wins there),
//! as nginx -t requires. `default` (or `0.0.0.0/0`) is the value of an
//! address no entry matches, or of a value that is no address. `proxy`
//! and `proxy_recursive` (the address from `X-Forwarded-For`) are refused.

use super::expr::Expr;
use super::tree::Directive;
use super::{ConfError, NginxConf};
use std::net::IpAddr;

/// One `geo` block.
#[derive(Clone, Debug)]
pub struct Geo {
    /// The variable it sets, without `$`.
    pub var: String,
    /// The address it reads (`$remote_addr` unless given).
    pub source: Expr,
    /// (network as an IPv6 address, prefix length of 128, value), the
    /// longest prefix first; IPv4 networks are IPv4-mapped.
    nets: Vec<(u128, u32, String)>,
    /// `ranges`: (first, last, value), the last matching one wins.
    ranges: Vec<(u32, u32, String)>,
    pub default: String,
}

/// An address as a 128-bit number (IPv4 mapped into IPv6), and the prefix
/// length that one bit of IPv4 adds to.
fn wide(ip: IpAddr) -> (u128, u32) {
    match ip {
        IpAddr::V4(v4) => (u128::from(v4.to_ipv6_mapped()), 96),
        IpAddr::V6(v6) => (u128::from(v6), 0),
    }
}

fn mask(bits: u32) -> u128 {
    if bits == 0 {
        0
    } else {
        u128::MAX << (128 - bits)
    }
}

impl Geo {
    /// The value for a client address written as text.
    pub fn lookup(&self, addr: &[u8]) -> &str {
        let Some(ip) = std::str::from_utf8(addr)
            .ok()
            .and_then(|a| a.trim().parse::<IpAddr>().ok())
        else {
            return &self.default;
        };
        if !self.ranges.is_empty() {
            let IpAddr::V4(v4) = ip else {
                return &self.default;
            };
            let a = u32::from(v4);
            return self
                .ranges
                .iter()
                .rev()
                .find(|r| r.0 <= a && a <= r.1)
                .map_or(&self.default, |r| &r.2);
        }
        let (a, _) = wide(ip);
        self.nets
            .iter()
            .find(|n| a & mask(n.1) == n.0)
            .map_or(&self.default, |n| &n.2)
    }
}

/// `NET` as (network, prefix length of 128): `10.0.0.0/8`, `::1`, `1.2.3.4`.
fn parse_net(text: &str) -> Option<(u128, u32)> {
    let (addr, len) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l.parse::<u32>().ok()?)),
        None => (text, None),
    };
    let (n, extra) = wide(addr.parse::<IpAddr>().ok()?);
    let bits = extra + len.unwrap_or(128 - extra);
    (bits <= 128).then(|| (n & mask(bits), bits))
}

impl NginxConf {
    /// Reads one `geo` block.
    pub(super) fn geo(&mut self, d: &Directive) -> Result<(), ConfError> {
        let (source, var) = match d.args.as_slice() {
            [v] => ("$remote_addr", v),
            [s, v] => (s.as_str(), v),
            _ => return Err(d.pos.err("geo takes [$address] $variable { … }")),
        };
        let Some(var) = var.strip_prefix('$') else {
            return Err(d.pos.err(format!("invalid variable name \"{var}\" in geo")));
        };
        let source = Expr::parse(source).map_err(|e| d.pos.err(format!("geo address {e}")))?;
        let mut g = Geo {
            var: var.to_string(),
            source,
            nets: Vec::new(),
            ranges: Vec::new(),
            default: String::new(),
        };
        let block = d.block.as_deref().unwrap_or_default();
        let ranged = block.iter().any(|x| x.name == "ranges");
        for x in block {
            geo_line(&mut g, x, ranged)?;
        }
        // Longest prefix first; a stable sort keeps equal ones in order.
        g.nets.sort_by_key(|n| std::cmp::Reverse(n.1));
        self.geos.push(g);
        Ok(())
    }
}

/// One line of a `geo` block.
fn geo_line(g: &mut Geo, x: &Directive, ranged: bool) -> Result<(), ConfError> {
    let bad = |what: &str| Err(x.pos.err(format!("invalid {what} \"{}\" in geo", x.name)));
    match (x.name.as_str(), x.args.as_slice()) {
        ("ranges", []) => {}
        ("proxy" | "proxy_recursive", _) => {
            return Err(x.pos.err(format!(
                "geo '{}' (the address taken from X-Forwarded-For) is not modelled; log the address geo sees and give it with geo $that_field, or --nginx-var {}=FIELD",
                x.name, g.var
            )));
        }
        ("default", [v]) => g.default = v.clone(),
        ("delete", [net]) => {
            let Some(n) = parse_net(net) else {
                return bad("network");
            };
            g.nets.retain(|e| (e.0, e.1) != n);
        }
        (range, [v]) if ranged => {
            let Some((a, b)) = range.split_once('-').and_then(|(a, b)| {
                let a = u32::from(a.parse::<std::net::Ipv4Addr>().ok()?);
                let b = u32::from(b.parse::<std::net::Ipv4Addr>().ok()?);
                (a <= b).then_some((a, b))
            }) else {
                return bad("range");
            };
            if let Some(r) = g
                .ranges
                .iter()
                .find(|r| !(b < r.0 || a > r.1 || (r.0 <= a && b <= r.1)))
            {
                let ip = |n: u32| std::net::Ipv4Addr::from(n);
                return Err(x.pos.err(format!(
                    "range \"{range}\" overlaps \"{}-{}\": nginx -t refuses this config",
                    ip(r.0),
                    ip(r.1)
                )));
            }
            g.ranges.push((a, b, v.clone()));
        }
        (net, [v]) => {
            let Some((n, bits)) = parse_net(net) else {
                return bad("network");
            };
            g.nets.retain(|e| (e.0, e.1) != (n, bits));
            g.nets.push((n, bits, v.clone()));
        }
        _ => return bad("parameter"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn geo(text: &str) -> Result<Geo, ConfError> {
        let c = NginxConf::from_text(text, Path::new("nginx.conf"), Path::new("."))?;
        Ok(c.geos[0].clone())
    }

    /// The values a real nginx 1.22 gave these addresses.
    #[test]
    fn values_as_nginx_gives_them() {
        let g = geo(
            "http { geo $arg_ip $c { default d; 10.0.0.0/8 a; 10.1.0.0/16 b; 10.1.2.3 c;\n\
             ::1 six; 2001:db8::/32 v6; 10.9.0.0/16 x; delete 10.9.0.0/16; } }",
        )
        .unwrap();
        for (addr, want) in [
            ("10.1.2.3", "c"),
            ("10.1.9.9", "b"),
            ("10.2.0.0", "a"),
            ("10.9.0.1", "a"),
            ("11.0.0.1", "d"),
            ("::1", "six"),
            ("2001:db8::5", "v6"),
            ("junk", "d"),
        ] {
            assert_eq!(g.lookup(addr.as_bytes()), want, "{addr}");
        }
        let g = geo(
            "http { geo $r { ranges; default d; 10.0.0.0-10.0.0.255 two;\n\
             10.0.0.5-10.0.0.9 three; 10.0.1.0-10.0.1.9 four; } }",
        )
        .unwrap();
        for (addr, want) in [
            ("10.0.0.1", "two"),
            ("10.0.0.6", "three"),
            ("10.0.0.251", "two"),
            ("10.0.1.7", "four"),
            ("10.0.2.0", "d"),
            ("::1", "d"),
        ] {
            assert_eq!(g.lookup(addr.as_bytes()), want, "{addr}");
        }
    }

    #[test]
    fn what_nginx_refuses_and_what_drip_does_not_model() {
        for (text, what) in [
            (
                "http { geo $r { ranges;\n 10.0.0.5-10.0.0.9 a;\n 10.0.0.0-10.0.0.255 b; } }",
                "nginx.conf:3: range \"10.0.0.0-10.0.0.255\" overlaps \"10.0.0.5-10.0.0.9\"",
            ),
            (
                "http { geo $r {\n proxy 10.0.0.1; } }",
                "nginx.conf:2: geo 'proxy' (the address taken from X-Forwarded-For) is not modelled",
            ),
            (
                "http { geo $r {\n proxy_recursive; } }",
                "nginx.conf:2: geo 'proxy_recursive'",
            ),
            ("http { geo $r {\n 10.0.0.300 a; } }", "invalid network"),
        ] {
            let e = geo(text).unwrap_err().to_string();
            assert!(e.contains(what), "{text}: {e}");
            assert!(!e.contains('\n'));
        }
    }
}
