//! haproxy.cfg lines into words, as HAProxy's `parse_line` splits them:
//! blanks separate words, `#` starts a comment, a backslash escapes the
//! next byte (`\ `, `\#`, `\"`), `"double"` and `'single'` quotes keep
//! blanks in a word (environment variables in double quotes are not
//! expanded: such a word is refused).

/// One line's words, and its number (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub no: usize,
    pub words: Vec<String>,
}

/// The non-empty lines of `text`, split into words; an error names the
/// line number.
pub fn lines(text: &str) -> Result<Vec<Line>, (usize, String)> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let words = words(raw).map_err(|e| (i + 1, e))?;
        if !words.is_empty() {
            out.push(Line { no: i + 1, words });
        }
    }
    Ok(out)
}

/// One line's words.
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut open = false;
    let mut quote: Option<char> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => match chars.next() {
                Some(n) => word.push(n),
                None => {
                    return Err(
                        "a backslash ends the line (line continuations are not HAProxy syntax)"
                            .into(),
                    );
                }
            },
            (Some('"'), '$') if chars.clone().next() == Some('{') => {
                return Err("an environment variable in quotes (\"${...}\"): drip does not expand them; write the value".into());
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                open = true;
            }
            (None, '#') => break,
            (None, ' ' | '\t' | '\r') => {
                if open || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
                open = false;
            }
            (None, c) => word.push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!("a {q} quote is never closed"));
    }
    if open || !word.is_empty() {
        words.push(word);
    }
    Ok(words)
}

/// A duration as HAProxy writes one (`500`, `100ms`, `10s`, `1m`, `2h`,
/// `1d`; no unit: milliseconds), in milliseconds.
pub fn duration_ms(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = s[..digits].parse().ok()?;
    let scale = match &s[digits..] {
        "" | "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "us" => return Some(n / 1_000),
        _ => return None,
    };
    n.checked_mul(scale)
}

/// A size as HAProxy writes one (`1000`, `100k`, `1m`, `1g`: powers of
/// 1024).
pub fn size(s: &str) -> Option<u64> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let n: u64 = s[..digits].parse().ok()?;
    let scale: u64 = match s[digits..].to_ascii_lowercase().as_str() {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_quotes_escapes_and_comments() {
        let w = |s: &str| words(s).unwrap();
        assert_eq!(
            w("  acl a path_beg /x   # note"),
            ["acl", "a", "path_beg", "/x"]
        );
        assert_eq!(w(r#"http-request deny if { hdr(x) "a b" }"#)[5], "a b");
        assert_eq!(
            w(r"acl a hdr(x) a\ b \#c"),
            ["acl", "a", "hdr(x)", "a b", "#c"]
        );
        assert_eq!(
            w("acl a hdr(x) '' 'q\"'"),
            ["acl", "a", "hdr(x)", "", "q\""]
        );
        assert!(words("acl \"x").unwrap_err().contains("never closed"));
        assert!(
            words("bind \"${ADDR}\"")
                .unwrap_err()
                .contains("environment")
        );
        let l = lines("global\n\n  # only\nfrontend fe\n").unwrap();
        assert_eq!(l.iter().map(|l| l.no).collect::<Vec<_>>(), [1, 4]);
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(duration_ms("10s"), Some(10_000));
        assert_eq!(duration_ms("250"), Some(250));
        assert_eq!(duration_ms("1m"), Some(60_000));
        assert_eq!(duration_ms("1d"), Some(86_400_000));
        assert_eq!(duration_ms("1w"), None);
        assert_eq!(duration_ms("s"), None);
        assert_eq!(size("100k"), Some(102_400));
        assert_eq!(size("1m"), Some(1 << 20));
        assert_eq!(size("1x"), None);
    }
}
