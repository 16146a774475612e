//! Access logs as servers write them, one request per line, read into named
//! fields so that the column options (`--time-column`, `--key-column`,
//! `--cost-column`, `--duration-column`) mean the same for every format:
//!
//! - `combined` / `common` ([`clf`]): nginx variable names (`remote_addr`,
//!   `time_local`, `request`, `status`, ...), the request split into
//!   `method`, `uri` and `protocol`, further fields named by position;
//! - `nginx` ([`nginx`]): an nginx `log_format` string names each field by
//!   its variable;
//! - `ndjson` ([`ndjson`]): dotted paths into each line's JSON object;
//! - `alb` ([`alb`]): AWS's field names, `client` without its port;
//! - `w3c` ([`w3c`]): the names of the `#Fields:` directive (CloudFront, IIS).
//!
//! A parser turns one line into spans of field values ([`Fields`]); it never
//! allocates per line except to unescape a JSON string. A line that does not
//! fit its format is an error for that line alone: lines are separated by
//! newlines, so an unbalanced quote cannot swallow the rest of the log.
//! [`detect`] picks a format from the first line of a log.

pub mod alb;
pub mod clf;
pub mod key;
pub mod ndjson;
pub mod nginx;
pub mod w3c;

use std::io::BufRead;

/// How a log's lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InputFormat {
    /// Decided from the first lines: ndjson, w3c, alb, combined, common, or CSV.
    Auto,
    /// Comma-separated values with a header row (or --delimiter).
    Csv,
    /// Tab-separated values with a header row.
    Tsv,
    /// NCSA Combined Log Format (Apache, nginx's default).
    Combined,
    /// NCSA Common Log Format.
    Common,
    /// Lines of an nginx log_format given with --log-format.
    Nginx,
    /// One JSON object per line; fields by dotted path (request.remote_ip).
    Ndjson,
    /// AWS Application Load Balancer access logs.
    Alb,
    /// W3C extended logs (CloudFront, IIS): fields named by the #Fields: line.
    W3c,
}

impl InputFormat {
    /// The name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
            InputFormat::Combined => "combined",
            InputFormat::Common => "common",
            InputFormat::Nginx => "nginx",
            InputFormat::Ndjson => "ndjson",
            InputFormat::Alb => "alb",
            InputFormat::W3c => "w3c",
        }
    }
}

/// Longest line read; a longer one is a bad line (and the rest of it is
/// skipped), so a file without newlines cannot fill memory.
pub const MAX_LINE: usize = 1 << 20;

/// Values of one line's fields: byte spans into the line, or into
/// `scratch` (values that had to be unescaped) when `start` has
/// [`SCRATCH`] set. [`MISSING`] marks a field the line does not have.
#[derive(Default, Debug)]
pub struct Fields {
    pub spans: Vec<(u32, u32)>,
    pub scratch: Vec<u8>,
}

/// Marks a span into `Fields::scratch`.
pub const SCRATCH: u32 = 1 << 31;
/// A field absent from the line.
pub const MISSING: (u32, u32) = (u32::MAX, u32::MAX);

impl Fields {
    pub fn clear(&mut self) {
        self.spans.clear();
        self.scratch.clear();
    }

    /// The value of field `i` of `line`; `None` when the line lacks it.
    #[inline]
    pub fn get<'a>(&'a self, line: &'a [u8], i: usize) -> Option<&'a [u8]> {
        let &(s, e) = self.spans.get(i)?;
        if (s, e) == MISSING {
            None
        } else if s & SCRATCH != 0 {
            Some(&self.scratch[(s & !SCRATCH) as usize..(e & !SCRATCH) as usize])
        } else {
            Some(&line[s as usize..e as usize])
        }
    }

    /// Field `i` of `line` when its span points into the line (empty when
    /// missing); borrows only the line.
    #[inline]
    pub fn in_line<'a>(&self, line: &'a [u8], i: usize) -> &'a [u8] {
        match self.spans.get(i) {
            Some(&(s, e)) if (s, e) != MISSING && s & SCRATCH == 0 => &line[s as usize..e as usize],
            _ => &line[..0],
        }
    }

    /// Pushes the span of `value`, a sub-slice of `line`.
    #[inline]
    pub fn push_sub(&mut self, line: &[u8], value: &[u8]) {
        let s = value.as_ptr() as usize - line.as_ptr() as usize;
        self.spans.push((s as u32, (s + value.len()) as u32));
    }
}

/// One line's parse.
pub enum Parsed {
    /// A request: its fields are in the `Fields`.
    Record,
    /// A line that carries no request (a W3C directive).
    Skip,
}

