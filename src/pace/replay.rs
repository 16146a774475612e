//! `pace --replay`: lines released at their logged times, optionally
//! faster.
//!
//! Each line's timestamp is read with audit's column and format options
//! (the same column resolution, format detection and time parsing), and
//! the line leaves at its logged offset from the first line, divided by the
//! speed: `release = start + ceil((t − t₀) / speed)`. With `--max-gap`, no
//! two consecutive lines are further apart than that (real time); the time
//! cut out is cut from everything after. The offset is kept as an exact
//! rational (speed is a decimal `num/den`), so rounding never accumulates.
//!
//! Lines are written unchanged. A CSV header, W3C directives and blank
//! lines pass through in place. Lines up to `--reorder-window` (log time)
//! out of order are sorted: a line is scheduled only once a line at least
//! that much later has been read (or input ended); a line later than that
//! is an error naming its line. Same-time lines keep input order.

use super::schedule::{Offer, Schedule};
use super::{Inbox, Record};
use crate::cli::InputFormat;
use crate::ingest::input::{ColSel, pick_time_column, resolve, shown};
use crate::ingest::log::{Fields, LineParser, Parsed};
use crate::ingest::timestamp::{TimeFormat, TimeParser, Zone};
use crate::policy::Decision;
use crate::time::Nanos;
use anyhow::{Result, anyhow};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Lines due further ahead than this stay in the sorting buffer: moving a
/// large chunk into the schedule at once would hold up the writes due now.
const HORIZON: Nanos = Nanos(20_000_000);

/// A speed as an exact fraction `num/den` (10 → 10/1, 0.25 → 1/4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Speed {
    pub num: u64,
    pub den: u64,
}

impl Speed {
    /// Parses a positive decimal: `1000`, `2.5`, `0.5`.
    pub fn parse(text: &str) -> Result<Speed, String> {
        let bad = || {
            format!(
                "invalid speed '{text}': give a positive number such as 10 (ten times faster) or 0.5"
            )
        };
        let t = text.trim();
        let (int, frac) = t.split_once('.').unwrap_or((t, ""));
        if (int.is_empty() && frac.is_empty())
            || !int.bytes().all(|b| b.is_ascii_digit())
            || !frac.bytes().all(|b| b.is_ascii_digit())
            || frac.len() > 9
        {
            return Err(bad());
        }
        let den = 10u64.pow(frac.len() as u32);
        let num = format!("{int}{frac}")
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0 && n <= u64::MAX / 1_000_000_000)
            .ok_or_else(bad)?;
        let g = gcd(num, den);
        Ok(Speed {
            num: num / g,
            den: den / g,
        })
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// How replayed lines are read and timed.
#[derive(Clone)]
pub struct ReplayConfig {
    pub time_col: Option<Vec<ColSel>>,
    pub time_format: TimeFormat,
    pub zone: Option<Zone>,
    pub input_format: InputFormat,
    pub log_format: Option<String>,
    pub delimiter: Option<u8>,
    pub no_header: bool,
    pub speed: Speed,
    /// Longest wait between two lines, real time.
    pub max_gap: Option<Nanos>,
    /// Out-of-order tolerance, log time.
    pub reorder_window: Nanos,
    /// Most lines held (sorting and scheduled) before reading stops.
    pub max_pending: usize,
}

/// How lines are split into fields, once known.
enum Reader {
    /// Before the first line.
    Undecided,
    Csv {
        delimiter: u8,
        header_due: bool,
        header: Option<Vec<String>>,
        time: Option<(usize, Option<usize>)>,
        record: csv::ByteRecord,
    },
    Lines {
        parser: Box<dyn LineParser>,
        fields: Fields,
        time: Option<(usize, Option<usize>)>,
    },
}

/// A line read, waiting to be sorted into place.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    at: Nanos,
    line: u64,
    /// False for a line passed through in place (a header, a directive).
    timed: bool,
    arrived: Nanos,
    bytes: Vec<u8>,
}

