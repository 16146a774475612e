//! A guard against a stray quote swallowing the rest of a log.
//!
//! In CSV a field that starts with `"` runs to the next closing quote,
//! newlines included. One unclosed quote (a user agent or URL written
//! without escaping) therefore turns every later line into one field, and
//! the log appears to end early. This reader sits between the raw bytes and
//! the CSV parser and follows the same quoting rules: a field opening with
//! `"` at a field start, `""` inside a quoted field, `\r`/`\n` ending a
//! record outside quotes. It hands bytes on only up to a record boundary,
//! so while a quoted field is open the lines it spans are held back. When
//! such a field is still open at the end of the input, or after
//! [`MAX_SPAN`] bytes, the quote is stray: the read fails with
//! [`UnclosedQuote`] naming the line where it opened, or, when skipping bad
//! rows, the lines of that record up to the end of the line where the quote
//! opened are replaced by empty lines (so line numbers stay right), counted
//! in [`QuoteGuard::skipped`], and reading resumes on the next line.

use std::io::{self, Read};

/// The most bytes one record may span while a quoted field is open.
pub const MAX_SPAN: usize = 1 << 20;

/// Bytes asked of the inner reader at a time.
const CHUNK: usize = 1 << 16;

/// A quote opened on `line` is never closed.
#[derive(Debug)]
pub struct UnclosedQuote {
    pub line: u64,
    /// False: closed nowhere before the end of the input; true: not within
    /// [`MAX_SPAN`] bytes.
    pub too_long: bool,
}

impl std::fmt::Display for UnclosedQuote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.too_long {
            write!(
                f,
                "a quote opened on this line is not closed within {} MiB, so the lines after it would be read as one field",
                MAX_SPAN >> 20
            )
        } else {
            write!(
                f,
                "a quote opened on this line is never closed, so every line after it would be read as one field"
            )
        }
    }
}

impl std::error::Error for UnclosedQuote {}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// At the start of a field (and of a record).
    FieldStart,
    /// Inside an unquoted field.
    InField,
    /// Inside a quoted field.
    Quoted,
    /// Just after a quote inside a quoted field: `"` again is an escaped
    /// quote, anything else closes the field.
    QuoteInQuoted,
}

/// See the module documentation.
pub struct QuoteGuard<R> {
    inner: R,
    delimiter: u8,
    skip: bool,
    /// Bytes read: `[pos, ready)` may be handed on, `[ready, scanned)` are
    /// scanned but held (a quoted field is open), `[scanned, end)` are new;
    /// past `end`, room that reads land in directly (bytes of no meaning:
    /// zeros where the buffer grew, else what was there before).
    buf: Vec<u8>,
    end: usize,
    pos: usize,
    ready: usize,
    scanned: usize,
    state: State,
    /// 1-based line of the byte at `scanned`.
    line: u64,
    /// Line of the first byte at `ready`, where the held record starts.
    ready_line: u64,
    /// Line where the open quoted field started.
    open_line: u64,
    eof: bool,
    skipped: u64,
}

impl<R: Read> QuoteGuard<R> {
    pub fn new(inner: R, delimiter: u8, skip: bool) -> QuoteGuard<R> {
        QuoteGuard {
            inner,
            delimiter,
            skip,
            buf: Vec::new(),
            end: 0,
            pos: 0,
            ready: 0,
            scanned: 0,
            state: State::FieldStart,
            line: 1,
            ready_line: 1,
            open_line: 1,
            eof: false,
            skipped: 0,
        }
    }

