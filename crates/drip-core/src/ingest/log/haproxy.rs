//! HAProxy's `option httplog` lines, with or without the syslog prefix
//! (`Feb  6 12:14:14 lb haproxy[14389]: `, which has no year and is not
//! read):
//!
//! `10.0.1.2:33317 [06/Feb/2009:12:14:14.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {captures} "GET /index.html HTTP/1.1"`
//!
//! Fields: `client:port`, `accept_date`, `frontend_name`, `backend_server`,
//! `timers` (`Tq/Tw/Tc/Tr/Tt`, ms), `status_code`, `bytes_read`, `request`,
//! `termination_state` (`PR--`: denied, `PT--`: tarpitted, `LR--`:
//! answered by HAProxy), the captured request headers (the first `{…}`,
//! as written: values joined by `|`, `#XX` escapes) and the captured
//! response headers (the second), then `client` (without its port),
//! `method`, `uri` and `protocol`. Fields a custom `log-format` adds
//! between the server and the timers are skipped. HAProxy's own messages in the same
//! log (`Proxy www started.`: a syslog prefix and no accept date) and the
//! connections it logs as errors instead of requests (`www/https: SSL
//! handshake failure` after the accept date) are notices: counted, not rows
//! and not bad. `accept_date` is when the request
//! arrived, with ms and **no zone**: the box's local time, read with
//! `--tz` (UTC without it, with a note). The client is `client`.

use super::fixed::{Fixed, Layout};
use super::tokens::{Token, bracketed_time, tokens, wrapped};
use super::{Fields, LineError, LineParser, MISSING, Parsed};

/// The fields read, in this order, wherever they stand on the line.
const NAMES: [&str; 11] = [
    "client:port",
    "accept_date",
    "frontend_name",
    "backend_server",
    "timers",
    "status_code",
    "bytes_read",
    "request",
    "termination_state",
    "captured_request_headers",
    "captured_response_headers",
];

static HAPROXY: Layout = Layout::new("haproxy", &[&NAMES], 8, 1)
    .bracketed()
    .ports(&[(0, "client")])
    .request(7);

/// The token holding the accept date: bracketed, a CLF time, after the
/// client's `ip:port`.
fn accept_date(line: &[u8], f: &Fields) -> Option<usize> {
    let clf = crate::ingest::timestamp::parse_clf;
    (1..f.spans.len()).find(|&i| bracketed_time(line, f, i, clf))
}

/// The timers after `from`: five numbers (or `-1`) joined by `/`.
fn timers(line: &[u8], f: &Fields, from: usize) -> Option<usize> {
    (from..f.spans.len()).find(|&i| {
        let t = f.in_line(line, i);
        t.iter().filter(|&&b| b == b'/').count() == 4
            && t.iter()
                .all(|&b| b.is_ascii_digit() || b == b'/' || b == b'-' || b == b'+')
    })
}

/// Whether the line is a connection HAProxy logs as an error instead of a
/// request, `1.2.3.4:56224 [25/Feb/2019:16:20:10.111] www/https: SSL
/// handshake failure`: after the accept date, `frontend/bind:` and a
/// message.
fn connection_error(line: &[u8], f: &Fields, accept: usize) -> bool {
    accept + 1 < f.spans.len() && {
        let t = f.in_line(line, accept + 1);
        t.len() > 2 && t.ends_with(b":") && t.contains(&b'/')
    }
}

/// The captured request and response headers: the `{…}` blocks between
/// token `from` (the queues) and the request (token `request`), each
/// without its braces (HAProxy escapes braces inside them).
fn captures(line: &[u8], t: &Fields, from: usize, request: usize) -> [(u32, u32); 2] {
    let mut out = [MISSING; 2];
    if from >= request {
        return out;
    }
    let (mut i, end) = (t.spans[from].1 as usize, t.spans[request].0 as usize);
    for slot in &mut out {
        let Some(open) = memchr::memchr(b'{', &line[i..end]).map(|o| i + o) else {
            break;
        };
        let Some(close) = memchr::memchr(b'}', &line[open..end]).map(|c| open + c) else {
            break;
        };
        *slot = (open as u32 + 1, close as u32);
        i = close + 1;
    }
    out
}

/// Whether a tokenised line is an httplog line.
pub fn looks_like(line: &[u8], f: &Fields) -> bool {
    let n = f.spans.len();
    accept_date(line, f).is_some_and(|a| {
        timers(line, f, a + 3).is_some_and(|t| t + 2 < n) && wrapped(line, f, n - 1, b'"')
    })
}

/// httplog lines: the fields found on the line, then laid out as a
/// [`Fixed`] layout lays out its own.
pub struct Haproxy {
    fixed: Fixed,
    tokens: Fields,
    /// The tokens of the named fields, in their order.
    picked: Fields,
}

impl Haproxy {
    pub fn httplog() -> Haproxy {
        Haproxy {
            fixed: Fixed::new(&HAPROXY),
            tokens: Fields::default(),
            picked: Fields::default(),
        }
    }
}

/// An httplog parser, boxed for the format table.
pub fn boxed() -> Box<dyn LineParser> {
    Box::new(Haproxy::httplog())
}

