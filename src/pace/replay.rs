//! `pace --replay`: lines released at their logged times, optionally
//! faster.
//!
//! Each line's timestamp is read by [`crate::ingest::lines`], with audit's
//! column and format options (the same column resolution, format detection
//! and time parsing), and the line leaves at its logged offset from the
//! first line, divided by the speed: `release = start + ceil((t − t₀) /
//! speed)`. With `--max-gap`, no two consecutive lines are further apart
//! than that (real time); the time cut out is cut from everything after.
//! The offset is kept as an exact rational (speed is a decimal `num/den`),
//! so rounding never accumulates.
//!
//! Lines are written unchanged. A CSV header, W3C directives and blank
//! lines pass through in place. Lines up to `--reorder-window` (log time)
//! out of order are sorted by ingest's [`Reorder`]: a line is scheduled
//! only once a line at least that much later has been read (or input
//! ended); a line later than that is an error naming its line. Same-time
//! lines keep input order.

use super::schedule::{Offer, Schedule};
use super::{Inbox, Record};
use crate::ingest::input::{Event, MAX_KEYS};
use crate::ingest::lines::{self, LineSpec, LineTimes};
use crate::ingest::order::Reorder;
use crate::policy::Decision;
use crate::time::Nanos;
use anyhow::{Result, anyhow};

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
    /// How lines are read: format, columns, time format.
    pub lines: LineSpec,
    pub speed: Speed,
    /// Longest wait between two lines, real time.
    pub max_gap: Option<Nanos>,
    /// Out-of-order tolerance, log time.
    pub reorder_window: Nanos,
    /// Most lines held (sorting and scheduled) before reading stops.
    pub max_pending: usize,
}

/// A line read, waiting to be sorted into place: its log time and input
/// line in `ev`.
#[derive(Clone)]
struct Held {
    ev: Event,
    /// False for a line passed through in place (a header, a directive).
    timed: bool,
    arrived: Nanos,
    bytes: Vec<u8>,
}

impl AsRef<Event> for Held {
    fn as_ref(&self) -> &Event {
        &self.ev
    }
}

impl Held {
    fn new(at: Nanos, timed: bool, rec: Record) -> Held {
        Held {
            ev: Event {
                at,
                row: rec.line,
                line: rec.line,
                file: 0,
                cost: 1,
                keys: [0; MAX_KEYS],
            },
            timed,
            arrived: rec.arrived,
            bytes: rec.bytes,
        }
    }

    /// The line as it came, to go back to the inbox.
    fn record(self) -> Record {
        Record {
            line: self.ev.line,
            arrived: self.arrived,
            bytes: self.bytes,
        }
    }
}

/// The replay of one input.
pub struct Replay {
    cfg: ReplayConfig,
    times: LineTimes,
    held: Reorder<Held>,
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
}

impl Replay {
    pub fn new(cfg: ReplayConfig, quiet: bool) -> Replay {
        let times = LineTimes::new(cfg.lines.clone(), "stdin", crate::notes(quiet));
        let held = Reorder::new(cfg.reorder_window);
        Replay {
            cfg,
            times,
            held,
            newest: None,
            origin: None,
            prev: Nanos::ZERO,
            offset: 0,
            last: None,
            ended: false,
        }
    }

    /// Lines read and not yet scheduled.
    pub fn waiting(&self) -> usize {
        self.held.len()
    }

    /// Empties the sorting buffer (at a stop: the lines are unsent), as
    /// (input line, bytes).
    pub fn take_all(&mut self) -> Vec<(u64, Vec<u8>)> {
        std::iter::from_fn(|| self.held.pop_any())
            .map(|h| (h.ev.line, h.bytes))
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
        self.take_lines(schedule.backlog(), inbox)?;
        let all = inbox.eof && inbox.records.is_empty();
        self.ended = all;
        let at = schedule.policy_time(now());
        self.schedule_settled(schedule, at, all);
        Ok(())
    }

