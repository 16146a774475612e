//! Lines of an access-log format (`ingest::log`) read as rows: the
//! format's fields named and found for the reader, a line that is not in
//! the format said plainly.

use super::input::{ColSel, pick_time_column};
use super::rows::Rows;
use crate::ingest::log::LineError;
use crate::quote::shown_str;
use anyhow::{Context, Result, anyhow, bail};

/// Lines of an access-log format.
pub(super) struct LineRows<R> {
    lines: crate::ingest::log::Lines<R>,
    parser: Box<dyn crate::ingest::log::LineParser>,
    fields: crate::ingest::log::Fields,
    /// The line in `lines.buf` is read but not yet parsed.
    pub(super) pending: Option<crate::ingest::log::Line>,
    dash_is_empty: bool,
    notes: crate::notes::Notes,
    /// `--max-line`, for the message of a longer line.
    max_line: usize,
    /// Lines whose last quoted field the line's end cut off, kept.
    pub(super) truncated: u64,
    /// The server's own lines, not requests.
    pub(super) notices: u64,
    /// Lines read as another variant of the format, by variant.
    pub(super) read_as: std::collections::BTreeMap<&'static str, u64>,
}

impl<R: std::io::Read> LineRows<R> {
    /// Reads up to the first request line, so the format knows its field
    /// names (a W3C `#Fields:` line, a JSON line's paths).
    pub(super) fn new(
        reader: R,
        mut parser: Box<dyn crate::ingest::log::LineParser>,
        name: &str,
        notes: crate::notes::Notes,
        max_line: usize,
        tz: bool,
    ) -> Result<Self> {
        use crate::ingest::log::Line;
        let mut lines = crate::ingest::log::Lines::new(reader, max_line);
        let pending = loop {
            let l = lines
                .next_line()
                .with_context(|| format!("{name}: cannot read the log"))?;
            match l {
                Line::Ok if lines.text().trim_ascii().is_empty() => continue,
                Line::Ok if parser.learn(lines.text()) => continue,
                Line::End => break None,
                l => break Some(l),
            }
        };
        if let Some(note) = parser.note(tz).filter(|_| pending.is_some()) {
            notes.say(format_args!("{name}: {note}"));
        }
        Ok(LineRows {
            lines,
            dash_is_empty: parser.dash_is_empty(),
            parser,
            fields: crate::ingest::log::Fields::default(),
            pending,
            notes,
            max_line,
            truncated: 0,
            notices: 0,
            read_as: Default::default(),
        })
    }
}

impl<R> LineRows<R> {
    /// A line's error, or what the line is instead when it is plainly in
    /// another format: `this is not a combined line: it starts with a host:port
    /// (vcombined?); set --input-format vcombined`.
    #[cold]
    fn shaped(&self, e: LineError) -> LineError {
        let format = self.parser.format();
        match crate::ingest::log::shape_hint(self.lines.text(), format) {
            Some(hint) => LineError::new(format!(
                "this is not {} {format} line: {hint}",
                crate::ingest::log::article(format)
            )),
            None => e,
        }
    }
}

impl<R: std::io::Read> Rows for LineRows<R> {
    fn header(&self) -> Option<&[String]> {
        self.parser.names()
    }

    fn column(&mut self, sel: &ColSel, what: &str, file: &str) -> Result<usize> {
        let fields = || {
            // Fields named by position are summed up by the first of them.
            let names = self.parser.names().unwrap_or_default();
            let positional = |n: &String| {
                n.strip_prefix("field")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
            };
            let mut list: Vec<String> = names.iter().filter(|n| !positional(n)).cloned().collect();
            if let Some(first) = names.iter().find(|n| positional(n)) {
                list.push(format!("{first}… (further fields by position)"));
            }
            crate::quote::names(&list)
        };
        let format = self.parser.format();
        match sel {
            ColSel::Index(i) => {
                let listing = fields();
                self.parser.field_at(*i).ok_or_else(|| {
                    anyhow!("{file}: {format} lines have no {what} field #{i}; the fields are: {listing}")
                })
            }
            ColSel::Name(n) => {
                let listing = fields();
                let known = self
                    .parser
                    .names()
                    .is_some_and(|names| names.iter().any(|x| x == n));
                let i = self.parser.field(n).ok_or_else(|| {
                    anyhow!(
                        "{file}: {format} lines have no {what} field '{}'; the fields are: {listing}",
                        shown_str(n)
                    )
                })?;
                if !known && format == "ndjson" {
                    self.notes.say(format_args!(
                        "the first line of {file} has no field '{n}'; lines without it have an empty {what}"
                    ));
                }
                Ok(i)
            }
        }
    }

    fn default_time(&mut self, file: &str) -> Result<(usize, Option<usize>)> {
        match self.parser.default_time() {
            Some(t) => Ok(t),
            None if self.parser.names().is_none() => {
                // The format's own word on a line it cannot name fields for.
                let e = self
                    .parser
                    .parse(self.lines.text(), &mut self.fields)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                bail!("{file}:{}: {e}", self.lines.line)
            }
            None => {
                let t = pick_time_column(self.parser.names(), file)?;
                self.parser.field_at(t);
                Ok((t, None))
            }
        }
    }

    fn advance(&mut self) -> Result<Option<Result<(), LineError>>> {
        use crate::ingest::log::{Line, Parsed};
        loop {
            let l = match self.pending.take() {
                Some(l) => l,
                None => self.lines.next_line().context("cannot read the log")?,
            };
            match l {
                Line::End => return Ok(None),
                Line::TooLong => {
                    return Ok(Some(Err(LineError::new(format!(
                        "the line is longer than {} bytes (--max-line); raise --max-line to read it",
                        self.max_line
                    )))));
                }
                Line::Ok => {
                    let text = self.lines.text();
                    if text.trim_ascii().is_empty() {
                        continue;
                    }
                    self.fields.clear();
                    match self.parser.parse(text, &mut self.fields) {
                        Ok(Parsed::Record) => {
                            self.truncated += u64::from(self.fields.cut);
                            if let Some(v) = self.fields.variant {
                                *self.read_as.entry(v).or_default() += 1;
                            }
                            return Ok(Some(Ok(())));
                        }
                        Ok(Parsed::Skip) => continue,
                        Ok(Parsed::Notice) => {
                            self.notices += 1;
                            continue;
                        }
                        Err(e) => return Ok(Some(Err(self.shaped(e)))),
                    }
                }
            }
        }
    }

    fn line(&self) -> u64 {
        self.lines.line
    }

    fn len(&self) -> usize {
        self.fields.spans.len()
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&[u8]> {
        match self.fields.get(self.lines.text(), i) {
            Some(b"-") if self.dash_is_empty => Some(b""),
            v => v,
        }
    }

    fn format(&self) -> Option<&'static str> {
        Some(self.parser.format())
    }

    fn check_start(&mut self, file: &str) -> Result<()> {
        // Only a format that learns its names from the first line (JSON)
        // knows none when that line is not in it.
        if !self.parser.names().is_some_and(<[String]>::is_empty)
            || !matches!(self.pending, Some(crate::ingest::log::Line::Ok))
        {
            return Ok(());
        }
        let mut fields = crate::ingest::log::Fields::default();
        match self.parser.parse(self.lines.text(), &mut fields) {
            Err(e) => bail!(
                "{file}:{}: {} line: {e}; is the log in this format? Set --input-format to its format, or leave it out to detect it",
                self.lines.line,
                self.parser.format()
            ),
            Ok(_) => Ok(()),
        }
    }
}
