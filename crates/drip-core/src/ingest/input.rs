//! What to read and how: the [`InputSpec`] a command builds from its
//! options, the text of the reading options (`--time-column`,
//! `--time-format`, `--input-format`, `--delimiter`) checked once, and
//! columns named by header or index resolved against a log's header.
//! Reading itself is in [`super::reader`]; rows travel in
//! [`super::batch::Batch`]es.

use super::log::key::KeyShape;
use super::timestamp::TimeFormat;
use crate::ingest::log::InputFormat;
use crate::quote::{delimiter_hint, listing, shown_str};
use anyhow::{Result, anyhow, bail};
use std::path::{Path, PathBuf};

// The rows' types and the file names, where commands have always found them.
pub use super::batch::{Batch, Event, MAX_KEYS, first_key};
pub use super::open::file_name;
pub(crate) use crate::quote::shown;

/// Header names tried, in order, when no `--time-column` is given.
const TIME_NAMES: [&str; 15] = [
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
    // Traefik's JSON access log.
    "StartUTC",
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
    /// How key values are shaped: `host:port` / `[v6]:port` without the
    /// port, addresses grouped by IPv4 and IPv6 prefix lengths.
    pub key_shape: KeyShape,
    /// The zone of timestamps written without a UTC offset (`None`: UTC).
    pub zone: Option<super::timestamp::Zone>,
    /// Rows that cannot be read, and lines too long.
    pub tolerance: Tolerance,
    /// Where notes on what reading detected or did go (the command line
    /// prints them on stderr unless `--quiet`).
    pub notes: crate::notes::Notes,
    /// The files are logs of one period from several sources: each is read
    /// in time order on its own, and their rows merged by time.
    pub merge: bool,
}

/// What reading tolerates.
#[derive(Clone, Copy, Debug)]
pub struct Tolerance {
    /// Rows that cannot be read are skipped and counted, instead of an error.
    pub skip_bad: bool,
    /// The longest line, in bytes: a longer one is never held in memory. A
    /// CSV line stops the read; a line of an access-log format is a bad
    /// row (skipped and counted with `skip_bad`).
    pub max_line: usize,
}

/// `--max-line`: bytes, or with a unit: `512K`, `4M`, `1MiB`, `1G`
/// (powers of 1024).
pub fn parse_max_line(text: &str) -> Result<usize> {
    let t = text.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(digits);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => 64,
    };
    n.parse::<usize>()
        .ok()
        .filter(|&n| n > 0 && shift < 64)
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| {
            anyhow!(
                "invalid --max-line '{}': give a positive size in bytes, or with K, M or G (e.g. 1M, 512K)",
                shown_str(text)
            )
        })
}

/// `--time-column`: one column, or a date and a time column as `DATE,TIME`.
pub fn parse_time_column(t: &str) -> Result<Vec<ColSel>> {
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
pub fn parse_time_format(text: &str) -> Result<TimeFormat> {
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
pub fn input_format(given: InputFormat, log_format: Option<&str>) -> Result<InputFormat> {
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

pub(super) fn default_delimiter(path: &Path) -> u8 {
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
pub fn tab_separated(sample: &[u8]) -> bool {
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
pub(super) fn key_parts(sel: &ColSel) -> Vec<ColSel> {
    match sel {
        ColSel::Name(n) if n.contains(',') => {
            n.split(',').map(|p| ColSel::parse(p.trim())).collect()
        }
        s => vec![s.clone()],
    }
}

pub fn resolve(sel: &ColSel, header: Option<&[String]>, what: &str, file: &str) -> Result<usize> {
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

pub fn pick_time_column(header: Option<&[String]>, file: &str) -> Result<usize> {
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
