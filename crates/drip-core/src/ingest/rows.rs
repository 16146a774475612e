//! A log being read row by row, the same to the reader whatever its
//! format: the [`Rows`] trait, and CSV records read through it.

use super::csv_lines::CsvLines;
use super::input::{ColSel, pick_time_column, resolve};
use super::log::LineError;
use super::quotes::{QuoteGuard, UnclosedQuote};
use anyhow::{Result, anyhow};
use std::io::{self, Read};

/// A log being read row by row: CSV records, or lines of an access-log
/// format read into named fields.
pub(super) trait Rows {
    /// Column names, when the log has them.
    fn header(&self) -> Option<&[String]>;
    /// The index of a named or numbered column.
    fn column(&mut self, sel: &ColSel, what: &str, file: &str) -> Result<usize> {
        resolve(sel, self.header(), what, file)
    }
    /// The time column(s) when none is named.
    fn default_time(&mut self, file: &str) -> Result<(usize, Option<usize>)> {
        pick_time_column(self.header(), file).map(|t| (t, None))
    }
    /// Moves to the next row: `Some(Ok)` a row, `Some(Err)` a line that
    /// cannot be read (the reason), `None` the end.
    fn advance(&mut self) -> Result<Option<Result<(), LineError>>>;
    /// The row's line in its file.
    fn line(&self) -> u64;
    /// Fields in the row.
    fn len(&self) -> usize;
    fn get(&self, i: usize) -> Option<&[u8]>;
    /// The access-log format's name; `None` for CSV.
    fn format(&self) -> Option<&'static str> {
        None
    }
    /// Fails when the first line shows the log is not in this format at
    /// all, before its (unknown) field names are looked up.
    fn check_start(&mut self, _file: &str) -> Result<()> {
        Ok(())
    }
}

pub(super) struct CsvRows<R: Read> {
    csv: CsvLines<R>,
    header: Option<Vec<String>>,
    name: String,
}

impl<R: Read> CsvRows<R> {
    /// Reads the header row; `None` for an empty file.
    pub(super) fn new(
        reader: R,
        delimiter: u8,
        no_header: bool,
        skip_bad: bool,
        name: &str,
    ) -> Result<Option<Self>> {
        let mut rows = CsvRows {
            csv: CsvLines::new(QuoteGuard::new(reader, delimiter, skip_bad), delimiter),
            header: None,
            name: name.to_string(),
        };
        if !no_header {
            if !rows.read()? {
                return Ok(None); // an empty file: no header, no rows
            }
            let csv = &rows.csv;
            rows.header = Some(
                (0..csv.len())
                    .filter_map(|i| csv.get(i))
                    .map(|f| crate::quote::text_of(f).trim().to_string())
                    .collect(),
            );
        }
        Ok(Some(rows))
    }

    #[inline(always)]
    fn read(&mut self) -> Result<bool> {
        self.csv
            .read_record()
            .map_err(|e| read_error(e, &self.name))
    }

    /// Rows skipped for a stray quote.
    pub(super) fn skipped(&self) -> u64 {
        self.csv.guard().skipped()
    }
}

/// A read error as one line naming the file, and for a stray quote the
/// line where it opened and what to do.
fn read_error(io: io::Error, name: &str) -> anyhow::Error {
    if let Some(q) = io.get_ref().and_then(|i| i.downcast_ref::<UnclosedQuote>()) {
        return anyhow!(
            "{name}:{}: {q}; close the quote (a quote inside a quoted field is written \"\"), or pass --skip-bad to skip that row",
            q.line
        );
    }
    anyhow::Error::new(io).context(format!("{name}: cannot read the log"))
}

impl<R: Read> Rows for CsvRows<R> {
    fn header(&self) -> Option<&[String]> {
        self.header.as_deref()
    }

    #[inline(always)]
    fn advance(&mut self) -> Result<Option<Result<(), LineError>>> {
        loop {
            if !self.read()? {
                return Ok(None);
            }
            if self.csv.len() == 1 && self.csv.get(0).is_some_and(|f| f.trim_ascii().is_empty()) {
                continue; // a blank line
            }
            return Ok(Some(Ok(())));
        }
    }

    #[inline]
    fn line(&self) -> u64 {
        self.csv.line()
    }

    fn len(&self) -> usize {
        self.csv.len()
    }

    #[inline]
    fn get(&self, i: usize) -> Option<&[u8]> {
        self.csv.get(i)
    }
}