/// A log format, ready to read lines.
pub trait LineParser: Send {
    /// The format's name, for messages.
    fn format(&self) -> &'static str;
    /// Field names in index order; `None` until the format knows them (a
    /// W3C file before its `#Fields:` line).
    fn names(&self) -> Option<&[String]>;
    /// The field index of `name`, if this format can read it. The default
    /// looks it up in [`names`](Self::names); JSON lines accept any path.
    fn field(&mut self, name: &str) -> Option<usize> {
        let names = self.names()?;
        names
            .iter()
            .position(|n| n == name)
            .or_else(|| names.iter().position(|n| n.eq_ignore_ascii_case(name)))
    }
    /// The field index of column number `i`, if this format can read it.
    fn field_at(&mut self, i: usize) -> Option<usize> {
        Some(i)
    }
    /// The time field(s) read when none is named: a date and a time-of-day
    /// field for W3C, `request_creation_time` for ALB. `None`: pick from
    /// the names as for CSV headers.
    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        None
    }
    /// Learns from a line before the first request: true when the line
    /// was a header (a W3C directive) rather than a request.
    fn learn(&mut self, _line: &[u8]) -> bool {
        false
    }
    /// Reads `line` (without its line end) into `out`.
    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, String>;
    /// Whether a field written `-` means empty (true for the text formats).
    fn dash_is_empty(&self) -> bool {
        true
    }
}

/// Reads lines of at most [`MAX_LINE`] bytes from a buffered reader, each
/// without its `\n` or `\r\n`.
pub struct Lines<R> {
    inner: R,
    pub buf: Vec<u8>,
    /// 1-based number of the line in `buf`.
    pub line: u64,
}

/// The next line, if any.
pub enum Line {
    Ok,
    TooLong,
    End,
}

impl<R: BufRead> Lines<R> {
    pub fn new(inner: R) -> Lines<R> {
        Lines {
            inner,
            buf: Vec::with_capacity(1024),
            line: 0,
        }
    }

    pub fn next_line(&mut self) -> std::io::Result<Line> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = match self.inner.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (part, used, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (&chunk[..i], i + 1, true),
                None => (chunk, chunk.len(), false),
            };
            if !too_long {
                if self.buf.len() + part.len() > MAX_LINE {
                    // Keep nothing more of this line; skip to its end.
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            self.inner.consume(used);
            if done {
                break;
            }
        }
        if !any {
            return Ok(Line::End);
        }
        self.line += 1;
        if too_long {
            return Ok(Line::TooLong);
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Line::Ok)
    }
}

/// The line-based format of a log, from the first of its first lines that
/// shows one (a garbled first request does not hide the format), or `None`
/// for CSV/TSV. `{` → ndjson; `#Version:`/`#Fields:` → w3c; a type word,
/// an RFC 3339 time and an `app/…` or `net/…` balancer → alb; a CLF-shaped
/// line (`[time]`, then a quoted request) → combined or common.
pub fn detect(sample: &[u8]) -> Option<InputFormat> {
    // A line cut by the end of the sample is not judged, unless it is all.
    let complete = match memchr::memrchr(b'\n', sample) {
        Some(i) => &sample[..i],
        None => sample,
    };
    let mut lines = complete
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l).trim_ascii_start())
        .filter(|l| !l.is_empty())
        .take(8)
        .peekable();
    // JSON and W3C show on the first line.
    let first = lines.peek()?;
    if first.starts_with(b"{") {
        return Some(InputFormat::Ndjson);
    }
    if first.starts_with(b"#Version:") || first.starts_with(b"#Fields:") {
        return Some(InputFormat::W3c);
    }
    lines.find_map(detect_line)
}

/// ALB, combined or common, from one line.
fn detect_line(first: &[u8]) -> Option<InputFormat> {
    let mut f = Fields::default();
    if clf::tokens(first, &mut f, &[]).is_err() {
        return None;
    }
    let tok = |i: usize| f.get(first, i).unwrap_or_default();
    let n = f.spans.len();
    if alb::looks_like(first, &f) {
        return Some(InputFormat::Alb);
    }
    let bracketed = |i: usize| {
        f.spans
            .get(i)
            .is_some_and(|&(s, _)| s > 0 && first[s as usize - 1] == b'[')
    };
    let quoted = |i: usize| {
        f.spans
            .get(i)
            .is_some_and(|&(s, _)| s > 0 && first[s as usize - 1] == b'"')
    };
    if n >= 7 && bracketed(3) && quoted(4) && crate::ingest::timestamp::parse_clf(tok(3)).is_ok() {
        if n >= 9 && quoted(7) && quoted(8) {
            return Some(InputFormat::Combined);
        }
        return Some(InputFormat::Common);
    }
    None
}

