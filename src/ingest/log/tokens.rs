//! Space-separated fields as access logs write them: bare words,
//! `"quoted"` values (a backslash escapes the next byte) and `[bracketed]`
//! values, each read without its quotes or brackets.

use super::Fields;

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
                let Some(j) = super::nginx::closing_quote(line, start) else {
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

/// Whether the `[` at `i` opens a bracketed value: its `]` ends the field
/// (`[2001:db8::1]:443` is a bare word).
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
