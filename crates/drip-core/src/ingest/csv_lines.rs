//! CSV records exactly as the csv crate reads them (flexible field counts,
//! no header handling, a one-byte delimiter, quotes doubled inside quoted
//! fields, `\r`, `\n` or `\r\n` ending a record, blank lines skipped),
//! faster on the lines most logs are made of.
//!
//! A line with no quote and no carriage return (but the one before its
//! `\n`) is split at the delimiter by walking the bits of [`Marks`], 64
//! bytes at a time, its fields left where they were read. Any other record (a quote, a lone `\r`, the last line
//! without a newline) is parsed by `csv_core`, the crate's own parser,
//! from the same buffer. Both give the same fields, and each record the
//! line number the crate gives it: one more than the newlines consumed
//! before its reading began (so blank lines before a record do not count,
//! and a `\r\n` counts when the next record is read, as in the crate).

use super::marks::Marks;
use super::quotes::QuoteGuard;
use std::io::{self, Read};

/// A line longer than this that the guard hands on in pieces goes through
/// `csv_core`, which parses it as it streams.
#[cfg(test)]
const LONG: usize = super::quotes::MAX_SPAN;

/// Records read from the bytes a [`QuoteGuard`] hands on, in place: the
/// guard holds them, whole records at a time, until the next record is
/// asked for.
pub struct CsvLines<R> {
    guard: QuoteGuard<R>,
    /// How far into the guard's ready bytes this reader has parsed.
    off: usize,
    eof: bool,
    core: Core,
    delimiter: u8,
    /// The record's fields: ranges of the guard's ready bytes (a plain
    /// line) or of `core.out` (a record parsed by `csv_core`).
    bounds: Vec<(usize, usize)>,
    in_guard: bool,
    /// Newlines consumed so far.
    newlines: u64,
    /// A `\r\n` line whose `\n` the crate would consume with the next
    /// record: counted then.
    pending_lf: bool,
    record_line: u64,
    /// No record read yet: the first goes through `csv_core`, which strips
    /// a UTF-8 byte order mark at the start of the input.
    first: bool,
    /// Whether lines may be split without `csv_core`: not when the
    /// delimiter is a byte that also ends a line or quotes.
    plain: bool,
    /// The ready bytes from `block` on (64 or up to their end) have the
    /// marks `marks`; `usize::MAX`: none yet since the last refill.
    block: usize,
    marks: Marks,
}

/// The `csv_core` parser, for the records a plain split does not take, and
/// the fields it writes out.
struct Core {
    reader: csv_core::Reader,
    /// The record's fields, back to back.
    out: Vec<u8>,
    /// Where each field ends in `out`.
    ends: Vec<usize>,
}

/// What splitting the next line found.
enum Line {
    /// A record, its fields in `bounds`.
    Record,
    /// A blank line, skipped.
    Blank,
    /// A quote or a lone carriage return: for `csv_core`.
    Odd,
    /// No newline in the ready bytes.
    Open,
}

impl<R: Read> CsvLines<R> {
    pub fn new(guard: QuoteGuard<R>, delimiter: u8) -> CsvLines<R> {
        CsvLines {
            guard,
            off: 0,
            eof: false,
            core: Core {
                reader: csv_core::ReaderBuilder::new().delimiter(delimiter).build(),
                out: vec![0; 1024],
                ends: vec![0; 64],
            },
            delimiter,
            bounds: Vec::new(),
            in_guard: true,
            newlines: 0,
            pending_lf: false,
            record_line: 0,
            first: true,
            plain: !matches!(delimiter, b'\n' | b'\r' | b'"'),
            block: usize::MAX,
            marks: Marks::default(),
        }
    }

    /// The guard underneath.
    pub fn guard(&self) -> &QuoteGuard<R> {
        &self.guard
    }

    /// Fields of the current record.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// Whether the current record has no fields.
    pub fn is_empty(&self) -> bool {
        self.bounds.is_empty()
    }

