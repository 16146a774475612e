//! AWS Application Load Balancer access logs: space-separated fields, some
//! quoted, in the order AWS documents them:
//!
//! `https 2018-07-02T22:23:00.186641Z app/my-lb/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://h:80/ HTTP/1.1" "curl/7.46.0" ...`
//!
//! Fields carry AWS's names (`client:port`, `elb_status_code`,
//! `request_creation_time`, ...), then derived ones: `client` and `target`
//! without their ports, and `method`, `uri`, `protocol` from the request.
//! Fields AWS adds in future are named `fieldN` by position. The default
//! time is `request_creation_time`, when the balancer received the request;
//! `time` is when it sent the response.

use super::tokens::{Token, tokens, unclosed};
use super::{Fields, LineError, LineParser, Parsed, split_request};

/// AWS's field names, in line order.
pub const NAMES: [&str; 30] = [
    "type",
    "time",
    "elb",
    "client:port",
    "target:port",
    "request_processing_time",
    "target_processing_time",
    "response_processing_time",
    "elb_status_code",
    "target_status_code",
    "received_bytes",
    "sent_bytes",
    "request",
    "user_agent",
    "ssl_cipher",
    "ssl_protocol",
    "target_group_arn",
    "trace_id",
    "domain_name",
    "chosen_cert_arn",
    "matched_rule_priority",
    "request_creation_time",
    "actions_executed",
    "redirect_url",
    "error_reason",
    "target:port_list",
    "target_status_code_list",
    "classification",
    "classification_reason",
    "conn_trace_id",
];

/// Fields every ALB line has (through `user_agent`).
const LEAST: usize = 14;

const TYPES: [&[u8]; 6] = [b"http", b"https", b"h2", b"grpcs", b"ws", b"wss"];

/// Whether a tokenised line is an ALB line: a request type, an RFC 3339
/// time and an `app/…` balancer.
pub fn looks_like(line: &[u8], f: &Fields) -> bool {
    let tok = |i: usize| f.get(line, i).unwrap_or_default();
    f.spans.len() >= LEAST
        && TYPES.contains(&tok(0))
        && crate::ingest::timestamp::parse_rfc3339(tok(1)).is_ok()
        && (tok(2).starts_with(b"app/") || tok(2).starts_with(b"net/"))
}

pub struct Alb {
    names: Vec<String>,
    tokens: Fields,
}

impl Alb {
    pub fn new() -> Alb {
        let mut names: Vec<String> = NAMES.iter().map(|s| s.to_string()).collect();
        names.extend(["client", "target", "method", "uri", "protocol"].map(String::from));
        for i in names.len()..names.len() + 8 {
            names.push(format!("field{i}"));
        }
        Alb {
            names,
            tokens: Fields::default(),
        }
    }
}

/// An ALB parser, boxed for the format table.
pub fn boxed() -> Box<dyn LineParser> {
    Box::new(Alb::new())
}

impl Default for Alb {
    fn default() -> Alb {
        Alb::new()
    }
}

impl LineParser for Alb {
    fn format(&self) -> &'static str {
        "alb"
    }

    fn names(&self) -> Option<&[String]> {
        Some(&self.names)
    }

    fn default_time(&mut self) -> Option<(usize, Option<usize>)> {
        Some((21, None))
    }

    fn parse(&mut self, line: &[u8], out: &mut Fields) -> Result<Parsed, LineError> {
        self.tokens.clear();
        // A user agent (or a later field) cut by the line's end keeps the row.
        let cut = match tokens(line, &mut self.tokens, &NAMES)? {
            Token::Cut(i) if i + 1 < LEAST => return Err(unclosed(i, &NAMES)),
            t => t != Token::Whole,
        };
        let got = self.tokens.spans.len();
        if got < LEAST {
            return Err(LineError::new(format!(
                "the line has {got} field(s), an ALB line has at least {LEAST}; no {}",
                NAMES[got]
            )));
        }
        if !TYPES.contains(&self.tokens.in_line(line, 0)) {
            return Err(LineError::new(format!(
                "field 0 (type) is not a request type ({})",
                TYPES.map(String::from_utf8_lossy).join(", ")
            )));
        }
        let written = got.min(NAMES.len());
        out.spans.extend_from_slice(&self.tokens.spans[..written]);
        out.spans.resize(NAMES.len(), super::MISSING);
        let client = super::key::address_of(self.tokens.in_line(line, 3));
        let target = super::key::address_of(self.tokens.in_line(line, 4));
        let (m, u, p) = split_request(self.tokens.in_line(line, 12));
        for v in [client, target, m, u, p] {
            out.push_sub(line, v);
        }
        out.spans.extend_from_slice(&self.tokens.spans[written..]);
        out.cut = cut;
        Ok(Parsed::Record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"https 2018-07-02T22:23:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 [2001:db8::1]:2817 10.0.0.1:80 0.086 0.048 0.037 200 200 0 57 "GET https://www.example.com:443/a b HTTP/1.1" "curl/7.46.0" ECDHE-RSA-AES128-GCM-SHA256 TLSv1.2 arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337281-1d84f3d73c47ec4e58577259" "www.example.com" "arn:aws:acm:us-east-2:123456789012:certificate/12345678-1234-1234-1234-123456789012" 1 2018-07-02T22:22:48.364000Z "authenticate,forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_1234 new"#;

    #[test]
    fn alb_lines_carry_aws_names_and_the_client_without_its_port() {
        let mut p = Alb::new();
        let mut f = Fields::default();
        p.parse(LINE.as_bytes(), &mut f).unwrap();
        let get = |name: &str| {
            let i = p.names.iter().position(|n| n == name).unwrap();
            String::from_utf8_lossy(f.get(LINE.as_bytes(), i).unwrap()).into_owned()
        };
        assert_eq!(get("client:port"), "[2001:db8::1]:2817");
        assert_eq!(get("client"), "2001:db8::1");
        assert_eq!(get("target"), "10.0.0.1");
        assert_eq!(get("request_creation_time"), "2018-07-02T22:22:48.364000Z");
        assert_eq!(get("uri"), "https://www.example.com:443/a b");
        assert_eq!(get("conn_trace_id"), "TID_1234");
        assert_eq!(get("field35"), "new");
        assert_eq!(p.default_time(), Some((21, None)));
        let mut t = Fields::default();
        tokens(LINE.as_bytes(), &mut t, &[]).unwrap();
        assert!(looks_like(LINE.as_bytes(), &t));
    }

    #[test]
    fn short_alb_lines_are_refused() {
        let mut p = Alb::new();
        let line = "https 2018-07-02T22:23:00.186641Z app/x/1 1.2.3.4:5 - 0 0 0 200 200 0 57";
        let e = p
            .parse(line.as_bytes(), &mut Fields::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("12 field(s), an ALB line has at least 14; no request"),
            "{e}"
        );
    }
}
