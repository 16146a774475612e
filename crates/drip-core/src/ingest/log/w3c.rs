//! W3C extended log files (IIS, CloudFront, IIS Advanced Logging, Oracle
//! Web Cache, Incapsula): `#Software:`, `#Version:`, `#Date:` and
//! `#Fields:` directives, then one request per line, tab-separated
//! (CloudFront) or separated by runs of spaces (IIS, Oracle), where a
//! `"quoted"` value may hold spaces (`""` is a quote inside one).
//!
//! Fields carry the names of the `#Fields:` directive (`date`, `time`,
//! `c-ip`, `cs-uri-stem`, `x-forwarded-for`, ...). A file restarted
//! mid-day writes a new directive block, maybe with other `#Fields:`: each
//! line is read by the block above it, and a field keeps its name (and so
//! its column options) from block to block; names the first block lacks
//! are added after its own. Directive lines are never rows.
//!
//! The default time is `date` and `time` joined (or `date-local` and
//! `time-local`); a log of `time` only (IIS FTP) takes its date from the
//! last `#Date:` directive (the next day once a time is more than twelve
//! hours before the line above it). `date`/`time` are UTC, as the W3C format
//! defines them; the `-local` pair is the server's local time. Both are
//! written without an offset, so `--tz` reads either in its zone: give it
//! for the `-local` pair (a note asks for it), leave it out for `date` and
//! `time`. The client is `c-ip` (`x-forwarded-for` behind a proxy).
//!
//! A `#GMT-Offset: -0800` directive (Oracle Web Cache, Oracle HTTP Server)
//! says the block's times are local at that offset: it is written after
//! each time read, so it wins over `--tz` (the server's word for its own
//! file; `--tz` is for times written without an offset).
//!
//! A file cut from a longer log (by a log shipper, `tail`, a split) may
//! start without its `#Fields:` line: a first request line of a date, a
//! time and IIS's default field count ([`IIS_DEFAULT`]) is read with IIS's
//! default names, and said so; other lines before any `#Fields:` line are
//! an error naming their count.

use super::{Fields, LineError, LineParser, MISSING, Parsed, SCRATCH};

/// The directives any of which, first in a file, marks it W3C.
pub const DIRECTIVES: [&[u8]; 7] = [
    b"#Software:",
    b"#Version:",
    b"#Date:",
    b"#Fields:",
    b"#Start-Date:",
    b"#Remark:",
    b"#GMT-Offset:",
];

/// The fields IIS 8.5 and later log by default, in the order it writes
/// them; IIS 7 and 7.5 leave out `cs(Referer)` (field 10).
pub const IIS_DEFAULT: [&str; 15] = [
    "date",
    "time",
    "s-ip",
    "cs-method",
    "cs-uri-stem",
    "cs-uri-query",
    "s-port",
    "cs-username",
    "c-ip",
    "cs(User-Agent)",
    "cs(Referer)",
    "sc-status",
    "sc-substatus",
    "sc-win32-status",
    "time-taken",
];

/// The column of `cs(Referer)` in [`IIS_DEFAULT`], which IIS 7.5 lacks.
const IIS_REFERER: usize = 10;

/// Whether `line` starts with a date and a time (`2018-01-01 08:09:10 `).
pub fn dated(line: &[u8]) -> bool {
    let shape = b"dddd-dd-dd dd:dd:dd ";
    line.len() > shape.len()
        && line.iter().zip(shape).all(|(&b, &s)| match s {
            b'd' => b.is_ascii_digit(),
            _ => b == s,
        })
}

/// IIS's default fields for a request line written without a `#Fields:`
/// line above it: a date, a time, IIS's default count of space-separated
/// values (15, or 14 before IIS 8.5), a method and a status where those
/// fields are; `None` for any other line.
pub fn iis_default(line: &[u8]) -> Option<Vec<&'static str>> {
    if !dated(line) || memchr::memchr2(b'\t', b'"', line).is_some() {
        return None;
    }
    let values: Vec<&[u8]> = line
        .split(|&b| b == b' ')
        .filter(|v| !v.is_empty())
        .collect();
    let mut names = IIS_DEFAULT.to_vec();
    match values.len() {
        15 => {}
        14 => {
            names.remove(IIS_REFERER);
        }
        _ => return None,
    }
    let at = |n: &str| names.iter().position(|x| *x == n).map(|i| values[i]);
    let method = at("cs-method")?.iter().all(u8::is_ascii_uppercase);
    let status = at("sc-status")?;
    (method && status.len() == 3 && status.iter().all(u8::is_ascii_digit)).then_some(names)
}

