//! Request lines handed in one at a time, as the bytes a caller passes on
//! unchanged (`pace --replay` writes them out): the log time of each.
//!
//! The log's format, its columns and its time format are found as the file
//! readers find them (the same detection, column resolution and time
//! parsing), from the first line that is not blank. A CSV header, the
//! lines a format learns from (W3C directives) and the lines it skips are
//! not requests: they have no time. Messages name a line as `NAME:LINE`,
//! with the name given (`stdin`).

use super::input::{ColSel, pick_time_column, resolve, shown, tab_separated};
use super::log::{Fields, InputFormat, LineParser, Parsed};
use super::timestamp::{TimeFormat, TimeParser, Zone};
use crate::time::Nanos;
use anyhow::{Result, anyhow};

/// How the lines are read: the reading options of one log.
#[derive(Clone)]
pub struct LineSpec {
    /// The time column, or a date and a time column joined with a space.
    pub time_col: Option<Vec<ColSel>>,
    pub time_format: TimeFormat,
    /// The zone of timestamps written without a UTC offset (`None`: UTC).
    pub zone: Option<Zone>,
    /// How lines are written (`Auto`: detected from the first line).
    pub input_format: InputFormat,
    /// An nginx `log_format` string, for `InputFormat::Nginx`.
    pub log_format: Option<String>,
    pub delimiter: Option<u8>,
    pub no_header: bool,
}

impl LineSpec {
    /// Everything detected: format, time column and time format.
    pub fn detected() -> LineSpec {
        LineSpec {
            time_col: None,
            time_format: TimeFormat::Auto,
            zone: None,
            input_format: InputFormat::Auto,
            log_format: None,
            delimiter: None,
            no_header: false,
        }
    }
}

/// The time column(s) of a log: one, or a date and a time to join.
type TimeCols = (usize, Option<usize>);

/// A line's time value(s), as found in its time column(s).
type TimeValues = (Vec<u8>, Option<Vec<u8>>);

/// CSV lines: each split on the delimiter, or read as CSV when it quotes.
struct CsvLine {
    delimiter: u8,
    header_due: bool,
    header: Option<Vec<String>>,
    time: Option<TimeCols>,
    record: csv::ByteRecord,
}

/// Lines of an access-log format, read into its fields.
struct FormatLine {
    parser: Box<dyn LineParser>,
    fields: Fields,
    time: Option<TimeCols>,
}

/// How lines are split into fields, once known.
enum Reader {
    /// Before the first line.
    Undecided,
    Csv(CsvLine),
    Format(FormatLine),
}

/// The log times of the lines of one log, handed in in order.
pub struct LineTimes {
    spec: LineSpec,
    /// The log's name in messages.
    name: &'static str,
    notes: crate::notes::Notes,
    reader: Reader,
    times: TimeParser,
    /// Room for a date and a time joined, kept between lines.
    joined: Vec<u8>,
}

