//! Per-key pacing: each line's key, and how many lines each key had.
//!
//! A key is the first capture group of `--key REGEX` (the whole match when
//! the pattern has no group), or field N of `--key-field N` (1 is the first
//! field, as in `cut -f`), split on `--field-sep C` or else on runs of
//! spaces and tabs (as `awk` splits). The line's separator is not part of
//! what is matched. A line without a key (no match, too few fields, an
//! empty group) is paced under one shared bucket of its own, so a line
//! with an unexpected shape is never let through unpaced; the summary
//! counts such lines, and when none of the first [`CHECKED`] lines has a
//! key one warning says so. `--key-json PATH` takes the value at a dotted
//! path of each JSON line, read by the same reader `audit` uses for
//! ndjson (spacing and key order do not matter; a string is unescaped, a
//! number kept as written).

use crate::ingest::keys::{EMPTY_KEY, Interner, KeyNames};
use crate::ingest::log::ndjson::Ndjson;
use crate::ingest::log::{Fields, LineParser};
use crate::policy::keyed::KeyId;
use regex::bytes::Regex;
use serde::Serialize;

/// Where a line's key comes from.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// The first capture group (or the whole match) of a pattern.
    Pattern(Regex),
    /// A 1-based field, split on one byte, or on blank runs when `None`.
    Field { index: usize, sep: Option<u8> },
    /// The value at a dotted path of a JSON line.
    Json(String),
}

/// Lines looked at before a key that matched none of them is reported.
pub const CHECKED: u64 = 1000;

impl KeySource {
    /// The key bytes of `line` (without its separator), if it has one.
    pub fn extract<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        let key = match self {
            KeySource::Pattern(re) => {
                let caps = re.captures(line)?;
                caps.get(1).or_else(|| caps.get(0))?.as_bytes()
            }
            KeySource::Field {
                index,
                sep: Some(c),
            } => line.split(|b| b == c).nth(index - 1)?,
            KeySource::Field { index, sep: None } => line
                .split(|b| *b == b' ' || *b == b'\t')
                .filter(|f| !f.is_empty())
                .nth(index - 1)?,
            // Read by `Keys`, which keeps the JSON reader.
            KeySource::Json(_) => return None,
        };
        (!key.is_empty()).then_some(key)
    }

    /// The option that gave the key, for messages.
    fn named(&self) -> String {
        match self {
            KeySource::Pattern(re) => format!("--key '{}'", re.as_str()),
            KeySource::Field { index, .. } => format!("--key-field {index}"),
            KeySource::Json(path) => format!("--key-json {path}"),
        }
    }
}

/// `--key-json`: the JSON reader, the path's field and a line's fields.
struct JsonKey {
    reader: Ndjson,
    field: usize,
    fields: Fields,
}

impl JsonKey {
    fn new(path: &str) -> Option<JsonKey> {
        let mut reader = Ndjson::default();
        let field = reader.field(path)?;
        Some(JsonKey {
            reader,
            field,
            fields: Fields::default(),
        })
    }

    /// The key of one line: the value at the path, if the line is a JSON
    /// object that has one.
    fn key<'a>(&'a mut self, line: &'a [u8]) -> Option<&'a [u8]> {
        self.fields.clear();
        self.reader.parse(line, &mut self.fields).ok()?;
        self.fields.get(line, self.field).filter(|k| !k.is_empty())
    }
}

/// The id lines without a key are paced under.
pub const NO_KEY: KeyId = EMPTY_KEY as KeyId;

/// Keys seen so far, by dense id, with the lines each had.
pub struct Keys {
    source: KeySource,
    json: Option<JsonKey>,
    separator: u8,
    interner: Interner,
    names: KeyNames,
    lines: Vec<u64>,
    keyless: u64,
}

/// One key in the summary.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KeyCount {
    pub key: String,
    pub lines: u64,
}

/// The keys part of the `--stats` summary.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct KeySummary {
    /// Distinct keys seen.
    pub seen: u64,
    /// Lines that had a key.
    pub with_key: u64,
    /// Lines that had no key (paced together under one bucket).
    pub without_key: u64,
    /// The keys with the most lines, most first (ties by first seen).
    pub busiest: Vec<KeyCount>,
}

impl Keys {
    /// Keys from `source` for records ending in `separator`.
    pub fn new(source: KeySource, separator: u8) -> Keys {
        let json = match &source {
            KeySource::Json(path) => JsonKey::new(path),
            _ => None,
        };
        Keys {
            source,
            json,
            separator,
            interner: Interner::default(),
            names: KeyNames::default(),
            lines: Vec::new(),
            keyless: 0,
        }
    }

    /// The key id of one record (separator included or not), counted.
    pub fn key_of(&mut self, record: &[u8]) -> KeyId {
        let line = record.strip_suffix(&[self.separator]).unwrap_or(record);
        // A CRLF line's key does not end in CR.
        let line = if self.separator == b'\n' {
            line.strip_suffix(b"\r").unwrap_or(line)
        } else {
            line
        };
        let found = match &mut self.json {
            Some(j) => j.key(line),
            None => self.source.extract(line),
        };
        let Some(key) = found else {
            self.keyless += 1;
            if self.keyless == CHECKED && self.lines.is_empty() {
                self.say_unmatched();
            }
            return NO_KEY;
        };
        let (id, new) = self.interner.intern(key);
        if new {
            self.names.push(key);
            self.lines.push(0);
        }
        self.lines[id as usize] += 1;
        KeyId::from(id)
    }

