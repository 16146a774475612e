//! The quick walk of a JSON line (see [`Ndjson`](super::Ndjson)): a strict
//! subset of JSON read in one pass, with a faster path still for the common
//! flat line.

use super::Node;
use crate::ingest::log::MISSING;

/// The quick walk of a line: one pass over its bytes, validating JSON's
/// grammar for the subset it reads, keeping the spans of wanted values.
/// `None`: the line is outside the subset (or not JSON); serde_json reads
/// it instead.
pub(super) struct Quick<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
    /// The wanted values' spans as [`Fields`] keeps them (a string without
    /// its quotes, `null` missing); a string with escapes as written, and
    /// noted in `escaped` to be unescaped.
    pub(super) spans: &'a mut [(u32, u32)],
    pub(super) escaped: &'a mut Vec<(usize, u32, u32)>,
    /// The keys of the last flat line, by place: most lines repeat them.
    pub(super) known: &'a mut Vec<Known>,
}

/// The places whose keys are remembered: a line of many keys takes the
/// rest by their scan, and its memory stays small.
const KNOWN_PLACES: usize = 64;

/// A key a flat line had at some place, written `"key":` (at most 16
/// bytes, little-endian in `word`, `mask` its bytes): a line with the same
/// bytes there has the same key, already checked to be plain, and the same
/// wanted field. `len` 0: no key is known there.
#[derive(Clone, Copy, Default)]
pub(super) struct Known {
    word: u128,
    mask: u128,
    len: usize,
    leaf: Option<usize>,
}

impl Known {
    /// The key `key` (plain, checked) of wanted field `leaf`, if short.
    fn of(key: &[u8], leaf: Option<usize>) -> Known {
        let len = key.len() + 3;
        if len > 16 {
            return Known::default();
        }
        let mut bytes = [0u8; 16];
        bytes[0] = b'"';
        bytes[1..=key.len()].copy_from_slice(key);
        bytes[key.len() + 1..len].copy_from_slice(b"\":");
        Known {
            word: u128::from_le_bytes(bytes),
            mask: u128::MAX >> (8 * (16 - len)),
            len,
            leaf,
        }
    }

    /// Whether `s` at `i` starts with this key's `"key":`. Near the end,
    /// the line's last sixteen bytes shifted down to `i`: the bytes past
    /// the end read as zeros, never the closing `:`.
    #[inline(always)]
    fn at(&self, s: &[u8], i: usize) -> bool {
        let word = |at: usize| {
            let w = &s[at..at + 16];
            u128::from_le_bytes(w.try_into().expect("16 bytes"))
        };
        let w = if i + 16 <= s.len() {
            word(i)
        } else if s.len() >= 16 && i < s.len() {
            word(s.len() - 16) >> (8 * (i + 16 - s.len()))
        } else {
            return false;
        };
        self.len != 0 && w & self.mask == self.word
    }
}

/// What a wanted value turned out to be.
enum Kind {
    /// A string without escapes.
    Plain,
    Escaped,
    Other,
}

/// Nesting deeper than this goes to serde_json (which has its own limit).
const QUICK_DEPTH: u32 = 64;

/// The bytes of the eight in `x` (little-endian) that end a plain run of a
/// string: a quote, a backslash, a control character or a byte above
/// ASCII, each as its high bit. The lowest bit set is exactly the first
/// such byte (a borrow only carries upward; bits above it may be false).
#[inline(always)]
fn special(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    zero(x ^ (ONES * u64::from(b'"')))
        | zero(x ^ (ONES * u64::from(b'\\')))
        | below_space
        | x & HIGH
}

