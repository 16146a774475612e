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
use super::tokens::wrapped;

/// NCSA Combined: Apache's `combined`, nginx's default. A Common line
/// among them (a server that logged Common before) is read as one.
pub static COMBINED: Layout = Layout::new("combined", &[&NAMES], 9, 3)
    .bracketed()
    .shorter(7, "common")
    .request(4);

/// NCSA Common: Combined without referer and user agent.
pub static COMMON: Layout = Layout::new("common", &[NAMES.split_at(7).0], 7, 3)
    .bracketed()
    .request(4);

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

/// Whether a tokenised line is a Combined line.
pub fn combined(line: &[u8], f: &Fields) -> bool {
    clf_at(line, f, 0) == Some(true)
}

/// Whether a tokenised line is a Common line.
pub fn common(line: &[u8], f: &Fields) -> bool {
    clf_at(line, f, 0) == Some(false)
}

#[cfg(test)]
mod tests {
    use super::super::LineParser;
    use super::super::fixed::Fixed;
    use super::*;

    fn fields(p: &mut Fixed, line: &str) -> Result<Vec<String>, String> {
        let mut f = Fields::default();
        p.parse(line.as_bytes(), &mut f)
            .map_err(|e| e.to_string())?;
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
