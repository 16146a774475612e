//! Keys as operators define them: a value as logged, without its port
//! (`--strip-port`), grouped by network (`--key-prefix 24,64`: IPv4
//! addresses by /24, IPv6 by /64, written `10.1.2.0/24`, `2001:db8::/64`),
//! an IPv4 client logged IPv4-mapped (`::ffff:10.1.2.3`) grouped by its
//! IPv4 network, and several fields joined into one key (`--key-column uri,remote_addr`,
//! parts separated by `|`). A joined key is empty, and so exempt, only when
//! every part is.

use std::fmt;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Separates the parts of a joined key.
pub const JOIN: u8 = b'|';

/// How key values are shaped before they are counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyShape {
    pub strip_port: bool,
    /// Prefix lengths for IPv4 and IPv6 addresses.
    pub prefix: Option<(u8, u8)>,
}

/// A `--key-prefix` that is no IPv4 prefix length (0 to 32) with an
/// optional IPv6 one (0 to 128); the text is quoted in `Display`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixError {
    /// The text as given.
    pub text: String,
}

impl fmt::Display for PrefixError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid --key-prefix '{}': give the IPv4 prefix length and optionally the IPv6 one, e.g. 24 or 24,64",
            self.text
        )
    }
}

impl std::error::Error for PrefixError {}

/// Parses `--key-prefix V4[,V6]`: `24`, `24,64`.
pub fn parse_prefix(text: &str) -> Result<(u8, u8), PrefixError> {
    let bad = || PrefixError {
        text: text.to_string(),
    };
    let (v4, v6) = match text.split_once(',') {
        Some((a, b)) => (a.trim(), Some(b.trim())),
        None => (text.trim(), None),
    };
    let v4: u8 = v4.parse().map_err(|_| bad())?;
    let v6: u8 = match v6 {
        Some(v) => v.parse().map_err(|_| bad())?,
        None => 128,
    };
    if v4 > 32 || v6 > 128 {
        return Err(bad());
    }
    Ok((v4, v6))
}

impl KeyShape {
    /// Appends `value` shaped to `out`.
    #[inline]
    pub fn append(&self, value: &[u8], out: &mut Vec<u8>) {
        let v = value.trim_ascii();
        let v = if self.strip_port { strip_port(v) } else { v };
        if let Some((p4, p6)) = self.prefix
            && let Some(ip) = std::str::from_utf8(v)
                .ok()
                .and_then(|s| s.parse::<IpAddr>().ok())
        {
            // A dual-stack server logs an IPv4 client as `::ffff:a.b.c.d`:
            // that client is grouped by its IPv4 network, not by the one
            // IPv6 /64 every such address falls in.
            let ip = match ip {
                IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
                v4 => v4,
            };
            let _ = match ip {
                IpAddr::V4(a) => {
                    let mask = u32::MAX.checked_shl(32 - u32::from(p4)).unwrap_or(0);
                    write!(out, "{}/{p4}", Ipv4Addr::from(u32::from(a) & mask))
                }
                IpAddr::V6(a) => {
                    let mask = u128::MAX.checked_shl(128 - u32::from(p6)).unwrap_or(0);
                    write!(out, "{}/{p6}", Ipv6Addr::from(u128::from(a) & mask))
                }
            };
            return;
        }
        out.extend_from_slice(v);
    }

    /// Appends the parts of a joined key; nothing when every part is empty.
    pub fn append_joined<'a>(&self, parts: impl Iterator<Item = &'a [u8]>, out: &mut Vec<u8>) {
        let mark = out.len();
        let mut any = false;
        for (i, p) in parts.enumerate() {
            if i > 0 {
                out.push(JOIN);
            }
            let before = out.len();
            self.append(p, out);
            any |= out.len() > before;
        }
        if !any {
            out.truncate(mark);
        }
    }
}

/// A client address without its port: `10.0.0.1:2817` → `10.0.0.1`,
/// `[2001:db8::1]:443` → `2001:db8::1`. A bare IPv6 address (several
/// colons, no brackets) and anything else are left as they are.
pub fn strip_port(v: &[u8]) -> &[u8] {
    let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
    if let Some(rest) = v.strip_prefix(b"[") {
        if let Some(close) = rest.iter().position(|&b| b == b']') {
            let after = &rest[close + 1..];
            if after.is_empty() || after.first() == Some(&b':') && digits(&after[1..]) {
                return &rest[..close];
            }
        }
        return v;
    }
    // One colon, digits after it (digits hold no second colon).
    match v.iter().position(|&b| b == b':') {
        Some(i) if digits(&v[i + 1..]) => &v[..i],
        _ => v,
    }
}

