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
//! - `w3c` ([`w3c`]): the names of the `#Fields:` directive (CloudFront, IIS);
//! - `vcombined` / `vcommon` ([`vhost`]): Apache's virtual host first;
//! - `traefik` ([`traefik`]), `elb` ([`elb`]), `s3` ([`s3`]), `squid`
//!   ([`squid`]), `envoy` ([`envoy`]): fixed layouts ([`fixed`]);
//! - `haproxy` ([`haproxy`]): `option httplog`, syslog prefix or not;
//! - nginx lines with an X-Forwarded-For list first ([`forwarded`]) are
//!   recognised to name the `--log-format` that reads them;
//! - an Apache `LogFormat` string given to `--log-format` ([`apache`]) is
//!   read as an nginx `log_format` is.
//!
//! Each module's doc names its default time field (the arrival time where
//! the format writes one) and the field that holds the client.
//!
//! A parser turns one line into spans of field values ([`Fields`]); it never
//! allocates per line except to unescape a JSON string. A line that does not
//! fit its format is an error for that line alone: lines are separated by
//! newlines, so an unbalanced quote cannot swallow the rest of the log.
//! [`detect`] picks a format from the first line of a log.

pub mod alb;
pub mod apache;
pub mod clf;
pub mod elb;
pub mod envoy;
pub mod fixed;
pub mod forwarded;
pub mod haproxy;
pub mod key;
pub mod ndjson;
pub mod nginx;
pub mod s3;
pub mod squid;
pub mod tokens;
pub mod traefik;
pub mod vhost;
pub mod w3c;

use fixed::Fixed;

/// How a log's lines are written; [`InputFormat::about`] says each in one
/// line (the help of `--input-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    Auto,
    Csv,
    Tsv,
    Combined,
    Common,
    Nginx,
    Ndjson,
    Alb,
    W3c,
    Vcombined,
    Vcommon,
    Haproxy,
    Elb,
    S3,
    Squid,
    Traefik,
    Envoy,
}

impl InputFormat {
    /// Every format, in the order `--input-format` lists them.
    pub const ALL: [InputFormat; 17] = [
        InputFormat::Auto,
        InputFormat::Csv,
        InputFormat::Tsv,
        InputFormat::Combined,
        InputFormat::Common,
        InputFormat::Nginx,
        InputFormat::Ndjson,
        InputFormat::Alb,
        InputFormat::W3c,
        InputFormat::Vcombined,
        InputFormat::Vcommon,
        InputFormat::Haproxy,
        InputFormat::Elb,
        InputFormat::S3,
        InputFormat::Squid,
        InputFormat::Traefik,
        InputFormat::Envoy,
    ];