#[derive(Default)]
pub struct W3c {
    /// Every name any block has given, the first block's first.
    names: Option<Vec<String>>,
    /// For each column of the current block, its index in `names`.
    columns: Vec<usize>,
    /// The date of the last `#Date:` directive, for logs of `time` only.
    date: Vec<u8>,
    /// The index of `date` when the current block does not write it, and
    /// the block's column of `time`.
    date_from_directive: Option<(usize, usize)>,
    /// The time of day of the last line of a log of time only, in seconds:
    /// a line hours earlier has passed midnight.
    last_time: u32,
    /// The values of one line, before they are put in name order.
    values: Vec<(u32, u32)>,
    /// The offset of the last `#GMT-Offset:` directive, after a space
    /// (` -0800`); empty when none.
    offset: Vec<u8>,
    /// The current block's column of the time the offset is written after.
    offset_time: Option<usize>,
    /// The fields are IIS's defaults, for want of a `#Fields:` line.
    defaulted: bool,
}

impl W3c {
    /// Reads a directive line.
    fn directive(&mut self, line: &[u8]) {
        if let Some(rest) = line.strip_prefix(b"#Date:") {
            let d = rest
                .trim_ascii()
                .split(|&b| b == b' ')
                .next()
                .unwrap_or_default();
            self.date = d.to_vec();
            self.last_time = 0;
            return;
        }
        if let Some(rest) = line.strip_prefix(b"#GMT-Offset:") {
            return self.gmt_offset(rest);
        }
        let Some(rest) = line.strip_prefix(b"#Fields:") else {
            return;
        };
        let block: Vec<String> = String::from_utf8_lossy(rest)
            .split_ascii_whitespace()
            .map(String::from)
            .collect();
        self.defaulted = false;
        self.block(&block);
    }

    /// Reads `#GMT-Offset: -0800` (or `-08:00`); a value of another shape
    /// is ignored, leaving the times as they would be without it.
    fn gmt_offset(&mut self, rest: &[u8]) {
        let v = rest.trim_ascii();
        let digits: Vec<u8> = v.iter().skip(1).filter(|&&b| b != b':').copied().collect();
        self.offset.clear();
        if matches!(v.first(), Some(b'+' | b'-'))
            && digits.len() == 4
            && digits.iter().all(u8::is_ascii_digit)
        {
            self.offset.push(b' ');
            self.offset.push(v[0]);
            self.offset.extend_from_slice(&digits);
        }
    }

    /// Takes the names of a block's columns.
    fn block<S: AsRef<str>>(&mut self, block: &[S]) {
        let block: Vec<&str> = block.iter().map(AsRef::as_ref).collect();
        let names = self.names.get_or_insert_with(Vec::new);
        let mut index = |n: &str| match names.iter().position(|x| x == n) {
            Some(i) => i,
            None => {
                names.push(n.to_string());
                names.len() - 1
            }
        };
        self.columns = block.iter().map(|n| index(n)).collect();
        let time = block.iter().position(|n| *n == "time");
        self.date_from_directive = time
            .filter(|_| !block.contains(&"date"))
            .map(|t| (index("date"), t));
        self.offset_time = time.or_else(|| block.iter().position(|n| *n == "time-local"));
    }

    /// Writes the `#GMT-Offset:` after the line's time, in `out.scratch`.
    fn add_offset(&self, line: &[u8], out: &mut Fields) {
        let Some(t) = self.offset_time else {
            return;
        };
        let (s, e) = self.values[t];
        let start = out.scratch.len() as u32;
        out.scratch
            .extend_from_slice(line[s as usize..e as usize].trim_ascii());
        out.scratch.extend_from_slice(&self.offset);
        out.spans[self.columns[t]] = (start | SCRATCH, out.scratch.len() as u32 | SCRATCH);
    }

    /// The error of a request line before any `#Fields:` line.
    fn no_fields(&mut self, line: &[u8]) -> LineError {
        if !dated(line) {
            return LineError::new(
                "a request line comes before any #Fields: line, which names the fields; give the log with its header lines",
            );
        }
        self.split(line);
        LineError::new(format!(
            "no #Fields: line names the fields, and this line's {} field(s) are not IIS's default 15 (or 14 before IIS 8.5); put the #Fields: line the server wrote at the start of its log first",
            self.values.len()
        ))
    }

