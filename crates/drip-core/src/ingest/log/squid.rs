//! Squid's native access log: fields separated by runs of spaces,
//!
//! `1157689312.049   5006 10.105.21.199 TCP_MISS/200 19763 CONNECT login.yahoo.com:443 badeyek DIRECT/209.73.177.115 -`
//!
//! named `timestamp` (epoch seconds with ms), `elapsed_ms`, `client`,
//! `result_code` (`TCP_MISS/200`), `bytes`, `method`, `url`, `user`,
//! `hierarchy` and `content_type`. `timestamp` is when the request
//! **completed**; `elapsed_ms` is how long it took, so `--duration-column
//! elapsed_ms` replays arrival times. The client is `client`.

use super::fixed::Layout;

const NAMES: [&str; 10] = [
    "timestamp",
    "elapsed_ms",
    "client",
    "result_code",
    "bytes",
    "method",
    "url",
    "user",
    "hierarchy",
    "content_type",
];

pub static SQUID: Layout = Layout::new("squid", &[&NAMES], 7, 0);

/// Whether a tokenised line is a Squid line: epoch seconds with ms, a
/// whole number of ms, a client and a `RESULT/status` code.
pub fn looks_like(line: &[u8], f: &super::Fields) -> bool {
    let tok = |i: usize| f.in_line(line, i);
    let digits = |v: &[u8]| !v.is_empty() && v.iter().all(u8::is_ascii_digit);
    let epoch_ms = |v: &[u8]| {
        v.len() > 4
            && v[v.len() - 4] == b'.'
            && digits(&v[..v.len() - 4])
            && digits(&v[v.len() - 3..])
    };
    f.spans.len() >= 7
        && epoch_ms(tok(0))
        && digits(tok(1))
        && tok(3).contains(&b'/')
        && tok(3).first().is_some_and(u8::is_ascii_uppercase)
}

#[cfg(test)]
mod tests {
    use super::super::fixed::assert_fields;
    use super::*;

    #[test]
    fn squid_fields_are_split_on_runs_of_spaces() {
        assert_fields(
            &SQUID,
            "1157689321.315      1 10.105.21.199 TCP_HIT/200 1464 GET http://www.goonernews.com/styles.css badeyek NONE/- text/css",
            &[
                ("elapsed_ms", "1"),
                ("client", "10.105.21.199"),
                ("content_type", "text/css"),
            ],
        );
    }
}