    /// What the format is, in one line (the help of `--input-format`).
    pub fn about(self) -> &'static str {
        match self {
            InputFormat::Auto => {
                "Decided from the first lines: ndjson, w3c, alb, elb, s3, haproxy, envoy, squid, traefik, vcombined, vcommon, combined, common, or CSV."
            }
            InputFormat::Csv => "Comma-separated values with a header row (or --delimiter).",
            InputFormat::Tsv => "Tab-separated values with a header row.",
            InputFormat::Combined => "NCSA Combined Log Format (Apache, nginx's default).",
            InputFormat::Common => "NCSA Common Log Format.",
            InputFormat::Nginx => "Lines of an nginx log_format given with --log-format.",
            InputFormat::Ndjson => {
                "One JSON object per line; fields by dotted path (request.remote_ip)."
            }
            InputFormat::Alb => "AWS Application Load Balancer access logs.",
            InputFormat::W3c => {
                "W3C extended logs (CloudFront, IIS): fields named by the #Fields: line."
            }
            InputFormat::Vcombined => {
                "Apache vhost_combined: the virtual host (and port) before a Combined line."
            }
            InputFormat::Vcommon => "The virtual host before a Common line.",
            InputFormat::Haproxy => "HAProxy option httplog, with or without a syslog prefix.",
            InputFormat::Elb => "AWS Classic Load Balancer access logs.",
            InputFormat::S3 => "Amazon S3 server access logs.",
            InputFormat::Squid => "Squid's native access log.",
            InputFormat::Traefik => "Traefik's access log in its common (CLF) format.",
            InputFormat::Envoy => "Envoy's default access log format.",
        }
    }

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
            InputFormat::Vcombined => "vcombined",
            InputFormat::Vcommon => "vcommon",
            InputFormat::Haproxy => "haproxy",
            InputFormat::Elb => "elb",
            InputFormat::S3 => "s3",
            InputFormat::Squid => "squid",
            InputFormat::Traefik => "traefik",
            InputFormat::Envoy => "envoy",
        }
    }

    /// The field that names the client in this format (each module's doc
    /// says which), for the hint that suggests it as a key column.
    pub fn client_field(self) -> Option<&'static str> {
        match self {
            InputFormat::Combined
            | InputFormat::Common
            | InputFormat::Vcombined
            | InputFormat::Vcommon
            | InputFormat::Traefik => Some("remote_addr"),
            InputFormat::Alb | InputFormat::Elb | InputFormat::Haproxy | InputFormat::Squid => {
                Some("client")
            }
            InputFormat::W3c => Some("c-ip"),
            InputFormat::S3 => Some("remote_ip"),
            InputFormat::Envoy => Some("x_forwarded_for"),
            InputFormat::Auto
            | InputFormat::Csv
            | InputFormat::Tsv
            | InputFormat::Nginx
            | InputFormat::Ndjson => None,
        }
    }
}

/// The longest line detection reads, and the default of `--max-line`.
pub const MAX_LINE: usize = 1 << 20;

/// Values of one line's fields: byte spans into the line, or into
/// `scratch` (values that had to be unescaped) when `start` has
/// [`SCRATCH`] set. [`MISSING`] marks a field the line does not have.
#[derive(Default, Debug)]
pub struct Fields {
    pub spans: Vec<(u32, u32)>,
    pub scratch: Vec<u8>,
    /// The line's end cut its last quoted field off (or garbled what
    /// follows the fields that matter); the row is kept and counted.
    pub cut: bool,
    /// The line is of this variant of the file's format, read as it (a
    /// Common line in a Combined log); counted.
    pub variant: Option<&'static str>,
}

/// Marks a span into `Fields::scratch`.
pub const SCRATCH: u32 = 1 << 31;
/// A field absent from the line.
pub const MISSING: (u32, u32) = (u32::MAX, u32::MAX);