/// The replay of one input.
pub struct Replay {
    cfg: ReplayConfig,
    reader: Reader,
    times: TimeParser,
    joined: Vec<u8>,
    held: BinaryHeap<Reverse<Held>>,
    /// The latest log time read.
    newest: Option<Nanos>,
    /// (first line's log time, its release in policy time).
    origin: Option<(Nanos, Nanos)>,
    /// The log time of the last line scheduled.
    prev: Nanos,
    /// Real offset of the last line scheduled from the first, ×`speed.num`.
    offset: u128,
    /// The last release scheduled, policy time.
    last: Option<Nanos>,
    /// Input has ended: every line read has its place.
    ended: bool,
    quiet: bool,
}

impl Replay {
    pub fn new(cfg: ReplayConfig, quiet: bool) -> Replay {
        let times = TimeParser::new(cfg.time_format.clone(), cfg.zone.clone());
        Replay {
            cfg,
            reader: Reader::Undecided,
            times,
            joined: Vec::new(),
            held: BinaryHeap::new(),
            newest: None,
            origin: None,
            prev: Nanos::ZERO,
            offset: 0,
            last: None,
            ended: false,
            quiet,
        }
    }

    /// Lines read and not yet scheduled.
    pub fn waiting(&self) -> usize {
        self.held.len()
    }

    /// Empties the sorting buffer (at a stop: the lines are unsent), as
    /// (input line, bytes).
    pub fn take_all(&mut self) -> Vec<(u64, Vec<u8>)> {
        std::mem::take(&mut self.held)
            .into_iter()
            .map(|Reverse(h)| (h.line, h.bytes))
            .collect()
    }

    /// Reads the lines in `inbox` (as far as `max_pending` allows) and
    /// schedules those whose place is certain. `now` reads the clock: the
    /// first line's release is taken after reading, so the time spent
    /// reading a large first chunk does not make it late against the rest.
    pub(super) fn decide(
        &mut self,
        schedule: &mut Schedule<Vec<u8>>,
        inbox: &mut Inbox,
        now: impl Fn() -> Nanos,
    ) -> Result<()> {
        while self.held.len() + schedule.backlog() < self.cfg.max_pending {
            let Some(rec) = inbox.records.pop_front() else {
                break;
            };
            inbox.buffered -= rec.bytes.len();
            let read = self.read(&rec).and_then(|t| match (t, self.newest) {
                (Some(t), Some(newest)) if t.0 + self.cfg.reorder_window.0 < newest.0 => Err(anyhow!(
                    "stdin:{}: this line's time is {} earlier than a line before it, more than --reorder-window {} allows; pass a larger --reorder-window, or sort the log",
                    rec.line,
                    humantime::format_duration(newest.saturating_sub(t).to_duration()),
                    humantime::format_duration(self.cfg.reorder_window.to_duration()),
                )),
                _ => Ok(t),
            });
            let read = match read {
                Ok(t) => t,
                Err(e) => {
                    // Back in front: the line is accounted for as unsent.
                    inbox.buffered += rec.bytes.len();
                    inbox.records.push_front(rec);
                    return Err(e);
                }
            };
            match read {
                // Headers and directives go out in place, at once if
                // nothing is ahead of them.
                None => {
                    let t = self.newest.unwrap_or(Nanos::ZERO);
                    self.hold(t, false, rec);
                }
                Some(t) => {
                    self.newest = self.newest.max(Some(t));
                    self.hold(t, true, rec);
                }
            }
        }
        let all = inbox.eof && inbox.records.is_empty();
        self.ended = all;
        let at = schedule.policy_time(now());
        while let Some(Reverse(h)) = self.held.peek() {
            let settled = self
                .newest
                .is_some_and(|n| h.at.0 + self.cfg.reorder_window.0 <= n.0);
            if !(all || settled) {
                break;
            }
            if h.timed
                && let Some(r) = self.preview(h.at)
                && r > at.saturating_add(HORIZON)
            {
                break;
            }
            let Some(Reverse(h)) = self.held.pop() else {
                break;
            };
            let release = match h.timed {
                true => self.release(h.at, at),
                false => self.last.unwrap_or(at),
            };
            self.last = Some(release);
            // A release is never refused.
            if let Offer::Full { .. } =
                schedule.offer_decided(at, h.arrived, h.line, h.bytes, Decision::Admit { release })
            {
                unreachable!("an admitted line is queued");
            }
        }
        Ok(())
    }

    fn hold(&mut self, at: Nanos, timed: bool, rec: Record) {
        self.held.push(Reverse(Held {
            at,
            line: rec.line,
            timed,
            arrived: rec.arrived,
            bytes: rec.bytes,
        }));
    }

