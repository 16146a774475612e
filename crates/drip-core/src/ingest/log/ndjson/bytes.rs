//! JSON lines as servers write them, not only as JSON defines them: bytes
//! that are not UTF-8 inside strings (nginx's `escape=json` writes bytes
//! of 0x80 and above as they came), kept byte for byte as other formats
//! keep them; and numbers with an exponent (`1.2e-3`), read as the plain
//! decimal they are (`0.0012`), digit for digit, never through a float.

/// `line` with every byte of a sequence that is not UTF-8 replaced by `?`,
/// so serde_json can check the line's shape; the offsets of everything in
/// it are those of `line`, whose own bytes are then taken.
pub(super) fn checkable(line: &[u8]) -> Vec<u8> {
    let mut out = line.to_vec();
    let mut at = 0;
    while let Err(e) = std::str::from_utf8(&out[at..]) {
        let bad = at + e.valid_up_to();
        let len = e.error_len().unwrap_or(out.len() - bad);
        out[bad..bad + len].fill(b'?');
        at = bad + len;
    }
    out
}

/// Appends the JSON string body `raw` (between its quotes) unescaped to
/// `out`: escapes decoded, every other byte as it is. A `\u` escape of a
/// lone surrogate (no character) is an error.
pub(super) fn unescape(raw: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' {
            out.push(b);
            i += 1;
            continue;
        }
        let Some(&esc) = raw.get(i + 1) else {
            return Err("a string ends in a lone backslash".to_string());
        };
        i += 2;
        let simple = match esc {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let (c, used) = code_point(&raw[i..])?;
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                i += used;
                continue;
            }
            other => {
                return Err(format!(
                    "unknown escape \\{}",
                    char::from(other).escape_debug()
                ));
            }
        };
        out.push(simple);
    }
    Ok(())
}

/// The character of the `\u` escape whose hex digits start `s` (a
/// surrogate pair takes the next `\uXXXX` too), and the bytes it used.
fn code_point(s: &[u8]) -> Result<(char, usize), String> {
    let hex = |s: &[u8]| -> Result<u32, String> {
        s.get(..4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| "a \\u escape without four hex digits".to_string())
    };
    let first = hex(s)?;
    if let Some(c) = char::from_u32(first) {
        return Ok((c, 4));
    }
    let lone = || format!("a lone surrogate \\u{first:04x} in a string");
    if !(0xd800..0xdc00).contains(&first) || !s[4..].starts_with(b"\\u") {
        return Err(lone());
    }
    let second = hex(&s[6..])?;
    if !(0xdc00..0xe000).contains(&second) {
        return Err(lone());
    }
    let c = 0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00);
    char::from_u32(c).map(|c| (c, 10)).ok_or_else(lone)
}

/// The plain decimal of a JSON number written with an exponent
/// (`-1.7000000025e9` → `-1700000002.5`); `None` for a number without one,
/// or an exponent too large to write out (over 400).
pub(super) fn plain_decimal(n: &[u8]) -> Option<Vec<u8>> {
    let e = n.iter().position(|&b| b == b'e' || b == b'E')?;
    let exp: i64 = std::str::from_utf8(&n[e + 1..]).ok()?.parse().ok()?;
    if exp.abs() > 400 {
        return None;
    }
    let (sign, mantissa) = match n[..e].split_first() {
        Some((b'-', rest)) => (&b"-"[..], rest),
        _ => (&b""[..], &n[..e]),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(p) => (&mantissa[..p], &mantissa[p + 1..]),
        None => (mantissa, &b""[..]),
    };
    let digits: Vec<u8> = int.iter().chain(frac).copied().collect();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let point = int.len() as i64 + exp;
    let mut out = sign.to_vec();
    if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(&digits);
    } else if point as usize >= digits.len() {
        push_int(&mut out, &digits);
        out.resize(out.len() + point as usize - digits.len(), b'0');
    } else {
        push_int(&mut out, &digits[..point as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[point as usize..]);
    }
    Some(out)
}

/// Appends the integer digits `d` without their leading zeros (one kept).
fn push_int(out: &mut Vec<u8>, d: &[u8]) {
    let zeros = d
        .iter()
        .take_while(|&&b| b == b'0')
        .count()
        .min(d.len() - 1);
    out.extend_from_slice(&d[zeros..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_that_are_not_utf8_are_checked_as_question_marks() {
        assert_eq!(checkable(b"{\"k\":\"a\xffb\"}"), b"{\"k\":\"a?b\"}");
        assert_eq!(checkable(b"\xe2\x82"), b"??");
        assert_eq!(checkable("é\u{20ac}".as_bytes()), "é\u{20ac}".as_bytes());
    }

    #[test]
    fn strings_unescape_as_json_says_and_keep_other_bytes() {
        let un = |s: &[u8]| {
            let mut out = Vec::new();
            unescape(s, &mut out).map(|()| out)
        };
        assert_eq!(un(br#"a\"b\\c\/\n\t"#).unwrap(), b"a\"b\\c/\n\t");
        assert_eq!(un(b"\\u00e9\xff").unwrap(), b"\xc3\xa9\xff");
        assert_eq!(un(br"\ud83d\ude00").unwrap(), "😀".as_bytes());
        assert!(un(br"\ud83d").unwrap_err().contains("lone surrogate"));
        assert!(un(br"\ude00x").unwrap_err().contains("lone surrogate"));
        assert!(un(br"\u12").is_err());
        assert!(un(br"\q").is_err());
        // Agrees with serde_json on what both read.
        for s in [r#"x\u0041\r\b\f"#, r"\u2028", r"\ud834\udd1e"] {
            let want: String = serde_json::from_str(&format!("\"{s}\"")).unwrap();
            assert_eq!(un(s.as_bytes()).unwrap(), want.as_bytes(), "{s}");
        }
    }

    #[test]
    fn exponents_are_written_out_digit_for_digit() {
        let plain = |s: &str| plain_decimal(s.as_bytes()).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(plain("1.2e-3").as_deref(), Some("0.0012"));
        assert_eq!(plain("2E+1").as_deref(), Some("20"));
        assert_eq!(plain("1.7000000025e9").as_deref(), Some("1700000002.5"));
        assert_eq!(plain("-1.5e0").as_deref(), Some("-1.5"));
        assert_eq!(plain("0.5e1").as_deref(), Some("5"));
        assert_eq!(plain("17e-1").as_deref(), Some("1.7"));
        assert_eq!(plain("1e401"), None);
        assert_eq!(plain("1700000000.5"), None);
    }
}