    /// Field `i` of the current record.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let &(s, e) = self.bounds.get(i)?;
        Some(if self.in_guard {
            &self.guard.ready()[s..e]
        } else {
            &self.core.out[s..e]
        })
    }

    /// The line the csv crate numbers the current record by.
    pub fn line(&self) -> u64 {
        self.record_line
    }

    /// Hands the parsed bytes back to the guard and takes the next ready
    /// ones; at the end of the input sets `eof`.
    #[inline(never)]
    fn refill(&mut self) -> io::Result<()> {
        self.guard.consume(self.off);
        self.off = 0;
        self.block = usize::MAX;
        self.eof = self.guard.fill()?.is_empty();
        Ok(())
    }

    /// Reads the next record; false at the end of the input.
    #[inline(always)]
    pub fn read_record(&mut self) -> io::Result<bool> {
        self.record_line = self.newlines + 1;
        if std::mem::take(&mut self.pending_lf) {
            // The crate consumes this `\n` with the record it reads next,
            // after numbering it.
            self.newlines += 1;
            self.off += 1;
        }
        if std::mem::take(&mut self.first) {
            return self.parsed();
        }
        if !self.plain {
            return self.parsed();
        }
        loop {
            let len = self.guard.ready().len();
            let start = self.off;
            match self.split_line(start, len) {
                Line::Record => return Ok(true),
                Line::Blank => {}
                Line::Odd => return self.parsed(),
                Line::Open => {
                    if start < len || self.eof {
                        // A line the guard hands on in pieces, or the last
                        // one, without a newline.
                        return self.parsed();
                    }
                    self.refill()?;
                }
            }
        }
    }

    /// The marks of the ready bytes from the 64-byte block that holds `p`
    /// on, and where that block starts: the block of the line before, or
    /// one starting at `p`.
    #[inline(always)]
    fn block_at(&mut self, p: usize) -> (usize, Marks) {
        if !(self.block..self.block.saturating_add(64)).contains(&p) {
            let ready = self.guard.ready();
            let end = ready.len().min(p + 64);
            self.marks = Marks::of(&ready[p..end], self.delimiter);
            self.block = p;
        }
        (self.block, self.marks)
    }

    /// Splits the line at `start` of the `len` ready bytes at its
    /// delimiters, if it is plain, and moves past it.
    #[inline(always)]
    fn split_line(&mut self, start: usize, len: usize) -> Line {
        self.bounds.clear();
        let mut from = start;
        let mut p = start;
        while p < len {
            let (b, m) = self.block_at(p);
            let here = !0u64 << (p - b);
            let nl = m.newline & here;
            // The bits of this line: from `p` up to its newline, if here.
            let line = match nl {
                0 => here,
                _ => here & ((nl & nl.wrapping_neg()) - 1),
            };
            // A carriage return is plain only just before a newline (one
            // before a newline in the next block is left to `csv_core`).
            if (m.quote | (m.cr & !(m.newline >> 1))) & line != 0 {
                return Line::Odd;
            }
            let mut d = m.delimiter & line;
            while d != 0 {
                let at = b + d.trailing_zeros() as usize;
                self.bounds.push((from, at));
                from = at + 1;
                d &= d - 1;
            }
            if nl != 0 {
                let end = b + nl.trailing_zeros() as usize;
                let crlf = end > p && m.cr >> (end - 1 - b) & 1 == 1;
                let body_end = end - usize::from(crlf);
                if body_end == start {
                    // A blank line: no record.
                    self.off = end + 1;
                    self.newlines += 1;
                    return Line::Blank;
                }
                self.bounds.push((from, body_end));
                self.in_guard = true;
                if crlf {
                    // Up to the `\r`: the `\n` goes with the next record.
                    self.off = end;
                    self.pending_lf = true;
                } else {
                    self.off = end + 1;
                    self.newlines += 1;
                }
                return Line::Record;
            }
            p = b + 64;
        }
        Line::Open
    }

    /// Reads the next record with `csv_core`, taking more bytes from the
    /// guard as it asks (an empty input tells it the input has ended).
    #[inline(never)]
    fn parsed(&mut self) -> io::Result<bool> {
        use csv_core::ReadRecordResult::*;
        let (mut outlen, mut endlen) = (0, 0);
        loop {
            if self.off == self.guard.ready().len() && !self.eof {
                self.refill()?;
            }
            let input = &self.guard.ready()[self.off..];
            let core = &mut self.core;
            let (res, nin, nout, nend) =
                core.reader
                    .read_record(input, &mut core.out[outlen..], &mut core.ends[endlen..]);
            self.newlines += memchr::memchr_iter(b'\n', &input[..nin]).count() as u64;
            self.off += nin;
            outlen += nout;
            endlen += nend;
            match res {
                InputEmpty => {}
                OutputFull => {
                    let n = self.core.out.len() * 2;
                    self.core.out.resize(n, 0);
                }
                OutputEndsFull => {
                    let n = self.core.ends.len() * 2;
                    self.core.ends.resize(n, 0);
                }
                Record => {
                    self.bounds.clear();
                    let mut from = 0;
                    for &e in &self.core.ends[..endlen] {
                        self.bounds.push((from, e));
                        from = e;
                    }
                    self.in_guard = false;
                    return Ok(true);
                }
                End => return Ok(false),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CsvLines;
    use crate::ingest::quotes::QuoteGuard;
    use crate::testing::Rng;

    type Records = Result<Vec<(Vec<Vec<u8>>, u64)>, String>;

    /// Hands out at most `step` bytes per read.
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Every record with its fields and line, as the csv crate reads the
    /// bytes the guard passes.
    fn by_crate(input: &[u8], delimiter: u8) -> Records {
        let guard = QuoteGuard::new(Trickle(input, usize::MAX), delimiter, false);
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(delimiter)
            .from_reader(guard);
        let mut rec = csv::ByteRecord::new();
        let mut all = Vec::new();
        while r.read_byte_record(&mut rec).map_err(|e| e.to_string())? {
            let line = rec.position().unwrap().line();
            all.push((rec.iter().map(<[u8]>::to_vec).collect(), line));
        }
        Ok(all)
    }

    /// The same through [`CsvLines`], the input fed `step` bytes per read.
    fn by_lines(input: &[u8], delimiter: u8, step: usize) -> Records {
        let guard = QuoteGuard::new(Trickle(input, step), delimiter, false);
        let mut r = CsvLines::new(guard, delimiter);
        let mut all = Vec::new();
        while r.read_record().map_err(|e| e.to_string())? {
            let fields = (0..r.len()).map(|i| r.get(i).unwrap().to_vec()).collect();
            all.push((fields, r.line()));
        }
        Ok(all)
    }

    #[test]
    fn records_and_lines_are_the_crates() {
        let cases: &[&[u8]] = &[
            b"",
            b"a,b\n",
            b"a,b",
            b"a,b\r\nc,d\r\n",
            b"a,b\r\n\r\nc,d",
            b"\n\na\n\nb\n",
            b"a\rb\rc\n",
            b"\"x,y\",z\nq,\"multi\nline\"\nlast,1\n",
            b"a,\"b\"\"c\"\n,,\n",
            b"\xef\xbb\xbfts,client\n1,a\n",
            b"  \n a ,b\n",
            b"a,b\r",
            b"a\r\n\"b\r\nc\"\r\nd\r\n",
            b"a,\"open\n",
        ];
        for &c in cases {
            for step in [1, 3, 1 << 20] {
                assert_eq!(
                    by_lines(c, b',', step),
                    by_crate(c, b','),
                    "{:?} step {step}",
                    String::from_utf8_lossy(c)
                );
            }
        }
    }

    #[test]
    fn random_csv_reads_as_the_crate_reads_it() {
        let mut rng = Rng(0x05ee_dc5f);
        let alphabet: &[u8] = b"ab,;\t\"\r\n \n,a1\n";
        // Lines mostly plain and longer than a 64-byte block, too.
        let plain: &[u8] = b"abcdefgh,,;\t0123456789abcdefgh\n\r\"";
        for round in 0..6000 {
            let (alphabet, len) = match round % 2 {
                0 => (alphabet, rng.below(60) as usize),
                _ => (plain, rng.below(400) as usize),
            };
            let text: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            for delimiter in [b',', b';', b'\t'] {
                let step = 1 + rng.below(7) as usize;
                assert_eq!(
                    by_lines(&text, delimiter, step),
                    by_crate(&text, delimiter),
                    "{:?} delimiter {:?} step {step}",
                    String::from_utf8_lossy(&text),
                    delimiter as char
                );
            }
        }
    }

    #[test]
    fn a_line_longer_than_a_read_is_read_whole() {
        // Longer than a read, and longer than the guard holds a line whole
        // (it then hands it on in pieces), with and without a quote.
        for n in [3 << 16, super::LONG * 2 + 7] {
            let long = "x".repeat(n);
            for text in [format!("a,{long}\r\nb,c\n"), format!("{long},\"q\"\nb,c")] {
                assert_eq!(
                    by_lines(text.as_bytes(), b',', 1 << 16),
                    by_crate(text.as_bytes(), b','),
                    "{n}"
                );
            }
        }
    }
}
