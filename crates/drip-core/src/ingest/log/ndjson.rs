//! JSON lines (Caddy, Envoy and Traefik JSON, GCP load balancers through
//! Cloud Logging, Cloudflare Logpush, nginx `escape=json` formats): one
//! object per line, fields named by dotted paths into nested objects
//! (`request.remote_ip`, `httpRequest.remoteIp`).
//!
//! Only the fields the run reads are taken from each line; the rest is
//! skipped without being built. A line is first walked by a small scanner
//! that validates as it goes and keeps the byte spans of the wanted values
//! (see `Quick`); it reads a strict subset of JSON (no `\u` escapes, no
//! bytes above ASCII in strings or keys, no escapes in keys, shallow
//! nesting), and any line outside it goes to serde_json, which reads it
//! or names what is wrong (bytes that are not UTF-8 are kept, and a number
//! with an exponent is written out: see `bytes`). Both give the same spans for a line both read. Values are borrowed from the
//! line: a string without escapes is used in place, numbers are kept as
//! written (an epoch `1646861401.5241024` is read as digits, never through
//! a float), and only a string with escapes is unescaped into a buffer. A
//! path missing on a line (or `null`) is a missing field there: an empty
//! key, and an error for the time.

mod bytes;
mod quick;

use super::{Fields, LineError, LineParser, MISSING, Parsed, SCRATCH};
use quick::{Known, Quick};
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

/// Time fields of common JSON access logs, tried before the general rule.
/// Traefik's `StartUTC` (arrival, ns) comes before its `time` (write time).
const TIME_FIELDS: [&str; 10] = [
    "StartUTC",
    "ts",
    "time",
    "timestamp",
    "@timestamp",
    "start_time",
    "EdgeStartTimestamp",
    "started_at",
    "time_iso8601",
    "msec",
];

#[derive(Default)]
struct Node {
    children: Vec<(String, Node)>,
    /// The field index when a wanted path ends here.
    leaf: Option<usize>,
    /// The key naming this node is printable ASCII without a quote or a
    /// backslash: a line writes it as it is.
    plain: bool,
    /// The bytes that follow the opening quote of its children's plain
    /// keys (their first, or the closing quote of an empty key), as bits.
    firsts: u128,
}

/// JSON lines.
#[derive(Default)]
pub struct Ndjson {
    /// Paths seen on the first line, then any other path asked for.
    names: Vec<String>,
    /// Each name's keys (a key may itself contain dots).
    paths: Vec<Vec<String>>,
    /// Names read from each line, by index.
    wanted: Vec<usize>,
    /// The wanted paths as a tree, rebuilt when one is added.
    tree: Node,
    built: usize,
    raws: Vec<Option<Raw>>,
    /// Strings with escapes the quick walk kept: field, span.
    escaped: Vec<(usize, u32, u32)>,
    /// The keys of the last flat line (see [`Known`]).
    known: Vec<Known>,
}

/// A wanted value's span in the line, as serde_json's walk finds it.
type Raw = (usize, usize);

fn flatten(v: &serde_json::Value, prefix: &mut Vec<String>, out: &mut Ndjson) {
    match v {
        serde_json::Value::Object(m) if !m.is_empty() => {
            for (k, v) in m {
                prefix.push(k.clone());
                flatten(v, prefix, out);
                prefix.pop();
            }
        }
        _ if !prefix.is_empty() => {
            out.names.push(prefix.join("."));
            out.paths.push(prefix.clone());
        }
        _ => {}
    }
}

impl Ndjson {
    fn want(&mut self, i: usize) {
        if !self.wanted.contains(&i) {
            self.wanted.push(i);
        }
    }

    fn build(&mut self) {
        let mut tree = Node::default();
        for &i in &self.wanted {
            let mut node = &mut tree;
            for key in &self.paths[i] {
                let at = match node.children.iter().position(|(k, _)| k == key) {
                    Some(at) => at,
                    None => {
                        let plain = key
                            .bytes()
                            .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
                        let child = Node {
                            plain,
                            ..Node::default()
                        };
                        if plain {
                            node.firsts |= 1 << key.bytes().next().unwrap_or(b'"');
                        }
                        node.children.push((key.clone(), child));
                        node.children.len() - 1
                    }
                };
                node = &mut node.children[at].1;
            }
            node.leaf = Some(i);
        }
        self.tree = tree;
        self.known.clear();
        self.built = self.wanted.len();
    }
}

