//! nginx lines that log `$http_x_forwarded_for` where the default format has
//! `$remote_addr`: the client first, then the proxies it came through, a
//! list of addresses joined by `, `:
//!
//! `203.0.113.7, 10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "curl/8"`
//!
//! No built-in format splits on such a list (with two addresses the line
//! would look like a virtual host before a Combined line), so these lines
//! are recognised only to name the `--log-format` that reads them.

use super::Fields;

/// The nginx `log_format` of a Combined line after a forwarded list.
pub const COMBINED: &str = r#"$http_x_forwarded_for - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#;
/// The nginx `log_format` of a Common line after a forwarded list.
pub const COMMON: &str =
    r#"$http_x_forwarded_for - $remote_user [$time_local] "$request" $status $body_bytes_sent"#;

/// The number of the line's first tokens that end with a comma: the
/// entries of a forwarded list before its last.
pub fn listed(line: &[u8], f: &Fields) -> usize {
    (0..f.spans.len())
        .take_while(|&i| f.in_line(line, i).len() > 1 && f.in_line(line, i).ends_with(b","))
        .count()
}

/// The `log_format` that reads a tokenised line which is a Combined or
/// Common line with a forwarded list of two or more addresses first.
pub fn format_of(line: &[u8], f: &Fields) -> Option<&'static str> {
    let n = listed(line, f);
    if n == 0 {
        return None;
    }
    super::clf::clf_at(line, f, n).map(|combined| if combined { COMBINED } else { COMMON })
}

/// What to say of `line` when it starts with a forwarded list: the flags
/// that read it, the list (client and proxies) as the key.
pub fn hint(line: &[u8]) -> Option<String> {
    let mut f = Fields::default();
    super::tokens::tokens(line, &mut f, &[]).ok()?;
    let format = format_of(line, &f)?;
    Some(format!(
        "it starts with an X-Forwarded-For list of addresses, not one; read such lines with --log-format '{format}' --key-column http_x_forwarded_for"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forwarded_list_names_the_log_format_that_reads_it() {
        let two = br#"203.0.113.7, 10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5 "-" "curl/8""#;
        let three = br#"203.0.113.7, 10.0.0.1, 10.0.0.2 - bob [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5"#;
        assert!(
            hint(two)
                .unwrap()
                .contains(&format!("--log-format '{COMBINED}' --key"))
        );
        assert!(
            hint(three)
                .unwrap()
                .contains(&format!("--log-format '{COMMON}' --key"))
        );
        let one = br#"203.0.113.7 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 5"#;
        assert_eq!(hint(one), None);
        assert_eq!(hint(b"ts,client\n"), None);
    }
}
