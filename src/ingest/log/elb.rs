//! AWS Classic Load Balancer access logs: space-separated, the request and
//! user agent quoted, in the order AWS documents them:
//!
//! `2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -`
//!
//! Fields carry AWS's names (`timestamp`, `elb`, `client:port`, ...), then
//! `client` and `backend` without their ports and the request split into
//! `method`, `uri` and `protocol`. `timestamp` is when the balancer
//! received the request (arrival), in UTC with µs; the client is `client`.
//! TCP listeners write `-` for the HTTP fields.

use super::fixed::Layout;

const NAMES: [&str; 15] = [
    "timestamp",
    "elb",
    "client:port",
    "backend:port",
    "request_processing_time",
    "backend_processing_time",
    "response_processing_time",
    "elb_status_code",
    "backend_status_code",
    "received_bytes",
    "sent_bytes",
    "request",
    "user_agent",
    "ssl_cipher",
    "ssl_protocol",
];

pub static ELB: Layout = Layout {
    format: "elb",
    names: &NAMES,
    least: 12,
    time: 0,
    ports: &[(2, "client"), (3, "backend")],
    request: Some(11),
};

/// Whether a tokenised line is a Classic ELB line: an RFC 3339 time, a
/// balancer name, an `ip:port` client and a quoted request.
pub fn looks_like(line: &[u8], f: &super::Fields) -> bool {
    let tok = |i: usize| f.in_line(line, i);
    f.spans.len() >= 12
        && crate::ingest::timestamp::parse_rfc3339(tok(0)).is_ok()
        && super::key::strip_port(tok(2)).len() < tok(2).len()
        && super::clf::wrapped(line, f, 11, b'"')
}

#[cfg(test)]
mod tests {
    use super::super::fixed::named;
    use super::*;

    #[test]
    fn elb_lines_carry_aws_names() {
        let f = named(
            &ELB,
            r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 - -1 -1 -1 503 - 0 0 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#,
        )
        .unwrap();
        let get = |n: &str| f.iter().find(|(k, _)| k == n).unwrap().1.clone();
        assert_eq!(get("client"), "192.168.131.39");
        assert_eq!(get("backend:port"), "-");
        assert_eq!(get("elb_status_code"), "503");
        assert_eq!(get("uri"), "http://www.example.com:80/");
    }
}