/// Picks the child of `node` a key names.
struct KeySeed<'n>(&'n Node);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, k: &str) -> Result<Option<usize>, E> {
        Ok(self.0.children.iter().position(|(c, _)| c == k))
    }
}

/// Walks an object, keeping the raw text of wanted values as byte ranges
/// of the line.
struct Walk<'n, 'o> {
    node: &'n Node,
    line_start: usize,
    out: &'o mut Vec<Option<Raw>>,
}

impl Walk<'_, '_> {
    fn keep(&mut self, leaf: usize, raw: &RawValue) {
        let s = raw.get().as_ptr() as usize - self.line_start;
        self.out[leaf] = Some((s, s + raw.get().len()));
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        while let Some(child) = map.next_key_seed(KeySeed(self.node))? {
            let Some(c) = child else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let node = &self.node.children[c].1;
            match node.leaf {
                Some(leaf) => {
                    let raw: &'de RawValue = map.next_value()?;
                    self.keep(leaf, raw);
                    if !node.children.is_empty() {
                        // Wanted whole and in parts: read the parts from it.
                        let mut de = serde_json::Deserializer::from_str(raw.get());
                        Walk {
                            node,
                            line_start: self.line_start,
                            out: self.out,
                        }
                        .deserialize(&mut de)
                        .map_err(serde::de::Error::custom)?;
                    }
                }
                None => map.next_value_seed(Walk {
                    node,
                    line_start: self.line_start,
                    out: self.out,
                })?,
            }
        }
        Ok(())
    }
    // A value that is not an object has no paths below it.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

impl Ndjson {
    /// Reads `line` by the quick walk into `out` (its spans sized); false
    /// when the line is outside the walk's subset of JSON.
    fn quick(&mut self, line: &[u8], out: &mut Fields) -> bool {
        self.escaped.clear();
        let mut quick = Quick {
            s: line,
            i: 0,
            spans: &mut out.spans,
            escaped: &mut self.escaped,
            known: &mut self.known,
        };
        if quick.flat(&self.tree).is_none() {
            quick.spans.iter_mut().for_each(|v| *v = MISSING);
            quick.i = 0;
            if quick.line(&self.tree).is_none() {
                return false;
            }
        }
        for &(leaf, s, e) in &self.escaped {
            // Unless a later value of the same field replaced it.
            if out.spans[leaf] == (s, e) {
                match unescape(line, s as usize, e as usize, &self.names[leaf], out) {
                    Ok(span) => out.spans[leaf] = span,
                    Err(_) => return false,
                }
            }
        }
        true
    }

    /// Reads `line` through serde_json into `out` (its spans sized and
    /// missing): any line, or the error in it.
    fn slow(&mut self, line: &[u8], out: &mut Fields) -> Result<(), LineError> {
        self.raws.clear();
        self.raws.resize(self.names.len(), None);
        // Checked with what is not UTF-8 replaced; values are taken from
        // the line as it is.
        let replaced;
        let checked = match std::str::from_utf8(line) {
            Ok(_) => line,
            Err(_) => {
                replaced = bytes::checkable(line);
                &replaced
            }
        };
        let mut de = serde_json::Deserializer::from_slice(checked);
        Walk {
            node: &self.tree,
            line_start: checked.as_ptr() as usize,
            out: &mut self.raws,
        }
        .deserialize(&mut de)
        .and_then(|_| de.end())
        .map_err(|e| LineError::new(format!("invalid JSON: {e}")))?;
        for (i, raw) in self.raws.iter().enumerate() {
            let Some((s, e)) = *raw else { continue };
            let v = &line[s..e];
            match v {
                b"null" => {}
                [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => {
                    out.spans[i] = (s as u32 + 1, e as u32 - 1);
                }
                [b'"', ..] => out.spans[i] = unescape(line, s, e, &self.names[i], out)?,
                _ => out.spans[i] = (s as u32, e as u32),
            }
        }
        Ok(())
    }
}

/// The string `line[s..e]` (with its quotes and escapes, of field `name`)
/// unescaped into `out`'s scratch: its span there.
fn unescape(
    line: &[u8],
    s: usize,
    e: usize,
    name: &str,
    out: &mut Fields,
) -> Result<(u32, u32), LineError> {
    let start = out.scratch.len();
    bytes::unescape(&line[s + 1..e - 1], &mut out.scratch).map_err(|err| {
        out.scratch.truncate(start);
        LineError::new(format!("invalid JSON string in '{name}': {err}"))
    })?;
    Ok((start as u32 | SCRATCH, out.scratch.len() as u32 | SCRATCH))
}

/// Field `i`, when a number with an exponent, rewritten into `out`'s
/// scratch as its plain decimal (`1.2e-3` → `0.0012`).
#[inline]
fn plain_number(line: &[u8], i: usize, out: &mut Fields) {
    let (s, e) = out.spans[i];
    if s & SCRATCH != 0 || out.spans[i] == MISSING {
        return;
    }
    // A string's span is inside its quotes: only a number can follow
    // something else.
    if s == 0 || line[s as usize - 1] == b'"' {
        return;
    }
    let v = &line[s as usize..e as usize];
    if !matches!(v.first(), Some(b'-' | b'0'..=b'9')) || memchr::memchr2(b'e', b'E', v).is_none() {
        return;
    }
    if let Some(plain) = bytes::plain_decimal(v) {
        let start = out.scratch.len() as u32;
        out.scratch.extend_from_slice(&plain);
        out.spans[i] = (start | SCRATCH, out.scratch.len() as u32 | SCRATCH);
    }
}

impl LineParser for Ndjson {
    fn format(&self) -> &'static str {
        "ndjson"
    }