    /// When the next line should be moved into the schedule (policy time),
    /// if its place is known and its time is ahead.
    pub fn next_wake(&self) -> Option<Nanos> {
        let Reverse(h) = self.held.peek()?;
        let settled = self
            .newest
            .is_some_and(|n| h.at.0 + self.cfg.reorder_window.0 <= n.0);
        match (settled || self.ended) && h.timed {
            true => self.preview(h.at).map(|r| r.saturating_sub(HORIZON)),
            false => None,
        }
    }

    /// The release a line logged at `t` would get if scheduled next.
    fn preview(&self, t: Nanos) -> Option<Nanos> {
        let (_, start) = self.origin?;
        Some(start.saturating_add(self.real_offset(self.offset + self.gap(t))))
    }

    /// The gap before a line logged at `t`, real time ×`speed.num`, cut to
    /// --max-gap.
    fn gap(&self, t: Nanos) -> u128 {
        let Speed { num, den } = self.cfg.speed;
        let gap = u128::from(t.saturating_sub(self.prev).0) * u128::from(den);
        match self.cfg.max_gap {
            Some(cap) => gap.min(u128::from(cap.0) * u128::from(num)),
            None => gap,
        }
    }

    fn real_offset(&self, scaled: u128) -> Nanos {
        let real = scaled.div_ceil(u128::from(self.cfg.speed.num));
        Nanos(u64::try_from(real).unwrap_or(u64::MAX))
    }

    /// The release (policy time) of the next line in log order, logged at
    /// `t`; `now` is the policy time now (the first line's release).
    fn release(&mut self, t: Nanos, now: Nanos) -> Nanos {
        let Some((_, start)) = self.origin else {
            self.origin = Some((t, now));
            self.prev = t;
            return now;
        };
        self.offset += self.gap(t);
        self.prev = self.prev.max(t);
        start.saturating_add(self.real_offset(self.offset))
    }

