//! Log timestamps → `Nanos` since the Unix epoch (UTC), exactly.
//!
//! Forms: RFC 3339 / ISO 8601 (`T`, `t` or space; 0–9 fraction digits; `Z`,
//! `±HH:MM` or `±HHMM`; no offset means UTC), epoch seconds / ms / µs / ns
//! as integers or decimals (the fraction is read as digits, never through a
//! float), Common Log Format (`10/Oct/2000:13:55:36 -0700`, brackets and a
//! fraction optional), and any strftime pattern. `auto` picks a form from a
//! sample value.

use crate::time::Nanos;
use std::fmt;

/// How a timestamp column is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeFormat {
    Auto,
    Rfc3339,
    /// Epoch with this many nanoseconds per unit (1e9 for seconds).
    Epoch(u64),
    Clf,
    Strftime(String),
}

impl TimeFormat {
    pub fn parse(text: &str) -> TimeFormat {
        match text {
            "auto" => TimeFormat::Auto,
            "rfc3339" | "iso8601" => TimeFormat::Rfc3339,
            "epoch-s" | "epoch" => TimeFormat::Epoch(1_000_000_000),
            "epoch-ms" => TimeFormat::Epoch(1_000_000),
            "epoch-us" => TimeFormat::Epoch(1_000),
            "epoch-ns" => TimeFormat::Epoch(1),
            "clf" => TimeFormat::Clf,
            other => TimeFormat::Strftime(other.to_string()),
        }
    }

    /// Picks a concrete form for a sample value, if one fits.
    pub fn detect(sample: &[u8]) -> Option<TimeFormat> {
        let s = trim(sample);
        // A value of the right shape picks the form even when it is out of
        // range, so the error says what is wrong with it.
        let shaped = |r: Result<Nanos, TimeError>| {
            matches!(
                r,
                Ok(_) | Err(TimeError::BeforeEpoch | TimeError::OutOfRange)
            )
        };
        if shaped(parse_rfc3339(s)) {
            return Some(TimeFormat::Rfc3339);
        }
        if shaped(parse_clf(s)) {
            return Some(TimeFormat::Clf);
        }
        let (int, frac) = split_decimal(s)?;
        if frac.is_some() {
            // A decimal: seconds (nginx $msec, Caddy ts) unless the integer
            // part is itself ms, µs or ns by its length.
            return Some(TimeFormat::Epoch(
                unit_by_digits(int.len()).unwrap_or(1_000_000_000),
            ));
        }
        unit_by_digits(int.len()).map(TimeFormat::Epoch)
    }

    /// Parses one value (no offset: UTC). Errors say what was expected.
    #[cfg(test)]
    pub fn parse_value(&self, value: &[u8]) -> Result<Nanos, TimeError> {
        self.parse_value_in(value, None).map(|(t, _)| t)
    }

    /// Parses one value, reading a time without a UTC offset in `zone`
    /// (UTC when `None`); also says whether the value had no offset.
    pub fn parse_value_in(
        &self,
        value: &[u8],
        zone: Option<&Zone>,
    ) -> Result<(Nanos, bool), TimeError> {
        let s = trim(value);
        match self {
            TimeFormat::Auto => match TimeFormat::detect(s) {
                Some(f) => f.parse_value_in(s, zone),
                None => Err(TimeError::Unrecognised),
            },
            TimeFormat::Rfc3339 => rfc3339_in(s, zone),
            TimeFormat::Epoch(unit) => parse_epoch(s, *unit).map(|t| (t, false)),
            TimeFormat::Clf => clf_in(s, zone),
            TimeFormat::Strftime(f) => strftime_in(f, s, zone),
        }
    }
}

impl fmt::Display for TimeFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeFormat::Auto => f.write_str("auto"),
            TimeFormat::Rfc3339 => f.write_str("rfc3339"),
            TimeFormat::Epoch(1_000_000_000) => f.write_str("epoch-s"),
            TimeFormat::Epoch(1_000_000) => f.write_str("epoch-ms"),
            TimeFormat::Epoch(1_000) => f.write_str("epoch-us"),
            TimeFormat::Epoch(_) => f.write_str("epoch-ns"),
            TimeFormat::Clf => f.write_str("clf"),
            TimeFormat::Strftime(p) => write!(f, "'{p}'"),
        }
    }
}