    /// Records skipped for a stray quote.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Scans the new bytes, moving `ready` to the last record boundary.
    fn scan(&mut self) {
        let end = self.end;
        let mut i = self.scanned;
        while i < end {
            match self.state {
                State::Quoted => match memchr::memchr(b'"', &self.buf[i..end]) {
                    Some(j) => {
                        self.line += memchr::memchr_iter(b'\n', &self.buf[i..i + j]).count() as u64;
                        self.state = State::QuoteInQuoted;
                        i += j + 1;
                    }
                    None => {
                        self.line += memchr::memchr_iter(b'\n', &self.buf[i..end]).count() as u64;
                        i = end;
                    }
                },
                State::QuoteInQuoted => {
                    let b = self.buf[i];
                    self.state = match b {
                        b'"' => State::Quoted,
                        b'\n' | b'\r' => State::FieldStart,
                        d if d == self.delimiter => State::FieldStart,
                        _ => State::InField,
                    };
                    i += 1;
                    if b == b'\n' {
                        self.line += 1;
                        self.boundary(i);
                    }
                }
                State::FieldStart | State::InField => {
                    let stretch = &self.buf[i..end];
                    let q = memchr::memchr(b'"', stretch).unwrap_or(stretch.len());
                    let plain = &stretch[..q];
                    let last = plain.last().copied();
                    if let Some(nl) = memchr::memrchr(b'\n', plain) {
                        self.line += memchr::memchr_iter(b'\n', plain).count() as u64;
                        self.boundary(i + nl + 1);
                    }
                    let at_start = match last {
                        None => self.state == State::FieldStart,
                        Some(b) => b == b'\n' || b == b'\r' || b == self.delimiter,
                    };
                    i += q;
                    if i == end {
                        self.state = if at_start {
                            State::FieldStart
                        } else {
                            State::InField
                        };
                    } else {
                        // A quote: it opens a field only at a field start.
                        if at_start {
                            self.state = State::Quoted;
                            self.open_line = self.line;
                        } else {
                            self.state = State::InField;
                        }
                        i += 1;
                    }
                }
            }
        }
        self.scanned = end;
        if !self.quoted() && end - self.ready > MAX_SPAN {
            // A very long line with no quoted field open: let it through
            // rather than hold it all.
            self.boundary(end);
        }
    }

    fn quoted(&self) -> bool {
        matches!(self.state, State::Quoted | State::QuoteInQuoted)
    }

    fn boundary(&mut self, at: usize) {
        if at > self.ready {
            self.ready = at;
            self.ready_line = self.line;
        }
    }

    /// The held record has a stray quote: fail, or blank it out up to the
    /// end of the line where the quote opened and scan the rest again.
    fn stray(&mut self, too_long: bool) -> io::Result<()> {
        if !self.skip {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                UnclosedQuote {
                    line: self.open_line,
                    too_long,
                },
            ));
        }
        self.skipped += 1;
        // The held record, up to the end of the line where the quote
        // opened, becomes as many empty lines.
        let stop = (self.ready_line..)
            .zip(memchr::memchr_iter(b'\n', &self.buf[self.ready..self.end]))
            .find(|&(line, _)| line == self.open_line)
            .map_or(self.end, |(_, n)| self.ready + n + 1);
        let lines = memchr::memchr_iter(b'\n', &self.buf[self.ready..stop]).count();
        self.buf[self.ready..self.ready + lines].fill(b'\n');
        self.buf.copy_within(stop..self.end, self.ready + lines);
        self.end -= stop - self.ready - lines;
        // The line count is unchanged, and the CSV reader skips blank lines.
        self.line = self.ready_line;
        self.scanned = self.ready;
        self.state = State::FieldStart;
        self.scan();
        Ok(())
    }
}

