//! NCSA Common and Combined Log Format lines, as Apache (`%h %l %u %t
//! "%r" %>s %b "%{Referer}i" "%{User-agent}i"`) and nginx (`combined`)
//! write them:
//!
//! `203.0.113.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 200 2326 "ref" "UA"`
//!
//! Fields are named as nginx names them: `remote_addr`, `ident` (Apache's
//! `%l`, a literal `-` in nginx), `remote_user`, `time_local`, `request`,
//! `status`, `body_bytes_sent`, `http_referer`, `http_user_agent`, then the
//! request split into `method`, `uri` and `protocol`. Fields after the last
//! named one (the `"-"` many servers append) are named `fieldN` by their
//! index. A quoted value may hold `\"` (Apache's escape; nginx writes
//! `\x22`), and is kept as written.

use super::{Fields, LineParser, Parsed, split_request};

/// Field `n` for a message: `field 8 (http_user_agent)`.
fn label(n: usize, names: &[&str]) -> String {
    match names.get(n) {
        Some(name) => format!("field {n} ({name})"),
        None => format!("field {n}"),
    }
}

/// Splits a line into fields: bare words separated by spaces, `"quoted"`
/// values (a backslash escapes the next byte) and `[bracketed]` values,
/// each without its quotes or brackets. `names` name fields in messages.
pub fn tokens(line: &[u8], out: &mut Fields, names: &[&str]) -> Result<(), String> {
    let mut i = 0;
    let n = line.len();
    while i < n {
        match line[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                loop {
                    match memchr::memchr2(b'"', b'\\', &line[j..]) {
                        None => {
                            return Err(format!(
                                "{} opens a quote that is never closed",
                                label(out.spans.len(), names)
                            ));
                        }
                        Some(k) if line[j + k] == b'\\' => j += k + 2,
                        Some(k) => {
                            j += k;
                            break;
                        }
                    }
                    if j > n {
                        return Err(format!(
                            "{} opens a quote that is never closed",
                            label(out.spans.len(), names)
                        ));
                    }
                }
                if j + 1 < n && line[j + 1] != b' ' && line[j + 1] != b'\t' {
                    return Err(format!(
                        "{} has an unescaped quote inside it (after '{}')",
                        label(out.spans.len(), names),
                        String::from_utf8_lossy(&line[start..j]).escape_debug()
                    ));
                }
                out.spans.push((start as u32, j as u32));
                i = j + 1;
            }
            b'[' if bracketed(line, i) => {
                let start = i + 1;
                let k = memchr::memchr(b']', &line[start..]).map_or(n, |k| start + k);
                out.spans.push((start as u32, k as u32));
                i = k + 1;
            }
            b'[' if memchr::memchr(b']', &line[i..]).is_none() => {
                return Err(format!(
                    "{} opens a '[' that is never closed",
                    label(out.spans.len(), names)
                ));
            }
            _ => {
                // Bare words are short: a plain loop beats a search call.
                let start = i;
                while i < n && line[i] != b' ' && line[i] != b'\t' {
                    i += 1;
                }
                out.spans.push((start as u32, i as u32));
            }
        }
    }
    Ok(())
}

/// Whether the `[` at `i` opens a bracketed value: its `]` ends the field
/// (`[2001:db8::1]:443` is a bare word).
fn bracketed(line: &[u8], i: usize) -> bool {
    match memchr::memchr(b']', &line[i..]) {
        Some(k) => matches!(line.get(i + k + 1), None | Some(b' ' | b'\t')),
        None => false,
    }
}

/// Combined or Common lines.
pub struct Clf {
    format: &'static str,
    names: Vec<String>,
    /// Fields on the line before the derived ones.
    written: usize,
    /// Index of the request field.
    request: usize,
    /// Where a line's tokens go: the named ones first, then extras.
    tokens: Fields,
}

const COMBINED: [&str; 9] = [
    "remote_addr",
    "ident",
    "remote_user",
    "time_local",
    "request",
    "status",
    "body_bytes_sent",
    "http_referer",
    "http_user_agent",
];

const EXTRA_NAMED: usize = 16;

