//! Space-separated fields as access logs write them: bare words,
//! `"quoted"` values (a backslash escapes the next byte) and `[bracketed]`
//! values, each read without its quotes or brackets.

use super::{Fields, LineError};
use crate::ingest::marks::first_of;

/// Field `n` for a message: `field 8 (http_user_agent)`.
fn label(n: usize, names: &[&str]) -> String {
    match names.get(n) {
        Some(name) => format!("field {n} ({name})"),
        None => format!("field {n}"),
    }
}

/// The error for field `n` opening a quote the line never closes.
pub fn unclosed(n: usize, names: &[&str]) -> LineError {
    LineError::new(format!(
        "{} opens a quote that is never closed",
        label(n, names)
    ))
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
///
/// The end of each field is found sixteen bytes at a time ([`first_of`]),
/// in line: fields are short, and a search call costs more than the search.
pub fn tokens(line: &[u8], out: &mut Fields, names: &[&str]) -> Result<Token, LineError> {
    let n = line.len();
    let mut i = 0;
    // Each field ends at a separator or the line's end: the next starts
    // after that byte, and further separators are skipped here.
    loop {
        if i >= n {
            return Ok(Token::Whole);
        }
        match line[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                let start = i + 1;
                let mut from = start;
                let j = loop {
                    let k = first_of(line, from, [b'"', b'\\']);
                    match line.get(k) {
                        Some(b'\\') => from = k + 2,
                        Some(_) => break k,
                        None => {
                            out.spans.push((start as u32, n as u32));
                            return Ok(Token::Cut(out.spans.len() - 1));
                        }
                    }
                };
                if j + 1 < n && !is_sep(line[j + 1]) {
                    return Err(unescaped(line, start, j, out.spans.len(), names));
                }
                out.spans.push((start as u32, j as u32));
                i = j + 2;
            }
            b'[' => {
                let k = first_of(line, i, [b']', b']']);
                if k >= n {
                    return Err(LineError::new(format!(
                        "{} opens a '[' that is never closed",
                        label(out.spans.len(), names)
                    )));
                }
                if k + 1 == n || is_sep(line[k + 1]) {
                    out.spans.push((i as u32 + 1, k as u32));
                    i = k + 2;
                } else {
                    // `[2001:db8::1]:443` is a bare word.
                    let e = first_of(line, i, [b' ', b'\t']);
                    out.spans.push((i as u32, e as u32));
                    i = e + 1;
                }
            }
            _ => {
                let e = first_of(line, i + 1, [b' ', b'\t']);
                out.spans.push((i as u32, e as u32));
                i = e + 1;
            }
        }
    }
}

#[inline(always)]
fn is_sep(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The error for field `n` (`line[start..j]`) with a quote inside it.
#[cold]
fn unescaped(line: &[u8], start: usize, j: usize, n: usize, names: &[&str]) -> LineError {
    LineError::new(format!(
        "{} has an unescaped quote inside it (after '{}')",
        label(n, names),
        String::from_utf8_lossy(&line[start..j]).escape_debug()
    ))
}

/// [`tokens`] byte by byte, with a search per quoted or bracketed field:
/// what the fast version must equal.
#[cfg(test)]
fn tokens_bytewise(line: &[u8], out: &mut Fields, names: &[&str]) -> Result<Token, LineError> {
    let mut i = 0;
    let n = line.len();
    while i < n {
        match line[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                let start = i + 1;
                let Some(j) = super::nginx::closing_quote(line, start) else {
                    out.spans.push((start as u32, n as u32));
                    return Ok(Token::Cut(out.spans.len() - 1));
                };
                if j + 1 < n && line[j + 1] != b' ' && line[j + 1] != b'\t' {
                    return Err(LineError::new(format!(
                        "{} has an unescaped quote inside it (after '{}')",
                        label(out.spans.len(), names),
                        String::from_utf8_lossy(&line[start..j]).escape_debug()
                    )));
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
                return Err(LineError::new(format!(
                    "{} opens a '[' that is never closed",
                    label(out.spans.len(), names)
                )));
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

/// Whether the `[` at `i` opens a bracketed value: its `]` ends the field
/// (`[2001:db8::1]:443` is a bare word).
#[cfg(test)]
fn bracketed(line: &[u8], i: usize) -> bool {
    match memchr::memchr(b']', &line[i..]) {
        Some(k) => matches!(line.get(i + k + 1), None | Some(b' ' | b'\t')),
        None => false,
    }
}

/// Whether token `i` was written after `open` (a quote or a bracket).
pub fn wrapped(line: &[u8], f: &Fields, i: usize, open: u8) -> bool {
    f.spans
        .get(i)
        .is_some_and(|&(s, _)| s > 0 && line[s as usize - 1] == open)
}

/// Whether token `i` is `[bracketed]` and a time `parse` reads.
pub fn bracketed_time<T, E>(
    line: &[u8],
    f: &Fields,
    i: usize,
    parse: impl Fn(&[u8]) -> Result<T, E>,
) -> bool {
    wrapped(line, f, i, b'[') && parse(f.in_line(line, i)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Rng;

    /// Lines as access logs write them, and as they break them.
    const SAMPLES: [&str; 3] = [
        r#"203.0.113.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /a b HTTP/1.1" 200 2326 "http://r/\"x\"" "UA 1.0" "-" extra"#,
        r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#,
        r#"[2001:db8::1]:443 [x] "a\\" [01/Aug/1995:00:00:01 -0400]	"q"tail [open"#,
    ];

    fn both(line: &[u8]) {
        let (mut fast, mut slow) = (Fields::default(), Fields::default());
        let names = ["a", "b"];
        let got = tokens(line, &mut fast, &names);
        let want = tokens_bytewise(line, &mut slow, &names);
        let shown = String::from_utf8_lossy(line);
        assert_eq!((got, fast.spans), (want, slow.spans), "{shown:?}");
    }

    #[test]
    fn the_search_sixteen_bytes_at_a_time_equals_the_byte_walk() {
        let mut rng = Rng(0x746f_6b65);
        let alphabet: &[u8] = b"  \t\"\"\\[]]ab-:/\xff0";
        for _ in 0..20_000 {
            let len = rng.below(200) as usize;
            let line: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u64) as usize])
                .collect();
            both(&line);
        }
        // Real lines, mutated: a byte replaced, cut, or a block of spaces in front.
        for _ in 0..20_000 {
            let sample = SAMPLES[rng.below(SAMPLES.len() as u64) as usize].as_bytes();
            let mut line = match rng.below(3) {
                0 => vec![b' '; rng.below(130) as usize],
                _ => Vec::new(),
            };
            line.extend_from_slice(sample);
            for _ in 0..rng.below(4) {
                let at = rng.below(line.len() as u64) as usize;
                line[at] = alphabet[rng.below(alphabet.len() as u64) as usize];
            }
            line.truncate(rng.below(line.len() as u64 + 1) as usize);
            both(&line);
        }
        for sample in SAMPLES {
            both(sample.as_bytes());
        }
    }
}