/// Splits a request line `GET /a b HTTP/1.1` into method, URI and
/// protocol: the method is the first word, the protocol the last when it
/// starts with `HTTP/`, the URI all between (spaces included). A line with
/// no space is all URI.
pub fn split_request(r: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let Some(sp) = r.iter().position(|&b| b == b' ') else {
        return (&r[..0], r, &r[r.len()..]);
    };
    let method = &r[..sp];
    let rest = &r[sp + 1..];
    match rest.iter().rposition(|&b| b == b' ') {
        Some(l) if rest[l + 1..].starts_with(b"HTTP/") => (method, &rest[..l], &rest[l + 1..]),
        _ => (method, rest, &rest[rest.len()..]),
    }
}

/// Builds the parser for `format` (not CSV, TSV or auto).
pub fn parser(
    format: InputFormat,
    log_format: Option<&str>,
) -> anyhow::Result<Box<dyn LineParser>> {
    Ok(match format {
        InputFormat::Combined => Box::new(clf::Clf::combined()),
        InputFormat::Common => Box::new(clf::Clf::common()),
        InputFormat::Nginx => {
            let Some(f) = log_format else {
                anyhow::bail!(
                    "--input-format nginx needs --log-format 'FORMAT', the log_format string from nginx.conf"
                );
            };
            Box::new(nginx::Nginx::compile(f)?)
        }
        InputFormat::Ndjson => Box::new(ndjson::Ndjson::default()),
        InputFormat::Alb => Box::new(alb::Alb::new()),
        InputFormat::W3c => Box::new(w3c::W3c::default()),
        InputFormat::Auto | InputFormat::Csv | InputFormat::Tsv => {
            unreachable!("CSV is read by the CSV reader")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_from_the_first_line() {
        let cases: [(&str, Option<InputFormat>); 10] = [
            (
                r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.0" 200 5 "-" "curl""#,
                Some(InputFormat::Combined),
            ),
            (
                r#"h - - [01/Aug/1995:00:00:01 -0400] "GET / HTTP/1.0" 200 7"#,
                Some(InputFormat::Common),
            ),
            (r#" {"ts":1}"#, Some(InputFormat::Ndjson)),
            ("#Version: 1.0\n#Fields: date time", Some(InputFormat::W3c)),
            (
                r#"https 2018-07-02T22:23:00.186641Z app/my-lb/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://h:80/ HTTP/1.1" "curl/7.46.0" - - arn "Root=1" "-" "-" 0 2018-07-02T22:22:48.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-""#,
                Some(InputFormat::Alb),
            ),
            ("ts,key\n1,a", None),
            (
                "garbage\n1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 200 7\n",
                Some(InputFormat::Common),
            ),
            (
                "ts,k\n1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] \"GET / HTTP/1.0\" 2",
                None,
            ),
            ("ts\tkey", None),
            ("\n\n", None),
        ];
        for (line, want) in cases {
            assert_eq!(detect(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn request_lines_split_with_spaces_in_the_uri() {
        let s = |r: &str| {
            let (m, u, p) = split_request(r.as_bytes());
            (
                String::from_utf8_lossy(m).into_owned(),
                String::from_utf8_lossy(u).into_owned(),
                String::from_utf8_lossy(p).into_owned(),
            )
        };
        assert_eq!(
            s("GET /a HTTP/1.1"),
            ("GET".into(), "/a".into(), "HTTP/1.1".into())
        );
        assert_eq!(
            s("GET /a b c HTTP/1.0"),
            ("GET".into(), "/a b c".into(), "HTTP/1.0".into())
        );
        assert_eq!(s("GET /"), ("GET".into(), "/".into(), "".into()));
        assert_eq!(s("garbage"), ("".into(), "garbage".into(), "".into()));
    }

    #[test]
    fn long_lines_are_cut_and_skipped() {
        let mut data = vec![b'x'; MAX_LINE + 10];
        data.extend_from_slice(b"\nnext\r\n");
        let mut l = Lines::new(std::io::BufReader::new(&data[..]));
        assert!(matches!(l.next_line().unwrap(), Line::TooLong));
        assert!(matches!(l.next_line().unwrap(), Line::Ok));
        assert_eq!(l.buf, b"next");
        assert_eq!(l.line, 2);
        assert!(matches!(l.next_line().unwrap(), Line::End));
    }
}