impl Fields {
    pub fn clear(&mut self) {
        self.spans.clear();
        self.scratch.clear();
        self.cut = false;
        self.variant = None;
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

/// Why a line does not fit its format: one clause, the field and what is
/// wrong with it (`field 8 (http_user_agent) opens a quote that is never
/// closed`), which the reader writes after the file, line and format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError(String);

impl LineError {
    /// The error saying `message`.
    pub fn new(message: impl Into<String>) -> LineError {
        LineError(message.into())
    }
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LineError {}

/// One line's parse.
#[derive(Debug)]
pub enum Parsed {
    /// A request: its fields are in the `Fields`.
    Record,
    /// A line that carries no request (a W3C directive).
    Skip,
    /// A line the server wrote about itself, not a request (HAProxy's
    /// `Proxy www started.`, a failed SSL handshake): counted, not bad.
    Notice,
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
    /// What to say about the file once its first request line is found
    /// (W3C: fields taken for want of a `#Fields:` line); `tz`: `--tz` was
    /// given.
    fn note(&self, _tz: bool) -> Option<String> {
        None
    }
    /// Reads `line` (without its line end) into `out`.
    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError>;
    /// Whether a field written `-` means empty (true for the text formats).
    fn dash_is_empty(&self) -> bool {
        true
    }
}

/// Reads lines of at most `max` bytes (`--max-line`) from a reader, each
/// without its `\n` or `\r\n`. Line ends are found 32 bytes a step in a large
/// block and read where they lie: no line is copied, and a line is moved
/// only when it straddles the end of a block. A longer line is never held:
/// it is skipped to its end and reported as [`Line::TooLong`].
pub struct Lines<R> {
    inner: R,
    block: Vec<u8>,
    /// The current line's span in `block`.
    span: (usize, usize),
    /// Unread bytes: `block[pos..filled]`.
    pos: usize,
    filled: usize,
    /// Bytes from `pos` on known to hold no newline.
    scanned: usize,
    eof: bool,
    max: usize,
    /// 1-based number of the current line.
    pub line: u64,
}

/// The next line, if any.
pub enum Line {
    Ok,
    TooLong,
    End,
}

/// Bytes read at a time.
const BLOCK: usize = 1 << 18;

impl<R> Lines<R> {
    /// The current line.
    #[inline]
    pub fn text(&self) -> &[u8] {
        &self.block[self.span.0..self.span.1]
    }
}

impl<R: std::io::Read> Lines<R> {
    /// Lines of at most `max` bytes.
    pub fn new(inner: R, max: usize) -> Lines<R> {
        Lines {
            inner,
            block: vec![0; BLOCK],
            span: (0, 0),
            pos: 0,
            filled: 0,
            scanned: 0,
            eof: false,
            max,
            line: 0,
        }
    }

    /// Reads more bytes after the unread ones (moved to the front first):
    /// false at the end of the input.
    fn more(&mut self) -> std::io::Result<bool> {
        if self.pos > 0 {
            self.block.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.pos = 0;
        }
        if self.filled == self.block.len() {
            let len = (self.block.len() * 2).min(self.max.saturating_add(2).max(BLOCK));
            self.block.resize(len.max(self.filled + 1), 0);
        }
        loop {
            match self.inner.read(&mut self.block[self.filled..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.filled += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    pub fn next_line(&mut self) -> std::io::Result<Line> {
        let mut too_long = false;
        let end = loop {
            let from = self.pos + self.scanned;
            let i = crate::ingest::marks::first_newline(&self.block[..self.filled], from);
            if i < self.filled {
                break Some(i);
            }
            self.scanned = self.filled - self.pos;
            if self.scanned > self.max {
                // Keep nothing more of this line; skip to its end.
                too_long = true;
                self.pos = self.filled;
                self.scanned = 0;
            }
            if self.eof || !self.more()? {
                self.eof = true;
                break None;
            }
        };
        self.scanned = 0;
        let (s, e) = match end {
            Some(e) => {
                let s = self.pos;
                self.pos = e + 1;
                (s, e)
            }
            None if self.pos == self.filled && !too_long => return Ok(Line::End),
            None => {
                let s = self.pos;
                self.pos = self.filled;
                (s, self.filled)
            }
        };
        self.line += 1;
        if too_long || e - s > self.max {
            self.span = (s, s);
            return Ok(Line::TooLong);
        }
        let e = if e > s && self.block[e - 1] == b'\r' {
            e - 1
        } else {
            e
        };
        let s = if self.line == 1 && self.block[s..e].starts_with(BOM) {
            s + BOM.len()
        } else {
            s
        };
        self.span = (s, e);
        Ok(Line::Ok)
    }
}

/// The line-based format of a log, from the first of its first lines that
/// shows one (a garbled first request does not hide the format), or `None`
/// for CSV/TSV. A UTF-8 byte order mark and blank lines are skipped. `{` →
/// ndjson; a `#Software:`, `#Version:`, `#Date:` or `#Fields:` directive,
/// or a line of IIS's default fields ([`w3c::iis_default`]) → w3c; else the first line one of `DETECTED` (or CLF) recognises.
pub fn detect(sample: &[u8]) -> Option<InputFormat> {
    let sample = strip_bom(sample);
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
    if w3c::DIRECTIVES.iter().any(|d| first.starts_with(d)) || w3c::iis_default(first).is_some() {
        return Some(InputFormat::W3c);
    }
    lines.find_map(detect_line)
}

/// The UTF-8 byte order mark some Windows tools write first.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `data` without a leading UTF-8 byte order mark.
pub fn strip_bom(data: &[u8]) -> &[u8] {
    data.strip_prefix(BOM).unwrap_or(data)
}

/// Whether a tokenised line is in one format.
type LooksLike = fn(&[u8], &Fields) -> bool;

/// How a format's parser is made: from its fixed layout, or its own.
enum Reader {
    Layout(&'static fixed::Layout),
    Own(fn() -> Box<dyn LineParser>),
}

/// The line formats told from one tokenised line, most particular first,
/// each with its parser and what a line of it looks like. A new format is
/// a module and a line here (and its name in [`InputFormat`]).
#[rustfmt::skip] // a table: one format a line
static DETECTED: [(InputFormat, Reader, LooksLike); 11] = [
    (InputFormat::Alb, Reader::Own(alb::boxed), alb::looks_like),
    (InputFormat::Elb, Reader::Layout(&elb::ELB), elb::looks_like),
    (InputFormat::S3, Reader::Layout(&s3::S3), s3::looks_like),
    (InputFormat::Haproxy, Reader::Own(haproxy::boxed), haproxy::looks_like),
    (InputFormat::Envoy, Reader::Layout(&envoy::ENVOY), envoy::looks_like),
    (InputFormat::Squid, Reader::Layout(&squid::SQUID), squid::looks_like),
    (InputFormat::Traefik, Reader::Layout(&traefik::TRAEFIK), traefik::looks_like),
    (InputFormat::Vcombined, Reader::Layout(&vhost::VCOMBINED), vhost::combined),
    (InputFormat::Vcommon, Reader::Layout(&vhost::VCOMMON), vhost::common),
    (InputFormat::Combined, Reader::Layout(&clf::COMBINED), clf::combined),
    (InputFormat::Common, Reader::Layout(&clf::COMMON), clf::common),
];

/// The format of one line: the first of `DETECTED` it looks like.
pub fn detect_line(line: &[u8]) -> Option<InputFormat> {
    let mut f = Fields::default();
    if tokens::tokens(line, &mut f, &[]).is_err() {
        return None;
    }
    DETECTED
        .iter()
        .find(|(_, _, looks)| looks(line, &f))
        .map(|(format, _, _)| *format)
}

/// The names of the formats detection tries, for messages.
pub fn detected_names() -> String {
    let mut names: Vec<&str> = vec!["ndjson", "w3c"];
    names.extend(DETECTED.iter().map(|(f, _, _)| f.name()));
    names.join(", ")
}

/// `a` or `an` before a format's name, as it is said (`an elb line`).
pub fn article(name: &str) -> &'static str {
    let vowel = name.starts_with(['a', 'e', 'i', 'o', 'u']);
    if vowel || name == "s3" || name == "ndjson" {
        "an"
    } else {
        "a"
    }
}

/// What a line that is not in `format` looks like instead, for messages:
/// `it starts with a virtual host (vcombined?); set --input-format vcombined`.
pub fn shape_hint(line: &[u8], format: &str) -> Option<String> {
    // A Common line among Combined ones is a Combined line cut short.
    let shorter = |f: InputFormat| match f {
        InputFormat::Common => format == "combined",
        InputFormat::Vcommon => format == "vcombined",
        _ => false,
    };
    if let Some(hint) = forwarded::hint(line) {
        return Some(hint);
    }
    let other = detect(line).filter(|&f| f.name() != format && !shorter(f))?;
    let name = other.name();
    let shape = match other {
        InputFormat::Vcombined | InputFormat::Vcommon => {
            format!("it starts with a host:port ({name}?)")
        }
        InputFormat::Ndjson => "it is a JSON object (ndjson?)".to_string(),
        InputFormat::W3c if line.starts_with(b"#") => "it is a W3C directive (w3c?)".to_string(),
        InputFormat::W3c => "it reads as a line of IIS's default W3C fields (w3c?)".to_string(),
        _ => format!("it reads as {} {name} line", article(name)),
    };
    Some(format!("{shape}; set --input-format {name}"))
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
        InputFormat::Nginx => {
            let Some(f) = log_format else {
                anyhow::bail!(
                    "--input-format nginx needs --log-format 'FORMAT', the log_format string from nginx.conf"
                );
            };
            Box::new(nginx::Nginx::compile(f)?)
        }
        InputFormat::Ndjson => Box::new(ndjson::Ndjson::default()),
        InputFormat::W3c => Box::new(w3c::W3c::default()),
        InputFormat::Auto | InputFormat::Csv | InputFormat::Tsv => {
            unreachable!("CSV is read by the CSV reader")
        }
        f => match DETECTED.iter().find(|(d, _, _)| *d == f) {
            Some((_, Reader::Layout(l), _)) => Box::new(Fixed::new(l)),
            Some((_, Reader::Own(make), _)) => make(),
            None => unreachable!("every line format is in DETECTED"),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_from_the_first_line() {
        let cases: [(&str, Option<InputFormat>); 12] = [
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
            // A date and a time first is not enough for W3C.
            ("2019-03-06 18:43:17 INFO started\n", None),
            ("2019-03-06 18:43:17,h,GET,200\n", None),
            ("\n\n", None),
        ];
        for (line, want) in cases {
            assert_eq!(detect(line.as_bytes()), want, "{line}");
        }
    }

    #[test]
    fn every_line_format_is_told_from_its_first_lines() {
        let cases: [(&str, InputFormat); 14] = [
            (
                "\u{feff}#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n",
                InputFormat::W3c,
            ),
            ("\n\n#Date: 2000-10-09 16:44:49\n", InputFormat::W3c),
            ("#GMT-Offset: -0800\n#Version: 1.0\n", InputFormat::W3c),
            (
                // IIS's default fields, no #Fields: line (a file cut from a log).
                "2019-03-06 18:43:17 10.0.140.107 GET /health - 80 - 10.0.140.2 - 200 0 0 15\n",
                InputFormat::W3c,
            ),
            ("\u{feff}{\"ts\":1}\n", InputFormat::Ndjson),
            (
                "\u{feff}h - - [01/Aug/1995:00:00:01 -0400] \"GET / HTTP/1.0\" 200 7\n",
                InputFormat::Common,
            ),
            (
                r#"www.example.com:443 1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "curl""#,
                InputFormat::Vcombined,
            ),
            (
                r#"www.example.com 1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5"#,
                InputFormat::Vcommon,
            ),
            (
                r#"Jun 22 12:02:53 node2 haproxy[23034]: 10.0.0.1:47625 [22/Jun/2021:12:02:53.473] www-https~ app/app-node2 0/0/1/17/18 302 291 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1""#,
                InputFormat::Haproxy,
            ),
            (
                r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#,
                InputFormat::Elb,
            ),
            (
                r#"79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be mybucket [06/Feb/2014:00:00:38 +0000] 192.0.2.3 79a59df900b949e55d96a1e698fbacedfd6e09d98eacf8f8d5218e7cd47ef2be 3E57427F3EXAMPLE REST.GET.VERSIONING - "GET /mybucket?versioning HTTP/1.1" 200 - 113 - 7 - "-" "S3Console/0.4" -"#,
                InputFormat::S3,
            ),
            (
                "1157689312.049   5006 10.105.21.199 TCP_MISS/200 19763 CONNECT login.yahoo.com:443 badeyek DIRECT/209.73.177.115 -",
                InputFormat::Squid,
            ),
            (
                r#"192.168.33.1 - - [02/Oct/2017:20:22:07 +0000] "GET /ui HTTP/1.1" 304 0 "http://example.com/login" "Mozilla/5.0" 262 "Host-host-1" "http://172.19.0.3:5601" 2ms"#,
                InputFormat::Traefik,
            ),
            (
                r#"[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80""#,
                InputFormat::Envoy,
            ),
        ];
        for (text, want) in cases {
            assert_eq!(detect(text.as_bytes()), Some(want), "{text}");
        }
    }

    #[test]
    fn a_line_of_another_shape_is_named() {
        let vhost = br#"www.example.com:443 1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "curl""#;
        assert_eq!(
            shape_hint(vhost, "combined").unwrap(),
            "it starts with a host:port (vcombined?); set --input-format vcombined"
        );
        assert_eq!(shape_hint(vhost, "vcombined"), None);
        assert_eq!(shape_hint(b"garbage", "combined"), None);
        let iis = b"2019-03-06 18:43:17 10.0.140.107 GET /health - 80 - 10.0.140.2 - 200 0 0 15";
        assert_eq!(
            shape_hint(iis, "combined").unwrap(),
            "it reads as a line of IIS's default W3C fields (w3c?); set --input-format w3c"
        );
        assert_eq!(
            shape_hint(b"#Fields: date time", "combined").unwrap(),
            "it is a W3C directive (w3c?); set --input-format w3c"
        );
    }

    #[test]
    fn a_bom_is_no_part_of_the_first_line() {
        let data = b"\xEF\xBB\xBFfirst\n\xEF\xBB\xBFsecond\n";
        let mut l = Lines::new(&data[..], MAX_LINE);
        l.next_line().unwrap();
        assert_eq!(l.text(), b"first");
        l.next_line().unwrap();
        assert_eq!(l.text(), b"\xEF\xBB\xBFsecond");
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
    fn long_lines_are_skipped_whole() {
        let mut data = vec![b'x'; MAX_LINE + 10];
        data.extend_from_slice(b"\nnext\r\n");
        let mut l = Lines::new(&data[..], MAX_LINE);
        assert!(matches!(l.next_line().unwrap(), Line::TooLong));
        assert!(matches!(l.next_line().unwrap(), Line::Ok));
        assert_eq!(l.text(), b"next");
        assert_eq!(l.line, 2);
        assert!(matches!(l.next_line().unwrap(), Line::End));
    }

    /// Reads `data` a few bytes at a time, as a pipe may give it.
    struct Trickle<'a>(&'a [u8], usize);

    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.1.min(buf.len()).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn lines_are_the_same_however_the_bytes_come() {
        let mut text = Vec::new();
        for i in 0..3000u32 {
            text.extend(std::iter::repeat_n(
                b'a' + (i % 26) as u8,
                (i * 7 % 300) as usize,
            ));
            text.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
        }
        text.extend_from_slice(b"last, no line end");
        let want: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .collect();
        for (step, max) in [(1, 1000), (7, 1000), (1 << 20, 1000), (5, 250)] {
            let mut l = Lines::new(Trickle(&text, step), max);
            for (n, w) in want.iter().enumerate() {
                match l.next_line().unwrap() {
                    Line::Ok => assert_eq!(l.text(), *w, "line {}", n + 1),
                    Line::TooLong => assert!(w.len() > max, "line {}", n + 1),
                    Line::End => panic!("ended before line {}", n + 1),
                }
                assert_eq!(l.line, n as u64 + 1);
            }
            assert!(matches!(l.next_line().unwrap(), Line::End));
        }
    }

    #[test]
    fn a_line_over_max_line_is_never_held() {
        let mut data = vec![b'{'; 10 << 20];
        data.extend_from_slice(b"\nok\n");
        let mut l = Lines::new(Trickle(&data, 1 << 16), 4096);
        assert!(matches!(l.next_line().unwrap(), Line::TooLong));
        assert!(l.block.len() <= BLOCK.max(4096 + 2), "{}", l.block.len());
        assert!(matches!(l.next_line().unwrap(), Line::Ok));
        assert_eq!((l.text(), l.line), (&b"ok"[..], 2));
    }
}