    /// Splits a request line into `self.values`: on tabs when it has
    /// any, else on runs of spaces, a quoted value whole (without its
    /// quotes); true when the line's end cuts the last quoted value off.
    fn split(&mut self, line: &[u8]) -> bool {
        self.values.clear();
        if memchr::memchr(b'\t', line).is_some() {
            let mut s = 0;
            for e in memchr::memchr_iter(b'\t', line).chain([line.len()]) {
                self.values.push((s as u32, e as u32));
                s = e + 1;
            }
            return false;
        }
        let n = line.len();
        let mut i = 0;
        while i < n {
            if line[i] == b' ' {
                i += 1;
                continue;
            }
            if line[i] == b'"' {
                let start = i + 1;
                let mut j = start;
                // `""` inside a quoted value is a quote.
                while j < n && !(line[j] == b'"' && line.get(j + 1) != Some(&b'"')) {
                    j += if line[j] == b'"' { 2 } else { 1 };
                }
                self.values.push((start as u32, j.min(n) as u32));
                if j >= n {
                    return true;
                }
                i = j + 1;
                continue;
            }
            let start = i;
            while i < n && line[i] != b' ' {
                i += 1;
            }
            self.values.push((start as u32, i as u32));
        }
        false
    }
}

impl W3c {
    /// Moves the date of a log of time only to the next day when `time`
    /// is more than twelve hours before the line above it (past midnight).
    fn roll_over(&mut self, time: &[u8]) {
        let secs = |t: &[u8]| -> Option<u32> {
            let n = |r: std::ops::Range<usize>| {
                std::str::from_utf8(t.get(r)?).ok()?.parse::<u32>().ok()
            };
            Some(n(0..2)? * 3600 + n(3..5)? * 60 + n(6..8)?)
        };
        let Some(now) = secs(time) else {
            return;
        };
        if now + 12 * 3600 < self.last_time
            && let Some(next) = std::str::from_utf8(&self.date)
                .ok()
                .and_then(|d| d.parse::<jiff::civil::Date>().ok())
                .and_then(|d| d.tomorrow().ok())
        {
            self.date = next.to_string().into_bytes();
        }
        self.last_time = now;
    }
}