    fn names(&self) -> Option<&[String]> {
        Some(&self.names)
    }

    fn learn(&mut self, line: &[u8]) -> bool {
        if self.names.is_empty()
            && let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes::checkable(line))
        {
            flatten(&v, &mut Vec::new(), self);
        }
        false
    }

    fn field(&mut self, name: &str) -> Option<usize> {
        if name.is_empty()
            || name.split('.').any(str::is_empty) && !self.names.iter().any(|n| n == name)
        {
            return None;
        }
        let i = match self.names.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.names.push(name.to_string());
                self.paths.push(name.split('.').map(String::from).collect());
                self.names.len() - 1
            }
        };
        self.want(i);
        Some(i)
    }

    fn field_at(&mut self, i: usize) -> Option<usize> {
        (i < self.names.len()).then(|| {
            self.want(i);
            i
        })
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        let i = TIME_FIELDS
            .iter()
            .find_map(|t| self.names.iter().position(|n| n == t))?;
        self.want(i);
        Some((i, None))
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError> {
        if self.built != self.wanted.len() {
            self.build();
        }
        match line.trim_ascii_start().first() {
            Some(b'{') => {}
            Some(&b) => {
                return Err(LineError::new(format!(
                    "not a JSON object (the line starts with '{}')",
                    char::from(b).escape_debug()
                )));
            }
            None => return Err(LineError::new("an empty line")),
        }
        // Pushed one by one: for a few fields, in line beats a call.
        while out.spans.len() < self.names.len() {
            out.spans.push(MISSING);
        }
        if !self.quick(line, out) {
            out.spans.iter_mut().for_each(|v| *v = MISSING);
            out.scratch.clear();
            self.slow(line, out)?;
        }
        for &i in &self.wanted {
            plain_number(line, i, out);
        }
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: &mut Ndjson, line: &str) -> Result<Vec<Option<String>>, String> {
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f)
            .map_err(|e| e.to_string())?;
        Ok((0..f.spans.len())
            .map(|i| {
                f.get(line.as_bytes(), i)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
            })
            .collect())
    }

    #[test]
    fn paths_reach_into_nested_objects_and_keep_numbers_as_written() {
        let mut p = Ndjson::default();
        let first = r#"{"ts":1646861401.5241024,"request":{"remote_ip":"10.0.0.1","headers":{"X":["a"]}},"user_id":"","n":null}"#;
        assert!(!p.learn(first.as_bytes()));
        // In key order (serde_json's maps are sorted).
        assert_eq!(
            p.names,
            [
                "n",
                "request.headers.X",
                "request.remote_ip",
                "ts",
                "user_id"
            ]
        );
        assert_eq!(p.default_time(), Some((3, None)));
        assert_eq!(p.field("request.remote_ip"), Some(2));
        assert_eq!(p.field("user.name"), Some(5));
        assert_eq!(p.field("a..b"), None);
        assert_eq!(p.field("n"), Some(0));
        let got = read(&mut p, first).unwrap();
        assert_eq!(
            got,
            [
                None,
                None,
                Some("10.0.0.1".into()),
                Some("1646861401.5241024".into()),
                None,
                None
            ]
        );
        // Escapes, other key orders, a path missing, a non-object in the way.
        let got = read(
            &mut p,
            r#" {"request":"x","user":{"name":"a\"b\u00e9"},"ts":"2024-05-01T00:00:00Z"} "#,
        )
        .unwrap();
        assert_eq!(got[3].as_deref(), Some("2024-05-01T00:00:00Z"));
        assert_eq!(got[2], None);
        assert_eq!(got[5].as_deref(), Some("a\"bé"));
    }

    /// A line read by the quick walk (`None`: outside its subset) and by
    /// serde_json: the fields' spans and scratch.
    type Read = (Vec<(u32, u32)>, Vec<u8>);

    fn both(p: &mut Ndjson, line: &[u8]) -> (Option<Read>, Result<Read, LineError>) {
        let mut quick = Fields::default();
        quick.spans.resize(p.names.len(), MISSING);
        let q = p
            .quick(line, &mut quick)
            .then_some((quick.spans, quick.scratch));
        let mut slow = Fields::default();
        slow.spans.resize(p.names.len(), MISSING);
        let s = p.slow(line, &mut slow).map(|()| (slow.spans, slow.scratch));
        (q, s)
    }

    /// `seed` with up to two bytes from a random place replaced by up to
    /// two others from `alphabet`.
    fn mutated(rng: &mut crate::testing::Rng, seed: &str, alphabet: &[u8]) -> Vec<u8> {
        let mut v = seed.as_bytes().to_vec();
        let at = rng.below(v.len() as u64 + 1) as usize;
        let cut = (at + rng.below(3) as usize).min(v.len());
        let with: Vec<u8> = (0..rng.below(3))
            .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
            .collect();
        v.splice(at..cut, with);
        v
    }

    #[test]
    fn the_quick_walk_agrees_with_serde_json() {
        let mut p = Ndjson::default();
        for f in [
            "ts",
            "client",
            "request.remote_ip",
            "request",
            "request.headers.ua",
            "n",
        ] {
            p.field(f);
        }
        p.build();
        let seeds = [
            r#"{"ts":"2024-05-01T00:00:00.000Z","client":"c1","path":"/a","status":200,"bytes":5}"#,
            r#"{"client":null,"ts":-1.5E-3,"client":"c\"2","n":true,"":"","client":"c3"}"#,
            r#" { "request" : { "remote_ip" : "10.0.0.1" , "headers" : { "ua" : ["x", {"y": -1.5e+3}] } } , "ts" : 1646861401.5241024 , "n" : null } "#,
            r#"{"client":"a\"b\n","ts":true,"x":[[],{}],"request":"flat","request":{"remote_ip":"9"}}"#,
            r#"{"ts":0,"client":-0.0e0,"z":false,"e":"\u00e9","k":"é"}"#,
        ];
        let mut rng = crate::testing::Rng(0x6a73_6f6e);
        const ALPHABET: &[u8] = b"{}[]:,\"\\ -+.0123456789eEtrufalsnx\t\x01\xc3\xa9u";
        let (mut quick_read, mut cases) = (0, 0);
        for seed in seeds {
            for _ in 0..3000 {
                let v = mutated(&mut rng, seed, ALPHABET);
                let (q, s) = both(&mut p, &v);
                cases += 1;
                if let Some(q) = q {
                    quick_read += 1;
                    assert_eq!(Ok(q), s, "{:?}", String::from_utf8_lossy(&v));
                }
            }
        }
        // Most lines take the quick walk; the seeds themselves do, but
        // for the escapes beyond its subset.
        assert!(quick_read > cases / 4, "{quick_read} of {cases}");
        for seed in &seeds[..4] {
            assert!(both(&mut p, seed.as_bytes()).0.is_some(), "{seed}");
        }
        assert!(both(&mut p, seeds[4].as_bytes()).0.is_none());
    }

    #[test]
    fn keys_known_from_the_line_before_are_read_as_serde_json_reads_them() {
        let mut p = Ndjson::default();
        for f in ["ts", "client", "a_key_of_fourteen", "request.remote_ip"] {
            p.field(f);
        }
        p.build();
        let seeds = [
            r#"{"ts":"2024-05-01T00:00:00.000Z","client":"c000177","path":"/api/v1/items/10971","status":200,"bytes":50444}"#,
            r#"{"ts":1,"client":"c"}"#,
            r#"{"client":"c","ts":2,"a_key_of_fourteen":"k","x":null}"#,
            r#"{"a":1,"ts":3,"request":{"remote_ip":"1"},"client":"d"}"#,
            r#"{"t":1,"":2}"#,
        ];
        // Each mutated line read right after its own seed (whose keys are
        // then known place by place) or after another one.
        let mut rng = crate::testing::Rng(0x6b65_7973);
        const ALPHABET: &[u8] = b"\"\\:,{} tsclienabytu0123\x01\xc3";
        let mut known_read = 0;
        for _ in 0..30_000 {
            let seed = seeds[rng.below(seeds.len() as u64) as usize];
            let before = seeds[rng.below(seeds.len() as u64) as usize];
            let primer = if rng.below(3) == 0 { before } else { seed };
            let (q, s) = both(&mut p, primer.as_bytes());
            assert_eq!(Ok(q.unwrap()), s, "{primer}");
            let v = mutated(&mut rng, seed, ALPHABET);
            let (q, s) = both(&mut p, &v);
            if let Some(q) = q {
                known_read += 1;
                assert_eq!(Ok(q), s, "{:?} after {primer}", String::from_utf8_lossy(&v));
            }
        }
        assert!(known_read > 10_000, "{known_read}");
        // A line of many keys: the first places are remembered, not all.
        let many: String = (0..100).map(|k| format!("\"k{k}\":{k},")).collect();
        let many = format!("{{{many}\"client\":\"c\"}}");
        let (q, s) = both(&mut p, many.as_bytes());
        assert_eq!(Ok(q.unwrap()), s);
        assert_eq!(p.known.len(), 64);
        // A key cut at the line's end, or one byte off, is not the known key.
        let k_at = p.field("k").unwrap();
        p.build();
        for (primer, line, k) in [
            (r#"{"ts":1,"k":2}"#, r#"{"ts":1,"k":3}"#, Some(Some("3"))),
            (r#"{"ts":1,"k":2}"#, r#"{"ts":1,"K":3}"#, Some(None)),
            (r#"{"k":2,"ts":1}"#, r#"{"k":"#, None),
            (r#"{"ts":1,"k":2}"#, r#"{"ts":1,"k"#, None),
            (r#"{"ts":1,"k":2}"#, r#"{"ts":1,"k":"#, None),
        ] {
            read(&mut p, primer).unwrap();
            let got = read(&mut p, line).ok().map(|v| v[k_at].clone());
            assert_eq!(got, k.map(|k| k.map(String::from)), "{line}");
        }
    }

    #[test]
    fn lines_that_are_not_objects_are_refused() {
        let mut p = Ndjson::default();
        p.field("ts");
        p.field("k");
        for (line, want) in [
            ("[1,2]", "not a JSON object (the line starts with '[')"),
            ("\"ts\"", "not a JSON object"),
            (r#"{"ts":1"#, "invalid JSON: EOF while parsing"),
            (r#"{"ts":1} x"#, "invalid JSON: trailing characters"),
            (r#"{"ts":1,}"#, "invalid JSON"),
        ] {
            let e = read(&mut p, line).unwrap_err();
            assert!(e.contains(want), "{line}: {e}");
        }
        let mut bytes = br#"{"ts":1,"k":"a"#.to_vec();
        bytes.extend_from_slice(&[0xff, b'"', b'}']);
        let mut f = Fields::default();
        // A byte that is not UTF-8 is kept, as other formats keep it.
        p.parse(&bytes, &mut f).unwrap();
        assert_eq!(f.get(&bytes, 1).unwrap(), b"a\xff");
        // Escaped too, and in the first line the names are learnt from.
        let line = b"{\"ts\":1e0,\"k\":\"\\u00e9\xfe\",\"ok\":1}";
        let mut p = Ndjson::default();
        p.learn(line);
        assert_eq!(p.names(), Some(&["k", "ok", "ts"].map(String::from)[..]));
        p.field("ts");
        p.field("k");
        f.clear();
        p.parse(line, &mut f).unwrap();
        assert_eq!(f.get(line, 0).unwrap(), b"\xc3\xa9\xfe");
        assert_eq!(f.get(line, 2).unwrap(), b"1");
        let bad = b"{\"ts\":1,\"k\":\xff}";
        let e = p.parse(bad, &mut f).err().unwrap().to_string();
        assert!(e.contains("invalid JSON"), "{e}");
    }
}