impl Clf {
    fn new(format: &'static str, written: usize) -> Clf {
        let mut names: Vec<String> = COMBINED[..written].iter().map(|s| s.to_string()).collect();
        names.extend(["method", "uri", "protocol"].map(String::from));
        // Fields past the named ones, as many as lines commonly carry.
        for i in names.len()..names.len() + EXTRA_NAMED {
            names.push(format!("field{i}"));
        }
        Clf {
            format,
            names,
            written,
            request: 4,
            tokens: Fields::default(),
        }
    }

    pub fn combined() -> Clf {
        Clf::new("combined", 9)
    }

    pub fn common() -> Clf {
        Clf::new("common", 7)
    }
}

impl LineParser for Clf {
    fn format(&self) -> &'static str {
        self.format
    }

    fn names(&self) -> Option<&[String]> {
        Some(&self.names)
    }

    fn field(&mut self, name: &str) -> Option<usize> {
        let names = &self.names;
        names.iter().position(|n| n == name).or_else(|| {
            // Any further field by its position: field40.
            name.strip_prefix("field")
                .and_then(|d| d.parse::<usize>().ok())
                .filter(|&i| i >= self.written + 3)
        })
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, String> {
        self.tokens.clear();
        tokens(line, &mut self.tokens, &COMBINED[..self.written])?;
        let got = self.tokens.spans.len();
        if got < self.written {
            return Err(format!(
                "the line has {got} field(s), a {} line has at least {} ({}); no {}",
                self.format,
                self.written,
                COMBINED[..self.written].join(" "),
                COMBINED[got]
            ));
        }
        out.spans
            .extend_from_slice(&self.tokens.spans[..self.written]);
        let request = out.in_line(line, self.request);
        let (m, u, p) = split_request(request);
        out.push_sub(line, m);
        out.push_sub(line, u);
        out.push_sub(line, p);
        out.spans
            .extend_from_slice(&self.tokens.spans[self.written..]);
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(p: &mut Clf, line: &str) -> Result<Vec<String>, String> {
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f)?;
        Ok((0..f.spans.len())
            .map(|i| String::from_utf8_lossy(f.get(line.as_bytes(), i).unwrap()).into_owned())
            .collect())
    }

    #[test]
    fn combined_lines_are_named_like_nginx() {
        let mut p = Clf::combined();
        let f = fields(
            &mut p,
            r#"203.0.113.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /a b HTTP/1.1" 200 2326 "http://r/\"x\"" "UA 1.0" "-" extra"#,
        )
        .unwrap();
        assert_eq!(
            f,
            [
                "203.0.113.7",
                "-",
                "alice",
                "10/Oct/2000:13:55:36 -0700",
                "GET /a b HTTP/1.1",
                "200",
                "2326",
                r#"http://r/\"x\""#,
                "UA 1.0",
                "GET",
                "/a b",
                "HTTP/1.1",
                "-",
                "extra"
            ]
        );
        assert_eq!(p.field("http_user_agent"), Some(8));
        assert_eq!(p.field("uri"), Some(10));
        assert_eq!(p.field("field12"), Some(12));
        assert_eq!(p.field("field40"), Some(40));
        assert_eq!(p.field("nope"), None);
    }

    #[test]
    fn broken_lines_say_what_is_wrong() {
        let mut p = Clf::combined();
        let e = fields(
            &mut p,
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1 200 5"#,
        )
        .unwrap_err();
        assert!(e.contains("never closed"), "{e}");
        let e = fields(
            &mut p,
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /"a" HTTP/1.1" 200 5 "-" "-""#,
        )
        .unwrap_err();
        assert!(e.contains("unescaped quote"), "{e}");
        let e = fields(
            &mut p,
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200"#,
        )
        .unwrap_err();
        assert!(e.contains("no body_bytes_sent"), "{e}");
        let e = fields(&mut p, r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700"#).unwrap_err();
        assert!(e.contains("'['"), "{e}");
        // nginx's escape of a quote is an ordinary byte sequence.
        let f = fields(
            &mut p,
            r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET /\x22 HTTP/1.1" 200 5 "-" "-""#,
        )
        .unwrap();
        assert_eq!(f[10], r"/\x22");
        // A trailing backslash inside quotes does not run past the line.
        assert!(fields(&mut p, r#"a - - [10/Oct/2000:13:55:36 -0700] "GET \"#).is_err());
    }
}
