//! User input quoted in messages. A message names what it could not use
//! (a header, a field, a column name given on the command line), but that
//! text may be binary data, a control sequence that garbles a terminal, or
//! a header tens of kilobytes wide. Everything quoted goes through here:
//! control and non-printing characters are escaped (`\t`, `\u{1b}`), bytes
//! that are not UTF-8 are written `\xNN`, and the length is capped.

use std::fmt::Write as _;

/// The most characters of one value a message quotes.
pub const MOST_CHARS: usize = 80;

/// The most names a list of columns or fields shows.
pub const MOST_NAMES: usize = 12;

/// `value` for a message: escaped, at most [`MOST_CHARS`] characters of
/// it, then `…` when there is more.
pub fn shown(value: &[u8]) -> String {
    let mut out = String::new();
    let mut taken = 0;
    for chunk in value.utf8_chunks() {
        for c in chunk.valid().chars() {
            if taken == MOST_CHARS {
                out.push('…');
                return out;
            }
            taken += 1;
            push_char(&mut out, c);
        }
        for b in chunk.invalid() {
            if taken == MOST_CHARS {
                out.push('…');
                return out;
            }
            taken += 1;
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// A header name as text: UTF-8 as it is, other bytes written `\xNN`
/// (so a message can still tell them apart; no column given on the
/// command line can name them).
pub fn text_of(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// `shown` for text already in a `str`.
pub fn shown_str(value: &str) -> String {
    shown(value.as_bytes())
}

/// Controls (C0, DEL, C1), and the invisible characters that reorder or
/// hide text on a terminal: what no output shows as it is.
pub fn hides(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// `text` whole, with every character [`hides`] written as an escape: for
/// a message that quotes what the user typed inside text of our own.
pub fn visible(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_char(&mut out, c);
    }
    out
}

fn push_char(out: &mut String, c: char) {
    match c {
        '\t' => out.push_str("\\t"),
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\0' => out.push_str("\\0"),
        c if hides(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// Column names numbered from 0 (`0:ts, 1:client`), each [`shown`], at
/// most [`MOST_NAMES`] of them, then `… and N more`.
pub fn listing(names: &[String]) -> String {
    capped(
        names
            .iter()
            .enumerate()
            .map(|(i, n)| format!("{i}:{}", shown_str(n))),
        names.len(),
    )
}

/// Names (`ts, client`), each [`shown`], at most [`MOST_NAMES`] of them,
/// then `… and N more`.
pub fn names<S: AsRef<str>>(names: &[S]) -> String {
    capped(names.iter().map(|n| shown_str(n.as_ref())), names.len())
}

fn capped(items: impl Iterator<Item = String>, total: usize) -> String {
    let mut text = items.take(MOST_NAMES).collect::<Vec<_>>().join(", ");
    if total > MOST_NAMES {
        let _ = write!(text, ", … and {} more", total - MOST_NAMES);
    }
    text
}

/// When a header read as one column holds another likely delimiter, the
/// advice to give it: the file is most likely not comma-separated.
pub fn delimiter_hint(header: &[String]) -> Option<String> {
    let [only] = header else {
        return None;
    };
    [('\t', "tabs", "tab"), (';', "';'", "';'"), ('|', "'|'", "'|'")]
        .iter()
        // A log line holding a ';' (in a user agent) is not CSV-like text:
        // its spaces outnumber the delimiters.
        .find(|(c, _, _)| {
            only.contains(*c) && (*c == '\t' || only.matches(' ').count() < only.matches(*c).count())
        })
        .map(|(_, what, flag)| {
            let tsv = if *flag == "tab" {
                " or --input-format tsv"
            } else {
                ""
            };
            format!(
                "the header was read as one column containing {what}: the fields are not separated by commas; give --delimiter {flag}{tsv}"
            )
        })
}

/// What a file's first bytes say it is, when that is not a text log:
/// a compressed stream (its name and the command that decompresses it) or
/// binary data.
pub fn not_text(first: &[u8]) -> Option<NotText> {
    const PACKED: [(&[u8], &str, &str); 4] = [
        (&[0x1f, 0x8b], "gzip", "zcat"),
        (b"\xfd7zXZ\x00", "xz", "xz -dc"),
        (b"BZh", "bzip2", "bzip2 -dc"),
        (b"\x28\xb5\x2f\xfd", "zstd", "zstd -dc"),
    ];
    if let Some((_, kind, tool)) = PACKED.iter().find(|(m, _, _)| first.starts_with(m)) {
        return Some(NotText::Packed { kind, tool });
    }
    // Text logs hold no NUL byte: a NUL on the first line is binary data
    // (or UTF-16 text).
    let line = &first[..memchr::memchr(b'\n', first)
        .unwrap_or(first.len())
        .min(4096)];
    memchr::memchr(0, line).map(|_| NotText::Binary)
}

/// See [`not_text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotText {
    Packed {
        kind: &'static str,
        tool: &'static str,
    },
    Binary,
}

/// A key's bytes as text any format can show on one line: printable
/// characters as they are, `\` doubled, control characters (newlines,
/// terminal escapes) as `\n`, `\r`, `\t` or `\u{1b}`, and bytes that are not
/// UTF-8 as `\xff`, so two different keys never print the same.
pub fn key_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// `word` as one shell word: as it is when plain, else in single quotes;
/// a word holding a character [`hides`] (a newline, a terminal escape) in
/// `$'…'` with every such character escaped, so the command prints on one
/// line and bash or zsh runs it as printed.
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_string();
    }
    if !word.chars().any(hides) {
        return format!("'{}'", word.replace('\'', "'\\''"));
    }
    let mut out = String::from("$'");
    for c in word.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if hides(c) => {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(out, "\\x{b:02x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_when_not_plain() {
        assert_eq!(shell_word("/etc/nginx"), "/etc/nginx");
        assert_eq!(shell_word("my confs/it's"), "'my confs/it'\\''s'");
        assert_eq!(shell_word(""), "''");
        assert_eq!(shell_word("a\nb's\\"), "$'a\\nb\\'s\\\\'");
        assert_eq!(shell_word("x\u{1b}\u{202e}"), "$'x\\x1b\\xe2\\x80\\xae'");
    }

    #[test]
    fn values_are_escaped_and_capped() {
        assert_eq!(shown(b"host"), "host");
        assert_eq!(shown(b"a\tb\nc\0"), "a\\tb\\nc\\0");
        assert_eq!(shown(b"\x1b[31mred"), "\\u{1b}[31mred");
        assert_eq!(shown(b"\x7fELF\x02\xff"), "\\u{7f}ELF\\u{2}\\xff");
        assert_eq!(shown("café \u{202e}x".as_bytes()), "café \\u{202e}x");
        let long = "x".repeat(200);
        let s = shown(long.as_bytes());
        assert_eq!(s, format!("{}…", "x".repeat(MOST_CHARS)));
        assert_eq!(shown(&[0xff; 100]).matches("\\xff").count(), MOST_CHARS);
        assert_eq!(
            shown("x".repeat(MOST_CHARS).as_bytes()),
            "x".repeat(MOST_CHARS)
        );
    }

    #[test]
    fn names_keep_bytes_that_are_not_utf8_apart() {
        assert_eq!(text_of(b"ts"), "ts");
        assert_eq!(text_of(b"\xff\xfey"), "\\xff\\xfey");
        assert_eq!(shown_str(&text_of(b"caf\xc3\xa9\xc3")), "café\\xc3");
    }

    #[test]
    fn lists_show_the_first_names_then_a_count() {
        let few: Vec<String> = ["ts", "client"].map(String::from).to_vec();
        assert_eq!(listing(&few), "0:ts, 1:client");
        assert_eq!(names(&few), "ts, client");
        let many: Vec<String> = (0..5000).map(|i| format!("c{i}")).collect();
        let l = listing(&many);
        assert!(l.starts_with("0:c0, 1:c1, "), "{l}");
        assert!(l.ends_with("11:c11, … and 4988 more"), "{l}");
        assert!(names(&many).ends_with("c11, … and 4988 more"));
    }

    #[test]
    fn one_column_headers_with_another_delimiter_get_advice() {
        let h = |s: &str| vec![s.to_string()];
        assert!(
            delimiter_hint(&h("host\tts"))
                .unwrap()
                .contains("--delimiter tab or --input-format tsv")
        );
        assert!(
            delimiter_hint(&h("host;ts"))
                .unwrap()
                .contains("--delimiter ';'")
        );
        assert_eq!(delimiter_hint(&h("host")), None);
        assert_eq!(delimiter_hint(&["a\tb".to_string(), "c".to_string()]), None);
    }

    #[test]
    fn compressed_and_binary_starts_are_told() {
        assert_eq!(
            not_text(&[0x1f, 0x8b, 8, 0]),
            Some(NotText::Packed {
                kind: "gzip",
                tool: "zcat"
            })
        );
        assert_eq!(
            not_text(b"\x7fELF\x02\x01\x01\x00\x00"),
            Some(NotText::Binary)
        );
        assert_eq!(not_text(b"t\x00s\x00\n\x00"), Some(NotText::Binary));
        assert_eq!(not_text(b"ts,ip\n1,a\x00b\n"), None);
        assert_eq!(not_text(b"ts,ip\n"), None);
        assert_eq!(not_text(b""), None);
    }
}

#[cfg(test)]
mod key_text_tests {
    use super::key_text;

    #[test]
    fn keys_are_one_line_and_distinct() {
        assert_eq!(key_text(b"10.0.0.1"), "10.0.0.1");
        assert_eq!(key_text("café".as_bytes()), "café");
        assert_eq!(key_text(b"a\nb\tc\r"), "a\\nb\\tc\\r");
        assert_eq!(key_text(b"\x1b[31mred"), "\\u{1b}[31mred");
        assert_eq!(key_text(b"\xff"), "\\xff");
        assert_ne!(key_text(b"\xff"), key_text(b"\xfe"));
        // A backslash is doubled, so no key can pose as an escaped one.
        assert_ne!(key_text(b"\\xff"), key_text(b"\xff"));
    }
}