impl<R: Read> QuoteGuard<R> {
    /// The bytes ready to hand on (whole records, but for a very long
    /// line or the end of the input), reading more when all were taken;
    /// empty at the end of the input.
    pub fn fill(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.ready {
            if self.eof {
                if self.ready == self.end {
                    return Ok(&[]);
                }
                if self.state != State::Quoted {
                    // The last line, without a newline (after a stray
                    // quote's lines were blanked out and scanned again).
                    self.ready = self.end;
                    continue;
                }
                // Still inside a quoted field at the end of the input.
                self.stray(false)?;
                if self.pos == self.ready && self.ready == self.end {
                    return Ok(&[]);
                }
                continue;
            }
            // Drop what was handed on; keep the held record.
            if self.pos > 0 {
                self.buf.copy_within(self.pos..self.end, 0);
                self.end -= self.pos;
                self.ready -= self.pos;
                self.scanned -= self.pos;
                self.pos = 0;
            }
            if self.quoted() && self.end - self.ready > MAX_SPAN {
                self.stray(true)?;
                continue;
            }
            // Straight after the bytes held, into room the buffer already
            // has (zeroed only when it grows): no copy, no zeroing per read.
            if self.buf.len() < self.end + CHUNK {
                self.buf.resize(self.end + CHUNK, 0);
            }
            let n = loop {
                match self.inner.read(&mut self.buf[self.end..self.end + CHUNK]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            };
            self.end += n;
            if n == 0 {
                self.eof = true;
                if !matches!(self.state, State::Quoted) {
                    // A quoted field closed by its last byte is complete.
                    self.ready = self.end;
                }
            } else {
                self.scan();
            }
        }
        Ok(&self.buf[self.pos..self.ready])
    }

    /// The bytes ready to hand on, as `fill` last returned them.
    #[inline]
    pub fn ready(&self) -> &[u8] {
        &self.buf[self.pos..self.ready]
    }

    /// Hands on the first `n` ready bytes.
    pub fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.ready);
    }
}

impl<R: Read> Read for QuoteGuard<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let ready = self.fill()?;
        let n = out.len().min(ready.len());
        out[..n].copy_from_slice(&ready[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most `step` bytes per read, to cross every boundary.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn pass(data: &[u8], skip: bool, step: usize) -> io::Result<(Vec<u8>, u64)> {
        let mut g = QuoteGuard::new(Trickle { data, step }, b',', skip);
        let mut out = Vec::new();
        g.read_to_end(&mut out)?;
        Ok((out, g.skipped()))
    }

    /// The stray quote an error reports.
    fn unclosed(e: io::Error) -> UnclosedQuote {
        e.into_inner()
            .and_then(|i| i.downcast::<UnclosedQuote>().ok())
            .map(|q| *q)
            .expect("an unclosed quote")
    }

    #[test]
    fn well_quoted_input_passes_unchanged() {
        let data = b"ts,ua\r\n1,\"a,\"\"b\"\"\nc\"\n2,x\"y\n3,\"\"\n4,\"end\"";
        for step in [1, 2, 3, 7, 1 << 16] {
            assert_eq!(pass(data, false, step).unwrap(), (data.to_vec(), 0));
        }
    }

    #[test]
    fn a_quote_open_at_the_end_names_its_line() {
        let data = b"ts,ua\n1,a\n2,\"oops\n3,b\n4,c\n";
        for step in [1, 5, 1 << 16] {
            let q = unclosed(pass(data, false, step).unwrap_err());
            assert_eq!((q.line, q.too_long), (3, false));
        }
    }

    #[test]
    fn skipping_blanks_the_line_and_resumes_after_it() {
        let cases: [(&[u8], &[u8]); 2] = [
            // (Any later quote would close the stray one.)
            (
                b"ts,ua\n1,a\n2,\"oops\r\n3,b\n4,c\n",
                b"ts,ua\n1,a\n\n3,b\n4,c\n",
            ),
            // A last line without a newline after a skipped one is kept.
            (b"ts,ip\n1,a\n2,\"b\n3,c", b"ts,ip\n1,a\n\n3,c"),
        ];
        for (data, want) in cases {
            for step in [1, 4, 1 << 16] {
                let (out, skipped) = pass(data, true, step).unwrap();
                assert_eq!(out, want);
                assert_eq!(skipped, 1);
            }
        }
    }

    #[test]
    fn a_quote_open_past_the_span_is_stray() {
        let mut data = b"ts,ua\n1,\"oops\n".to_vec();
        for i in 0..(MAX_SPAN / 8) {
            data.extend_from_slice(format!("{i},ok\n").as_bytes());
        }
        let q = unclosed(pass(&data, false, 1 << 16).unwrap_err());
        assert_eq!((q.line, q.too_long), (2, true));
        let (out, skipped) = pass(&data, true, 1 << 16).unwrap();
        assert_eq!(skipped, 1);
        assert!(out.starts_with(b"ts,ua\n\n0,ok\n1,ok\n"));
        assert_eq!(out.len(), data.len() - b"1,\"oops".len());
    }
}
