//! Reading logs: plain, `.gz` (by magic bytes) and stdin, several files as
//! one log in the order given, each with its own header row. Every data row
//! becomes an [`Event`] `{at, key ids, cost}`; a row that cannot be read is
//! an error naming file, line and text, or is skipped and counted with
//! `--skip-bad`. Rows stream in batches: memory does not follow the log.

use super::csv_lines::CsvLines;
use super::quotes::{QuoteGuard, UnclosedQuote};
use super::timestamp::{TimeFormat, TimeParser};
use crate::ingest::log::InputFormat;
use crate::quote::{NotText, delimiter_hint, listing, shown_str};
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Most distinct key columns one run can count by.
pub const MAX_KEYS: usize = 4;

/// Rows per batch handed from the reader to the replay.
pub const BATCH: usize = 4096;

/// Header names tried, in order, when no `--time-column` is given.
const TIME_NAMES: [&str; 14] = [
    "ts",
    "time",
    "timestamp",
    "@timestamp",
    "date",
    "datetime",
    "time_local",
    "time_iso8601",
    "start_time",
    "starttime",
    // `msec` first: nginx's `request_time` is a duration.
    "msec",
    "request_time",
    "_time",
    "t",
];

/// A column named by header or by 0-based index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ColSel {
    Name(String),
    Index(usize),
}

impl ColSel {
    pub fn parse(text: &str) -> ColSel {
        match text.parse::<usize>() {
            Ok(i) => ColSel::Index(i),
            Err(_) => ColSel::Name(text.to_string()),
        }
    }
}

impl std::fmt::Display for ColSel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ColSel::Name(n) => write!(f, "'{}'", shown_str(n)),
            ColSel::Index(i) => write!(f, "#{i}"),
        }
    }
}

/// What to read and how.
#[derive(Clone, Debug)]
pub struct InputSpec {
    /// Files in order; empty or `-` means stdin.
    pub files: Vec<PathBuf>,
    /// The time column, or two (a date and a time column, joined with a
    /// space before parsing, as CloudFront and IIS logs write them).
    pub time_col: Option<Vec<ColSel>>,
    pub time_format: TimeFormat,
    /// Distinct key columns; an event carries one id per entry.
    pub key_cols: Vec<ColSel>,
    pub cost_col: Option<ColSel>,
    /// A request's duration (seconds), subtracted from a completion time
    /// to get its arrival.
    pub duration_col: Option<ColSel>,
    /// How lines are written (`Auto`: detected from the first file).
    pub input_format: InputFormat,
    /// An nginx `log_format` string, for `InputFormat::Nginx`.
    pub log_format: Option<String>,
    pub delimiter: Option<u8>,
    pub no_header: bool,
    /// Key values `host:port` / `[v6]:port` lose the port.
    pub strip_port: bool,
    /// Addresses in keys grouped by these IPv4 and IPv6 prefix lengths.
    pub key_prefix: Option<(u8, u8)>,
    /// The zone of timestamps written without a UTC offset (`None`: UTC).
    pub zone: Option<super::timestamp::Zone>,
    pub skip_bad: bool,
    pub quiet: bool,
    /// The files are logs of one period from several sources: each is read
    /// in time order on its own, and their rows merged by time.
    pub merge: bool,
}

/// `--time-column`: one column, or a date and a time column as `DATE,TIME`.
pub(crate) fn parse_time_column(t: &str) -> Result<Vec<ColSel>> {
    let cols: Vec<ColSel> = t.split(',').map(|c| ColSel::parse(c.trim())).collect();
    if cols.len() > 2 || cols.iter().any(|c| *c == ColSel::Name(String::new())) {
        bail!(
            "invalid --time-column '{}': give one column, or a date and a time column as DATE,TIME",
            shown_str(t)
        );
    }
    Ok(cols)
}

/// `--time-format`: a named format, or a strftime pattern (which has a `%`).
pub(crate) fn parse_time_format(text: &str) -> Result<TimeFormat> {
    let format = TimeFormat::parse(text);
    if let TimeFormat::Strftime(p) = &format
        && !p.contains('%')
    {
        bail!(
            "invalid --time-format '{}': give auto, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, clf, or a strftime pattern such as '%d/%m/%Y %H:%M:%S'",
            shown_str(p)
        );
    }
    Ok(format)
}

/// The format of the logs from `--input-format` and `--log-format`: a
/// `--log-format` means nginx lines, and nginx lines need one.
pub(crate) fn input_format(given: InputFormat, log_format: Option<&str>) -> Result<InputFormat> {
    match (given, log_format) {
        (InputFormat::Auto | InputFormat::Nginx, Some(f)) => {
            crate::ingest::log::nginx::Nginx::compile(f)?;
            Ok(InputFormat::Nginx)
        }
        (other, Some(_)) => bail!(
            "--log-format describes nginx lines, but --input-format is {}; drop one of them",
            other.name()
        ),
        (InputFormat::Nginx, None) => bail!(
            "--input-format nginx needs --log-format 'FORMAT', the log_format string from nginx.conf (e.g. '$remote_addr [$time_local] \"$request\" $status')"
        ),
        (other, None) => Ok(other),
    }
}


