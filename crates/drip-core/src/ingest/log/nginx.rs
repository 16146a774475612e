//! Lines written by an nginx `log_format`, read with the format string as
//! written in nginx.conf:
//!
//! `'$remote_addr - $remote_user [$time_local] "$request" $status $msec $request_time'`
//!
//! Each field is named by its variable. The format may be given as one or
//! several quoted strings (as in nginx.conf, concatenated), with or without
//! `log_format NAME` and `escape=...` in front, or bare. A variable's value
//! runs to the first place the literal text after it appears; a variable
//! between double quotes runs to the closing quote (a quote escaped as
//! `\"` or nginx's `\x22` stays inside). With `$request`, the fields
//! `method`, `uri` and `protocol` are added as for combined lines.

use super::{Fields, LineError, LineParser, Parsed, split_request};
use anyhow::{Result, bail};

/// The target of a logged `$request` when the format logs `$uri` too
/// (then `uri` is nginx's final URI, not the target).
pub const REQUEST_TARGET: &str = "request_target";

#[derive(Debug, PartialEq, Eq)]
enum Seg {
    Lit(Vec<u8>),
    /// A variable: its field index.
    Var(usize),
}

/// A compiled `log_format`.
pub struct Nginx {
    /// `nginx`, or `apache` for a `LogFormat` string.
    format: &'static str,
    segs: Vec<Seg>,
    names: Vec<String>,
    /// Fields that come from the line (the variables), before derived ones.
    vars: usize,
    /// The field index of `$request`, when the format has it.
    request: Option<usize>,
}

/// The concatenation of nginx.conf quoted strings `'a' "b"`, or `None`
/// when the text is not only quoted strings.
fn unquote_all(text: &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut any = false;
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(q) = chars.next() else {
            return any.then_some(out);
        };
        if q != '\'' && q != '"' {
            return None;
        }
        any = true;
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    c => out.push(c),
                },
                c if c == q => break,
                c => out.push(c),
            }
        }
    }
}

impl Nginx {
    /// Compiles a `log_format` string, or an Apache `LogFormat` string
    /// (told by its `%` directives); errors say what cannot be read.
    pub fn compile(format: &str) -> Result<Nginx> {
        if super::apache::is_apache(format) {
            let mut n = Nginx::compile_nginx(&super::apache::translate(format)?)?;
            n.format = "apache";
            return Ok(n);
        }
        Nginx::compile_nginx(format)
    }

    fn compile_nginx(format: &str) -> Result<Nginx> {
        let mut text = format.trim().trim_end_matches(';').trim();
        if let Some(rest) = text.strip_prefix("log_format") {
            // `log_format NAME [escape=...] STRING...`
            let rest = rest.trim_start();
            let name_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            text = rest[name_end..].trim_start();
        }
        if let Some(rest) = text.strip_prefix("escape=") {
            let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
            text = rest[end..].trim_start();
        }
        let body = unquote_all(text).unwrap_or_else(|| text.to_string());
        let b = body.as_bytes();
        let mut segs: Vec<Seg> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut lit = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'$' {
                lit.push(b[i]);
                i += 1;
                continue;
            }
            let (name, next) = if b.get(i + 1) == Some(&b'{') {
                match body[i + 2..].find('}') {
                    Some(e) => (&body[i + 2..i + 2 + e], i + 3 + e),
                    None => bail!("invalid --log-format: '${{' at byte {i} is never closed"),
                }
            } else {
                let len = b[i + 1..]
                    .iter()
                    .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                    .count();
                (&body[i + 1..i + 1 + len], i + 1 + len)
            };
            if name.is_empty() {
                bail!("invalid --log-format: a '$' at byte {i} names no variable");
            }
            if !lit.is_empty() {
                segs.push(Seg::Lit(std::mem::take(&mut lit)));
            } else if matches!(segs.last(), Some(Seg::Var(_))) {
                bail!(
                    "invalid --log-format: ${} follows ${} with nothing between them, so a line cannot tell where one ends",
                    name,
                    names.last().map_or("", String::as_str)
                );
            }
            let idx = names.iter().position(|n| n == name).unwrap_or_else(|| {
                names.push(name.to_string());
                names.len() - 1
            });
            segs.push(Seg::Var(idx));
            i = next;
        }
        if !lit.is_empty() {
            segs.push(Seg::Lit(lit));
        }
        if names.is_empty() {
            bail!(
                "invalid --log-format '{format}': it names no variables; give the log_format string, e.g. '$remote_addr [$time_local] \"$request\" $status'"
            );
        }
        let vars = names.len();
        let request = names.iter().position(|n| n == "request");
        if request.is_some() {
            for d in ["method", "uri", "protocol"] {
                match names.iter().any(|n| n == d) {
                    false => names.push(d.to_string()),
                    // A logged `$uri` is the final URI, after rewrites and
                    // internal redirects: the request's target is apart.
                    true if d == "uri" => names.push(REQUEST_TARGET.to_string()),
                    true => {}
                }
            }
        }
        Ok(Nginx {
            format: "nginx",
            segs,
            names,
            vars,
            request,
        })
    }

    /// Whether the format logs `$name`.
    pub fn has(&self, name: &str) -> bool {
        self.names[..self.vars].iter().any(|n| n == name)
    }
}