    /// The log time of one record; `None` for a line that is not a request
    /// (a header, a directive, a blank line).
    fn read(&mut self, rec: &Record) -> Result<Option<Nanos>> {
        let line = rec.bytes.strip_suffix(b"\n").unwrap_or(&rec.bytes);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            return Ok(None);
        }
        if let Reader::Undecided = self.reader {
            self.reader = self.start(line)?;
        }
        let at = |what: String| anyhow!("stdin:{}: {what}", rec.line);
        let (value, value2) = match &mut self.reader {
            Reader::Undecided => unreachable!("decided above"),
            Reader::Csv {
                delimiter,
                header_due,
                header,
                time,
                record,
            } => {
                if line.contains(&b'"') {
                    let mut csv = csv::ReaderBuilder::new()
                        .has_headers(false)
                        .flexible(true)
                        .delimiter(*delimiter)
                        .buffer_capacity(line.len().max(64))
                        .from_reader(line);
                    if !csv
                        .read_byte_record(record)
                        .map_err(|e| at(e.to_string()))?
                    {
                        return Ok(None);
                    }
                } else {
                    // Without quotes a CSV line is its fields split on the
                    // delimiter; building a CSV reader per line costs more.
                    record.clear();
                    for f in line.split(|b| b == delimiter) {
                        record.push_field(f);
                    }
                }
                if *header_due {
                    *header_due = false;
                    *header = Some(
                        record
                            .iter()
                            .map(|f| crate::quote::text_of(f).trim().to_string())
                            .collect(),
                    );
                    *time = Some(time_columns(&self.cfg, header.as_deref())?);
                    return Ok(None);
                }
                let (t, t2) = match time {
                    Some(t) => *t,
                    None => {
                        let t = time_columns(&self.cfg, header.as_deref())?;
                        *time = Some(t);
                        t
                    }
                };
                let field = |i: usize| {
                    record.get(i).map(<[u8]>::to_vec).ok_or_else(|| {
                        at(format!(
                            "the row has {} field(s), no time column #{i}",
                            record.len()
                        ))
                    })
                };
                (field(t)?, t2.map(field).transpose()?)
            }
            Reader::Lines {
                parser,
                fields,
                time,
            } => {
                if time.is_none() {
                    if parser.learn(line) {
                        return Ok(None);
                    }
                    *time = Some(line_time_columns(&self.cfg, parser.as_mut())?);
                }
                fields.clear();
                match parser.parse(line, fields) {
                    Ok(Parsed::Record) => {}
                    Ok(Parsed::Skip) => return Ok(None),
                    Err(e) => return Err(at(format!("{} line: {e}", parser.format()))),
                }
                let (t, t2) = time.expect("resolved above");
                let field = |i: usize| {
                    fields.get(line, i).map(<[u8]>::to_vec).ok_or_else(|| {
                        at(format!(
                            "{} line: no time field on this line",
                            parser.format()
                        ))
                    })
                };
                (field(t)?, t2.map(field).transpose()?)
            }
        };
        let value = match value2 {
            None => value,
            Some(v2) => {
                self.joined.clear();
                self.joined.extend_from_slice(value.trim_ascii());
                self.joined.push(b' ');
                self.joined.extend_from_slice(v2.trim_ascii());
                std::mem::take(&mut self.joined)
            }
        };
        if self.times.format == TimeFormat::Auto {
            let f = TimeFormat::detect(&value).ok_or_else(|| {
                at(format!(
                    "cannot tell the time format of '{}'; set --time-format",
                    shown(&value)
                ))
            })?;
            if !self.quiet {
                eprintln!(
                    "drip: reading times as {f} (detected from '{}'; set --time-format to override)",
                    shown(value.trim_ascii())
                );
            }
            self.times = TimeParser::new(f, self.cfg.zone.clone());
        }
        let t = self.times.parse(&value).map_err(|e| {
            at(format!(
                "bad timestamp '{}': {e}; fix the line, or give --time-column and --time-format",
                shown(&value)
            ))
        })?;
        self.joined = value;
        Ok(Some(t))
    }

    /// The reader for a log whose first line is `first`.
    fn start(&self, first: &[u8]) -> Result<Reader> {
        match crate::quote::not_text(first) {
            Some(crate::quote::NotText::Packed { kind, tool }) => anyhow::bail!(
                "standard input is {kind}-compressed, and --replay passes the log's lines on as they are; decompress it into drip: {tool} LOG | drip pace --replay ..."
            ),
            Some(crate::quote::NotText::Binary) => anyhow::bail!(
                "standard input is binary data, not a text log (its first line holds a NUL byte); give the log itself (a UTF-16 log: convert it first with iconv -f UTF-16 -t UTF-8)"
            ),
            None => {}
        }
        let format = match self.cfg.input_format {
            InputFormat::Auto => {
                let f = crate::ingest::log::detect(first).unwrap_or(InputFormat::Csv);
                if f != InputFormat::Csv && !self.quiet {
                    eprintln!(
                        "drip: reading stdin as {} lines (detected from its first line; set --input-format to override)",
                        f.name()
                    );
                }
                f
            }
            f => f,
        };
        let tabs = self.cfg.input_format == InputFormat::Auto
            && self.cfg.delimiter.is_none()
            && format == InputFormat::Csv
            && crate::ingest::input::tab_separated(first);
        if tabs && !self.quiet {
            eprintln!(
                "drip: reading stdin as tab-separated (detected from its first line: tabs and no commas; set --delimiter to override)"
            );
        }
        Ok(match format {
            InputFormat::Csv | InputFormat::Tsv | InputFormat::Auto => Reader::Csv {
                delimiter: self
                    .cfg
                    .delimiter
                    .unwrap_or(if format == InputFormat::Tsv || tabs {
                        b'\t'
                    } else {
                        b','
                    }),
                header_due: !self.cfg.no_header,
                header: None,
                time: None,
                record: csv::ByteRecord::new(),
            },
            f => Reader::Lines {
                parser: crate::ingest::log::parser(f, self.cfg.log_format.as_deref())?,
                fields: Fields::default(),
                time: None,
            },
        })
    }
}

/// The time column(s) of a CSV log with `header`.
fn time_columns(cfg: &ReplayConfig, header: Option<&[String]>) -> Result<(usize, Option<usize>)> {
    Ok(match cfg.time_col.as_deref() {
        Some([sel]) => (resolve(sel, header, "time", "stdin")?, None),
        Some([sel, sel2, ..]) => (
            resolve(sel, header, "time", "stdin")?,
            Some(resolve(sel2, header, "time", "stdin")?),
        ),
        _ => (pick_time_column(header, "stdin")?, None),
    })
}