/// One request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub at: Nanos,
    /// 1-based data row in input order (headers not counted).
    pub row: u64,
    /// Line of the row in its file, for messages.
    pub line: u64,
    pub file: u32,
    pub cost: u32,
    /// Key id per key column (`EMPTY_KEY` for an empty value), set by
    /// [`Batch::intern`]; until then 0 and unused (the values are in the
    /// batch's `key_bytes`).
    pub keys: [u32; MAX_KEYS],
}

/// Rows read since the last batch, with their key values back to back.
#[derive(Default)]
pub struct Batch {
    pub events: Vec<Event>,
    /// The rows' key values, back to back, row by row, column by column.
    pub key_bytes: Vec<u8>,
    /// Where each value ends in `key_bytes`: one per key column per row.
    pub key_ends: Vec<u32>,
    /// True once the events' `keys` hold ids.
    pub interned: bool,
    /// (key column, start, end) in `key_bytes` of each value first seen in
    /// this batch, in id order.
    pub new_keys: Vec<(u8, u32, u32)>,
    /// Room for the values' places and hashes while interning.
    spans: Vec<(usize, usize, u64)>,
}

impl Batch {
    /// An empty batch with room for as much as this one holds, so that the
    /// next batch fills without growing step by step.
    fn empty_like(&self) -> Batch {
        Batch {
            events: Vec::with_capacity(self.events.len()),
            key_bytes: Vec::with_capacity(self.key_bytes.len()),
            key_ends: Vec::with_capacity(self.key_ends.len()),
            interned: false,
            new_keys: Vec::new(),
            spans: Vec::new(),
        }
    }

    /// Empties the batch for the reader to fill again, its room kept: a
    /// batch handed back saves allocating (and faulting in) the next.
    pub fn recycle(&mut self) {
        self.events.clear();
        self.key_bytes.clear();
        self.key_ends.clear();
        self.new_keys.clear();
        self.interned = false;
    }

    /// Turns each event's key values into ids, in row order (so ids follow
    /// first appearance), noting values never seen before in `new_keys`.
    pub fn intern(&mut self, interners: &mut [super::keys::Interner]) {
        use super::keys::Interner;
        const AHEAD: usize = 8;
        let cols = interners.len();
        // Key columns read per row; interners beyond them see empty values.
        let read = self
            .key_ends
            .len()
            .checked_div(self.events.len())
            .unwrap_or(0);
        // Hash every value first, so each table slot can be fetched from
        // memory a few values before it is probed.
        let mut spans = std::mem::take(&mut self.spans);
        spans.clear();
        let mut start = 0usize;
        for n in 0..self.events.len() {
            for c in 0..cols {
                let end = match c < read {
                    true => self.key_ends[n * read + c] as usize,
                    false => start,
                };
                spans.push((start, end, Interner::hash(&self.key_bytes[start..end])));
                start = end;
            }
            if read > 0 {
                start = self.key_ends[n * read + read - 1] as usize;
            }
        }
        // Row by row, column by column: the value `AHEAD` rows on in the
        // same column is fetched for its own interner.
        let mut i = 0;
        for row in 0..self.events.len() {
            for (c, interner) in interners.iter_mut().enumerate() {
                let (start, end, h) = spans[i];
                if let Some(&(_, _, ahead)) = spans.get(i + AHEAD * cols) {
                    interner.prefetch(ahead);
                }
                let (id, new) = interner.intern_hashed(&self.key_bytes[start..end], h);
                if new {
                    self.new_keys.push((c as u8, start as u32, end as u32));
                }
                self.events[row].keys[c] = id;
                i += 1;
            }
        }
        self.spans = spans;
        self.interned = true;
    }
}

/// What the reader learned.
#[derive(Clone, Debug, Default)]
pub struct InputSummary {
    pub rows: u64,
    pub bad_rows: u64,
    pub time_column: String,
    pub time_format: String,
}

/// A display name for a file argument.
pub fn file_name(p: &Path) -> String {
    if p.as_os_str() == "-" {
        "<stdin>".into()
    } else {
        p.display().to_string()
    }
}

/// Counts bytes read, for the progress bar.
struct Counting<R> {
    inner: R,
    bytes: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

fn open(path: &Path, bytes: &Arc<AtomicU64>) -> Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(io::stdin())
    } else {
        let f = File::open(path)
            .with_context(|| format!("cannot open '{}'; check the path", path.display()))?;
        Box::new(f)
    };
    let mut buffered = BufReader::with_capacity(
        1 << 16,
        Counting {
            inner: raw,
            bytes: bytes.clone(),
        },
    );
    let magic = buffered
        .fill_buf()
        .with_context(|| format!("cannot read '{}'", file_name(path)))?;
    if magic.starts_with(&[0x1f, 0x8b]) {
        return Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            GzMembers::new(buffered),
        )));
    }
    match crate::quote::not_text(magic) {
        Some(NotText::Packed { kind, tool }) => bail!(
            "'{}' looks compressed ({kind}), which drip does not read; decompress it into drip: {tool} '{}' | drip ... -",
            file_name(path),
            path.display()
        ),
        Some(NotText::Binary) => bail!(
            "'{}' is binary data, not a text log (its first line holds a NUL byte); give the log itself (a UTF-16 log: convert it first with iconv -f UTF-16 -t UTF-8)",
            file_name(path)
        ),
        None => {}
    }
    Ok(Box::new(buffered))
}