/// The bytes of a CLF time up to its second: `10/Oct/2000:13:55:36`.
const CLF_SECOND: usize = 20;

/// Parses one column's values, remembering the last whole second of the
/// RFC 3339 and CLF forms: rows of one second share their first 19 (20)
/// bytes, so only the fraction and offset are read again.
pub struct TimeParser {
    pub format: TimeFormat,
    zone: Option<Zone>,
    /// True once a value without a UTC offset was read.
    pub naive_seen: bool,
    prefix: [u8; 20],
    prefix_len: usize,
    /// The prefix's date and time in seconds, read as UTC.
    local: i64,
    /// The zone's offset at that local time, when there is a zone.
    zone_offset: i64,
    /// The instant of the last second learnt: a local time the clocks
    /// repeat (the fall-back hour) is read as the pass nearer to it, so
    /// the repeated hour is read in order.
    last: Option<i64>,
    /// The last CLF tail read after the second (` -0700`), and its value:
    /// lines of one server share it.
    tail: [u8; 8],
    tail_len: usize,
    tail_value: (u64, Option<i64>),
}

impl TimeParser {
    /// Times without an offset are read in `zone`, or as UTC.
    pub fn new(format: TimeFormat, zone: Option<Zone>) -> TimeParser {
        TimeParser {
            format,
            zone,
            naive_seen: false,
            prefix: [0; 20],
            prefix_len: 0,
            local: 0,
            zone_offset: 0,
            last: None,
            tail: [0; 8],
            tail_len: usize::MAX,
            tail_value: (0, None),
        }
    }

    #[inline(always)]
    pub fn parse(&mut self, value: &[u8]) -> Result<Nanos, TimeError> {
        let s = trim(value);
        match self.format {
            TimeFormat::Rfc3339 => {
                if self.cached(s, 19)
                    && let Some(tail) = (Cursor { s, i: 19 }).tail()
                {
                    return self.in_cached_second(tail);
                }
                self.parse_learning(s, s, 19)
            }
            TimeFormat::Clf => {
                let b = s.strip_prefix(b"[").unwrap_or(s);
                let body = b.strip_suffix(b"]").unwrap_or(b);
                if self.cached(body, CLF_SECOND)
                    && let Some(tail) = self.clf_tail(body)
                {
                    return self.in_cached_second(tail);
                }
                self.parse_learning(s, body, CLF_SECOND)
            }
            _ => self.parse_other(s),
        }
    }

    /// Whether `body` starts with the cached second, `plen` bytes long.
    #[inline(always)]
    fn cached(&self, body: &[u8], plen: usize) -> bool {
        self.prefix_len == plen && body.len() >= plen && same_second(body, &self.prefix, plen)
    }

    /// The instant of a time in the cached second, from what follows it
    /// (fraction ns, offset s if written).
    #[inline(always)]
    fn in_cached_second(&mut self, (frac, off): (u64, Option<i64>)) -> Result<Nanos, TimeError> {
        self.naive_seen |= off.is_none();
        let off = off.unwrap_or(self.zone_offset);
        let secs = u64::try_from(self.local - off).map_err(|_| TimeError::BeforeEpoch)?;
        secs.checked_mul(Nanos::PER_SEC)
            .and_then(|n| n.checked_add(frac))
            .map(Nanos)
            .ok_or(TimeError::BeforeEpoch)
    }

    /// What follows the second in a CLF `body` (` -0700`): remembered, as
    /// the lines of one server repeat it (its value is a function of its
    /// bytes alone).
    #[inline(always)]
    fn clf_tail(&mut self, body: &[u8]) -> Option<(u64, Option<i64>)> {
        let rest = &body[CLF_SECOND..];
        if rest.len() == self.tail_len && rest == &self.tail[..rest.len()] {
            return Some(self.tail_value);
        }
        let value = Cursor {
            s: body,
            i: CLF_SECOND,
        }
        .tail()?;
        if rest.len() <= self.tail.len() {
            self.tail[..rest.len()].copy_from_slice(rest);
            self.tail_len = rest.len();
            self.tail_value = value;
        }
        Some(value)
    }