impl LineParser for W3c {
    fn format(&self) -> &'static str {
        "w3c"
    }

    fn names(&self) -> Option<&[String]> {
        self.names.as_deref()
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        let names = self.names.as_ref()?;
        let at = |n: &str| names.iter().position(|x| x == n);
        match (at("date"), at("time")) {
            (Some(d), Some(t)) => Some((d, Some(t))),
            _ => Some((at("date-local")?, Some(at("time-local")?))),
        }
    }

    fn learn(&mut self, line: &[u8]) -> bool {
        if line.starts_with(b"#") {
            self.directive(line);
            return true;
        }
        if self.names.is_none()
            && let Some(names) = iis_default(line)
        {
            self.block(&names);
            self.defaulted = true;
        }
        false
    }

    fn note(&self, tz: bool) -> Option<String> {
        if self.defaulted {
            let names = self.names.as_deref().unwrap_or_default().join(" ");
            return Some(format!(
                "no #Fields: line; reading IIS's default fields ({names}); if the server logs others, put its #Fields: line first"
            ));
        }
        (tz && !self.offset.is_empty()).then(|| {
            format!(
                "#GMT-Offset:{} gives the offset of its times: read at it, not in --tz",
                String::from_utf8_lossy(&self.offset)
            )
        })
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError> {
        if line.starts_with(b"#") {
            self.directive(line);
            return Ok(Parsed::Skip);
        }
        let Some(names) = &self.names else {
            return Err(self.no_fields(line));
        };
        let total = names.len();
        out.cut = self.split(line);
        if self.values.len() != self.columns.len() {
            let named = match self.defaulted {
                true => "IIS's default fields (read for want of a #Fields: line) are",
                false => "the #Fields: line names",
            };
            return Err(LineError::new(format!(
                "the line has {} field(s), {named} {}",
                self.values.len(),
                self.columns.len()
            )));
        }
        out.spans.resize(total, MISSING);
        for (&c, &v) in self.columns.iter().zip(&self.values) {
            out.spans[c] = v;
        }
        if !self.offset.is_empty() {
            self.add_offset(line, out);
        }
        if let Some((d, t)) = self.date_from_directive {
            if self.date.is_empty() {
                return Err(LineError::new(
                    "a log of time only needs a #Date: line above it, for the date",
                ));
            }
            let (s, e) = self.values[t];
            self.roll_over(&line[s as usize..e as usize]);
            let s = out.scratch.len() as u32;
            out.scratch.extend_from_slice(&self.date);
            out.spans[d] = (s | SCRATCH, out.scratch.len() as u32 | SCRATCH);
        }
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(p: &mut W3c, line: &str) -> Vec<String> {
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f).unwrap();
        (0..f.spans.len())
            .map(|i| {
                f.get(line.as_bytes(), i)
                    .map_or("<none>".into(), |v| String::from_utf8_lossy(v).into_owned())
            })
            .collect()
    }

    #[test]
    fn fields_are_named_by_the_directive() {
        let mut p = W3c::default();
        assert!(p.learn(b"#Version: 1.0"));
        assert!(p.learn(b"#Fields: date time x-edge-location c-ip cs-uri-stem"));
        assert!(!p.learn(b"2019-12-04\t21:02:31\tLAX1\t192.0.2.100\t/index.html"));
        assert_eq!(p.default_time(), Some((0, Some(1))));
        let v = values(&mut p, "2019-12-04\t21:02:31\tLAX1\t192.0.2.100\t/a%20b");
        assert_eq!(v[3], "192.0.2.100");
        // IIS: spaces.
        let v = values(&mut p, "2019-12-04 21:02:31 - 192.0.2.1 /");
        assert_eq!(v[2], "-");
        let e = p
            .parse(b"2019-12-04\t21:02:31", &mut Fields::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("2 field(s), the #Fields: line names 5"), "{e}");
        let e = W3c::default()
            .parse(b"x y", &mut Fields::default())
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("before any #Fields:"), "{e}");
        assert!(!e.contains("IIS"), "{e}");
    }

    #[test]
    fn a_new_block_rereads_the_columns_and_keeps_the_names() {
        let mut p = W3c::default();
        p.learn(b"#Fields: date time s-ip c-ip");
        let mut f = Fields::default();
        assert!(matches!(
            p.parse(b"#Fields: date time c-ip cs-host", &mut f),
            Ok(Parsed::Skip)
        ));
        let v = values(&mut p, "2018-01-01 09:10:11 127.0.0.1 example.com");
        assert_eq!(
            v,
            [
                "2018-01-01",
                "09:10:11",
                "<none>",
                "127.0.0.1",
                "example.com"
            ]
        );
        assert_eq!(p.names().unwrap()[4], "cs-host");
    }

    #[test]
    fn quoted_values_hold_spaces() {
        let mut p = W3c::default();
        p.learn(b"#Fields:   date-local time-local   c-ip cs(User-Agent) sc-substatus");
        assert_eq!(p.default_time(), Some((0, Some(1))));
        let v = values(
            &mut p,
            r#"2012-08-15 17:00:00.675  "173.5.0.0" "Mozilla/5.0 (Macintosh)" " ""garbage"" w/ spaces ""#,
        );
        assert_eq!(v[2], "173.5.0.0");
        assert_eq!(v[3], "Mozilla/5.0 (Macintosh)");
        assert_eq!(v[4], r#" ""garbage"" w/ spaces "#);
        // A user agent cut by the line's end keeps the line.
        let line = br#"2012-08-15 17:00:00.675 - "Mozilla/5.0 (Mac"#;
        let mut f = Fields::default();
        p.parse(&line[..], &mut f).unwrap_err();
        let line = br#"2012-08-15 17:00:00.675 - - "Mozilla/5.0 (Mac"#;
        p.parse(&line[..], &mut f).unwrap();
        assert!(f.cut);
    }

    #[test]
    fn a_log_of_time_only_takes_the_date_of_its_directive() {
        let mut p = W3c::default();
        p.learn(b"#Date: 2000-10-09 16:44:49");
        p.learn(b"#Fields: time c-ip cs-method cs-uri-stem sc-status");
        assert_eq!(p.default_time(), Some((5, Some(0))));
        let v = values(&mut p, "16:44:49 1.1.1.1 [2]USER anonymous 331");
        assert_eq!(v[5], "2000-10-09");
        p.parse(b"#Date: 2000-10-10 00:00:01", &mut Fields::default())
            .unwrap();
        let v = values(&mut p, "00:00:01 1.1.1.1 [2]QUIT - 226");
        assert_eq!(v[5], "2000-10-10");
        // Past midnight without a new #Date: the next day.
        values(&mut p, "23:59:58 1.1.1.1 [2]USER anonymous 331");
        let v = values(&mut p, "00:00:02 1.1.1.1 [2]PASS - 230");
        assert_eq!(v[5], "2000-10-11");
        let v = values(&mut p, "00:00:01 1.1.1.1 [2]QUIT - 226");
        assert_eq!(v[5], "2000-10-11");
    }

    #[test]
    fn a_file_without_fields_is_read_by_iis_defaults() {
        // IIS 10 (elastic/beats' iis test.log) and IIS 7.5 lines.
        let iis10 = "2018-12-31 12:52:33 10.44.0.136 GET / q=1 443 - 10.50.6.188 Mozilla/4.0+(compatible) - 401 0 0 0";
        let iis75 = "2019-03-06 18:43:17 10.0.140.107 GET /health - 80 - 10.0.140.2 - 200 0 0 15";
        for (line, n, ip) in [(iis10, 15, "10.50.6.188"), (iis75, 14, "10.0.140.2")] {
            assert_eq!(iis_default(line.as_bytes()).map(|v| v.len()), Some(n));
            let mut p = W3c::default();
            assert!(!p.learn(line.as_bytes()));
            assert!(p.note(false).unwrap().contains("no #Fields: line"));
            assert_eq!(p.default_time(), Some((0, Some(1))));
            let v = values(&mut p, line);
            assert_eq!(v[p.field("c-ip").unwrap()], ip);
            let e = p.parse(b"2019-03-06 18:43:17 - GET", &mut Fields::default());
            assert!(e.unwrap_err().to_string().contains(&format!(
                "4 field(s), IIS's default fields (read for want of a #Fields: line) are {n}"
            )));
        }
        // Other lines are no IIS lines: a count, a method or a status off,
        // tabs, CSV, application logs.
        for other in [
            "2019-03-06 18:43:17 10.0.140.107 GET /health - 80 - 10.0.140.2 - 200 0 0",
            "2019-03-06 18:43:17 10.0.140.107 get /health - 80 - 10.0.140.2 - 200 0 0 15",
            "2019-03-06 18:43:17 10.0.140.107 GET /health - 80 - 10.0.140.2 - 2000 0 0 15",
            "2019-03-06\t18:43:17\t10.0.140.107 GET /health - 80 - 10.0.140.2 - 200 0 0 15",
            "2019-03-06 18:43:17,a,b,c,d,e,f,g,h,i,j,k,l,m,n",
            "2019-03-06 18:43:17,123 INFO a b c d e f g h i j k l m",
        ] {
            assert_eq!(iis_default(other.as_bytes()), None, "{other}");
        }
        let mut p = W3c::default();
        assert!(!p.learn(other_count()));
        assert_eq!(p.note(false), None);
        let e = p
            .parse(other_count(), &mut Fields::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("this line's 13 field(s) are not IIS's default 15"),
            "{e}"
        );
        assert!(e.contains("put the #Fields: line"), "{e}");
        // A #Fields: line later names its block as usual.
        let mut p = W3c::default();
        p.learn(iis75.as_bytes());
        p.parse(b"#Fields: date time c-ip", &mut Fields::default())
            .unwrap();
        assert_eq!(values(&mut p, "2019-03-06 18:43:18 1.2.3.4")[8], "1.2.3.4");
    }

    fn other_count() -> &'static [u8] {
        b"2019-03-06 18:43:17 10.0.140.107 GET /health - 80 - 10.0.140.2 200 0 0 15"
    }

    #[test]
    fn a_gmt_offset_is_written_after_the_time() {
        let mut p = W3c::default();
        p.learn(b"#GMT-Offset: -0800");
        p.learn(b"#Fields:  c-ip  date  time  cs-method");
        assert!(p.note(true).unwrap().contains("#GMT-Offset: -0800"));
        assert_eq!(p.note(false), None);
        let v = values(&mut p, "64.103.37.2   2001-10-31   00:00:18   GET");
        assert_eq!(v[1..3], ["2001-10-31", "00:00:18 -0800"]);
        // The offset of a later directive; `+05:30` as well; a garbled one
        // leaves the times as written.
        p.parse(b"#GMT-Offset: +05:30", &mut Fields::default())
            .unwrap();
        assert_eq!(
            values(&mut p, "h 2001-10-31 00:00:19 GET")[2],
            "00:00:19 +0530"
        );
        p.parse(b"#GMT-Offset: PST", &mut Fields::default())
            .unwrap();
        assert_eq!(values(&mut p, "h 2001-10-31 00:00:20 GET")[2], "00:00:20");
        // A log of time only: the date of #Date:, the offset after the time.
        let mut p = W3c::default();
        p.learn(b"#GMT-Offset: -0800");
        p.learn(b"#Date: 2000-10-09 16:44:49");
        p.learn(b"#Fields: time c-ip");
        let v = values(&mut p, "16:44:49 1.1.1.1");
        assert_eq!(
            (v[0].as_str(), v[2].as_str()),
            ("16:44:49 -0800", "2000-10-09")
        );
    }
}
