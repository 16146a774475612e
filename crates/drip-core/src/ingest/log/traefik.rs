//! Traefik's access log in its `common` format: a Combined line (the
//! referer may be written bare as `-`) followed by the request count, the
//! router's name, the backend's URL and the duration:
//!
//! `192.168.33.1 - - [02/Oct/2017:20:22:07 +0000] "GET /ui HTTP/1.1" 304 0 "http://example.com/login" "Mozilla/5.0" 262 "Host-host-1" "http://172.19.0.3:5601" 2ms`
//!
//! Fields: the Combined names, then `request_count`, `router_name`,
//! `server_url` and `duration` (with its unit, `2ms`). `time_local` is when
//! the request arrived (Traefik writes its start time); the client is
//! `remote_addr`. Traefik's JSON log is read as ndjson, from `StartUTC`.

use super::clf::NAMES;
use super::fixed::Layout;

/// What Traefik writes after the Combined fields.
const AFTER: &[&str] = &["request_count", "router_name", "server_url", "duration"];

pub static TRAEFIK: Layout = Layout::new("traefik", &[&NAMES, AFTER], 9, 3)
    .bracketed()
    .request(4);

/// Whether a tokenised line is a Traefik CLF line: CLF-shaped, a request
/// count after the user agent and a duration in ms last.
pub fn looks_like(line: &[u8], f: &super::Fields) -> bool {
    let n = f.spans.len();
    let digits = |v: &[u8]| !v.is_empty() && v.iter().all(u8::is_ascii_digit);
    n >= 13
        && super::clf::clf_at(line, f, 0).is_some()
        && digits(f.in_line(line, 9))
        && f.in_line(line, n - 1)
            .strip_suffix(b"ms")
            .is_some_and(digits)
}

#[cfg(test)]
mod tests {
    use super::super::fixed::assert_fields;
    use super::*;

    #[test]
    fn traefik_fields_follow_the_combined_ones() {
        let line = r#"192.168.33.1 - - [02/Oct/2017:20:22:07 +0000] "GET /ui/favicons/favicon-16x16.png HTTP/1.1" 304 0 - "Mozilla/5.0" 262 "Host-host-1" "http://172.19.0.3:5601" 2ms"#;
        assert_fields(
            &TRAEFIK,
            line,
            &[
                ("http_referer", "-"),
                ("router_name", "Host-host-1"),
                ("duration", "2ms"),
            ],
        );
        let mut t = super::super::Fields::default();
        super::super::tokens::tokens(line.as_bytes(), &mut t, &[]).unwrap();
        assert!(looks_like(line.as_bytes(), &t));
    }
}