    /// A timestamp of a format with no cached second.
    #[inline(never)]
    fn parse_other(&mut self, s: &[u8]) -> Result<Nanos, TimeError> {
        let (at, naive) = self.format.parse_value_in(s, self.zone.as_ref())?;
        self.naive_seen |= naive;
        Ok(at)
    }

    /// A timestamp in a second other than the cached one (`body`: `s`
    /// without brackets, its first `plen` bytes the second): parsed whole,
    /// and its second cached.
    #[inline(never)]
    fn parse_learning(&mut self, s: &[u8], body: &[u8], plen: usize) -> Result<Nanos, TimeError> {
        let (mut at, naive) = self.format.parse_value_in(s, self.zone.as_ref())?;
        self.naive_seen |= naive;
        // Learn this second: the prefix alone, read as UTC with no fraction,
        // and the zone's offset then.
        if body.len() >= plen {
            let head = &body[..plen];
            let local = match self.format {
                TimeFormat::Rfc3339 => parse_rfc3339(head),
                _ => parse_clf(head),
            };
            if let Ok(l) = local {
                let local = (l.0 / Nanos::PER_SEC) as i64;
                let zone_offset = match &self.zone {
                    Some(z) => z.offset_at(local),
                    None => Ok(0),
                };
                if let Ok(mut zo) = zone_offset {
                    if let (true, Some(z)) = (naive, &self.zone)
                        && let Some((first, second)) = z.repeated(local)
                    {
                        // The second pass when it is nearer the last time read.
                        let (one, two) = (local - first, local - second);
                        if self.last.is_some_and(|l| (two - l).abs() < (one - l).abs()) {
                            zo = second;
                            at = Nanos(at.0 + (first - second) as u64 * Nanos::PER_SEC);
                        }
                    }
                    self.last = Some((at.0 / Nanos::PER_SEC) as i64);
                    self.prefix[..plen].copy_from_slice(head);
                    self.prefix_len = plen;
                    self.local = local;
                    self.zone_offset = zo;
                }
            }
        }
        Ok(at)
    }
}

/// Whether `body` starts with the `n` bytes (16 to 24) of `prefix`:
/// sixteen compared as two words, the rest byte by byte, without a call.
#[inline(always)]
fn same_second(body: &[u8], prefix: &[u8], n: usize) -> bool {
    body[..16] == prefix[..16] && body[16..n].iter().zip(&prefix[16..n]).all(|(a, b)| a == b)
}

/// Why a timestamp did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TimeError {
    Expected(&'static str),
    OutOfRange,
    BeforeEpoch,
    Unrecognised,
    Strftime(String),
    /// A local time the clocks skipped (the spring-forward gap): its text.
    Gap(String),
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::Expected(what) => write!(f, "expected {what}"),
            TimeError::OutOfRange => f.write_str("a field is out of range"),
            TimeError::BeforeEpoch => f.write_str("before 1970 or after 2554"),
            TimeError::Unrecognised => f.write_str(
                "not a recognised timestamp (RFC 3339, epoch s/ms/us/ns, or CLF); set --time-format",
            ),
            TimeError::Strftime(e) => f.write_str(e),
            TimeError::Gap(e) => f.write_str(e),
        }
    }
}

#[inline]
fn trim(s: &[u8]) -> &[u8] {
    s.trim_ascii()
}

fn unit_by_digits(n: usize) -> Option<u64> {
    match n {
        9..=11 => Some(1_000_000_000),
        12..=14 => Some(1_000_000),
        15..=17 => Some(1_000),
        18..=20 => Some(1),
        _ => None,
    }
}

fn split_decimal(s: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
    (digits(int) && frac.is_none_or(digits)).then_some((int, frac))
}

