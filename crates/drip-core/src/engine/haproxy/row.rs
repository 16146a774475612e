//! One log row as HAProxy's rules see it: the client, the request line,
//! the headers its frontend captured, and the rates of the counters it
//! tracks so far.

use crate::haproxy_cfg::KeyType;
use crate::haproxy_cfg::acl::{Fetch, Request};
use std::net::IpAddr;

/// A row's values, borrowed from the key columns.
pub(super) struct Row<'a> {
    pub(super) client: &'a [u8],
    pub(super) method: &'a [u8],
    pub(super) uri: &'a [u8],
    /// (lower-case name, value) of each captured header the row has.
    pub(super) headers: Vec<(&'a str, Vec<u8>)>,
}

impl Row<'_> {
    fn path(&self) -> &[u8] {
        let end = memchr::memchr(b'?', self.uri).unwrap_or(self.uri.len());
        &self.uri[..end]
    }

    fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_slice())
    }

    pub(super) fn values(&self, f: &Fetch) -> Vec<Vec<u8>> {
        let one = |v: &[u8]| vec![v.to_vec()];
        match f {
            Fetch::Src => one(self.client),
            Fetch::Method => one(self.method),
            Fetch::Path => one(self.path()),
            Fetch::Url => one(self.uri),
            Fetch::Query => match memchr::memchr(b'?', self.uri) {
                Some(q) => one(&self.uri[q + 1..]),
                None => Vec::new(),
            },
            Fetch::Base => match self.header("host") {
                Some(h) => vec![[h, self.path()].concat()],
                None => Vec::new(),
            },
            Fetch::Hdr { name, full } => match self.header(name) {
                None => Vec::new(),
                Some(v) if *full => one(v),
                Some(v) => v
                    .split(|&b| b == b',')
                    .map(|p| p.trim_ascii().to_vec())
                    .collect(),
            },
        }
    }
}

/// A row and the rates its tracked counters read now.
pub(super) struct View<'r, 'a> {
    pub(super) row: &'r Row<'a>,
    pub(super) rates: [Option<u64>; 3],
}

impl Request for View<'_, '_> {
    fn values(&self, f: &Fetch) -> Vec<Vec<u8>> {
        self.row.values(f)
    }

    fn rate(&self, slot: u8) -> Option<u64> {
        self.rates[usize::from(slot)]
    }
}

/// The captured request headers of a row: HAProxy writes them between
/// `{` and `}`, joined by `|`, with `#XX` escapes for `|`, `{`, `}`, `"`,
/// `#` and control bytes. `names`: the frontend's captures, in order.
pub(super) fn captured<'n>(block: &[u8], names: &'n [(String, usize)]) -> Vec<(&'n str, Vec<u8>)> {
    let mut out = Vec::new();
    for ((name, _), v) in names.iter().zip(block.split(|&b| b == b'|')) {
        if !v.is_empty() {
            out.push((name.as_str(), unescape(v)));
        }
    }
    out
}

fn unescape(v: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if v[i] == b'#'
            && let (Some(h), Some(l)) = (
                v.get(i + 1).and_then(|&b| hex(b)),
                v.get(i + 2).and_then(|&b| hex(b)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(v[i]);
        i += 1;
    }
    out
}

/// A sample's value as a key of a table of type `key`, as HAProxy casts
/// it; `None` when the cast fails (the request is not tracked).
pub(super) fn table_key(key: KeyType, v: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(v).ok();
    let ip = || text.and_then(|t| t.parse::<IpAddr>().ok());
    match key {
        KeyType::Ip => match ip()? {
            IpAddr::V4(a) => Some(a.octets().to_vec()),
            IpAddr::V6(a) => a.to_ipv4_mapped().map(|a| a.octets().to_vec()),
        },
        KeyType::Ipv6 => match ip()? {
            IpAddr::V4(a) => Some(a.to_ipv6_mapped().octets().to_vec()),
            IpAddr::V6(a) => Some(a.octets().to_vec()),
        },
        KeyType::Integer => {
            let n: i64 = text?.trim().parse().ok()?;
            Some((n as i32).to_le_bytes().to_vec())
        }
        KeyType::String(len) => Some(v[..v.len().min(len)].to_vec()),
    }
}

/// A table key as HAProxy shows it (`show table`): an address, a number,
/// the string.
pub(super) fn key_text(key: KeyType, k: &[u8]) -> Vec<u8> {
    let text = match (key, k.len()) {
        (KeyType::Ip, 4) => std::net::Ipv4Addr::new(k[0], k[1], k[2], k[3]).to_string(),
        (KeyType::Ipv6, 16) => {
            let a: [u8; 16] = k.try_into().expect("16 bytes");
            std::net::Ipv6Addr::from(a).to_string()
        }
        (KeyType::Integer, 4) => i32::from_le_bytes(k.try_into().expect("4 bytes")).to_string(),
        _ => return k.to_vec(),
    };
    text.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_are_unescaped_and_keys_cast_as_haproxy_casts_them() {
        let names = [("x-api-key".to_string(), 8), ("host".to_string(), 20)];
        let h = captured(b"abcdefgh|a#7Cb#7Bc#7D#22d", &names);
        assert_eq!(
            h,
            [
                ("x-api-key", b"abcdefgh".to_vec()),
                ("host", b"a|b{c}\"d".to_vec())
            ]
        );
        assert_eq!(captured(b"|h", &names), [("host", b"h".to_vec())]);
        assert_eq!(table_key(KeyType::Ip, b"10.0.0.1"), Some(vec![10, 0, 0, 1]));
        assert_eq!(
            table_key(KeyType::Ip, b"::ffff:10.0.0.1"),
            Some(vec![10, 0, 0, 1])
        );
        assert_eq!(table_key(KeyType::Ip, b"2001:db8::1"), None);
        assert_eq!(table_key(KeyType::Ipv6, b"10.0.0.1").unwrap().len(), 16);
        assert_eq!(
            table_key(KeyType::String(3), b"abcdef"),
            Some(b"abc".to_vec())
        );
        assert_eq!(table_key(KeyType::Integer, b"x"), None);
        let row = Row {
            client: b"1.2.3.4",
            method: b"GET",
            uri: b"/a/b?q=1",
            headers: vec![("x-forwarded-for", b"1.1.1.1, 2.2.2.2".to_vec())],
        };
        let xff = |full| Fetch::Hdr {
            name: "x-forwarded-for".into(),
            full,
        };
        assert_eq!(
            row.values(&xff(false)),
            [b"1.1.1.1".to_vec(), b"2.2.2.2".to_vec()]
        );
        assert_eq!(row.values(&xff(true)), [b"1.1.1.1, 2.2.2.2".to_vec()]);
        assert_eq!(row.values(&Fetch::Path), [b"/a/b".to_vec()]);
        assert_eq!(row.values(&Fetch::Query), [b"q=1".to_vec()]);
    }
}