/// The address of a field logged as `address:port` (HAProxy's `%ci:%cp`,
/// ALB's and ELB's `client:port`): `10.0.0.1:2817` → `10.0.0.1`,
/// `[2001:db8::1]:443` → `2001:db8::1`, and an IPv6 address written
/// without brackets, `2001:db8::1:40001` → `2001:db8::1` (the port after
/// the last colon, what is before it an IPv6 address). Values with no port
/// (`-`, a bare IPv6 address whose last group is no port) are kept.
pub fn address_of(v: &[u8]) -> &[u8] {
    let stripped = strip_port(v);
    if stripped.len() < v.len() || v.first() == Some(&b'[') {
        return stripped;
    }
    let Some(i) = v.iter().rposition(|&b| b == b':') else {
        return v;
    };
    let port = &v[i + 1..];
    let is_port = (1..=5).contains(&port.len()) && port.iter().all(u8::is_ascii_digit);
    let is_v6 = |a: &[u8]| {
        std::str::from_utf8(a)
            .ok()
            .is_some_and(|s| s.parse::<Ipv6Addr>().is_ok())
    };
    if is_port && is_v6(&v[..i]) {
        &v[..i]
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_is_stripped_after_exactly_one_colon() {
        // The rule as first written: one colon, and digits after it.
        let one_colon = |v: &[u8]| -> Vec<u8> {
            let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
            let mut colons = v.iter().enumerate().filter(|(_, b)| **b == b':');
            match (colons.next(), colons.next()) {
                (Some((i, _)), None) if digits(&v[i + 1..]) => v[..i].to_vec(),
                _ => v.to_vec(),
            }
        };
        let mut rng = crate::testing::Rng(0x706f_7274);
        for _ in 0..5_000 {
            let len = rng.below(9) as usize;
            let v: Vec<u8> = (0..len).map(|_| b"0:9a:."[rng.below(6) as usize]).collect();
            assert_eq!(
                strip_port(&v),
                one_colon(&v),
                "{:?}",
                String::from_utf8_lossy(&v)
            );
        }
    }

    fn shaped(shape: KeyShape, v: &str) -> String {
        let mut out = Vec::new();
        shape.append(v.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn addresses_group_by_network() {
        let s = KeyShape {
            strip_port: true,
            prefix: Some((24, 64)),
        };
        assert_eq!(shaped(s, "10.1.2.3"), "10.1.2.0/24");
        assert_eq!(shaped(s, "10.1.2.3:8080"), "10.1.2.0/24");
        assert_eq!(shaped(s, "[2001:db8:1:2:3::4]:443"), "2001:db8:1:2::/64");
        assert_eq!(shaped(s, "2001:db8:1:2:3::4"), "2001:db8:1:2::/64");
        assert_eq!(shaped(s, "::ffff:10.1.2.3"), "10.1.2.0/24");
        assert_eq!(shaped(s, "[::ffff:10.1.2.3]:443"), "10.1.2.0/24");
        assert_eq!(shaped(s, "::ffff:9.8.7.6"), "9.8.7.0/24");
        assert_eq!(shaped(s, "host.example"), "host.example");
        assert_eq!(shaped(s, ""), "");
        let all = KeyShape {
            strip_port: false,
            prefix: Some((0, 0)),
        };
        assert_eq!(shaped(all, "10.1.2.3"), "0.0.0.0/0");
        assert_eq!(shaped(all, "::1"), "::/0");
        let v4only = KeyShape {
            strip_port: false,
            prefix: Some(parse_prefix("16").unwrap()),
        };
        assert_eq!(shaped(v4only, "10.1.2.3"), "10.1.0.0/16");
        assert_eq!(shaped(v4only, "2001:db8::1"), "2001:db8::1/128");
    }

    #[test]
    fn prefixes_are_checked() {
        assert_eq!(parse_prefix("24,64"), Ok((24, 64)));
        assert_eq!(parse_prefix("32"), Ok((32, 128)));
        for bad in ["33", "24,129", "x", "24,", "-1"] {
            assert!(parse_prefix(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn joined_keys_are_empty_only_when_every_part_is() {
        let s = KeyShape::default();
        let mut out = Vec::new();
        s.append_joined([&b"/login"[..], b"10.0.0.1"].into_iter(), &mut out);
        assert_eq!(out, b"/login|10.0.0.1");
        out.clear();
        s.append_joined([&b"/login"[..], b""].into_iter(), &mut out);
        assert_eq!(out, b"/login|");
        out.clear();
        s.append_joined([&b""[..], b" "].into_iter(), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn an_address_port_field_loses_its_port_for_ipv6_without_brackets() {
        let cases: [(&str, &str); 10] = [
            ("2001:db8::1:40001", "2001:db8::1"),
            ("2001:db8:0:0:0:0:0:1:443", "2001:db8:0:0:0:0:0:1"),
            ("::1:53432", "::1"),
            ("::ffff:10.0.0.1:8080", "::ffff:10.0.0.1"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("10.0.0.1:2817", "10.0.0.1"),
            ("2001:db8:0:0:0:0:0:1", "2001:db8:0:0:0:0:0:1"),
            ("-", "-"),
            ("host.example:80", "host.example"),
            ("2001:db8::1:999999", "2001:db8::1:999999"),
        ];
        for (input, want) in cases {
            assert_eq!(address_of(input.as_bytes()), want.as_bytes(), "{input}");
        }
    }

    #[test]
    fn ports_are_stripped_from_addresses_only() {
        let cases: [(&str, &str); 9] = [
            ("10.0.0.1:2817", "10.0.0.1"),
            ("[2001:db8::1]:443", "2001:db8::1"),
            ("[2001:db8::1]", "2001:db8::1"),
            ("2001:db8::1", "2001:db8::1"),
            ("10.0.0.1", "10.0.0.1"),
            ("host.example:80", "host.example"),
            ("user:name", "user:name"),
            ("10.0.0.1:", "10.0.0.1:"),
            ("[bad:1]x", "[bad:1]x"),
        ];
        for (input, want) in cases {
            assert_eq!(strip_port(input.as_bytes()), want.as_bytes(), "{input}");
        }
    }
}