/// The time field(s) of an access-log format.
fn line_time_columns(
    cfg: &ReplayConfig,
    parser: &mut dyn LineParser,
) -> Result<(usize, Option<usize>)> {
    let format = parser.format();
    let mut one = |sel: &ColSel| -> Result<usize> {
        let found = match sel {
            ColSel::Name(n) => parser.field(n),
            ColSel::Index(i) => parser.field_at(*i),
        };
        found.ok_or_else(|| {
            let names = parser.names().map(crate::quote::names).unwrap_or_default();
            anyhow!("stdin: {format} lines have no time field {sel}; the fields are: {names}")
        })
    };
    Ok(match cfg.time_col.as_deref() {
        Some([sel]) => (one(sel)?, None),
        Some([sel, sel2, ..]) => (one(sel)?, Some(one(sel2)?)),
        _ => match parser.default_time() {
            Some(t) => t,
            None => {
                let t = pick_time_column(parser.names(), "stdin")?;
                parser.field_at(t);
                (t, None)
            }
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pace::schedule::{Order, Pending, Timing};
    use crate::policy::keyed::Stack;

    const MS: u64 = 1_000_000;

    fn cfg(speed: &str) -> ReplayConfig {
        ReplayConfig {
            time_col: None,
            time_format: TimeFormat::Auto,
            zone: None,
            input_format: InputFormat::Auto,
            log_format: None,
            delimiter: None,
            no_header: false,
            speed: Speed::parse(speed).unwrap(),
            max_gap: None,
            reorder_window: Nanos::from_secs(5),
            max_pending: 1000,
        }
    }

    fn schedule() -> Schedule<Vec<u8>> {
        Schedule::with_order(
            Stack::new(Vec::new()),
            Timing::new(None, false, true),
            Order::Arrival,
        )
    }

    /// Replays `lines` all read at 0; returns (line, release ms).
    fn replay(cfg: ReplayConfig, lines: &[&str]) -> Result<Vec<(String, u64)>> {
        let mut s = schedule();
        let mut inbox = Inbox::default();
        for l in lines {
            inbox.push(Nanos::ZERO, format!("{l}\n").into_bytes());
        }
        inbox.eof = true;
        let mut r = Replay::new(cfg, true);
        let mut out: Vec<Pending<Vec<u8>>> = Vec::new();
        // On a clock that jumps to each wake-up as it is asked for.
        let mut now = Nanos::ZERO;
        loop {
            r.decide(&mut s, &mut inbox, || now)?;
            s.take_due(Nanos(u64::MAX / 2), &mut out);
            match r.next_wake() {
                Some(w) => now = now.max(w),
                None if r.waiting() == 0 => break,
                None => panic!("lines held with nothing to wait for"),
            }
        }
        Ok(out
            .into_iter()
            .map(|p| {
                let text = String::from_utf8(p.item).unwrap().trim_end().to_string();
                (text, p.release.0 / MS)
            })
            .collect())
    }

    #[test]
    fn speeds_are_exact_fractions() {
        assert_eq!(Speed::parse("10"), Ok(Speed { num: 10, den: 1 }));
        assert_eq!(Speed::parse("2.5"), Ok(Speed { num: 5, den: 2 }));
        assert_eq!(Speed::parse("0.25"), Ok(Speed { num: 1, den: 4 }));
        assert_eq!(Speed::parse(".5"), Ok(Speed { num: 1, den: 2 }));
        for bad in ["0", "0.0", "-1", "fast", "", ".", "1e3", "1/2"] {
            assert!(Speed::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn csv_lines_leave_at_their_scaled_offsets() {
        let lines = [
            "ts,path",
            "2026-01-01T00:00:00Z,/a",
            "2026-01-01T00:00:01.5Z,/b",
            "2026-01-01T00:00:10Z,/c",
        ];
        let out = replay(cfg("10"), &lines).unwrap();
        assert_eq!(
            out,
            [
                ("ts,path".to_string(), 0),
                ("2026-01-01T00:00:00Z,/a".to_string(), 0),
                ("2026-01-01T00:00:01.5Z,/b".to_string(), 150),
                ("2026-01-01T00:00:10Z,/c".to_string(), 1000),
            ]
        );
        // --max-gap cuts the 850 ms wait to 200 ms, and shifts what follows.
        let mut c = cfg("10");
        c.max_gap = Some(Nanos(200 * MS));
        let out = replay(c, &lines).unwrap();
        let times: Vec<u64> = out.iter().map(|(_, t)| *t).collect();
        assert_eq!(times, [0, 0, 150, 350]);
    }

    #[test]
    fn quoted_csv_fields_are_read_as_csv() {
        // A quoted delimiter does not move the time column.
        let lines = [
            "path,ts",
            "/a,2026-01-01T00:00:00Z",
            "\"/b,c\",2026-01-01T00:00:02Z",
            "/d,2026-01-01T00:00:03Z",
        ];
        let out = replay(cfg("2"), &lines).unwrap();
        let times: Vec<u64> = out.iter().map(|(_, t)| *t).collect();
        assert_eq!(times, [0, 0, 1000, 1500]);
        assert_eq!(out[2].0, lines[2]);
    }

    #[test]
    fn a_third_speed_never_drifts() {
        // At speed 3, a line every second leaves every 333.33 ms: the k-th
        // at ceil(k·1000/3) ms, exactly, not k·333.
        let lines: Vec<String> = (0..301).map(|k| format!("{}", 1_700_000_000 + k)).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut c = cfg("3");
        c.no_header = true;
        c.time_col = Some(vec![ColSel::Index(0)]);
        c.time_format = TimeFormat::parse("epoch-s");
        let mut s = schedule();
        let mut inbox = Inbox::default();
        for l in &refs {
            inbox.push(Nanos::ZERO, format!("{l}\n").into_bytes());
        }
        inbox.eof = true;
        let mut r = Replay::new(c, true);
        let mut out = Vec::new();
        let mut now = Nanos::ZERO;
        while r.waiting() > 0 || now == Nanos::ZERO {
            r.decide(&mut s, &mut inbox, || now).unwrap();
            s.take_due(Nanos(u64::MAX / 2), &mut out);
            now = r.next_wake().unwrap_or(Nanos(1)).max(Nanos(1));
        }
        assert_eq!(out.len(), 301);
        for (k, p) in out.iter().enumerate() {
            assert_eq!(p.release.0, (k as u64 * 1_000_000_000).div_ceil(3), "{k}");
        }
    }

    #[test]
    fn out_of_order_lines_are_sorted_within_the_window_and_refused_beyond() {
        let lines = [
            "t,n",
            "1700000000,1",
            "1700000003,3",
            "1700000002,2",
            "1700000002,2b",
            "1700000010,4",
        ];
        let out = replay(cfg("1"), &lines).unwrap();
        let order: Vec<&str> = out
            .iter()
            .map(|(l, _)| l.rsplit(',').next().unwrap())
            .collect();
        assert_eq!(order, ["n", "1", "2", "2b", "3", "4"]);
        let times: Vec<u64> = out.iter().map(|(_, t)| *t).collect();
        assert_eq!(times, [0, 0, 2000, 2000, 3000, 10000]);
        let late = ["t,n", "1700000010,1", "1700000004,2"];
        let e = replay(cfg("1"), &late).unwrap_err().to_string();
        assert!(e.starts_with("stdin:3: "), "{e}");
        assert!(e.contains("--reorder-window"), "{e}");
    }

    #[test]
    fn access_logs_are_read_through_their_format() {
        let lines = [
            r#"h1 - - [01/Aug/1995:00:00:01 -0400] "GET / HTTP/1.0" 200 7"#,
            r#"h2 - - [01/Aug/1995:00:00:03 -0400] "GET /x HTTP/1.0" 200 7"#,
        ];
        let out = replay(cfg("2"), &lines).unwrap();
        assert_eq!(out[1], (lines[1].to_string(), 1000));
        let json = [
            r#"{"at":"2026-01-01T00:00:00Z","u":1}"#,
            r#"{"at":"2026-01-01T00:00:04Z","u":2}"#,
        ];
        let mut c = cfg("4");
        c.time_col = Some(vec![ColSel::Name("at".into())]);
        let out = replay(c, &json).unwrap();
        assert_eq!(out[1].1, 1000);
        let bad = replay(cfg("1"), &["ts,x", "yesterday,1"])
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("stdin:2: "), "{bad}");
    }
}
