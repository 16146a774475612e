//! Reading logs: plain, `.gz` (by magic bytes) and stdin, several files as
//! one log in the order given, each with its own header row. Every data row
//! becomes an [`Event`] `{at, key ids, cost}`; a row that cannot be read is
//! an error naming file, line and text, or is skipped and counted with
//! `--skip-bad`. Rows stream in batches: memory does not follow the log.

use super::timestamp::{TimeFormat, TimeParser};
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

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
    "request_time",
    "msec",
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
            ColSel::Name(n) => write!(f, "'{n}'"),
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
    pub delimiter: Option<u8>,
    pub no_header: bool,
    /// Key values `host:port` / `[v6]:port` lose the port.
    pub strip_port: bool,
    /// The zone of timestamps written without a UTC offset (`None`: UTC).
    pub zone: Option<super::timestamp::Zone>,
    pub skip_bad: bool,
    pub quiet: bool,
}

impl InputSpec {
    /// The reading options as given on the command line, checked once, with
    /// the distinct key columns the policies count by (`quiet`: no notes).
    pub fn from_args(
        args: &crate::cli::InputArgs,
        key_cols: Vec<ColSel>,
        quiet: bool,
    ) -> Result<InputSpec> {
        let delimiter = args.delimiter.as_deref().map(parse_delimiter).transpose()?;
        let time_col = match args.time_column.as_deref() {
            None => None,
            Some(t) => {
                let cols: Vec<ColSel> = t.split(',').map(|c| ColSel::parse(c.trim())).collect();
                if cols.len() > 2 || cols.iter().any(|c| *c == ColSel::Name(String::new())) {
                    bail!(
                        "invalid --time-column '{t}': give one column, or a date and a time column as DATE,TIME"
                    );
                }
                Some(cols)
            }
        };
        let time_format = TimeFormat::parse(&args.time_format);
        if let TimeFormat::Strftime(p) = &time_format
            && !p.contains('%')
        {
            bail!(
                "invalid --time-format '{p}': give auto, rfc3339, epoch-s, epoch-ms, epoch-us, epoch-ns, clf, or a strftime pattern such as '%d/%m/%Y %H:%M:%S'"
            );
        }
        for f in &args.files {
            if f.as_os_str() != "-" && !f.exists() {
                bail!("cannot open '{}': no such file", f.display());
            }
            if f.is_dir() {
                bail!(
                    "'{}' is a directory; give the log files in it (e.g. '{}'/*.csv.gz)",
                    f.display(),
                    f.display()
                );
            }
        }
        Ok(InputSpec {
            files: args.files.clone(),
            time_col,
            time_format,
            key_cols,
            cost_col: args.cost_column.as_deref().map(ColSel::parse),
            delimiter,
            no_header: args.no_header,
            strip_port: args.strip_port,
            zone: args
                .tz
                .as_deref()
                .map(super::timestamp::Zone::parse)
                .transpose()
                .map_err(|e| anyhow!("--tz: {e}"))?,
            skip_bad: args.skip_bad,
            quiet,
        })
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
    /// Key id per key column (`EMPTY_KEY` for an empty value). As read,
    /// before [`Batch::intern`], the end of each key value in the batch's
    /// `key_bytes` (values are stored back to back, row by row).
    pub keys: [u32; MAX_KEYS],
}

/// Rows read since the last batch, with their key values back to back.
#[derive(Default)]
pub struct Batch {
    pub events: Vec<Event>,
    pub key_bytes: Vec<u8>,
    /// True once `keys` hold ids.
    pub interned: bool,
    /// (key column, start, end) in `key_bytes` of each value first seen in
    /// this batch, in id order.
    pub new_keys: Vec<(u8, u32, u32)>,
}

impl Batch {
    /// Turns each event's key values into ids, in row order (so ids follow
    /// first appearance), noting values never seen before in `new_keys`.
    pub fn intern(&mut self, interners: &mut [super::keys::Interner]) {
        use super::keys::Interner;
        const AHEAD: usize = 8;
        let cols = interners.len();
        // Hash every value first, so each table slot can be fetched from
        // memory a few values before it is probed.
        let mut spans = Vec::with_capacity(self.events.len() * cols);
        let mut start = 0usize;
        for ev in &self.events {
            for c in 0..cols {
                let end = ev.keys[c] as usize;
                spans.push((start, end, Interner::hash(&self.key_bytes[start..end])));
                start = end;
            }
        }
        for (n, &(start, end, h)) in spans.iter().enumerate() {
            if let Some(&(_, _, ahead)) = spans.get(n + AHEAD * cols) {
                interners[n % cols].prefetch(ahead);
            }
            let c = n % cols;
            let (id, new) = interners[c].intern_hashed(&self.key_bytes[start..end], h);
            if new {
                self.new_keys.push((c as u8, start as u32, end as u32));
            }
            self.events[n / cols].keys[c] = id;
        }
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

/// A client address without its port: `10.0.0.1:2817` → `10.0.0.1`,
/// `[2001:db8::1]:443` → `2001:db8::1`. A bare IPv6 address (several
/// colons, no brackets) and anything else are left as they are.
pub fn strip_port(v: &[u8]) -> &[u8] {
    let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
    if let Some(rest) = v.strip_prefix(b"[") {
        if let Some(close) = rest.iter().position(|&b| b == b']') {
            let after = &rest[close + 1..];
            if after.is_empty() || after.first() == Some(&b':') && digits(&after[1..]) {
                return &rest[..close];
            }
        }
        return v;
    }
    let mut colons = v.iter().enumerate().filter(|(_, b)| **b == b':');
    match (colons.next(), colons.next()) {
        (Some((i, _)), None) if digits(&v[i + 1..]) => &v[..i],
        _ => v,
    }
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

fn open(path: &Path, bytes: &Arc<AtomicU64>) -> Result<Box<dyn Read + Send>> {
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
        Ok(Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(buffered),
        )))
    } else {
        Ok(Box::new(buffered))
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

/// Parses `--delimiter`: one ASCII character, `tab` or `\t`.
pub fn parse_delimiter(text: &str) -> Result<u8> {
    match text {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        t if t.len() == 1 && t.is_ascii() => Ok(t.as_bytes()[0]),
        t => bail!("invalid --delimiter '{t}': give one ASCII character, or 'tab'"),
    }
}

/// Column positions resolved against one file's header.
struct Columns {
    time: usize,
    /// The time-of-day column when date and time are split.
    time2: Option<usize>,
    keys: Vec<usize>,
    cost: Option<usize>,
}

fn resolve(sel: &ColSel, header: Option<&[String]>, what: &str, file: &str) -> Result<usize> {
    let listing = |h: &[String]| {
        h.iter()
            .enumerate()
            .map(|(i, n)| format!("{i}:{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (sel, header) {
        (ColSel::Index(i), Some(h)) if *i >= h.len() => bail!(
            "{file}: no {what} column #{i}: the file has {} columns ({})",
            h.len(),
            listing(h)
        ),
        (ColSel::Index(i), _) => Ok(*i),
        (ColSel::Name(n), None) => bail!(
            "{file}: {what} column '{n}' named, but --no-header is set; name it by 0-based index"
        ),
        (ColSel::Name(n), Some(h)) => h
            .iter()
            .position(|c| c == n)
            .or_else(|| h.iter().position(|c| c.eq_ignore_ascii_case(n)))
            .ok_or_else(|| {
                anyhow!(
                    "{file}: no {what} column '{n}'; the columns are: {}",
                    listing(h)
                )
            }),
    }
}

fn pick_time_column(header: Option<&[String]>, file: &str) -> Result<usize> {
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
    bail!(
        "{file}: no time column found among {}; give --time-column NAME or INDEX",
        h.iter()
            .enumerate()
            .map(|(i, n)| format!("{i}:{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A field's text for a message: at most 80 characters, control
/// characters escaped (a stray quote can pull newlines into a field).
fn shown(value: &[u8]) -> String {
    let s = String::from_utf8_lossy(value);
    let mut out: String = s.chars().take(80).flat_map(char::escape_debug).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// Reads every file in order, calling `emit` with each batch; `emit`
/// returns false to stop early (the replay has failed).
/// With `interners`, key values are turned into ids here, on the reader's
/// thread; without, the receiver does it.
pub fn read_all(
    spec: &InputSpec,
    bytes: &Arc<AtomicU64>,
    mut interners: Option<Vec<super::keys::Interner>>,
    mut emit: impl FnMut(Batch) -> bool,
) -> Result<InputSummary> {
    let mut emit = |mut b: Batch| {
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
    let mut summary = InputSummary::default();
    let mut times = TimeParser::new(spec.time_format.clone(), spec.zone.clone());
    let mut announce: Option<String> = None;
    let mut naive_said = false;
    let mut batch = Batch::default();
    let mut row_no = 0u64;
    for (file_idx, path) in files.iter().enumerate() {
        let name = file_name(path);
        let reader = open(path, bytes)?;
        let delimiter = spec.delimiter.unwrap_or_else(|| default_delimiter(path));
        let mut csv = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .delimiter(delimiter)
            .buffer_capacity(1 << 16)
            .from_reader(reader);
        let mut record = csv::ByteRecord::new();
        let read = |csv: &mut csv::Reader<_>, record: &mut csv::ByteRecord| {
            csv.read_byte_record(record)
                .with_context(|| format!("{name}: cannot read the log"))
        };
        let header: Option<Vec<String>> = if spec.no_header {
            None
        } else if read(&mut csv, &mut record)? {
            Some(
                record
                    .iter()
                    .map(|f| String::from_utf8_lossy(f).trim().to_string())
                    .collect(),
            )
        } else {
            continue; // an empty file: no header, no rows
        };
        let h = header.as_deref();
        let cols = Columns {
            time: match spec.time_col.as_deref() {
                Some([sel, ..]) => resolve(sel, h, "time", &name)?,
                _ => pick_time_column(h, &name)?,
            },
            time2: match spec.time_col.as_deref() {
                Some([_, sel]) => Some(resolve(sel, h, "time", &name)?),
                _ => None,
            },
            keys: spec
                .key_cols
                .iter()
                .map(|k| resolve(k, h, "key", &name))
                .collect::<Result<_>>()?,
            cost: spec
                .cost_col
                .as_ref()
                .map(|c| resolve(c, h, "cost", &name))
                .transpose()?,
        };
        if summary.time_column.is_empty() {
            let col = |i: usize| match h {
                Some(h) => h[i].clone(),
                None => format!("#{i}"),
            };
            summary.time_column = match cols.time2 {
                Some(t2) => format!("{}+{}", col(cols.time), col(t2)),
                None => col(cols.time),
            };
        }
        let mut joined = Vec::new();
        while read(&mut csv, &mut record)? {
            let line = record.position().map_or(0, |p| p.line());
            if record.len() == 1 && record[0].trim_ascii().is_empty() {
                continue; // a blank line
            }
            row_no += 1;
            let bad = |what: String| -> anyhow::Error {
                anyhow!(
                    "{name}:{line}: {what}; fix the row, or pass --skip-bad to skip and count such rows"
                )
            };
            let parsed = (|| -> Result<Event> {
                let field = |i: usize, what: &str| {
                    record.get(i).ok_or_else(|| {
                        bad(format!(
                            "the row has {} field(s), no {what} column #{i}",
                            record.len()
                        ))
                    })
                };
                let mut tv = field(cols.time, "time")?;
                if let Some(t2) = cols.time2 {
                    joined.clear();
                    joined.extend_from_slice(tv.trim_ascii());
                    joined.push(b' ');
                    joined.extend_from_slice(field(t2, "time")?.trim_ascii());
                    tv = &joined;
                }
                if times.format == TimeFormat::Auto {
                    let format = TimeFormat::detect(tv).ok_or_else(|| {
                        bad(format!(
                            "cannot tell the time format of '{}' in column '{}'; set --time-format",
                            shown(tv),
                            summary.time_column
                        ))
                    })?;
                    announce = (!spec.quiet).then(|| {
                        format!(
                            "drip: reading column '{}' as {format} (detected from '{}'; set --time-format to override)",
                            summary.time_column,
                            shown(tv.trim_ascii())
                        )
                    });
                    times = TimeParser::new(format, spec.zone.clone());
                }
                let at = times.parse(tv).map_err(|e| {
                    bad(format!(
                        "bad timestamp '{}' in column '{}': {e}",
                        shown(tv),
                        summary.time_column
                    ))
                })?;
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
                                    "bad cost '{}': a whole number from 1 to 4294967295",
                                    shown(v)
                                ))
                            })?
                    }
                };
                let mut keys = [0; MAX_KEYS];
                let mark = batch.key_bytes.len();
                for (slot, &c) in cols.keys.iter().enumerate() {
                    let v = match field(c, "key") {
                        Ok(v) if spec.strip_port => strip_port(v.trim_ascii()),
                        Ok(v) => v.trim_ascii(),
                        Err(e) => {
                            batch.key_bytes.truncate(mark);
                            return Err(e);
                        }
                    };
                    batch.key_bytes.extend_from_slice(v);
                    keys[slot] = u32::try_from(batch.key_bytes.len())
                        .map_err(|_| bad("key values too long".into()))?;
                }
                Ok(Event {
                    at,
                    row: row_no,
                    line,
                    file: file_idx as u32,
                    cost,
                    keys,
                })
            })();
            match parsed {
                Ok(ev) => {
                    // Said once a row has read well, so an error stays one line.
                    if let Some(note) = announce.take() {
                        eprintln!("{note}");
                    }
                    if times.naive_seen && !naive_said && spec.zone.is_none() && !spec.quiet {
                        naive_said = true;
                        eprintln!(
                            "drip: timestamps in column '{}' have no UTC offset; reading them as UTC (set --tz if they are local times)",
                            summary.time_column
                        );
                    }
                    summary.rows += 1;
                    batch.events.push(ev);
                    if batch.events.len() >= BATCH && !emit(std::mem::take(&mut batch)) {
                        return Ok(summary);
                    }
                }
                Err(e) if spec.skip_bad => {
                    let _ = e;
                    summary.bad_rows += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
    if !batch.events.is_empty() {
        emit(batch);
    }
    summary.time_format = times.format.to_string();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::strip_port;

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
