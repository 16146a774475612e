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

use super::{Fields, LineParser, MISSING, Parsed, SCRATCH};

/// The directives any of which, first in a file, marks it W3C.
pub const DIRECTIVES: [&[u8]; 6] = [
    b"#Software:",
    b"#Version:",
    b"#Date:",
    b"#Fields:",
    b"#Start-Date:",
    b"#Remark:",
];

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
        let Some(rest) = line.strip_prefix(b"#Fields:") else {
            return;
        };
        let block: Vec<String> = String::from_utf8_lossy(rest)
            .split_ascii_whitespace()
            .map(String::from)
            .collect();
        let names = self.names.get_or_insert_with(Vec::new);
        let mut index = |n: &str| match names.iter().position(|x| x == n) {
            Some(i) => i,
            None => {
                names.push(n.to_string());
                names.len() - 1
            }
        };
        self.columns = block.iter().map(|n| index(n)).collect();
        let time = block.iter().position(|n| n == "time");
        self.date_from_directive = time
            .filter(|_| !block.iter().any(|n| n == "date"))
            .map(|t| (index("date"), t));
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
            true
        } else {
            false
        }
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, String> {
        if line.starts_with(b"#") {
            self.directive(line);
            return Ok(Parsed::Skip);
        }
        let Some(names) = &self.names else {
            return Err("a request line before any #Fields: line names the fields".into());
        };
        let total = names.len();
        out.cut = self.split(line);
        if self.values.len() != self.columns.len() {
            return Err(format!(
                "the line has {} field(s), the #Fields: line names {}",
                self.values.len(),
                self.columns.len()
            ));
        }
        out.spans.resize(total, MISSING);
        for (&c, &v) in self.columns.iter().zip(&self.values) {
            out.spans[c] = v;
        }
        if let Some((d, t)) = self.date_from_directive {
            if self.date.is_empty() {
                return Err("a log of time only needs a #Date: line above it, for the date".into());
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
            .unwrap();
        assert!(e.contains("2 field(s), the #Fields: line names 5"), "{e}");
        let e = W3c::default()
            .parse(b"x y", &mut Fields::default())
            .err()
            .unwrap();
        assert!(e.contains("before any #Fields:"), "{e}");
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
}