/// The time variables read when `--time-column` is not given, in order.
const TIMES: [&str; 10] = [
    "time_epoch_us",
    "time_epoch_ms",
    "time_epoch_s",
    "msec",
    "time_iso8601",
    "time_local",
    "time_end_epoch_us",
    "time_end_epoch_ms",
    "time_end_epoch_s",
    "time_end_local",
];

/// The first `"` at or after `from` not escaped by a backslash.
pub(super) fn closing_quote(line: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let k = memchr::memchr2(b'"', b'\\', line.get(from..)?)?;
        if line[from + k] == b'\\' {
            from += k + 2;
        } else {
            return Some(from + k);
        }
    }
}

impl LineParser for Nginx {
    fn format(&self) -> &'static str {
        self.format
    }

    fn names(&self) -> Option<&[String]> {
        Some(&self.names)
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        // Arrival times (Apache's) before completion times.
        TIMES
            .iter()
            .find_map(|t| self.names[..self.vars].iter().position(|n| n == t))
            .map(|i| (i, None))
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError> {
        let base = out.spans.len();
        out.spans.resize(base + self.vars, super::MISSING);
        let mut pos = 0usize;
        let n = line.len();
        for (k, seg) in self.segs.iter().enumerate() {
            match seg {
                Seg::Lit(l) => {
                    if !line[pos..].starts_with(l) {
                        return Err(LineError::new(format!(
                            "expected '{}' at byte {} (the line does not follow --log-format here)",
                            String::from_utf8_lossy(l).escape_debug(),
                            pos + 1
                        )));
                    }
                    pos += l.len();
                }
                Seg::Var(v) => {
                    let name = &self.names[*v];
                    let end = match self.segs.get(k + 1) {
                        None => n,
                        Some(Seg::Lit(next)) => {
                            let quoted = k > 0
                                && matches!(&self.segs[k - 1], Seg::Lit(p) if p.ends_with(b"\""))
                                && next.starts_with(b"\"");
                            let mut from = pos;
                            loop {
                                let at = if quoted {
                                    closing_quote(line, from)
                                } else {
                                    memchr::memchr(next[0], &line[from..]).map(|i| from + i)
                                };
                                match at {
                                    // The last field, cut by the line's end.
                                    None if quoted && k + 2 == self.segs.len() => {
                                        out.cut = true;
                                        break n;
                                    }
                                    None => {
                                        return Err(LineError::new(if quoted {
                                            format!("${name}: its closing quote is missing")
                                        } else {
                                            format!(
                                                "${name}: expected '{}' after it",
                                                String::from_utf8_lossy(next).escape_debug()
                                            )
                                        }));
                                    }
                                    Some(a) if line[a..].starts_with(next) => break a,
                                    Some(a) => from = a + 1,
                                }
                            }
                        }
                        Some(Seg::Var(_)) => {
                            unreachable!("compile keeps a literal between variables")
                        }
                    };
                    out.spans[base + v] = (pos as u32, end as u32);
                    pos = end;
                    if out.cut {
                        break;
                    }
                }
            }
        }
        if pos != n {
            return Err(LineError::new(format!(
                "unexpected text after the last field at byte {}: '{}'",
                pos + 1,
                String::from_utf8_lossy(&line[pos..n.min(pos + 40)]).escape_debug()
            )));
        }
        if let Some(r) = self.request {
            let req = out.in_line(line, base + r);
            let (m, u, p) = split_request(req);
            let derived = [m, u, p];
            for (d, v) in ["method", "uri", "protocol"].iter().zip(derived) {
                if *d == "uri" || !self.names[..self.vars].iter().any(|n| n == d) {
                    out.push_sub(line, v);
                }
            }
        }
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(f: &str, line: &str) -> Result<Vec<(String, String)>, String> {
        let mut p = Nginx::compile(f).map_err(|e| e.to_string())?;
        let mut out = Fields::default();
        p.parse(line.as_bytes(), &mut out)
            .map_err(|e| e.to_string())?;
        Ok(p.names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                (
                    n.clone(),
                    String::from_utf8_lossy(out.get(line.as_bytes(), i).unwrap()).into_owned(),
                )
            })
            .collect())
    }

    #[test]
    fn formats_are_read_as_nginx_conf_writes_them() {
        let line = r#"10.0.0.1 - bob [02/Aug/2022:11:11:32 +0800] "GET /a b?q=\x22 HTTP/1.1" 200 1663839717.105 0.250 "x\"y""#;
        for f in [
            r#"'$remote_addr - $remote_user [$time_local] "$request" $status $msec $request_time "$http_x"'"#,
            r#"log_format main '$remote_addr - $remote_user [$time_local] '
                 '"$request" $status $msec ${request_time} "$http_x"';"#,
            r#"$remote_addr - $remote_user [$time_local] "$request" $status $msec $request_time "$http_x""#,
        ] {
            let got = read(f, line).unwrap();
            let want = [
                ("remote_addr", "10.0.0.1"),
                ("remote_user", "bob"),
                ("time_local", "02/Aug/2022:11:11:32 +0800"),
                ("request", r"GET /a b?q=\x22 HTTP/1.1"),
                ("status", "200"),
                ("msec", "1663839717.105"),
                ("request_time", "0.250"),
                ("http_x", r#"x\"y"#),
                ("method", "GET"),
                ("uri", r"/a b?q=\x22"),
                ("protocol", "HTTP/1.1"),
            ];
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
            assert_eq!(got, want, "{f}");
        }
    }

    #[test]
    fn lines_that_do_not_follow_the_format_are_refused() {
        let f = r#"$remote_addr [$time_local] "$request" $status"#;
        let e = read(f, r#"1.2.3.4 [x] "GET / HTTP/1.1 200"#).unwrap_err();
        assert!(e.contains("closing quote"), "{e}");
        let e = read(f, r#"1.2.3.4 x "GET /" 200"#).unwrap_err();
        assert!(e.contains("expected ' ['"), "{e}");
        let e = read(f, r#"1.2.3.4 [x] "GET /" 200 extra"#);
        // The last variable takes the rest of the line.
        assert_eq!(e.unwrap()[3].1, "200 extra");
        let e = read(r#"$a - $b."#, "1 - 2").unwrap_err();
        assert!(e.contains("$b: expected '.'"), "{e}");
        assert!(Nginx::compile("$a$b").is_err());
        assert!(Nginx::compile("no vars").is_err());
        assert!(Nginx::compile("${a").is_err());
    }
}