    /// Moves the lines in `inbox` into the sorting buffer while it and the
    /// `backlog` scheduled hold fewer than `max_pending`. A line that
    /// cannot be read goes back to the inbox's front (it is then unsent).
    fn take_lines(&mut self, backlog: usize, inbox: &mut Inbox) -> Result<()> {
        while self.held.len() + backlog < self.cfg.max_pending {
            let Some(rec) = inbox.records.pop_front() else {
                break;
            };
            inbox.buffered -= rec.bytes.len();
            if let Err((e, rec)) = self.take(rec) {
                inbox.buffered += rec.bytes.len();
                inbox.records.push_front(rec);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Reads one line and holds it in log order. Headers and directives
    /// go out in place, at once if nothing is ahead of them.
    fn take(&mut self, rec: Record) -> Result<(), (anyhow::Error, Record)> {
        let t = match self.read(&rec) {
            Ok(t) => t,
            Err(e) => return Err((e, rec)),
        };
        let held = match t {
            None => Held::new(self.newest.unwrap_or(Nanos::ZERO), false, rec),
            Some(t) => Held::new(t, true, rec),
        };
        match self.held.push(held) {
            Ok(()) => {
                if let Some(t) = t {
                    self.newest = self.newest.max(Some(t));
                }
                Ok(())
            }
            Err(late) => {
                let h = late.row;
                let e = anyhow!(
                    "stdin:{}: this line's time is {} earlier than a line before it, more than --reorder-window {} allows; pass a larger --reorder-window, or sort the log",
                    h.ev.line,
                    humantime::format_duration(late.newest.saturating_sub(h.ev.at).to_duration()),
                    humantime::format_duration(self.cfg.reorder_window.to_duration()),
                );
                Err((e, h.record()))
            }
        }
    }

    /// Schedules the lines whose place is certain (`all`: every line is
    /// read), in log order, as far as [`HORIZON`] past policy instant `at`.
    fn schedule_settled(&mut self, schedule: &mut Schedule<Vec<u8>>, at: Nanos, all: bool) {
        while let Some(h) = self.held.peek() {
            if !(all || self.settled(h)) {
                break;
            }
            if h.timed
                && let Some(r) = self.preview(h.ev.at)
                && r > at.saturating_add(HORIZON)
            {
                break;
            }
            let Some(h) = self.held.pop_any() else {
                break;
            };
            let release = match h.timed {
                true => self.release(h.ev.at, at),
                false => self.last.unwrap_or(at),
            };
            self.last = Some(release);
            // A release is never refused.
            if let Offer::Full { .. } = schedule.offer_decided(
                at,
                h.arrived,
                h.ev.line,
                h.bytes,
                Decision::Admit { release },
            ) {
                unreachable!("an admitted line is queued");
            }
        }
    }

    /// Whether no line still to come can go before `h`.
    fn settled(&self, h: &Held) -> bool {
        self.newest
            .is_some_and(|n| h.ev.at.0 + self.cfg.reorder_window.0 <= n.0)
    }

    /// When the next line should be moved into the schedule (policy time),
    /// if its place is known and its time is ahead.
    pub fn next_wake(&self) -> Option<Nanos> {
        let h = self.held.peek()?;
        match (self.settled(h) || self.ended) && h.timed {
            true => self.preview(h.ev.at).map(|r| r.saturating_sub(HORIZON)),
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
    /// (a header, a directive, a blank line). The first line that is not
    /// blank must be text: the lines are passed on as they are.
    fn read(&mut self, rec: &Record) -> Result<Option<Nanos>> {
        let line = lines::content(&rec.bytes);
        if !self.times.started() && !line.trim_ascii().is_empty() {
            refuse_non_text(line)?;
        }
        self.times.time(&rec.bytes, rec.line)
    }
}

/// Refuses a log whose first line shows it is compressed or binary.
fn refuse_non_text(first: &[u8]) -> Result<()> {
    match crate::quote::not_text(first) {
        Some(crate::quote::NotText::Packed { kind, tool }) => anyhow::bail!(
            "standard input is {kind}-compressed, and --replay passes the log's lines on as they are; decompress it into drip: {tool} LOG | drip pace --replay ..."
        ),
        Some(crate::quote::NotText::Binary) => anyhow::bail!(
            "standard input is binary data, not a text log (its first line holds a NUL byte); give the log itself (a UTF-16 log: convert it first with iconv -f UTF-16 -t UTF-8)"
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::input::ColSel;
    use crate::ingest::timestamp::TimeFormat;
    use crate::pace::schedule::{Lateness, Order, Pending, Timing};
    use crate::policy::keyed::Stack;

    const MS: u64 = 1_000_000;

    fn cfg(speed: &str) -> ReplayConfig {
        ReplayConfig {
            lines: LineSpec::detected(),
            speed: Speed::parse(speed).unwrap(),
            max_gap: None,
            reorder_window: Nanos::from_secs(5),
            max_pending: 1000,
        }
    }

    fn schedule() -> Schedule<Vec<u8>> {
        Schedule::with_order(
            Stack::new(Vec::new()),
            Timing::new(None, false, Lateness::CatchUp),
            Order::Arrival,
        )
    }

    /// An inbox holding `lines`, all read at 0, and then the end of input.
    fn inbox(lines: &[&str]) -> Inbox {
        let mut inbox = Inbox::default();
        for l in lines {
            inbox.push(Nanos::ZERO, format!("{l}\n").into_bytes());
        }
        inbox.eof = true;
        inbox
    }

    /// Replays `lines` all read at 0; returns (line, release ms).
    fn replay(cfg: ReplayConfig, lines: &[&str]) -> Result<Vec<(String, u64)>> {
        let mut s = schedule();
        let mut inbox = inbox(lines);
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

    /// The release times (ms) of a replay's lines.
    fn times(out: &[(String, u64)]) -> Vec<u64> {
        out.iter().map(|(_, t)| *t).collect()
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
        assert_eq!(times(&out), [0, 0, 150, 350]);
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
        assert_eq!(times(&out), [0, 0, 1000, 1500]);
        assert_eq!(out[2].0, lines[2]);
    }

    #[test]
    fn a_third_speed_never_drifts() {
        // At speed 3, a line every second leaves every 333.33 ms: the k-th
        // at ceil(k·1000/3) ms, exactly, not k·333.
        let lines: Vec<String> = (0..301).map(|k| format!("{}", 1_700_000_000 + k)).collect();
        let refs: Vec<&str> = lines.iter().map(String::as_str).collect();
        let mut c = cfg("3");
        c.lines.no_header = true;
        c.lines.time_col = Some(vec![ColSel::Index(0)]);
        c.lines.time_format = TimeFormat::parse("epoch-s");
        let mut s = schedule();
        let mut inbox = inbox(&refs);
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
        assert_eq!(times(&out), [0, 0, 2000, 2000, 3000, 10000]);
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
        c.lines.time_col = Some(vec![ColSel::Name("at".into())]);
        let out = replay(c, &json).unwrap();
        assert_eq!(out[1].1, 1000);
        let bad = replay(cfg("1"), &["ts,x", "yesterday,1"])
            .unwrap_err()
            .to_string();
        assert!(bad.starts_with("stdin:2: "), "{bad}");
    }
}