impl LineParser for Haproxy {
    fn format(&self) -> &'static str {
        self.fixed.format()
    }

    fn names(&self) -> Option<&[String]> {
        self.fixed.names()
    }

    fn field(&mut self, name: &str) -> Option<usize> {
        self.fixed.field(name)
    }

    fn field_at(&mut self, i: usize) -> Option<usize> {
        self.fixed.field_at(i)
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        self.fixed.default_time()
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError> {
        let t = &mut self.tokens;
        t.clear();
        let cut = tokens(line, t, &[])? != Token::Whole;
        let Some(a) = accept_date(line, t) else {
            // HAProxy's own messages (`Proxy www started.`) are no requests.
            if memchr::memmem::find(line, b" haproxy[").is_some() {
                return Ok(Parsed::Notice);
            }
            return Err(LineError::new(
                "no [accept_date] after a client ip:port; is it an httplog line?",
            ));
        };
        if connection_error(line, t, a) {
            return Ok(Parsed::Notice);
        }
        let Some(tm) = timers(line, t, a + 3) else {
            return Err(LineError::new(
                "no timers Tq/Tw/Tc/Tr/Tt after the server; is it an httplog line (not tcplog)?",
            ));
        };
        let n = t.spans.len();
        if tm + 2 >= n || !wrapped(line, t, n - 1, b'"') {
            return Err(LineError::new(
                "no quoted request at the end of the line; is it an httplog line (not tcplog)?",
            ));
        }
        self.picked.clear();
        for i in [a - 1, a, a + 1, a + 2, tm, tm + 1, tm + 2, n - 1] {
            self.picked.spans.push(t.spans[i]);
        }
        let state = (tm + 5 < n - 1).then(|| t.spans[tm + 5]).filter(|&(s, e)| {
            e - s == 4
                && line[s as usize..e as usize]
                    .iter()
                    .all(|b| b.is_ascii_uppercase() || *b == b'-')
        });
        self.picked.spans.push(state.unwrap_or(MISSING));
        let [req, resp] = captures(line, t, tm + 7, n - 1);
        self.picked.spans.extend([req, resp]);
        self.fixed.lay_out(line, &self.picked, out)?;
        out.cut = cut;
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn httplog_with_a_syslog_prefix_and_captures() {
        let line = r#"Jul 30 09:03:52 localhost haproxy[32450]: 1.2.3.4:38862 [30/Jul/2018:09:03:52.726] incoming~ docs_microservice/docs 0/0/1/0/2 304 168 - - ---- 6/6/0/0/0 0/0 {docs.example.internal||} {|||} "GET /component.js HTTP/1.1""#;
        let mut p = Haproxy::httplog();
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f).unwrap();
        for (name, want) in [
            ("client", "1.2.3.4"),
            ("accept_date", "30/Jul/2018:09:03:52.726"),
            ("status_code", "304"),
            ("uri", "/component.js"),
        ] {
            let i = p.field(name).unwrap();
            assert_eq!(
                f.get(line.as_bytes(), i).unwrap(),
                want.as_bytes(),
                "{name}"
            );
        }
        let mut t = Fields::default();
        tokens(line.as_bytes(), &mut t, &[]).unwrap();
        assert!(looks_like(line.as_bytes(), &t));
        // Without the prefix, and with a host a log-format added.
        let line = r#"-:47625 [22/Jun/2021:12:02:53.473] www-https~ app/app-node2 app.domain.com 0/0/1/17/18 302 291 - - ---- 1/1/0/0/0 0/0 "GET / HTTP/1.1""#;
        f.clear();
        p.parse(line.as_bytes(), &mut f).unwrap();
        assert_eq!(f.get(line.as_bytes(), 5).unwrap(), b"302");
        assert_eq!(f.get(line.as_bytes(), 8).unwrap(), b"----");
        assert_eq!(f.get(line.as_bytes(), 9), None, "no captures");
        // A denial, with request captures holding spaces and escapes.
        let line = r#"127.0.0.1:45892 [03/Dec/2026:18:59:20.297] fe api/<NOSRV> 0/-1/-1/-1/0 403 192 - - PR-- 4/1/0/0/0 0/0 {abc def|a#7Cb} {text/html} "GET /api/v HTTP/1.1""#;
        f.clear();
        p.parse(line.as_bytes(), &mut f).unwrap();
        for (name, want) in [
            ("termination_state", "PR--"),
            ("captured_request_headers", "abc def|a#7Cb"),
            ("captured_response_headers", "text/html"),
            ("uri", "/api/v"),
        ] {
            let i = p.field(name).unwrap();
            assert_eq!(
                f.get(line.as_bytes(), i).unwrap(),
                want.as_bytes(),
                "{name}"
            );
        }
        let notice =
            b"Sep 20 15:42:59 h haproxy[1]: Connect from 1.1.1.1:4 to 1.1.1.1:5000 (main/HTTP)";
        assert!(matches!(p.parse(notice, &mut f), Ok(Parsed::Notice)));
        let ssl = b"Feb 25 16:20:15 h haproxy[7]: 95.216.197.33:56224 \
            [25/Feb/2019:16:20:10.111] prod_http_in/sktst2: SSL handshake failure";
        assert!(matches!(p.parse(ssl, &mut f), Ok(Parsed::Notice)));
        let e = p.parse(b"1.1.1.1:4 GET /", &mut f).unwrap_err().to_string();
        assert!(e.contains("no [accept_date]"), "{e}");
    }
}