fn digits_value(d: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for &b in d {
        v = v.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(v)
}

/// Epoch value in units of `unit` ns, integer or decimal, exactly.
pub fn parse_epoch(s: &[u8], unit: u64) -> Result<Nanos, TimeError> {
    let expected = TimeError::Expected("an epoch number such as 1700000000 or 1700000000.123");
    let (int, frac) = split_decimal(s).ok_or(expected)?;
    let whole = digits_value(int)
        .and_then(|v| v.checked_mul(unit))
        .ok_or(TimeError::BeforeEpoch)?;
    let mut part = 0u64;
    if let Some(frac) = frac {
        // Digits beyond 1 ns are dropped (floor).
        let mut scale = unit;
        for &b in frac {
            scale /= 10;
            if scale == 0 {
                break;
            }
            part += u64::from(b - b'0') * scale;
        }
    }
    whole
        .checked_add(part)
        .map(Nanos)
        .ok_or(TimeError::BeforeEpoch)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    // Shift the year to start in March so the leap day is the year's last.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// A byte cursor for the fixed-layout forms.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    #[inline]
    fn num(&mut self, n: usize) -> Option<u32> {
        let d = self.s.get(self.i..self.i + n)?;
        if !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.i += n;
        Some(d.iter().fold(0, |v, &b| v * 10 + u32::from(b - b'0')))
    }
    #[inline]
    fn lit(&mut self, c: u8) -> Option<()> {
        (self.s.get(self.i) == Some(&c)).then(|| self.i += 1)
    }
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    #[inline]
    fn done(&self) -> bool {
        self.i == self.s.len()
    }
    /// `.ddddddddd` → nanoseconds (digits past nine are dropped).
    #[inline]
    fn fraction(&mut self) -> Option<u64> {
        if self.peek() != Some(b'.') && self.peek() != Some(b',') {
            return Some(0);
        }
        self.i += 1;
        let start = self.i;
        let mut ns = 0u64;
        let mut scale = 100_000_000u64;
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            ns += u64::from(b - b'0') * scale;
            scale /= 10;
            self.i += 1;
        }
        (self.i > start).then_some(ns)
    }
    /// `HH:MM:SS` → (hours, minutes, seconds), unchecked ranges.
    fn clock(&mut self) -> Option<(u32, u32, u32)> {
        let h = self.num(2)?;
        self.lit(b':')?;
        let mi = self.num(2)?;
        self.lit(b':')?;
        Some((h, mi, self.num(2)?))
    }

    /// What follows the seconds: an optional fraction, an optional space,
    /// an optional offset, and the end: (fraction ns, offset s if given).
    #[inline(always)]
    fn tail(&mut self) -> Option<(u64, Option<i64>)> {
        let frac = self.fraction()?;
        if self.peek() == Some(b' ') {
            self.i += 1;
        }
        let off = self.offset()?;
        self.done().then_some((frac, off))
    }

    /// `Z`, `±HH:MM`, `±HHMM`, `±HH` → seconds east of UTC; nothing →
    /// `Some(None)` (a naive local time); anything else → `None`.
    #[inline]
    fn offset(&mut self) -> Option<Option<i64>> {
        match self.peek() {
            None => Some(None),
            Some(b'Z' | b'z') => {
                self.i += 1;
                Some(Some(0))
            }
            Some(sign @ (b'+' | b'-')) => {
                self.i += 1;
                let h = self.num(2)?;
                let m = if self.lit(b':').is_some() {
                    self.num(2)?
                } else {
                    self.num(2).unwrap_or(0)
                };
                if h > 23 || m > 59 {
                    return None;
                }
                let secs = i64::from(h * 3600 + m * 60);
                Some(Some(if sign == b'-' { -secs } else { secs }))
            }
            _ => None,
        }
    }
}

/// A time zone for timestamps written without a UTC offset (`--tz`).
#[derive(Clone, Debug)]
pub struct Zone(jiff::tz::TimeZone);

/// Why a `--tz` value names no time zone: an offset out of range, or a
/// name the zone database does not know, with what to give instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneError(String);

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ZoneError {}

