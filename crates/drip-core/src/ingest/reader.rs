//! Reading logs: plain, `.gz` (by magic bytes) and stdin, several files as
//! one log in the order given, each with its own header row. Every data row
//! becomes an [`Event`] `{at, key ids, cost}`; a row that cannot be read is
//! an error naming file, line and text, or is skipped and counted with
//! `--skip-bad`. Rows stream in batches: memory does not follow the log.

use super::batch::{BATCH, Batch, Event, InputSummary, MAX_KEYS};
use super::columns::Columns;
use super::input::{InputSpec, default_delimiter, shown, tab_separated};
use super::line_rows::LineRows;
use super::open::{file_name, open};
use super::rows::{CsvRows, Rows};
use super::timestamp::{TimeFormat, TimeParser};
use super::window::Detected;
use crate::ingest::log::InputFormat;
use crate::quote::shown_str;
use crate::time::Nanos;
use anyhow::{Context, Result, anyhow, bail};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;

/// The notes said so far, shared by the readers of files merged by time.
pub type Said = Arc<std::sync::Mutex<std::collections::HashSet<String>>>;

/// Reads every file in order, calling `emit` with each batch; `emit`
/// returns false to stop early (the replay has failed).
/// With `interners`, key values are turned into ids here, on the reader's
/// thread; without, the receiver does it (as it must when a run reads
/// more than `MAX_KEYS` key columns: the spilled ids live with it).
pub fn read_all(
    spec: &InputSpec,
    bytes: &Arc<AtomicU64>,
    mut interners: Option<Vec<super::keys::Interner>>,
    recycled: mpsc::Receiver<Batch>,
    detected: Option<Detected>,
    mut emit: impl FnMut(Batch) -> bool,
) -> Result<InputSummary> {
    let emit = |mut b: Batch| {
        if let Some(i) = interners.as_mut() {
            assert!(
                i.len() <= MAX_KEYS,
                "spilled ids are interned by the receiver"
            );
            b.intern(i, &mut Default::default());
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
    reader.detected = detected;
    reader.read(files.iter().enumerate(), bytes, emit)
}

/// Reads file `file_idx` of the input alone, its key values left as
/// bytes, for a merge by time with the others (which `said` is shared
/// with). Its format is detected on its own.
pub fn read_one(
    spec: &InputSpec,
    file_idx: usize,
    bytes: &Arc<AtomicU64>,
    said: Said,
    detected: Option<Detected>,
    emit: impl FnMut(Batch) -> bool,
) -> Result<InputSummary> {
    let path = &spec.files[file_idx];
    let mut reader = LogReader::new(spec, Some(said));
    reader.detected = detected;
    reader.read([(file_idx, path)], bytes, emit)
}

/// Reads logs into batches of events: opens each file, learns its format
/// and delimiter, resolves its columns once, then parses row after row
/// with `LogReader::parse_row`. What one file teaches (the time format
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
    said: Option<Said>,
    /// How the files are written: given, or detected from the first file
    /// that has lines.
    format: Option<InputFormat>,
    /// Batches handed back empty by the receiver, to fill again.
    recycled: Option<mpsc::Receiver<Batch>>,
    /// Where the format detected is told (the reorder window depends on it).
    detected: Option<Detected>,
}

impl<'s> LogReader<'s> {
    pub fn new(spec: &'s InputSpec, said: Option<Said>) -> LogReader<'s> {
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
            detected: None,
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
            let reader = super::open::limit_lines(reader, spec.tolerance.max_line, &name);
            let Some(mut rows) = CsvRows::new(
                reader,
                delimiter,
                spec.no_header,
                spec.tolerance.skip_bad,
                &name,
            )?
            else {
                return Ok(true);
            };
            let go = self.read_rows(&mut rows, file_idx, &name, emit)?;
            self.summary.bad_rows += rows.skipped();
            return Ok(go);
        }
        let parser = crate::ingest::log::parser(f, spec.log_format.as_deref())?;
        let mut rows = LineRows::new(
            reader,
            parser,
            &name,
            spec.notes.clone(),
            spec.tolerance.max_line,
            spec.zone.is_some(),
        )?;
        if rows.pending.is_none() {
            return Ok(true); // no request lines: nothing to resolve columns against
        }
        let go = self.read_rows(&mut rows, file_idx, &name, emit)?;
        self.summary.truncated += rows.truncated;
        self.summary.notices += rows.notices;
        for (variant, n) in &rows.read_as {
            *self.summary.read_as.entry(variant.to_string()).or_default() += n;
        }
        Ok(go)
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
            self.key_hint(self.format);
            return Ok(self.format);
        }
        let sample = reader
            .fill_buf()
            .with_context(|| format!("cannot read '{name}'"))?;
        let detected = crate::ingest::log::detect(sample).unwrap_or(InputFormat::Csv);
        if detected == InputFormat::Csv
            && let Some(hint) = first_line(sample).and_then(crate::ingest::log::forwarded::hint)
        {
            bail!("{name}: its first line is in no format drip detects: {hint}");
        }
        let Some(f) = self.format else {
            if sample.is_empty() {
                return Ok(None);
            }
            if detected != InputFormat::Csv {
                self.spec.notes.say(format_args!(
                    "reading {name} as {} lines (detected from its first lines; set --input-format to override)",
                    detected.name()
                ));
            }
            self.format = Some(detected);
            self.key_hint(self.format);
            if let Some(cell) = &self.detected {
                let _ = cell.set(detected);
            }
            return Ok(self.format);
        };
        // One audit reads one format: a later file whose lines are plainly
        // another format is named, not misread.
        let alike = f == detected
            || matches!(
                (f, detected),
                (InputFormat::Common, InputFormat::Combined)
                    | (InputFormat::Combined, InputFormat::Common)
                    | (InputFormat::Vcommon, InputFormat::Vcombined)
                    | (InputFormat::Vcombined, InputFormat::Vcommon)
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
        spec.notes.say(format_args!(
            "reading {name} as tab-separated (detected from its first line: tabs and no commas; set --delimiter to override)"
        ));
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
        let cols = Columns::resolve(rows, self.spec, name).map_err(|e| {
            if rows.format().is_none()
                && self.spec.input_format == InputFormat::Auto
                && log_like(rows.header())
            {
                // Say why the file was read as CSV, and how to choose.
                let first = rows.header().and_then(|h| h.first());
                let w3c = match first.is_some_and(|c| crate::ingest::log::w3c::dated(c.as_bytes())) {
                    true => " (a date and a time first: a W3C log without its #Fields: line? put that line first)",
                    false => "",
                };
                anyhow!(
                    "{e:#}; it was read as CSV, its first lines being none of {}{w3c}; set --input-format FORMAT, or --log-format 'FORMAT' for an nginx log_format or Apache LogFormat",
                    crate::ingest::log::detected_names()
                )
            } else {
                e
            }
        })?;
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
                // A line of another shape names it: `this is not a combined line: ...`.
                let kind = if what.starts_with("this is not ") {
                    ""
                } else {
                    &kind
                };
                anyhow!(
                    "{name}:{line}: {kind}{what}; fix the {thing}, or pass --skip-bad to skip and count such {thing}s"
                )
            };
            let marks = (self.batch.key_bytes.len(), self.batch.key_ends.len());
            let parsed = read
                .map_err(|e| bad(e.to_string()))
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
                    if !self.spec.tolerance.skip_bad {
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
        const COMPLETIONS: [(&str, &str); 10] = [
            ("msec", "request_time"),
            ("time_local", "request_time"),
            ("time_iso8601", "request_time"),
            ("ts", "duration"),
            ("timestamp", "elapsed_ms"),
            ("time_micros", "time_taken_micros"),
            ("time_end_local", "request_time_us"),
            ("time_end_local", "request_time_ms"),
            ("time_end_epoch_ms", "request_time_us"),
            ("time_end_epoch_ms", "request_time_ms"),
        ];
        // Apache's %t is the arrival; GCS usage logs are CSV.
        let f = match cols.format {
            Some("apache") if !self.summary.time_column.starts_with("time_end") => None,
            None if self.summary.time_column == "time_micros" => Some("GCS usage"),
            f => f,
        };
        if let Some(f) = f
            && self.spec.duration_col.is_none()
            && !self.spec.notes.is_silent()
            && let Some(hd) = header
            && let Some((_, d)) = COMPLETIONS
                .iter()
                .find(|(t, d)| self.summary.time_column == *t && hd.iter().any(|n| n == d))
        {
            let text = format!(
                "{f} lines are written when a request completes, so '{}' is a completion time; pass --duration-column {d} to replay arrival times",
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
            self.announce = (!self.spec.notes.is_silent()).then(|| {
                format!(
                    "reading column '{time_name}' as {format} (detected from '{}'; set --time-format to override)",
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
            let (unit, example) = cols.duration_unit;
            let took = super::timestamp::parse_epoch(v.trim_ascii(), unit).map_err(|_| {
                bad(format!(
                    "bad duration '{}' in {col} '{dn}': {example}",
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
            // W3C's date and time are UTC by definition; date-local and
            // time-local are the server's local time.
            let utc = cols.format == Some("w3c") && !time_name.contains("-local");
            if self.spec.zone.is_none() && !self.spec.notes.is_silent() && !utc {
                self.note(
                    format!("naive {time_name}"),
                    &format!("timestamps in column '{time_name}' have no UTC offset; reading them as UTC (set --tz if they are local times)"),
                );
            }
        }
    }

    /// Without a key column every policy is one bucket for the whole log,
    /// which an access log rarely means: one note names the format's client
    /// field as the key column to give.
    fn key_hint(&self, format: Option<InputFormat>) {
        let Some(client) = format.and_then(InputFormat::client_field) else {
            return;
        };
        if self.spec.key_cols.is_empty() && !self.spec.notes.is_silent() {
            self.note(
                "key hint".to_string(),
                &format!("no --key-column: each policy is one bucket for the whole log; for one per client, add --key-column {client}"),
            );
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
        self.spec.notes.say(text);
    }
}

/// Whether a CSV header looks like a log line rather than column names: a
/// field with several spaces, brackets, quotes or slashes.
fn log_like(header: Option<&[String]>) -> bool {
    header.is_some_and(|h| {
        h.iter()
            .any(|c| c.matches(' ').count() >= 2 || c.contains(['[', '"', '/']))
    })
}

/// The first line of a sample that is not blank (without a byte order
/// mark).
fn first_line(sample: &[u8]) -> Option<&[u8]> {
    crate::ingest::log::strip_bom(sample)
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .find(|l| !l.trim_ascii().is_empty())
}