/// Gzip members one after another (as `cat a.gz b.gz` makes), then
/// optionally zero bytes (tape and block padding, which `gzip -t` accepts
/// too). Anything else after the last member is trailing garbage, said
/// plainly with its offset.
struct GzMembers<R: BufRead> {
    member: Option<flate2::bufread::GzDecoder<R>>,
}

impl<R: BufRead> GzMembers<R> {
    fn new(inner: R) -> GzMembers<R> {
        GzMembers {
            member: Some(flate2::bufread::GzDecoder::new(inner)),
        }
    }
}

impl<R: BufRead> Read for GzMembers<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(member) = self.member.as_mut() else {
                return Ok(0);
            };
            let n = member.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The member ended: another, padding, the end, or garbage.
            let mut inner = self.member.take().expect("a member").into_inner();
            let mut zeros = 0u64;
            loop {
                let rest = inner.fill_buf()?;
                if rest.is_empty() {
                    return Ok(0);
                }
                if zeros == 0 && rest.starts_with(&[0x1f]) {
                    self.member = Some(flate2::bufread::GzDecoder::new(inner));
                    break;
                }
                match rest.iter().position(|&b| b != 0) {
                    None => {
                        let n = rest.len();
                        zeros += n as u64;
                        inner.consume(n);
                    }
                    Some(_) => {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            "trailing garbage after the gzip data (bytes that are neither another gzip member nor zero padding); the file was damaged or appended to: cut it at the end of the gzip data, or recompress the log",
                        ));
                    }
                }
            }
        }
    }
}

fn default_delimiter(path: &Path) -> u8 {
    let name = path.to_string_lossy();
    let name = name.strip_suffix(".gz").unwrap_or(&name);
    if name.ends_with(".tsv") || name.ends_with(".tab") {
        b'\t'
    } else {
        b','
    }
}

/// Whether a log's first line is separated by tabs rather than commas:
/// it has a tab and no comma.
pub(crate) fn tab_separated(sample: &[u8]) -> bool {
    let first = &sample[..memchr::memchr(b'\n', sample).unwrap_or(sample.len())];
    first.contains(&b'\t') && !first.contains(&b',')
}

/// Parses `--delimiter`: one ASCII character, `tab` or `\t`.
pub fn parse_delimiter(text: &str) -> Result<u8> {
    match text {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        t if t.len() == 1 && t.is_ascii() => Ok(t.as_bytes()[0]),
        t => bail!(
            "invalid --delimiter '{}': give one ASCII character, or 'tab'",
            shown_str(t)
        ),
    }
}

/// The columns of a key: `route,client` names two, joined into one key.
fn key_parts(sel: &ColSel) -> Vec<ColSel> {
    match sel {
        ColSel::Name(n) if n.contains(',') => {
            n.split(',').map(|p| ColSel::parse(p.trim())).collect()
        }
        s => vec![s.clone()],
    }
}

pub(crate) fn resolve(
    sel: &ColSel,
    header: Option<&[String]>,
    what: &str,
    file: &str,
) -> Result<usize> {
    match (sel, header) {
        (ColSel::Index(i), Some(h)) if *i >= h.len() => bail!(
            "{file}: no {what} column #{i}: the file has {} columns ({}){}",
            h.len(),
            listing(h),
            hint(h)
        ),
        (ColSel::Index(i), _) => Ok(*i),
        (ColSel::Name(n), None) => bail!(
            "{file}: {what} column '{}' named, but --no-header is set; name it by 0-based index",
            shown_str(n)
        ),
        (ColSel::Name(n), Some(h)) => h
            .iter()
            .position(|c| c == n)
            .or_else(|| h.iter().position(|c| c.eq_ignore_ascii_case(n)))
            .ok_or_else(|| {
                anyhow!(
                    "{file}: no {what} column '{}'; the columns are: {}{}",
                    shown_str(n),
                    listing(h),
                    hint(h)
                )
            }),
    }
}

pub(crate) fn pick_time_column(header: Option<&[String]>, file: &str) -> Result<usize> {
    let Some(h) = header else {
        bail!("{file}: with --no-header, give --time-column as a 0-based index");
    };
    for name in TIME_NAMES {
        if let Some(i) = h.iter().position(|c| c.trim().eq_ignore_ascii_case(name)) {
            return Ok(i);
        }
    }
    // Then the first header that says it holds a time (`time_ms`, `req_date`).
    if let Some(i) = h.iter().position(|c| {
        let c = c.to_ascii_lowercase();
        c.contains("time") || c.contains("date")
    }) {
        return Ok(i);
    }
    if let Some(advice) = delimiter_hint(h) {
        bail!("{file}: no time column found: {advice}");
    }
    bail!(
        "{file}: no time column found among {}; give --time-column NAME or INDEX",
        listing(h)
    )
}

/// The end of a no-such-column message for a header that is one column
/// holding another delimiter.
fn hint(h: &[String]) -> String {
    delimiter_hint(h).map_or(String::new(), |a| format!("; {a}"))
}

pub(crate) use crate::quote::shown;