impl Zone {
    /// An IANA name (`Europe/Paris`), `UTC`, or a fixed offset (`+02:00`).
    pub fn parse(name: &str) -> Result<Zone, ZoneError> {
        let fixed = (|| {
            let mut c = Cursor {
                s: name.trim().as_bytes(),
                i: 0,
            };
            let off = c.offset()??;
            c.done().then_some(off)
        })();
        if let Some(off) = fixed {
            let offset =
                jiff::tz::Offset::from_seconds(off as i32).map_err(|e| ZoneError(e.to_string()))?;
            return Ok(Zone(jiff::tz::TimeZone::fixed(offset)));
        }
        jiff::tz::TimeZone::get(name.trim()).map(Zone).map_err(|e| {
            ZoneError(format!("unknown time zone '{name}' ({e}); give an IANA name such as Europe/Paris, UTC, or an offset such as +02:00"))
        })
    }

    /// The zone itself, for showing times in it.
    pub fn time_zone(&self) -> &jiff::tz::TimeZone {
        &self.0
    }

    /// Seconds east of UTC in force at the local time `local` (seconds
    /// since 1970 read as if UTC). A local time the clocks repeat (the
    /// fall-back hour) is read in its first pass (see [`TimeParser`] for
    /// the second); one they skip (the spring-forward gap) is an error
    /// naming it.
    fn offset_at(&self, local: i64) -> Result<i64, TimeError> {
        let ts = jiff::Timestamp::from_second(local).map_err(|_| TimeError::BeforeEpoch)?;
        let dt = jiff::tz::TimeZone::UTC.to_datetime(ts);
        self.offset_of(dt)
    }

    fn offset_of(&self, dt: jiff::civil::DateTime) -> Result<i64, TimeError> {
        use jiff::tz::AmbiguousOffset;
        match self.0.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Unambiguous { offset }
            | AmbiguousOffset::Fold { before: offset, .. } => Ok(i64::from(offset.seconds())),
            AmbiguousOffset::Gap { before, after } => Err(TimeError::Gap(format!(
                "{dt} does not exist in {}: the clocks went forward from {before} to {after} over it (the spring-forward gap); check --tz, or that the log's clock was in that zone",
                self.name()
            ))),
        }
    }

    /// The offsets of the first and second pass of a local time the
    /// clocks repeat (the fall-back hour), if `local` is one.
    fn repeated(&self, local: i64) -> Option<(i64, i64)> {
        let ts = jiff::Timestamp::from_second(local).ok()?;
        let dt = jiff::tz::TimeZone::UTC.to_datetime(ts);
        match self.0.to_ambiguous_timestamp(dt).offset() {
            jiff::tz::AmbiguousOffset::Fold { before, after } => {
                Some((i64::from(before.seconds()), i64::from(after.seconds())))
            }
            _ => None,
        }
    }

    fn name(&self) -> &str {
        self.0.iana_name().unwrap_or("the zone given")
    }
}

/// Seconds since 1970 of a civil date and time read as UTC (may be negative).
fn local_seconds(
    (year, month, day): (i64, u32, u32),
    (h, mi, sec): (u32, u32, u32),
) -> Result<i64, TimeError> {
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || h > 23
        || mi > 59
        || sec > 60
    {
        return Err(TimeError::OutOfRange);
    }
    Ok(days_from_civil(year, month, day) * 86_400 + i64::from(h * 3600 + mi * 60 + sec))
}

/// The instant of `local` seconds plus `frac` ns at `offset` (seconds east
/// of UTC); without an offset, in `zone`, else UTC. Also says whether the
/// time was naive (had no offset).
fn at_offset(
    local: i64,
    frac: u64,
    offset: Option<i64>,
    zone: Option<&Zone>,
) -> Result<(Nanos, bool), TimeError> {
    let off = match (offset, zone) {
        (Some(o), _) => o,
        (None, Some(z)) => z.offset_at(local)?,
        (None, None) => 0,
    };
    let secs = u64::try_from(local - off).map_err(|_| TimeError::BeforeEpoch)?;
    secs.checked_mul(Nanos::PER_SEC)
        .and_then(|n| n.checked_add(frac))
        .map(|n| (Nanos(n), offset.is_none()))
        .ok_or(TimeError::BeforeEpoch)
}