    /// At the end of a run shorter than [`CHECKED`] lines: the warning
    /// when no line had a key.
    pub fn check_unmatched(&self) {
        if self.lines.is_empty() && self.keyless > 0 && self.keyless < CHECKED {
            self.say_unmatched();
        }
    }

    fn say_unmatched(&self) {
        let n = self.keyless.min(CHECKED);
        let hint = match self.source {
            KeySource::Json(_) => "check the path (dotted, as in audit's --key-column for ndjson)",
            _ => "check it; for JSON lines use --key-json PATH",
        };
        crate::say!(
            "drip: warning: {} found no key in the first {n} line(s): they are all paced together under one bucket; {hint}",
            self.source.named()
        );
    }

    /// Distinct keys seen.
    #[cfg(test)]
    pub fn seen(&self) -> usize {
        self.lines.len()
    }

    /// The summary with the `top` busiest keys.
    pub fn summary(&self, top: usize) -> KeySummary {
        let mut ids: Vec<usize> = (0..self.lines.len()).collect();
        // Stable: equal counts keep the order the keys were first seen.
        ids.sort_by(|&a, &b| self.lines[b].cmp(&self.lines[a]));
        KeySummary {
            seen: self.lines.len() as u64,
            with_key: self.lines.iter().sum(),
            without_key: self.keyless,
            busiest: ids
                .into_iter()
                .take(top)
                .map(|i| KeyCount {
                    key: crate::quote::key_text(self.names.get(i as u32)),
                    lines: self.lines[i],
                })
                .collect(),
        }
    }
}

impl KeySummary {
    /// One line for the text summary.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "  keys     {} seen, {} lines with a key",
            self.seen, self.with_key
        );
        if self.without_key > 0 {
            s.push_str(&format!(", {} lines without a key", self.without_key));
        }
        if !self.busiest.is_empty() {
            let top: Vec<String> = self
                .busiest
                .iter()
                .map(|k| format!("{} {}", k.key, k.lines))
                .collect();
            s.push_str(&format!("; busiest {}", top.join(", ")));
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(p: &str) -> KeySource {
        KeySource::Pattern(Regex::new(p).unwrap())
    }

    #[test]
    fn a_pattern_takes_its_first_group_or_the_whole_match() {
        let host = pattern("^https?://([^/:]+)");
        assert_eq!(
            host.extract(b"https://a.example:8443/x"),
            Some(&b"a.example"[..])
        );
        assert_eq!(host.extract(b"ftp://b/"), None);
        assert_eq!(pattern("[0-9]+").extract(b"id 42 x"), Some(&b"42"[..]));
        // An empty group is no key.
        assert_eq!(pattern("^(x*)").extract(b"abc"), None);
        // Bytes, not text: invalid UTF-8 elsewhere in the line is fine.
        assert_eq!(
            host.extract(b"http://c.example/\xff\xfe"),
            Some(&b"c.example"[..])
        );
    }

    #[test]
    fn fields_are_one_based_and_split_as_cut_or_awk() {
        let tab = KeySource::Field {
            index: 2,
            sep: Some(b'\t'),
        };
        assert_eq!(tab.extract(b"a\tb\tc"), Some(&b"b"[..]));
        assert_eq!(tab.extract(b"a\t\tc"), None);
        assert_eq!(tab.extract(b"a"), None);
        let blank = KeySource::Field {
            index: 2,
            sep: None,
        };
        assert_eq!(blank.extract(b"  GET \t /x  y"), Some(&b"/x"[..]));
        let first = KeySource::Field {
            index: 1,
            sep: Some(b','),
        };
        assert_eq!(first.extract(b"k1,v"), Some(&b"k1"[..]));
    }

    #[test]
    fn a_json_path_reads_any_spacing_and_key_order() {
        let mut keys = Keys::new(KeySource::Json("req.customer".into()), b'\n');
        let lines = [
            "{\"req\":{\"customer\":\"acme\"},\"n\":1}\n",
            "{ \"n\" : 2, \"req\" : { \"id\": 7, \"customer\" : \"acme\" } }\n",
            "{\"req\":{\"customer\":\"b\\u00e9ta\"}}\n",
            "{\"req\":{}}\n",
            "not json\n",
        ];
        let ids: Vec<KeyId> = lines.iter().map(|l| keys.key_of(l.as_bytes())).collect();
        assert_eq!(ids, [0, 0, 1, NO_KEY, NO_KEY]);
        let s = keys.summary(5);
        assert_eq!((s.with_key, s.without_key), (3, 2));
        assert_eq!(s.busiest[1].key, "béta");
    }

    #[test]
    fn keys_are_counted_and_the_busiest_listed() {
        let mut keys = Keys::new(pattern("^([a-z]+) "), b'\n');
        let mut ids = Vec::new();
        for line in ["b 1\n", "a 1\n", "b 2\r\n", "- x\n", "c 1\n", "b 3"] {
            ids.push(keys.key_of(line.as_bytes()));
        }
        assert_eq!(ids, [0, 1, 0, NO_KEY, 2, 0]);
        assert_eq!(keys.seen(), 3);
        let s = keys.summary(2);
        assert_eq!(s.seen, 3);
        assert_eq!(s.without_key, 1);
        let busiest: Vec<(&str, u64)> = s.busiest.iter().map(|k| (&*k.key, k.lines)).collect();
        assert_eq!(busiest, [("b", 3), ("a", 1)]);
        assert_eq!(
            s.to_text(),
            "  keys     3 seen, 5 lines with a key, 1 lines without a key; busiest b 3, a 1\n"
        );
    }
}