/// The line without its `\n` or `\r\n`.
pub fn content(bytes: &[u8]) -> &[u8] {
    let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl LineTimes {
    /// Reads lines as `spec` says; `name` names the log in messages, and
    /// `notes` takes the notes on what was detected.
    pub fn new(spec: LineSpec, name: &'static str, notes: crate::notes::Notes) -> LineTimes {
        let times = TimeParser::new(spec.time_format.clone(), spec.zone.clone());
        LineTimes {
            spec,
            name,
            notes,
            reader: Reader::Undecided,
            times,
            joined: Vec::new(),
        }
    }

    /// Whether the log's format is known (a line that is not blank came).
    pub fn started(&self) -> bool {
        !matches!(self.reader, Reader::Undecided)
    }

    /// The log time of input line `n` (`bytes`, its separator included or
    /// not); `None` for a line that is not a request (a header, a
    /// directive, a blank line).
    pub fn time(&mut self, bytes: &[u8], n: u64) -> Result<Option<Nanos>> {
        let line = content(bytes);
        if line.trim_ascii().is_empty() {
            return Ok(None);
        }
        if let Reader::Undecided = self.reader {
            self.reader = self.start(line)?;
        }
        let at = At { name: self.name, n };
        let values = match &mut self.reader {
            Reader::Undecided => unreachable!("decided above"),
            Reader::Csv(csv) => csv.values(line, &self.spec, at)?,
            Reader::Format(f) => f.values(line, &self.spec, at)?,
        };
        let Some(values) = values else {
            return Ok(None);
        };
        let value = self.join(values);
        self.learn_format(&value, at)?;
        let t = self.times.parse(&value).map_err(|e| {
            at.error(format!(
                "bad timestamp '{}': {e}; fix the line, or give --time-column and --time-format",
                shown(&value)
            ))
        })?;
        self.joined = value;
        Ok(Some(t))
    }

    /// One time value: a date and a time are joined with a space.
    fn join(&mut self, (value, value2): TimeValues) -> Vec<u8> {
        match value2 {
            None => value,
            Some(v2) => {
                self.joined.clear();
                self.joined.extend_from_slice(value.trim_ascii());
                self.joined.push(b' ');
                self.joined.extend_from_slice(v2.trim_ascii());
                std::mem::take(&mut self.joined)
            }
        }
    }

    /// With `--time-format auto`, the format detected from the first time
    /// value, said on stderr.
    fn learn_format(&mut self, value: &[u8], at: At) -> Result<()> {
        if self.times.format != TimeFormat::Auto {
            return Ok(());
        }
        let f = TimeFormat::detect(value).ok_or_else(|| {
            at.error(format!(
                "cannot tell the time format of '{}'; set --time-format",
                shown(value)
            ))
        })?;
        self.notes.say(format_args!(
            "reading times as {f} (detected from '{}'; set --time-format to override)",
            shown(value.trim_ascii())
        ));
        self.times = TimeParser::new(f, self.spec.zone.clone());
        Ok(())
    }

    /// The reader for a log whose first line is `first`.
    fn start(&self, first: &[u8]) -> Result<Reader> {
        let name = self.name;
        let format = match self.spec.input_format {
            InputFormat::Auto => {
                let f = super::log::detect(first).unwrap_or(InputFormat::Csv);
                if f != InputFormat::Csv {
                    self.notes.say(format_args!(
                        "reading {name} as {} lines (detected from its first line; set --input-format to override)",
                        f.name()
                    ));
                }
                f
            }
            f => f,
        };
        let tabs = self.spec.input_format == InputFormat::Auto
            && self.spec.delimiter.is_none()
            && format == InputFormat::Csv
            && tab_separated(first);
        if tabs {
            self.notes.say(format_args!(
                "reading {name} as tab-separated (detected from its first line: tabs and no commas; set --delimiter to override)"
            ));
        }
        Ok(match format {
            InputFormat::Csv | InputFormat::Tsv | InputFormat::Auto => Reader::Csv(CsvLine {
                delimiter: self
                    .spec
                    .delimiter
                    .unwrap_or(if format == InputFormat::Tsv || tabs {
                        b'\t'
                    } else {
                        b','
                    }),
                header_due: !self.spec.no_header,
                header: None,
                time: None,
                record: csv::ByteRecord::new(),
            }),
            f => Reader::Format(FormatLine {
                parser: super::log::parser(f, self.spec.log_format.as_deref())?,
                fields: Fields::default(),
                time: None,
            }),
        })
    }
}

/// Where a line is, for its messages.
#[derive(Clone, Copy)]
struct At {
    name: &'static str,
    n: u64,
}

impl At {
    fn error(self, what: String) -> anyhow::Error {
        anyhow!("{}:{}: {what}", self.name, self.n)
    }
}

impl CsvLine {
    /// The time value(s) of a CSV line; `None` for the header.
    fn values(&mut self, line: &[u8], spec: &LineSpec, at: At) -> Result<Option<TimeValues>> {
        if !self.split(line, at)? {
            return Ok(None);
        }
        let record = &self.record;
        if self.header_due {
            self.header_due = false;
            self.header = Some(
                record
                    .iter()
                    .map(|f| crate::quote::text_of(f).trim().to_string())
                    .collect(),
            );
            self.time = Some(time_columns(spec, self.header.as_deref(), at.name)?);
            return Ok(None);
        }
        let (t, t2) = match self.time {
            Some(t) => t,
            None => {
                let t = time_columns(spec, self.header.as_deref(), at.name)?;
                self.time = Some(t);
                t
            }
        };
        let field = |i: usize| {
            record.get(i).map(<[u8]>::to_vec).ok_or_else(|| {
                at.error(format!(
                    "the row has {} field(s), no time column #{i}",
                    record.len()
                ))
            })
        };
        Ok(Some((field(t)?, t2.map(field).transpose()?)))
    }

    /// Splits `line` into the record; false when it holds no record.
    fn split(&mut self, line: &[u8], at: At) -> Result<bool> {
        if line.contains(&b'"') {
            let mut csv = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .delimiter(self.delimiter)
                .buffer_capacity(line.len().max(64))
                .from_reader(line);
            return csv
                .read_byte_record(&mut self.record)
                .map_err(|e| at.error(e.to_string()));
        }
        // Without quotes a CSV line is its fields split on the delimiter;
        // building a CSV reader per line costs more.
        self.record.clear();
        for f in line.split(|&b| b == self.delimiter) {
            self.record.push_field(f);
        }
        Ok(true)
    }
}

impl FormatLine {
    /// The time value(s) of a line of an access-log format; `None` for a
    /// line it learns from or skips.
    fn values(&mut self, line: &[u8], spec: &LineSpec, at: At) -> Result<Option<TimeValues>> {
        if self.time.is_none() {
            if self.parser.learn(line) {
                return Ok(None);
            }
            self.time = Some(line_time_columns(spec, self.parser.as_mut(), at.name)?);
        }
        self.fields.clear();
        match self.parser.parse(line, &mut self.fields) {
            Ok(Parsed::Record) => {}
            Ok(Parsed::Skip | Parsed::Notice) => return Ok(None),
            Err(e) => return Err(at.error(format!("{} line: {e}", self.parser.format()))),
        }
        let (t, t2) = self.time.expect("resolved above");
        let field = |i: usize| {
            self.fields.get(line, i).map(<[u8]>::to_vec).ok_or_else(|| {
                at.error(format!(
                    "{} line: no time field on this line",
                    self.parser.format()
                ))
            })
        };
        Ok(Some((field(t)?, t2.map(field).transpose()?)))
    }
}

/// The time column(s) of a CSV log with `header`.
fn time_columns(spec: &LineSpec, header: Option<&[String]>, name: &str) -> Result<TimeCols> {
    Ok(match spec.time_col.as_deref() {
        Some([sel]) => (resolve(sel, header, "time", name)?, None),
        Some([sel, sel2, ..]) => (
            resolve(sel, header, "time", name)?,
            Some(resolve(sel2, header, "time", name)?),
        ),
        _ => (pick_time_column(header, name)?, None),
    })
}

/// The time field(s) of an access-log format.
fn line_time_columns(spec: &LineSpec, parser: &mut dyn LineParser, name: &str) -> Result<TimeCols> {
    let format = parser.format();
    let mut one = |sel: &ColSel| -> Result<usize> {
        let found = match sel {
            ColSel::Name(n) => parser.field(n),
            ColSel::Index(i) => parser.field_at(*i),
        };
        found.ok_or_else(|| {
            let names = parser.names().map(crate::quote::names).unwrap_or_default();
            anyhow!("{name}: {format} lines have no time field {sel}; the fields are: {names}")
        })
    };
    Ok(match spec.time_col.as_deref() {
        Some([sel]) => (one(sel)?, None),
        Some([sel, sel2, ..]) => (one(sel)?, Some(one(sel2)?)),
        _ => match parser.default_time() {
            Some(t) => t,
            None => {
                let t = pick_time_column(parser.names(), name)?;
                parser.field_at(t);
                (t, None)
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LineSpec {
        LineSpec::detected()
    }

    /// The times of `lines` (seconds), or the first error.
    fn times(spec: LineSpec, lines: &[&str]) -> Result<Vec<Option<u64>>> {
        let mut t = LineTimes::new(spec, "test", crate::notes::Notes::silent());
        let mut out = Vec::new();
        for (n, l) in lines.iter().enumerate() {
            let bytes = format!("{l}\r\n").into_bytes();
            out.push(t.time(&bytes, n as u64 + 1)?.map(|t| t.0 / 1_000_000_000));
        }
        Ok(out)
    }

    #[test]
    fn headers_and_blank_lines_have_no_time() {
        let out = times(spec(), &["", "n,ts", "1,1700000000", "  ", "2,1700000005"]).unwrap();
        assert_eq!(
            out,
            [None, None, Some(1_700_000_000), None, Some(1_700_000_005)]
        );
    }

    #[test]
    fn a_date_and_a_time_column_are_joined() {
        let mut s = spec();
        s.time_col = Some(vec![ColSel::Name("d".into()), ColSel::Name("t".into())]);
        s.time_format = TimeFormat::parse("%Y-%m-%d %H:%M:%S");
        let out = times(s, &["d,t", "2026-01-01,00:00:10"]).unwrap();
        assert_eq!(out[1], Some(1_767_225_610));
    }

    #[test]
    fn errors_name_the_line() {
        let e = times(spec(), &["ts", "1700000000", "soon"]).unwrap_err();
        assert!(
            e.to_string().starts_with("test:3: bad timestamp 'soon'"),
            "{e}"
        );
        let e = times(spec(), &["a,ts", "1700000000"]).unwrap_err();
        assert!(
            e.to_string().starts_with("test:2: the row has 1 field(s)"),
            "{e}"
        );
    }

    #[test]
    fn access_log_lines_are_read_through_their_format() {
        let line = r#"h1 - - [01/Aug/1995:00:00:01 -0400] "GET / HTTP/1.0" 200 7"#;
        let out = times(spec(), &[line]).unwrap();
        assert_eq!(out, [Some(807_249_601)]);
    }
}
