//! Who shares a bucket: a `sourceCriterion`'s field of Traefik's access
//! log, and the bucket key it gives, as `pkg/ip/strategy.go` and oxy's
//! extractors read a request.

use crate::traefik_cfg::Source;
use crate::traefik_cfg::limit::v6_subnet;
use std::borrow::Cow;
use std::net::IpAddr;

/// The access log's field holding a request header, as Traefik names it:
/// `request_` and the header in Go's canonical form (`X-Api-Key`).
pub fn header_field(name: &str) -> String {
    let mut out = String::from("request_");
    let mut up = true;
    for c in name.chars() {
        out.push(if up {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        up = c == '-';
    }
    out
}

/// The field a source criterion reads (`clf`: in Traefik's Common Log
/// Format, which has the client and no headers).
pub(super) fn field(s: &Source, clf: bool) -> String {
    match s {
        Source::Remote { .. } if clf => "remote_addr".into(),
        Source::Remote { .. } => "ClientHost".into(),
        Source::Depth { .. } | Source::Excluded(_) => header_field("X-Forwarded-For"),
        Source::Header(h) => header_field(h),
        Source::Host => "RequestHost".into(),
    }
}

/// The bucket key a source criterion reads from its field: a part of the
/// field, or, for an IPv6 subnet, the masked address.
pub(super) fn key<'a>(s: &Source, field: &'a [u8]) -> Cow<'a, [u8]> {
    let masked = |ip: &[u8], bits: u8| {
        Cow::Owned(v6_subnet(&String::from_utf8_lossy(ip), bits).into_bytes())
    };
    match s {
        Source::Remote { v6: Some(bits) } => masked(field, *bits),
        Source::Remote { v6: None } | Source::Header(_) | Source::Host => Cow::Borrowed(field),
        Source::Depth { depth, v6 } => {
            // `strings.Split(xff, ",")`, the depth-th part from the right.
            let parts: Vec<&[u8]> = field.split(|&b| b == b',').collect();
            let Some(i) = parts.len().checked_sub(*depth) else {
                return Cow::Borrowed(b"");
            };
            let ip = parts[i].trim_ascii();
            match v6 {
                Some(bits) => masked(ip, *bits),
                None => Cow::Borrowed(ip),
            }
        }
        Source::Excluded(nets) => {
            let outside = |p: &&[u8]| {
                let ip = std::str::from_utf8(p)
                    .ok()
                    .and_then(|t| t.parse::<IpAddr>().ok());
                !ip.is_some_and(|ip| nets.iter().any(|n| n.contains(ip)))
            };
            let parts = field.rsplit(|&b| b == b',').map(<[u8]>::trim_ascii);
            Cow::Borrowed(parts.filter(|p| !p.is_empty()).find(outside).unwrap_or(b""))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_canonical() {
        assert_eq!(header_field("x-api-key"), "request_X-Api-Key");
        assert_eq!(header_field("X-FORWARDED-FOR"), "request_X-Forwarded-For");
    }

    #[test]
    fn sources_as_traefik_strategies_read_them() {
        let depth = |d| Source::Depth { depth: d, v6: None };
        // pkg/ip/strategy_test.go: depth 1 of "10.0.0.4,10.0.0.3,10.0.0.2,10.0.0.1" is 10.0.0.1.
        let xff = b"10.0.0.4,10.0.0.3,10.0.0.2,10.0.0.1";
        assert_eq!(&*key(&depth(1), xff), b"10.0.0.1");
        assert_eq!(&*key(&depth(3), xff), b"10.0.0.3");
        assert_eq!(&*key(&depth(5), xff), b"");
        assert_eq!(&*key(&depth(1), b""), b"");
        let nets = vec![crate::traefik_cfg::limit::Net {
            addr: "10.0.0.0".parse().unwrap(),
            bits: 8,
        }];
        assert_eq!(
            &*key(
                &Source::Excluded(nets.clone()),
                b"1.2.3.4, 10.0.0.2, 10.0.0.1"
            ),
            b"1.2.3.4"
        );
        assert_eq!(&*key(&Source::Excluded(nets), b"10.0.0.1"), b"");
        let v6 = Source::Remote { v6: Some(64) };
        assert_eq!(&*key(&v6, b"2001:db8:1:2:3:4:5:6"), b"2001:db8:1:2::");
    }
}
