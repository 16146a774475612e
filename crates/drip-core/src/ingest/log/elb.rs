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

/// The fields before those ALB logs name the same.
const HEAD: &[&str] = &[
    "timestamp",
    "elb",
    "client:port",
    "backend:port",
    "request_processing_time",
    "backend_processing_time",
    "response_processing_time",
    "elb_status_code",
    "backend_status_code",
];

/// `received_bytes` to `ssl_protocol`, as in ALB logs.
const TAIL: &[&str] = super::alb::NAMES.split_at(10).1.split_at(6).0;

pub static ELB: Layout = Layout::new("elb", &[HEAD, TAIL], 12, 0)
    .ports(&[(2, "client"), (3, "backend")])
    .request(11);

/// Whether a tokenised line is a Classic ELB line: an RFC 3339 time, a
/// balancer name, an `ip:port` client and a quoted request.
pub fn looks_like(line: &[u8], f: &super::Fields) -> bool {
    let tok = |i: usize| f.in_line(line, i);
    f.spans.len() >= 12
        && crate::ingest::timestamp::parse_rfc3339(tok(0)).is_ok()
        && super::key::address_of(tok(2)).len() < tok(2).len()
        && super::tokens::wrapped(line, f, 11, b'"')
}

#[cfg(test)]
mod tests {
    use super::super::fixed::assert_fields;
    use super::*;

    #[test]
    fn elb_lines_carry_aws_names() {
        assert_fields(
            &ELB,
            r#"2015-05-13T23:39:43.945958Z my-loadbalancer 192.168.131.39:2817 - -1 -1 -1 503 - 0 0 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#,
            &[
                ("client", "192.168.131.39"),
                ("backend:port", "-"),
                ("elb_status_code", "503"),
                ("ssl_protocol", "-"),
                ("uri", "http://www.example.com:80/"),
            ],
        );
    }
}
