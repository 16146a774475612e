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

use super::Fields;
use super::fixed::Layout;

/// Field `n` for a message: `field 8 (http_user_agent)`.
fn label(n: usize, names: &[&str]) -> String {
    match names.get(n) {
        Some(name) => format!("field {n} ({name})"),
        None => format!("field {n}"),
    }
}

/// The message for field `n` opening a quote the line never closes.
pub fn unclosed(n: usize, names: &[&str]) -> String {
    format!("{} opens a quote that is never closed", label(n, names))
}

/// How a line's tokens ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Token {
    /// Every token is whole.
    Whole,
    /// Token `n`, the last, opens a quote the line's end cuts off: its span
    /// runs to the end of the line.
    Cut(usize),
}

/// Splits a line into fields: bare words separated by spaces, `"quoted"`
/// values (a backslash escapes the next byte) and `[bracketed]` values,
/// each without its quotes or brackets. `names` name fields in messages.
pub fn tokens(line: &[u8], out: &mut Fields, names: &[&str]) -> Result<Token, String> {
    let mut i = 0;
    let n = line.len();
    while i < n {
        match line[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                let start = i + 1;
                let Some(j) = closing_quote(line, start) else {
                    out.spans.push((start as u32, n as u32));
                    return Ok(Token::Cut(out.spans.len() - 1));
                };
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
    Ok(Token::Whole)
}

/// The `"` closing a quote opened before `from`, past backslash escapes;
/// `None` when the line ends first.
fn closing_quote(line: &[u8], mut j: usize) -> Option<usize> {
    loop {
        let k = memchr::memchr2(b'"', b'\\', line.get(j..)?)?;
        if line[j + k] == b'\\' {
            j += k + 2;
        } else {
            return Some(j + k);
        }
    }
}

/// Whether the `[` at `i` opens a bracketed value: its `]` ends the field
/// (`[2001:db8::1]:443` is a bare word).
fn bracketed(line: &[u8], i: usize) -> bool {
    match memchr::memchr(b']', &line[i..]) {
        Some(k) => matches!(line.get(i + k + 1), None | Some(b' ' | b'\t')),
        None => false,
    }
}

/// NCSA Combined: Apache's `combined`, nginx's default.
pub static COMBINED: Layout = Layout {
    format: "combined",
    names: &NAMES,
    least: 9,
    time: 3,
    ports: &[],
    request: Some(4),
};

/// NCSA Common: Combined without referer and user agent.
pub static COMMON: Layout = Layout {
    format: "common",
    names: NAMES.split_at(7).0,
    least: 7,
    time: 3,
    ports: &[],
    request: Some(4),
};

/// The fields of a Combined line, as nginx names them.
pub const NAMES: [&str; 9] = [
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

/// Whether a tokenised line is CLF-shaped from field `at` on: a
/// `[bracketed]` CLF time, then a quoted request; `Some(true)` when a
/// quoted referer and user agent follow (combined).
pub fn clf_at(line: &[u8], f: &Fields, at: usize) -> Option<bool> {
    let n = f.spans.len();
    let ok = n >= at + 7
        && wrapped(line, f, at + 3, b'[')
        && wrapped(line, f, at + 4, b'"')
        && crate::ingest::timestamp::parse_clf(f.in_line(line, at + 3)).is_ok();
    ok.then(|| n >= at + 9 && wrapped(line, f, at + 7, b'"') && wrapped(line, f, at + 8, b'"'))
}

/// Whether token `i` was written after `open` (a quote or a bracket).
pub fn wrapped(line: &[u8], f: &Fields, i: usize, open: u8) -> bool {
    f.spans
        .get(i)
        .is_some_and(|&(s, _)| s > 0 && line[s as usize - 1] == open)
}

#[cfg(test)]
mod tests {
    use super::super::LineParser;
    use super::super::fixed::Fixed;
    use super::*;

    fn fields(p: &mut Fixed, line: &str) -> Result<Vec<String>, String> {
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f)?;
        Ok((0..f.spans.len())
            .map(|i| String::from_utf8_lossy(f.get(line.as_bytes(), i).unwrap()).into_owned())
            .collect())
    }

    #[test]
    fn combined_lines_are_named_like_nginx() {
        let mut p = Fixed::new(&COMBINED);
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
        let mut p = Fixed::new(&COMBINED);
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

    #[test]
    fn a_user_agent_cut_by_the_end_of_the_line_keeps_the_row() {
        let mut p = Fixed::new(&COMBINED);
        let line = r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "Mozilla/5.0 (cut"#;
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f).unwrap();
        assert!(f.cut);
        assert_eq!(f.get(line.as_bytes(), 8).unwrap(), b"Mozilla/5.0 (cut");
        assert_eq!(f.get(line.as_bytes(), 0).unwrap(), b"1.2.3.4");
        let whole = r#"1.2.3.4 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "ua""#;
        f.clear();
        p.parse(whole.as_bytes(), &mut f).unwrap();
        assert!(!f.cut);
        // Common lines end at the size: a cut referer is past them.
        let mut c = Fixed::new(&COMMON);
        let line = r#"h - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 7 "http://cut"#;
        f.clear();
        c.parse(line.as_bytes(), &mut f).unwrap();
        assert!(f.cut);
    }
}