/// A log being read row by row: CSV records, or lines of an access-log
/// format read into named fields.
trait Rows {
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
    fn advance(&mut self) -> Result<Option<Result<(), String>>>;
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

struct CsvRows<R: Read> {
    csv: CsvLines<R>,
    header: Option<Vec<String>>,
    name: String,
}

impl<R: Read> CsvRows<R> {
    /// Reads the header row; `None` for an empty file.
    fn new(
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
    fn skipped(&self) -> u64 {
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
    fn advance(&mut self) -> Result<Option<Result<(), String>>> {
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

/// Lines of an access-log format.
struct LineRows<R> {
    lines: crate::ingest::log::Lines<R>,
    parser: Box<dyn crate::ingest::log::LineParser>,
    fields: crate::ingest::log::Fields,
    /// The line in `lines.buf` is read but not yet parsed.
    pending: Option<crate::ingest::log::Line>,
    dash_is_empty: bool,
    quiet: bool,
}

impl<R: BufRead> LineRows<R> {
    /// Reads up to the first request line, so the format knows its field
    /// names (a W3C `#Fields:` line, a JSON line's paths).
    fn new(
        reader: R,
        mut parser: Box<dyn crate::ingest::log::LineParser>,
        name: &str,
        quiet: bool,
    ) -> Result<Self> {
        use crate::ingest::log::Line;
        let mut lines = crate::ingest::log::Lines::new(reader);
        let pending = loop {
            let l = lines
                .next_line()
                .with_context(|| format!("{name}: cannot read the log"))?;
            match l {
                Line::Ok if lines.buf.trim_ascii().is_empty() => continue,
                Line::Ok if parser.learn(&lines.buf) => continue,
                Line::End => break None,
                l => break Some(l),
            }
        };
        Ok(LineRows {
            lines,
            dash_is_empty: parser.dash_is_empty(),
            parser,
            fields: crate::ingest::log::Fields::default(),
            pending,
            quiet,
        })
    }
}

impl<R: BufRead> Rows for LineRows<R> {
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
                if !known && !self.quiet && format == "ndjson" {
                    crate::say!(
                        "drip: the first line of {file} has no field '{n}'; lines without it have an empty {what}"
                    );
                }
                Ok(i)
            }
        }
    }

    fn default_time(&mut self, file: &str) -> Result<(usize, Option<usize>)> {
        match self.parser.default_time() {
            Some(t) => Ok(t),
            None if self.parser.names().is_none() => bail!(
                "{file}: a request line comes before any #Fields: line, which names the fields; give the log with its header lines"
            ),
            None => {
                let t = pick_time_column(self.parser.names(), file)?;
                self.parser.field_at(t);
                Ok((t, None))
            }
        }
    }

    fn advance(&mut self) -> Result<Option<Result<(), String>>> {
        use crate::ingest::log::{Line, Parsed};
        loop {
            let l = match self.pending.take() {
                Some(l) => l,
                None => self.lines.next_line().context("cannot read the log")?,
            };
            match l {
                Line::End => return Ok(None),
                Line::TooLong => {
                    return Ok(Some(Err(format!(
                        "the line is longer than {} bytes",
                        crate::ingest::log::MAX_LINE
                    ))));
                }
                Line::Ok if self.lines.buf.trim_ascii().is_empty() => continue,
                Line::Ok => {
                    self.fields.clear();
                    match self.parser.parse(&self.lines.buf, &mut self.fields) {
                        Ok(Parsed::Record) => return Ok(Some(Ok(()))),
                        Ok(Parsed::Skip) => continue,
                        Err(e) => return Ok(Some(Err(e))),
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
        match self.fields.get(&self.lines.buf, i) {
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
        match self.parser.parse(&self.lines.buf, &mut fields) {
            Err(e) => bail!(
                "{file}:{}: {} line: {e}; is the log in this format? Set --input-format to its format, or leave it out to detect it",
                self.lines.line,
                self.parser.format()
            ),
            Ok(_) => Ok(()),
        }
    }
}

/// The notes said so far, shared by the readers of files merged by time.
pub type Notes = Arc<std::sync::Mutex<std::collections::HashSet<String>>>;

/// Reads every file in order, calling `emit` with each batch; `emit`
/// returns false to stop early (the replay has failed).
/// With `interners`, key values are turned into ids here, on the reader's
/// thread; without, the receiver does it.
pub fn read_all(
    spec: &InputSpec,
    bytes: &Arc<AtomicU64>,
    mut interners: Option<Vec<super::keys::Interner>>,
    recycled: mpsc::Receiver<Batch>,
    mut emit: impl FnMut(Batch) -> bool,
) -> Result<InputSummary> {
    let emit = |mut b: Batch| {
        if let Some(i) = interners.as_mut() {
            b.intern(i);
        }
        emit(b)
    };
    let stdin = [PathBuf::from("-")];
    let files: &[PathBuf] = if spec.files.is_empty() {
        &stdin
    } else {
        &spec.files
    };
    let mut reader = LogReader::new(spec, None);
    reader.recycled = Some(recycled);
    reader.read(files.iter().enumerate(), bytes, emit)
}

/// Reads file `file_idx` of the input alone, its key values left as
/// bytes, for a merge by time with the others (which `said` is shared
/// with). Its format is detected on its own.
pub fn read_one(
    spec: &InputSpec,
    file_idx: usize,
    bytes: &Arc<AtomicU64>,
    said: Notes,
    emit: impl FnMut(Batch) -> bool,
) -> Result<InputSummary> {
    let path = &spec.files[file_idx];
    LogReader::new(spec, Some(said)).read([(file_idx, path)], bytes, emit)
}

/// Reads logs into batches of events: opens each file, learns its format
/// and delimiter, resolves its columns once, then parses row after row
/// with [`LogReader::parse_row`]. What one file teaches (the time format
/// detected, the notes said) carries over to the next.
pub struct LogReader<'s> {
    spec: &'s InputSpec,
    summary: InputSummary,
    times: TimeParser,
    /// The time format note, said once a row has read well.
    announce: Option<String>,
    naive_said: bool,
    batch: Batch,
    row_no: u64,
    /// A date and a time joined, when the time is in two columns.
    joined: Vec<u8>,
    /// Notes already said by readers of other files read side by side
    /// (`--merge`), so a note every file would repeat is said once.
    said: Option<Notes>,
    /// How the files are written: given, or detected from the first file
    /// that has lines.
    format: Option<InputFormat>,
    /// Batches handed back empty by the receiver, to fill again.
    recycled: Option<mpsc::Receiver<Batch>>,
}

/// Column positions resolved against one file's header, with their names
/// as messages quote them.
struct Columns {
    time: usize,
    /// The time-of-day column when date and time are split.
    time2: Option<usize>,
    /// Per key: its columns, joined into one key when several.
    keys: Vec<Vec<usize>>,
    cost: Option<usize>,
    /// The request's duration, subtracted from its completion time.
    duration: Option<usize>,
    /// The access-log format's name; `None` for CSV.
    format: Option<&'static str>,
    time_name: String,
    duration_name: String,
    cost_name: String,
    key_names: Vec<Vec<String>>,
    shape: crate::ingest::log::key::KeyShape,
}

impl Columns {
    /// Resolves the spec's columns against the file's header or fields.
    fn resolve(rows: &mut impl Rows, spec: &InputSpec, name: &str) -> Result<Columns> {
        let (time, time2) = match spec.time_col.as_deref() {
            Some([sel]) => (rows.column(sel, "time", name)?, None),
            Some([sel, sel2, ..]) => (
                rows.column(sel, "time", name)?,
                Some(rows.column(sel2, "time", name)?),
            ),
            _ => rows.default_time(name)?,
        };
        let keys = spec
            .key_cols
            .iter()
            .map(|k| {
                key_parts(k)
                    .iter()
                    .map(|p| rows.column(p, "key", name))
                    .collect::<Result<Vec<usize>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        let cost = spec
            .cost_col
            .as_ref()
            .map(|c| rows.column(c, "cost", name))
            .transpose()?;
        let duration = spec
            .duration_col
            .as_ref()
            .map(|c| rows.column(c, "duration", name))
            .transpose()?;
        let format = rows.format();
        let h = rows.header();
        let col_name = |i: usize| match h.and_then(|h| h.get(i)) {
            Some(n) => n.clone(),
            None if format.is_some() => format!("field{i}"),
            None => format!("#{i}"),
        };
        Ok(Columns {
            time_name: match time2 {
                Some(t2) => format!("{}+{}", col_name(time), col_name(t2)),
                None => col_name(time),
            },
            duration_name: duration.map_or(String::new(), |d| shown_str(&col_name(d))),
            cost_name: cost.map_or(String::new(), |c| shown_str(&col_name(c))),
            key_names: keys
                .iter()
                .map(|k| k.iter().map(|&c| shown_str(&col_name(c))).collect())
                .collect(),
            time,
            time2,
            keys,
            cost,
            duration,
            format,
            shape: crate::ingest::log::key::KeyShape {
                strip_port: spec.strip_port,
                prefix: spec.key_prefix,
            },
        })
    }

    /// What a row is called in messages.
    fn thing(&self) -> &'static str {
        if self.format.is_some() { "line" } else { "row" }
    }

    /// What a column is called in messages.
    fn col(&self) -> &'static str {
        if self.format.is_some() {
            "field"
        } else {
            "column"
        }
    }
}

impl<'s> LogReader<'s> {
    pub fn new(spec: &'s InputSpec, said: Option<Notes>) -> LogReader<'s> {
        LogReader {
            spec,
            summary: InputSummary::default(),
            times: TimeParser::new(spec.time_format.clone(), spec.zone.clone()),
            announce: None,
            naive_said: false,
            batch: Batch::default(),
            row_no: 0,
            joined: Vec::new(),
            said,
            format: match spec.input_format {
                InputFormat::Auto => None,
                f => Some(f),
            },
            recycled: None,
        }
    }

    /// Reads `files` (each with its place in the input) one after another.
    pub fn read<'p>(
        mut self,
        files: impl IntoIterator<Item = (usize, &'p PathBuf)>,
        bytes: &Arc<AtomicU64>,
        mut emit: impl FnMut(Batch) -> bool,
    ) -> Result<InputSummary> {
        for (file_idx, path) in files {
            if !self.read_file(file_idx, path, bytes, &mut emit)? {
                return Ok(self.summary);
            }
        }
        if !self.batch.events.is_empty() {
            emit(self.batch);
        }
        self.summary.time_format = self.times.format.to_string();
        Ok(self.summary)
    }

    /// Reads one file; false when `emit` asked to stop.
    fn read_file(
        &mut self,
        file_idx: usize,
        path: &Path,
        bytes: &Arc<AtomicU64>,
        emit: &mut impl FnMut(Batch) -> bool,
    ) -> Result<bool> {
        let spec = self.spec;
        let name = file_name(path);
        let mut reader = open(path, bytes)?;
        let Some(f) = self.format_of(&mut reader, &name)? else {
            return Ok(true); // an empty file tells nothing
        };
        if let InputFormat::Csv | InputFormat::Tsv | InputFormat::Auto = f {
            let delimiter = self.delimiter_of(&mut reader, f, path, &name)?;
            let Some(mut rows) =
                CsvRows::new(reader, delimiter, spec.no_header, spec.skip_bad, &name)?
            else {
                return Ok(true);
            };
            let go = self.read_rows(&mut rows, file_idx, &name, emit)?;
            self.summary.bad_rows += rows.skipped();
            return Ok(go);
        }
        let parser = crate::ingest::log::parser(f, spec.log_format.as_deref())?;
        let mut rows = LineRows::new(reader, parser, &name, spec.quiet)?;
        if rows.pending.is_none() {
            return Ok(true); // no request lines: nothing to resolve columns against
        }
        self.read_rows(&mut rows, file_idx, &name, emit)
    }

    /// The file's format: as given, or detected from the first file with
    /// lines (`None`: an empty file before any, which tells nothing).
    fn format_of(
        &mut self,
        reader: &mut Box<dyn BufRead + Send>,
        name: &str,
    ) -> Result<Option<InputFormat>> {
        let auto = self.spec.input_format == InputFormat::Auto;
        if !auto {
            return Ok(self.format);
        }
        let sample = reader
            .fill_buf()
            .with_context(|| format!("cannot read '{name}'"))?;
        let detected = crate::ingest::log::detect(sample).unwrap_or(InputFormat::Csv);
        let Some(f) = self.format else {
            if sample.is_empty() {
                return Ok(None);
            }
            if detected != InputFormat::Csv && !self.spec.quiet {
                crate::say!(
                    "drip: reading {name} as {} lines (detected from its first lines; set --input-format to override)",
                    detected.name()
                );
            }
            self.format = Some(detected);
            return Ok(self.format);
        };
        // One audit reads one format: a later file whose lines are plainly
        // another format is named, not misread.
        let alike = f == detected
            || matches!(
                (f, detected),
                (InputFormat::Common, InputFormat::Combined)
                    | (InputFormat::Combined, InputFormat::Common)
            );
        if !sample.is_empty() && detected != InputFormat::Csv && !alike {
            bail!(
                "{name}: its first lines read as {} lines, but the files before it are {}; audit files of one format together, or set --input-format to read them all as one",
                detected.name(),
                f.name()
            );
        }
        Ok(Some(f))
    }

    /// A CSV file's delimiter: given, by its name, or tabs when its first
    /// line has tabs and no commas (detected only with `auto`).
    fn delimiter_of(
        &self,
        reader: &mut Box<dyn BufRead + Send>,
        f: InputFormat,
        path: &Path,
        name: &str,
    ) -> Result<u8> {
        let spec = self.spec;
        if let Some(d) = spec.delimiter {
            return Ok(d);
        }
        if f == InputFormat::Tsv {
            return Ok(b'\t');
        }
        let delimiter = default_delimiter(path);
        if spec.input_format != InputFormat::Auto || delimiter != b',' {
            return Ok(delimiter);
        }
        let sample = reader
            .fill_buf()
            .with_context(|| format!("cannot read '{name}'"))?;
        if !tab_separated(sample) {
            return Ok(delimiter);
        }
        if !spec.quiet {
            crate::say!(
                "drip: reading {name} as tab-separated (detected from its first line: tabs and no commas; set --delimiter to override)"
            );
        }
        Ok(b'\t')
    }

    /// Reads one file's rows into events; false when `emit` asked to stop.
    fn read_rows(
        &mut self,
        rows: &mut impl Rows,
        file_idx: usize,
        name: &str,
        emit: &mut impl FnMut(Batch) -> bool,
    ) -> Result<bool> {
        rows.check_start(name)?;
        let cols = Columns::resolve(rows, self.spec, name)?;
        if self.summary.time_column.is_empty() {
            self.summary.time_column = cols.time_name.clone();
            self.completion_note(&cols, rows.header());
        }
        let time_name = shown_str(&self.summary.time_column);
        let kind = cols.format.map_or(String::new(), |f| format!("{f} line: "));
        while let Some(read) = rows.advance()? {
            let line = rows.line();
            self.row_no += 1;
            let bad = |what: String| -> anyhow::Error {
                let thing = cols.thing();
                anyhow!(
                    "{name}:{line}: {kind}{what}; fix the {thing}, or pass --skip-bad to skip and count such {thing}s"
                )
            };
            let marks = (self.batch.key_bytes.len(), self.batch.key_ends.len());
            let parsed = read
                .map_err(&bad)
                .and_then(|()| self.parse_row(rows, &cols, &time_name, &bad));
            match parsed {
                Ok((at, cost)) => {
                    let ev = Event {
                        at,
                        row: self.row_no,
                        line,
                        file: file_idx as u32,
                        cost,
                        keys: [0; MAX_KEYS],
                    };
                    if !self.accept(ev, &cols, &time_name, emit) {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    self.batch.key_bytes.truncate(marks.0);
                    self.batch.key_ends.truncate(marks.1);
                    if !self.spec.skip_bad {
                        return Err(e);
                    }
                    self.summary.bad_rows += 1;
                }
            }
        }
        Ok(true)
    }

    /// Says, for the first file, when the time column is a completion time
    /// with the request's duration logged beside it: nginx's variables, and
    /// Caddy's JSON (`ts` is when the entry is written).
    fn completion_note(&self, cols: &Columns, header: Option<&[String]>) {
        const COMPLETIONS: [(&str, &str); 4] = [
            ("msec", "request_time"),
            ("time_local", "request_time"),
            ("time_iso8601", "request_time"),
            ("ts", "duration"),
        ];
        if let Some(f) = cols.format
            && self.spec.duration_col.is_none()
            && !self.spec.quiet
            && let Some(hd) = header
            && let Some((_, d)) = COMPLETIONS
                .iter()
                .find(|(t, d)| self.summary.time_column == *t && hd.iter().any(|n| n == d))
        {
            let text = format!(
                "drip: {f} lines are written when a request completes, so '{}' is a completion time; pass --duration-column {d} to replay arrival times",
                self.summary.time_column
            );
            self.note(text.clone(), &text);
        }
    }

    /// Parses the current row: its arrival time and cost, its key values
    /// appended to the batch. `bad` words an error about the row.
    fn parse_row(
        &mut self,
        rows: &impl Rows,
        cols: &Columns,
        time_name: &str,
        bad: &impl Fn(String) -> anyhow::Error,
    ) -> Result<(Nanos, u32)> {
        let field = |i: usize, what: &str| {
            rows.get(i).ok_or_else(|| match cols.format {
                Some(_) => bad(format!(
                    "no {what} field '{}' on this line",
                    shown_str(
                        &rows
                            .header()
                            .and_then(|h| h.get(i))
                            .cloned()
                            .unwrap_or_else(|| format!("field{i}"))
                    )
                )),
                None => bad(format!(
                    "the row has {} field(s), no {what} column #{i}",
                    rows.len()
                )),
            })
        };
        let col = cols.col();
        let mut tv = field(cols.time, "time")?;
        if let Some(t2) = cols.time2 {
            self.joined.clear();
            self.joined.extend_from_slice(tv.trim_ascii());
            self.joined.push(b' ');
            self.joined
                .extend_from_slice(field(t2, "time")?.trim_ascii());
            tv = &self.joined;
        }
        if self.times.format == TimeFormat::Auto {
            let format = TimeFormat::detect(tv).ok_or_else(|| {
                bad(format!(
                    "cannot tell the time format of '{}' in {col} '{time_name}'; set --time-format",
                    shown(tv)
                ))
            })?;
            self.announce = (!self.spec.quiet).then(|| {
                format!(
                    "drip: reading column '{time_name}' as {format} (detected from '{}'; set --time-format to override)",
                    shown(tv.trim_ascii())
                )
            });
            self.times = TimeParser::new(format, self.spec.zone.clone());
        }
        let mut at = self.times.parse(tv).map_err(|e| {
            bad(format!(
                "bad timestamp '{}' in {col} '{time_name}': {e}",
                shown(tv)
            ))
        })?;
        if let Some(d) = cols.duration {
            let dn = &cols.duration_name;
            let v = field(d, "duration")?;
            let took =
                super::timestamp::parse_epoch(v.trim_ascii(), Nanos::PER_SEC).map_err(|_| {
                    bad(format!(
                        "bad duration '{}' in {col} '{dn}': seconds such as 0.125",
                        shown(v)
                    ))
                })?;
            at = Nanos(at.0.checked_sub(took.0).ok_or_else(|| {
                bad(format!(
                    "duration '{}' in {col} '{dn}' is longer than the time since 1970",
                    shown(v)
                ))
            })?);
        }
        let cost = match cols.cost {
            None => 1,
            Some(c) => {
                let v = field(c, "cost")?;
                std::str::from_utf8(v.trim_ascii())
                    .ok()
                    .and_then(|s| s.parse::<u32>().ok())
                    .filter(|&c| c > 0)
                    .ok_or_else(|| {
                        bad(format!(
                            "bad cost '{}' in {col} '{}': a whole number from 1 to 4294967295",
                            shown(v),
                            cols.cost_name
                        ))
                    })?
            }
        };
        self.key_values(rows, cols, bad)?;
        Ok((at, cost))
    }

    /// Appends the row's key values to the batch, shaped (ports stripped,
    /// addresses grouped), with where each ends.
    fn key_values(
        &mut self,
        rows: &impl Rows,
        cols: &Columns,
        bad: &impl Fn(String) -> anyhow::Error,
    ) -> Result<()> {
        // A field some lines lack (a JSON path, a trailing field) is an
        // empty key part there.
        let lenient = cols.format.is_some();
        let plain = cols.shape == crate::ingest::log::key::KeyShape::default();
        let out = &mut self.batch.key_bytes;
        for (slot, parts) in cols.keys.iter().enumerate() {
            let missing = |n: usize| {
                bad(format!(
                    "the row has {} field(s), no key column '{}'",
                    rows.len(),
                    cols.key_names[slot][n]
                ))
            };
            match (parts.as_slice(), plain) {
                // One column, as it is: the common case, one look.
                ([c], true) => match rows.get(*c) {
                    Some(v) => out.extend_from_slice(v.trim_ascii()),
                    None if lenient => {}
                    None => return Err(missing(0)),
                },
                _ => {
                    if !lenient && let Some(n) = parts.iter().position(|&c| rows.get(c).is_none()) {
                        return Err(missing(n));
                    }
                    let value = |c: usize| rows.get(c).unwrap_or_default();
                    match parts.as_slice() {
                        [c] => cols.shape.append(value(*c), out),
                        _ => cols
                            .shape
                            .append_joined(parts.iter().map(|&c| value(c)), out),
                    }
                }
            }
            let end = u32::try_from(out.len()).map_err(|_| bad("key values too long".into()))?;
            self.batch.key_ends.push(end);
        }
        Ok(())
    }

    /// Takes a row that read well into the batch, saying what there is to
    /// say once; false when `emit` asked to stop.
    #[inline(always)]
    fn accept(
        &mut self,
        ev: Event,
        cols: &Columns,
        time_name: &str,
        emit: &mut impl FnMut(Batch) -> bool,
    ) -> bool {
        if self.announce.is_some() || self.times.naive_seen && !self.naive_said {
            self.first_notes(cols, time_name);
        }
        self.summary.rows += 1;
        self.batch.events.push(ev);
        if self.batch.events.len() < BATCH {
            return true;
        }
        let next = match self.recycled.as_ref().and_then(|r| r.try_recv().ok()) {
            Some(empty) => empty,
            None => self.batch.empty_like(),
        };
        emit(std::mem::replace(&mut self.batch, next))
    }

    /// The notes said once a row has read well (so that an error stays one
    /// line): the time format detected, and naive timestamps.
    #[cold]
    #[inline(never)]
    fn first_notes(&mut self, cols: &Columns, time_name: &str) {
        if let Some(note) = self.announce.take() {
            self.note(format!("time {time_name} {}", self.times.format), &note);
        }
        if self.times.naive_seen && !self.naive_said {
            self.naive_said = true;
            // W3C logs are UTC by definition.
            if self.spec.zone.is_none() && !self.spec.quiet && cols.format != Some("w3c") {
                self.note(
                    format!("naive {time_name}"),
                    &format!("drip: timestamps in column '{time_name}' have no UTC offset; reading them as UTC (set --tz if they are local times)"),
                );
            }
        }
    }

    /// Says `text` unless a note with the same `what` was said already.
    fn note(&self, what: String, text: &str) {
        if let Some(said) = &self.said {
            let mut said = said.lock().unwrap_or_else(|e| e.into_inner());
            if !said.insert(what) {
                return;
            }
        }
        crate::say!("{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::{Batch, Event, MAX_KEYS};
    use crate::ingest::log::key::strip_port;
    use crate::ingest::keys::{EMPTY_KEY, Interner};
    use crate::time::Nanos;

    /// A batch of rows with two key columns each, values back to back.
    fn batch(rows: &[[&str; 2]]) -> Batch {
        let mut b = Batch::default();
        for (n, values) in rows.iter().enumerate() {
            for v in values {
                b.key_bytes.extend_from_slice(v.as_bytes());
                b.key_ends.push(b.key_bytes.len() as u32);
            }
            b.events.push(Event {
                at: Nanos(n as u64),
                row: n as u64 + 1,
                line: n as u64 + 2,
                file: 0,
                cost: 1,
                keys: [0; MAX_KEYS],
            });
        }
        b
    }

    #[test]
    fn interning_gives_ids_by_first_appearance_per_column() {
        let mut b = batch(&[["a", "x"], ["bb", ""], ["a", "yy"], ["", "x"]]);
        let mut interners = vec![Interner::default(), Interner::default()];
        b.intern(&mut interners);
        assert!(b.interned);
        let keys: Vec<[u32; 2]> = b.events.iter().map(|e| [e.keys[0], e.keys[1]]).collect();
        assert_eq!(keys, [[0, 0], [1, EMPTY_KEY], [0, 1], [EMPTY_KEY, 0]]);
        let new: Vec<(u8, &[u8])> = b
            .new_keys
            .iter()
            .map(|&(c, s, e)| (c, &b.key_bytes[s as usize..e as usize]))
            .collect();
        assert_eq!(new, [(0, &b"a"[..]), (1, b"x"), (0, b"bb"), (1, b"yy")]);
        // A second batch knows the first one's values.
        let mut again = batch(&[["bb", "zz"]]);
        again.intern(&mut interners);
        assert_eq!(again.events[0].keys[..2], [1, 2]);
        assert_eq!(again.new_keys, [(1, 2, 4)]);
    }

    #[test]
    fn interners_beyond_the_columns_read_see_empty_values() {
        // Rows read with two key columns, interned by one: the second
        // column's values are skipped, not run into the next row's.
        let mut b = batch(&[["a", "x"], ["b", "y"], ["a", "z"]]);
        let mut one = vec![Interner::default()];
        b.intern(&mut one);
        let firsts: Vec<u32> = b.events.iter().map(|e| e.keys[0]).collect();
        assert_eq!(firsts, [0, 1, 0]);
        // And with more interners than columns, the extra ones see empty keys.
        let mut b = batch(&[["a", "x"], ["b", "y"]]);
        let mut three = vec![
            Interner::default(),
            Interner::default(),
            Interner::default(),
        ];
        b.intern(&mut three);
        let keys: Vec<[u32; 3]> = b
            .events
            .iter()
            .map(|e| [e.keys[0], e.keys[1], e.keys[2]])
            .collect();
        assert_eq!(keys, [[0, 0, EMPTY_KEY], [1, 1, EMPTY_KEY]]);
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