/// Two keys equal: short ones compared in line, without a call.
#[inline(always)]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Quick<'_> {
    /// The whole line: one object, then only whitespace.
    pub(super) fn line(&mut self, tree: &Node) -> Option<()> {
        self.ws();
        self.object(Some(tree), 0)?;
        self.ws();
        (self.i == self.s.len()).then_some(())
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// After a member or an element: a comma (false: another follows) or
    /// `end` (true), each with the whitespace around it.
    #[inline(always)]
    fn then(&mut self, end: u8) -> Option<bool> {
        self.ws();
        let b = *self.s.get(self.i)?;
        self.i += 1;
        match b {
            b',' => {
                self.ws();
                Some(false)
            }
            b if b == end => Some(true),
            _ => None,
        }
    }

    /// Keeps wanted field `leaf`'s value, from `start` to here.
    #[inline(always)]
    fn keep(&mut self, leaf: usize, start: usize, kind: Kind) {
        let (s, e) = (start as u32, self.i as u32);
        self.spans[leaf] = match kind {
            Kind::Plain => (s + 1, e - 1),
            Kind::Escaped => {
                self.escaped.push((leaf, s, e));
                (s, e)
            }
            Kind::Other if &self.s[start..self.i] == b"null" => MISSING,
            Kind::Other => (s, e),
        };
    }

    /// The start of an object or an array: `open`, then whether `close`
    /// follows at once (it is empty).
    #[inline(always)]
    fn open(&mut self, open: u8, close: u8, depth: u32) -> Option<bool> {
        if depth > QUICK_DEPTH {
            return None;
        }
        self.eat(open)?;
        self.ws();
        Some(self.eat(close).is_some())
    }

    #[inline(always)]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.s.get(self.i) == Some(&c)).then(|| self.i += 1)
    }

    /// The end of the plain run from `i`: the first stop at or after it
    /// (the line's length when there is none).
    #[inline(always)]
    fn stop_from(&self, i: usize) -> Option<usize> {
        Some(crate::ingest::marks::json_stop_from(self.s, i))
    }

    /// The whole line when it is the common flat shape: one object without
    /// spaces, no wanted path below its top level, each value a string
    /// without escapes, a number, `true`, `false` or `null`. `None`: the
    /// line is not (the spans may be half written); [`line`](Self::line)
    /// reads it instead. A key with the bytes the line before had at the
    /// same place is taken as [`Known`], without a scan or a lookup.
    pub(super) fn flat(&mut self, tree: &Node) -> Option<()> {
        let s = self.s;
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return (self.i == s.len()).then_some(());
        }
        let mut place = 0;
        loop {
            let i = self.i;
            let (start, leaf) = match self.known.get(place) {
                Some(k) if k.at(s, i) => (i + k.len, k.leaf),
                _ => {
                    let (start, leaf) = self.flat_key(tree)?;
                    let k = Known::of(&s[i + 1..start - 2], leaf);
                    match self.known.get_mut(place) {
                        Some(slot) => *slot = k,
                        None if place < KNOWN_PLACES => self.known.push(k),
                        None => {}
                    }
                    (start, leaf)
                }
            };
            place += 1;
            self.i = start;
            let kind = match *s.get(start)? {
                b'"' => {
                    let e = self.stop_from(start + 1)?;
                    if s.get(e) != Some(&b'"') {
                        return None;
                    }
                    self.i = e + 1;
                    Kind::Plain
                }
                b'{' | b'[' | b' ' | b'\t' | b'\n' | b'\r' => return None,
                b'-' | b'0'..=b'9' => {
                    self.number()?;
                    Kind::Other
                }
                _ => {
                    self.value(1)?;
                    Kind::Other
                }
            };
            if let Some(leaf) = leaf {
                self.keep(leaf, start, kind);
            }
            match s.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') if self.i + 1 == s.len() => return Some(()),
                _ => return None,
            }
        }
    }

    /// A key of a flat line at `i`, with its colon: where its value starts,
    /// and the wanted field it names. `None`: not a plain key, or a wanted
    /// path goes below it.
    #[inline(always)]
    fn flat_key(&self, tree: &Node) -> Option<(usize, Option<usize>)> {
        let (s, i) = (self.s, self.i);
        if s.get(i) != Some(&b'"') {
            return None;
        }
        let ke = self.stop_from(i + 1)?;
        if s.get(ke) != Some(&b'"') || s.get(ke + 1) != Some(&b':') {
            return None;
        }
        let key = &s[i + 1..ke];
        let first = key.first().copied().unwrap_or(b'"');
        let child = if first < 128 && tree.firsts & (1 << first) != 0 {
            tree.children.iter().find(|(k, _)| same(k.as_bytes(), key))
        } else {
            None
        };
        if child.is_some_and(|(_, c)| !c.children.is_empty()) {
            return None;
        }
        Some((ke + 2, child.and_then(|(_, c)| c.leaf)))
    }

    /// An object at `i` (`node`: the wanted paths below it, if any).
    fn object(&mut self, node: Option<&Node>, depth: u32) -> Option<()> {
        if self.open(b'{', b'}', depth)? {
            return Some(());
        }
        loop {
            // A wanted key written as it is, is known without a scan.
            let s = self.s;
            let i = self.i;
            let written = |(k, c): &&(String, Node)| {
                let k = k.as_bytes();
                c.plain
                    && s.get(i) == Some(&b'"')
                    && s.get(i + 1 + k.len()) == Some(&b'"')
                    && same(k, &s[i + 1..i + 1 + k.len()])
            };
            let could = |n: &&Node| {
                s.get(i + 1)
                    .is_some_and(|&b| b < 128 && n.firsts & (1 << b) != 0)
            };
            let child = match node
                .filter(could)
                .and_then(|n| n.children.iter().find(written))
            {
                Some(c) => {
                    self.i += c.0.len() + 2;
                    Some(c)
                }
                None => {
                    let (ks, ke, escaped) = self.string()?;
                    if escaped {
                        return None; // a key with escapes: compared unescaped by serde
                    }
                    // Only a key not written as it is can still be wanted.
                    let key = &self.s[ks..ke];
                    node.and_then(|n| {
                        n.children
                            .iter()
                            .find(|(k, c)| !c.plain && same(k.as_bytes(), key))
                    })
                }
            };
            self.ws();
            self.eat(b':')?;
            self.ws();
            let start = self.i;
            let kind = match child {
                Some((_, c)) if self.s.get(self.i) == Some(&b'{') && !c.children.is_empty() => {
                    self.object(Some(c), depth + 1)?;
                    Kind::Other
                }
                _ if self.s.get(self.i) == Some(&b'"') => match self.string()?.2 {
                    true => Kind::Escaped,
                    false => Kind::Plain,
                },
                _ => {
                    self.value(depth + 1)?;
                    Kind::Other
                }
            };
            if let Some(leaf) = child.and_then(|(_, c)| c.leaf) {
                self.keep(leaf, start, kind);
            }
            if self.then(b'}')? {
                return Some(());
            }
        }
    }

    /// A string at `i`: its content's span, and whether it has escapes.
    /// Only ASCII, and escapes other than `\u`. A string whose first stop
    /// is its closing quote is found from the stops alone.
    #[inline(always)]
    fn string(&mut self) -> Option<(usize, usize, bool)> {
        let s = self.s;
        let i = self.i;
        if s.get(i) != Some(&b'"') {
            return None;
        }
        let end = self.stop_from(i + 1)?;
        if s.get(end) == Some(&b'"') {
            self.i = end + 1;
            return Some((i + 1, end, false));
        }
        self.string_with_stops(i + 1)
    }

    /// The rest of a string from `i` (after its opening quote), some
    /// escape or other stop in it.
    #[inline(never)]
    fn string_with_stops(&mut self, mut i: usize) -> Option<(usize, usize, bool)> {
        let s = self.s;
        let start = i;
        let mut escaped = false;
        loop {
            // Eight plain bytes at a time, up to the first that is not.
            while let Some(w) = s.get(i..i + 8) {
                let m = special(u64::from_le_bytes(w.try_into().expect("8 bytes")));
                if m != 0 {
                    i += (m.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            match *s.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some((start, i, escaped));
                }
                b'\\' => {
                    escaped = true;
                    match s.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                        _ => return None,
                    }
                }
                0x20..=0x7f => i += 1,
                _ => return None, // a control character, or not ASCII
            }
        }
    }

    /// Any value at `i`, skipped.
    fn value(&mut self, depth: u32) -> Option<()> {
        match *self.s.get(self.i)? {
            b'"' => self.string().map(drop),
            b'{' => self.object(None, depth),
            b'[' => self.array(depth),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => self.number(),
        }
    }

    fn array(&mut self, depth: u32) -> Option<()> {
        if self.open(b'[', b']', depth)? {
            return Some(());
        }
        loop {
            self.value(depth + 1)?;
            if self.then(b']')? {
                return Some(());
            }
        }
    }

    fn word(&mut self, w: &[u8]) -> Option<()> {
        self.s[self.i..].starts_with(w).then(|| self.i += w.len())
    }

    /// A number as JSON writes it: `-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`.
    #[inline]
    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match *self.s.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            self.s.get(self.i).filter(|b| b.is_ascii_digit())?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            self.s.get(self.i).filter(|b| b.is_ascii_digit())?;
            self.digits();
        }
        Some(())
    }

    #[inline(always)]
    fn digits(&mut self) {
        let (s, mut i) = (self.s, self.i);
        while i < s.len() && s[i].is_ascii_digit() {
            i += 1;
        }
        self.i = i;
    }
}