/// RFC 3339 / ISO 8601: `2024-05-01T12:00:00.123456789+02:00` and kin
/// (no offset: UTC).
pub fn parse_rfc3339(s: &[u8]) -> Result<Nanos, TimeError> {
    rfc3339_in(s, None).map(|(t, _)| t)
}

/// RFC 3339 with a zone for naive times; also says whether it was naive.
fn rfc3339_in(s: &[u8], zone: Option<&Zone>) -> Result<(Nanos, bool), TimeError> {
    const WANT: TimeError =
        TimeError::Expected("an RFC 3339 time such as 2024-05-01T12:00:00.123Z");
    let mut c = Cursor { s, i: 0 };
    let date = (|| {
        let y = c.num(4)?;
        c.lit(b'-')?;
        let mo = c.num(2)?;
        c.lit(b'-')?;
        let d = c.num(2)?;
        match c.peek()? {
            b'T' | b't' | b' ' => c.i += 1,
            _ => return None,
        }
        let hms = c.clock()?;
        let (frac, off) = c.tail()?;
        Some(((i64::from(y), mo, d), hms, frac, off))
    })()
    .ok_or(WANT)?;
    at_offset(local_seconds(date.0, date.1)?, date.2, date.3, zone)
}

const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Common Log Format: `[10/Oct/2000:13:55:36 -0700]`; brackets, a fraction
/// (HAProxy's `.655`) and the zone (then UTC) are optional.
pub fn parse_clf(s: &[u8]) -> Result<Nanos, TimeError> {
    clf_in(s, None).map(|(t, _)| t)
}

/// CLF with a zone for naive times; also says whether it was naive.
fn clf_in(s: &[u8], zone: Option<&Zone>) -> Result<(Nanos, bool), TimeError> {
    const WANT: TimeError =
        TimeError::Expected("a Common Log Format time such as 10/Oct/2000:13:55:36 -0700");
    let s = s.strip_prefix(b"[").unwrap_or(s);
    let s = s.strip_suffix(b"]").unwrap_or(s);
    let mut c = Cursor { s, i: 0 };
    let parts = (|| {
        let d = c.num(2)?;
        c.lit(b'/')?;
        let mon = s.get(c.i..c.i + 3)?;
        let mo = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(mon))? as u32 + 1;
        c.i += 3;
        c.lit(b'/')?;
        let y = c.num(4)?;
        c.lit(b':')?;
        let hms = c.clock()?;
        let (frac, off) = c.tail()?;
        Some(((i64::from(y), mo, d), hms, frac, off))
    })()
    .ok_or(WANT)?;
    at_offset(local_seconds(parts.0, parts.1)?, parts.2, parts.3, zone)
}

/// A strftime pattern with a zone for naive times; also says whether the
/// value was naive.
fn strftime_in(format: &str, s: &[u8], zone: Option<&Zone>) -> Result<(Nanos, bool), TimeError> {
    let text = std::str::from_utf8(s).map_err(|_| TimeError::Expected("UTF-8 text"))?;
    let bad = |e: jiff::Error| TimeError::Strftime(format!("does not match '{format}': {e}"));
    let tm = jiff::fmt::strtime::parse(format, text).map_err(bad)?;
    let naive = tm.offset().is_none();
    let ts = if naive {
        let dt = tm.to_datetime().map_err(bad)?;
        let off = zone.map_or(Ok(0), |z| z.offset_of(dt))?;
        let utc = jiff::tz::TimeZone::UTC.to_timestamp(dt).map_err(bad)?;
        jiff::Timestamp::from_second(utc.as_second() - off)
            .and_then(|t| {
                t.checked_add(jiff::SignedDuration::from_nanos(i64::from(
                    utc.subsec_nanosecond(),
                )))
            })
            .map_err(bad)?
    } else {
        tm.to_timestamp().map_err(bad)?
    };
    u64::try_from(ts.as_nanosecond())
        .map(|n| (Nanos(n), naive))
        .map_err(|_| TimeError::BeforeEpoch)
}

#[cfg(test)]
mod tests;
