//! Envoy's default access log format:
//!
//! `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"`
//!
//! Fields are named after the operators in snake case (`start_time`,
//! `request`, `response_code`, `duration_ms`, `x_forwarded_for`, ...), then
//! `method`, `uri` and `protocol`. `start_time` is when the request arrived
//! (RFC 3339, ms, UTC). The default format logs no client address: the key
//! is `x_forwarded_for` (its first hop with `--key-column` shaping), or
//! `authority`.

use super::fixed::Layout;

/// The default format's fields; fields a configuration appends are read by
/// position (`field16`, ...).
pub static ENVOY: Layout = Layout::new("envoy", &[&NAMES], 13, 0)
    .bracketed()
    .request(1);

const NAMES: [&str; 13] = [
    "start_time",
    "request",
    "response_code",
    "response_flags",
    "bytes_received",
    "bytes_sent",
    "duration_ms",
    "upstream_service_time",
    "x_forwarded_for",
    "user_agent",
    "request_id",
    "authority",
    "upstream_host",
];

/// Whether a tokenised line is an Envoy line: a bracketed RFC 3339 time,
/// a quoted request, then a status.
pub fn looks_like(line: &[u8], f: &super::Fields) -> bool {
    let status = f.in_line(line, 2);
    let is_status = !status.is_empty() && status.iter().all(u8::is_ascii_digit);
    let rfc3339 = crate::ingest::timestamp::parse_rfc3339;
    is_status
        && f.spans.len() >= 13
        && super::tokens::bracketed_time(line, f, 0, rfc3339)
        && super::tokens::wrapped(line, f, 1, b'"')
}

#[cfg(test)]
mod tests {
    use super::super::fixed::assert_fields;
    use super::*;

    #[test]
    fn envoy_fields_are_named_after_the_operators() {
        assert_fields(
            &ENVOY,
            r#"[2016-04-15T20:17:00.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80""#,
            &[
                ("start_time", "2016-04-15T20:17:00.310Z"),
                ("duration_ms", "226"),
                ("x_forwarded_for", "10.0.35.28"),
                ("uri", "/api/v1/locations"),
            ],
        );
    }
}
